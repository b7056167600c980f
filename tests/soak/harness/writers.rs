//! Clients writing beside the engines.
//!
//! - The durable writer updates ConfigMaps of its own one after another and keeps what each acknowledgement said
//!   (the value written, the resourceVersion returned). Every acknowledgement must carry a resourceVersion above
//!   the one before, and after every API server restart each ConfigMap must still hold at least its last
//!   acknowledged value at no older a resourceVersion: no acknowledged write lost, no resourceVersion gone back.
//! - Second writers (three side by side, each with a label of its own) patch labels on the objects the engines and
//!   the user work on (Module, Shim, ImageCache, ModuleDay0, the day-0 MachineConfig, Nodes, NodeModulesConfigs and
//!   the engine Lease), each patch guarded by the resourceVersion it read, so they lose races (409) and make the
//!   engines' guarded writes lose theirs. On the objects only users label (all but the NodeModulesConfigs and the
//!   Lease, which their engine owns), each writer's last acknowledged label must survive restarts too.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kmm_api::day0::{MachineConfig, ModuleDay0};
use kmm_api::imagecache::ImageCache;
use kmm_api::kmm::{Module, NodeModulesConfig};
use kmm_api::lease::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_api::shim::Shim;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::invariants::Violations;
use super::workload::{CACHE, DAY0, DAY0_NAMESPACE, MODULE, NAMESPACE, SHIM};

/// The durable writer's ConfigMaps carry this label.
const DURABLE_LABEL: &str = "soak.kmm-tui.io/durable";
/// How many ConfigMaps the durable writer keeps.
const DURABLE_OBJECTS: usize = 16;
/// The labels the second writer sets start so.
const MARK: &str = "soak.kmm-tui.io/mark";

/// What the writers did and found.
#[derive(Default)]
pub(super) struct Written {
    /// Acknowledged writes of the durable writer.
    pub durable: u64,
    /// Acknowledged label patches of the second writer.
    pub marks: u64,
    /// 409s the second writer got.
    pub conflicts: u64,
    /// Checks of everything acknowledged, after API server restarts.
    pub checks: u64,
    pub violations: Violations,
}

impl Written {
    /// Add what another writer did and found.
    pub(super) fn absorb(&mut self, other: Written) {
        self.durable += other.durable;
        self.marks += other.marks;
        self.conflicts += other.conflicts;
        self.checks += other.checks;
        self.violations.absorb(other.violations);
    }
}

/// How many clients write labels side by side, each its own label, so that they also race each other.
const MARKERS: usize = 3;

/// The writers, running.
pub(super) struct Writers {
    pub durable: tokio::task::JoinHandle<Written>,
    pub marks: Vec<tokio::task::JoinHandle<Written>>,
}

/// Start the writers; they stop with `stop`. `runs` counts API server runs (a change means a restart); `burst`
/// makes the label writers write as fast as they can.
pub(super) fn start(
    client: &kube::Client,
    runs: watch::Receiver<usize>,
    burst: Arc<AtomicBool>,
    rng: &mut ChaCha8Rng,
    nodes: &[String],
    stop: CancellationToken,
) -> Writers {
    let marks = (0..MARKERS)
        .map(|marker| {
            tokio::spawn(marks(
                client.clone(),
                format!("{MARK}-{marker}"),
                runs.clone(),
                burst.clone(),
                ChaCha8Rng::seed_from_u64(rng.random()),
                nodes.to_vec(),
                stop.clone(),
            ))
        })
        .collect();
    Writers {
        durable: tokio::spawn(durable(client.clone(), runs, stop)),
        marks,
    }
}

fn revision(meta: &kube::api::ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

async fn durable(
    client: kube::Client,
    mut runs: watch::Receiver<usize>,
    stop: CancellationToken,
) -> Written {
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    let mut written = Written::default();
    // Per ConfigMap: the last acknowledged value and resourceVersion, and the resourceVersion to write over next.
    let mut acked: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut current: BTreeMap<String, u64> = BTreeMap::new();
    let mut newest = 0u64;
    let mut sequence = 0u64;
    let mut unchecked = false;
    let mut turn = 0usize;
    while !stop.is_cancelled() {
        if runs.has_changed().unwrap_or(false) {
            runs.borrow_and_update();
            unchecked = true;
        }
        if unchecked {
            match check_durable(&api, &acked, &mut written.violations).await {
                Ok(()) => {
                    unchecked = false;
                    written.checks += 1;
                }
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            }
        }
        let name = format!("durable-{}", turn % DURABLE_OBJECTS);
        turn += 1;
        sequence += 1;
        let result = match current.get(&name) {
            None => {
                let object: ConfigMap = serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": {DURABLE_LABEL: "true"}},
                    "data": {"sequence": sequence.to_string()},
                }))
                .expect("a ConfigMap");
                api.create(&PostParams::default(), &object).await
            }
            Some(rv) => {
                let patch = json!({
                    "metadata": {"resourceVersion": rv.to_string()},
                    "data": {"sequence": sequence.to_string()},
                });
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            }
        };
        match result {
            Ok(stored) => {
                let rv = revision(&stored.metadata);
                if rv <= newest {
                    written.violations.record(
                        "resourceVersion went back",
                        format!(
                            "ConfigMap {NAMESPACE}/{name}: write acknowledged at revision {rv}, after one at {newest}"
                        ),
                    );
                }
                newest = newest.max(rv);
                acked.insert(name.clone(), (sequence, rv));
                current.insert(name, rv);
                written.durable += 1;
            }
            // A write that was not acknowledged may or may not have happened: write over what is there next time.
            Err(_) => {
                if let Ok(Some(stored)) = api.get_opt(&name).await {
                    current.insert(name, revision(&stored.metadata));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = check_durable(&api, &acked, &mut written.violations).await;
    written
}

fn sequence_of(config_map: &ConfigMap) -> u64 {
    config_map
        .data
        .as_ref()
        .and_then(|d| d.get("sequence"))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Every acknowledged value is there, at no older a resourceVersion.
async fn check_durable(
    api: &Api<ConfigMap>,
    acked: &BTreeMap<String, (u64, u64)>,
    violations: &mut Violations,
) -> Result<(), kube::Error> {
    let listed = api
        .list(&ListParams::default().labels(DURABLE_LABEL))
        .await?;
    let stored: BTreeMap<String, &ConfigMap> = listed
        .items
        .iter()
        .filter_map(|c| Some((c.metadata.name.clone()?, c)))
        .collect();
    for (name, (value, rv)) in acked {
        match stored.get(name) {
            None => violations.record(
                "acknowledged write lost",
                format!("ConfigMap {NAMESPACE}/{name} (acknowledged at revision {rv}) is gone"),
            ),
            Some(object) => {
                let (now, now_rv) = (sequence_of(object), revision(&object.metadata));
                if now < *value || now_rv < *rv {
                    violations.record(
                        "acknowledged write lost",
                        format!(
                            "ConfigMap {NAMESPACE}/{name}: value {now} at revision {now_rv}, after value {value} was \
                             acknowledged at revision {rv}"
                        ),
                    );
                }
            }
        }
    }
    Ok(())
}

/// One object the second writer labels.
struct Target {
    what: String,
    api: Api<DynamicObject>,
    name: String,
    /// Whether only users label it, so the last acknowledged label must stay.
    kept: bool,
}

fn target<K: kube::Resource<DynamicType = ()>>(
    client: &kube::Client,
    namespace: Option<&str>,
    name: &str,
    kept: bool,
) -> Target {
    let resource = ApiResource::erase::<K>(&());
    let api = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    Target {
        what: format!("{} {name}", resource.kind),
        api,
        name: name.to_owned(),
        kept,
    }
}

async fn marks(
    client: kube::Client,
    label: String,
    mut runs: watch::Receiver<usize>,
    burst: Arc<AtomicBool>,
    mut rng: ChaCha8Rng,
    nodes: Vec<String>,
    stop: CancellationToken,
) -> Written {
    let mut targets = vec![
        target::<Module>(&client, Some(NAMESPACE), MODULE, true),
        target::<Shim>(&client, None, SHIM, true),
        target::<ImageCache>(&client, Some(NAMESPACE), CACHE, true),
        target::<ModuleDay0>(&client, Some(DAY0_NAMESPACE), DAY0, true),
        target::<MachineConfig>(&client, None, DAY0, true),
        target::<Lease>(
            &client,
            Some(DEFAULT_LEASE_NAMESPACE),
            DEFAULT_LEASE_NAME,
            false,
        ),
    ];
    for node in &nodes {
        targets.push(target::<Node>(&client, None, node, true));
        targets.push(target::<NodeModulesConfig>(&client, None, node, false));
    }
    let mut written = Written::default();
    // Per target: the last acknowledged mark and resourceVersion.
    let mut acked: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    let mut mark = 0u64;
    let mut unchecked = false;
    while !stop.is_cancelled() {
        if runs.has_changed().unwrap_or(false) {
            runs.borrow_and_update();
            unchecked = true;
        }
        if unchecked {
            if check_marks(&targets, &label, &acked, &mut written.violations).await {
                unchecked = false;
                written.checks += 1;
            } else {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        }
        let index = rng.random_range(0..targets.len());
        let target = &targets[index];
        if let Ok(Some(current)) = target.api.get_opt(&target.name).await {
            mark += 1;
            let patch = json!({"metadata": {
                "resourceVersion": current.metadata.resource_version,
                "labels": {label.as_str(): mark.to_string()},
            }});
            match target
                .api
                .patch(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(stored) => {
                    written.marks += 1;
                    if target.kept {
                        acked.insert(index, (mark, revision(&stored.metadata)));
                    }
                }
                Err(kube::Error::Api(status)) if status.code == 409 => written.conflicts += 1,
                Err(_) => {}
            }
        }
        let pause = if burst.load(Ordering::Relaxed) {
            Duration::from_millis(5)
        } else {
            Duration::from_millis(rng.random_range(100..400))
        };
        tokio::time::sleep(pause).await;
    }
    check_marks(&targets, &label, &acked, &mut written.violations).await;
    written
}

/// Every acknowledged mark on an object only users label is there (or a later one), at no older a
/// resourceVersion. False when the objects cannot be read now.
async fn check_marks(
    targets: &[Target],
    label: &str,
    acked: &BTreeMap<usize, (u64, u64)>,
    violations: &mut Violations,
) -> bool {
    for (index, (mark, rv)) in acked {
        let target = &targets[*index];
        let Ok(current) = target.api.get_opt(&target.name).await else {
            return false;
        };
        let Some(current) = current else {
            violations.record(
                "acknowledged write lost",
                format!(
                    "{} is gone after its label was acknowledged at revision {rv}",
                    target.what
                ),
            );
            continue;
        };
        let now: u64 = current
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(label))
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        let now_rv = revision(&current.metadata);
        if now < *mark || now_rv < *rv {
            violations.record(
                "acknowledged write lost",
                format!(
                    "{}: label {label}={now} at revision {now_rv}, after {mark} was acknowledged at revision {rv}",
                    target.what
                ),
            );
        }
    }
    true
}
