//! Hand-off between two engines on one cluster: the console's foreground engine and a controller-style engine pass
//! the Lease back and forth many times while Modules are created and changed, and the API's own record — who the
//! managedFields and Events name as writer of each revision, and the Lease's holder at that revision — shows that no
//! engine wrote outside its own terms.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kmm_api::lease::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_engine::runtime::leader::fence::field_manager;
use kmm_engine::runtime::leader::handoff::request_handoff;
use kmm_engine::runtime::leader::{Candidacy, Fence, Participation};
use kmm_engine::{self, EngineConfig, Family, LeaseConfig, PodImages, Settings};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::common::{Harness, eventually, wait_for};
use super::kmm::{condition, create_module};

/// Lease duration of both engines.
const LEASE_SECS: u64 = 4;

/// Identity of the console's engine.
const CONSOLE: &str = "kmm-tui-console-1";

/// Identity of the controller-style engine.
const CONTROLLER: &str = "kmm-tui-controller-0";

/// How many times the Lease moves.
const HANDOFFS: usize = 12;

/// One engine running on the shared cluster, steered like the console steers its own.
struct SteeredEngine {
    candidacy: Candidacy,
    shutdown: CancellationToken,
    task: JoinHandle<anyhow::Result<()>>,
}

/// The KMM family's engine under `identity`, on the default Lease with the tests' short lease duration.
fn kmm_family_engine(identity: &str) -> EngineConfig {
    EngineConfig {
        images: PodImages::default(),
        lease: LeaseConfig::new(
            DEFAULT_LEASE_NAMESPACE,
            DEFAULT_LEASE_NAME,
            identity,
            Duration::from_secs(LEASE_SECS),
        ),
        settings: Settings {
            families: [Family::Kmm].into_iter().collect(),
            ..Settings::default()
        },
    }
}

impl SteeredEngine {
    fn start(client: kube::Client, identity: &str) -> Self {
        let candidacy = Candidacy::default();
        let shutdown = CancellationToken::new();
        let config = kmm_family_engine(identity);
        let task = tokio::spawn(kmm_engine::run_steered(
            client,
            config,
            candidacy.clone(),
            shutdown.clone(),
        ));
        Self {
            candidacy,
            shutdown,
            task,
        }
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task
            .await
            .expect("the engine does not panic")
            .expect("the engine stops cleanly");
    }
}

/// Who holds the engine Lease now.
async fn holder(client: &kube::Client) -> Option<String> {
    Api::<Lease>::namespaced(client.clone(), DEFAULT_LEASE_NAMESPACE)
        .get_opt(DEFAULT_LEASE_NAME)
        .await
        .ok()
        .flatten()
        .and_then(|lease| lease.spec?.holder_identity)
        .filter(|holder| !holder.is_empty())
}

async fn wait_for_holder(client: &kube::Client, identity: &str) {
    eventually(
        LEASE_SECS * 3,
        &format!("{identity} holds the Lease"),
        || async { holder(client).await.as_deref() == Some(identity) },
    )
    .await;
}

/// A revision of an object that an engine wrote, according to the API.
#[derive(Clone, Debug)]
struct Write {
    what: String,
    revision: u64,
    writer: String,
}

/// Everything the watches saw: the Lease's holder at each of its revisions, and the engine writes.
#[derive(Default)]
struct Record {
    holders: BTreeMap<u64, Option<String>>,
    writes: Vec<Write>,
    /// managedFields entries of the previous revision of each object (by uid): (manager, subresource) → time.
    previous: HashMap<String, HashMap<(String, String), String>>,
}

impl Record {
    /// The holder of the Lease when revision `revision` was written: that of the last Lease revision before it.
    fn holder_at(&self, revision: u64) -> Option<&str> {
        self.holders
            .range(..revision)
            .next_back()
            .and_then(|(_, holder)| holder.as_deref())
    }

    /// Writes made by an engine that did not hold the Lease at the time.
    fn outside_their_term(&self) -> Vec<String> {
        self.writes
            .iter()
            .filter(|write| self.holder_at(write.revision) != Some(write.writer.as_str()))
            .map(|write| {
                format!(
                    "{} at revision {} by {} while {} held the Lease",
                    write.what,
                    write.revision,
                    write.writer,
                    self.holder_at(write.revision).unwrap_or("nobody")
                )
            })
            .collect()
    }

    fn count_by(&self, identity: &str) -> usize {
        self.writes.iter().filter(|w| w.writer == identity).count()
    }
}

/// The engine an identity-named field manager belongs to.
fn engine_of(manager: &str) -> Option<&'static str> {
    [CONSOLE, CONTROLLER]
        .into_iter()
        .find(|identity| field_manager(identity) == manager)
}

/// Record which engine wrote this revision of `object`: the engine whose managedFields entry is new or newly
/// stamped, or for an Event the engine it names as reporting instance.
fn attribute(record: &mut Record, kind: &str, object: &DynamicObject) {
    let Some(revision) = object
        .metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse::<u64>().ok())
    else {
        return;
    };
    let what = format!(
        "{kind} {}/{}",
        object.metadata.namespace.as_deref().unwrap_or(""),
        object.metadata.name.as_deref().unwrap_or("")
    );
    if kind == "Event" {
        let instance = object
            .data
            .get("reportingInstance")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(writer) = [CONSOLE, CONTROLLER].into_iter().find(|i| *i == instance) {
            record.writes.push(Write {
                what,
                revision,
                writer: writer.to_owned(),
            });
        }
        return;
    }
    let entries: HashMap<(String, String), String> = object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|entry| {
            (
                (
                    entry.manager.clone().unwrap_or_default(),
                    entry.subresource.clone().unwrap_or_default(),
                ),
                entry
                    .time
                    .as_ref()
                    .map(|t| t.0.to_string())
                    .unwrap_or_default(),
            )
        })
        .collect();
    let uid = object.metadata.uid.clone().unwrap_or_default();
    let before = record.previous.get(&uid).cloned().unwrap_or_default();
    for (key, time) in &entries {
        if before.get(key) == Some(time) {
            continue;
        }
        if let Some(writer) = engine_of(&key.0) {
            record.writes.push(Write {
                what: what.clone(),
                revision,
                writer: writer.to_owned(),
            });
        }
    }
    record.previous.insert(uid, entries);
}

/// Watch the Lease and every kind the KMM engine writes, recording into `record` until `stop`.
fn start_recording(
    client: &kube::Client,
    record: &Arc<Mutex<Record>>,
    stop: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    let leases = Api::<Lease>::namespaced(client.clone(), DEFAULT_LEASE_NAMESPACE);
    let lease_record = record.clone();
    let lease_stop = stop.clone();
    tasks.push(tokio::spawn(async move {
        let config =
            watcher::Config::default().fields(&format!("metadata.name={DEFAULT_LEASE_NAME}"));
        let mut changes = watcher(leases, config)
            .applied_objects()
            .default_backoff()
            .boxed();
        loop {
            let next = tokio::select! {
                () = lease_stop.cancelled() => return,
                next = changes.next() => next,
            };
            let Some(Ok(lease)) = next else { continue };
            let revision = lease
                .metadata
                .resource_version
                .as_deref()
                .and_then(|rv| rv.parse::<u64>().ok())
                .expect("a numeric resourceVersion");
            let holder = lease
                .spec
                .and_then(|s| s.holder_identity)
                .filter(|h| !h.is_empty());
            lease_record
                .lock()
                .expect("the record lock")
                .holders
                .insert(revision, holder);
        }
    }));
    let kinds = [
        ("kmm.sigs.x-k8s.io", "v1beta1", "Module", "modules"),
        (
            "kmm.sigs.x-k8s.io",
            "v1beta1",
            "ModuleImagesConfig",
            "moduleimagesconfigs",
        ),
        (
            "kmm.sigs.x-k8s.io",
            "v1beta1",
            "NodeModulesConfig",
            "nodemodulesconfigs",
        ),
        (
            "kmm.sigs.x-k8s.io",
            "v1beta1",
            "ModuleBuildSignConfig",
            "modulebuildsignconfigs",
        ),
        ("", "v1", "Pod", "pods"),
        ("", "v1", "Node", "nodes"),
        ("events.k8s.io", "v1", "Event", "events"),
    ];
    for (group, version, kind, plural) in kinds {
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
        let record = record.clone();
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut changes = watcher(api, watcher::Config::default())
                .applied_objects()
                .default_backoff()
                .boxed();
            loop {
                let next = tokio::select! {
                    () = stop.cancelled() => return,
                    next = changes.next() => next,
                };
                let Some(Ok(object)) = next else { continue };
                attribute(&mut record.lock().expect("the record lock"), kind, &object);
            }
        }));
    }
    tasks
}

/// A Module on the kernel-A nodes of `two-kernels.yaml`, loading `module_name`.
fn module_spec(module_name: &str) -> Value {
    json!({
        "selector": {"kmm": "yes"},
        "moduleLoader": {"container": {
            "modprobe": {"moduleName": module_name},
            "kernelMappings": [
                {"regexp": "^.+$", "containerImage": "quay.io/acme/kmod:${KERNEL_FULL_VERSION}"}
            ]
        }}
    })
}

#[tokio::test(start_paused = true)]
async fn no_engine_writes_outside_its_term_over_many_handoffs_while_modules_change() {
    let harness = Harness::start("two-kernels.yaml").await;
    let client = harness.client();
    let record = Arc::new(Mutex::new(Record::default()));
    let recording = CancellationToken::new();
    let watches = start_recording(&client, &record, &recording);

    let console = SteeredEngine::start(client.clone(), CONSOLE);
    wait_for_holder(&client, CONSOLE).await;
    let controller = SteeredEngine::start(client.clone(), CONTROLLER);

    let modules = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        "acme",
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("kmm.sigs.x-k8s.io", "v1beta1", "Module"),
            "modules",
        ),
    );
    for handoff in 0..HANDOFFS {
        tokio::time::sleep(Duration::from_millis(300 + 200 * (handoff as u64 % 4))).await;
        println!(
            "hand-off {handoff}: moving the Lease from {}",
            holder(&client).await.unwrap_or_default()
        );
        // Work in flight at every hand-off: a new Module, and a change to the one before, right before the Lease
        // moves, so that reconciles run while the holder winds down.
        create_module(
            &harness,
            &format!("kmod-{handoff}"),
            module_spec("acme_kmod"),
        )
        .await;
        if handoff > 0 {
            let patch = json!({"spec": {"moduleLoader": {"container": {"modprobe": {
                "moduleName": format!("acme_kmod_{handoff}")
            }}}}});
            modules
                .patch(
                    &format!("kmod-{}", handoff - 1),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .expect("the Module changes");
        }
        if handoff % 2 == 0 {
            // Hand off: the console's engine finishes its work, releases the Lease and stops competing.
            console.candidacy.participate.set(Participation::StandAside);
            wait_for_holder(&client, CONTROLLER).await;
            // Standing by again, so that it can take the Lease back.
            console.candidacy.participate.set(Participation::Compete);
        } else {
            // Take over: ask the controller to yield to the console.
            request_handoff(
                client.clone(),
                DEFAULT_LEASE_NAMESPACE,
                DEFAULT_LEASE_NAME,
                Some(CONSOLE),
                "kmm-tui-console",
            )
            .await
            .expect("the hand-off request is written");
            wait_for_holder(&client, CONSOLE).await;
        }
    }

    // The work goes on under the last holder: every Module converges.
    for handoff in 0..HANDOFFS {
        let name = format!("kmod-{handoff}");
        eventually(300, &format!("{name} Available"), || async {
            condition(&harness, &name, "Available")
                .await
                .is_some_and(|(status, _, _)| status == "True")
        })
        .await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    recording.cancel();
    for watch in watches {
        let _ = watch.await;
    }
    // Every watch has ended: the record is the test's alone now.
    let record = std::mem::take(&mut *record.lock().expect("the record lock"));
    let transitions = record
        .holders
        .values()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|pair| pair[0] != pair[1])
        .count();
    let (by_console, by_controller) = (record.count_by(CONSOLE), record.count_by(CONTROLLER));
    println!(
        "{} engine writes attributed ({by_console} by {CONSOLE}, {by_controller} by {CONTROLLER}) over {} Lease \
         revisions and {transitions} changes of holder",
        record.writes.len(),
        record.holders.len()
    );
    assert!(
        transitions >= HANDOFFS,
        "the Lease changed hands {transitions} times, fewer than {HANDOFFS}"
    );
    assert!(
        by_console > 0 && by_controller > 0,
        "both engines must have written: {by_console} by the console, {by_controller} by the controller"
    );
    let violations = record.outside_their_term();
    assert!(
        violations.is_empty(),
        "{} writes outside the writer's term:\n{}",
        violations.len(),
        violations.join("\n")
    );
    console.stop().await;
    controller.stop().await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_fenced_client_writes_only_while_its_engine_holds_the_lease() {
    let harness = Harness::start("two-kernels.yaml").await;
    let client = harness.client();
    let fence = Fence::new();
    let candidacy = Candidacy {
        fence: fence.clone(),
        ..Candidacy::default()
    };
    let shutdown = CancellationToken::new();
    let config = kmm_family_engine(CONSOLE);
    let task = tokio::spawn(kmm_engine::run_steered(
        client.clone(),
        config,
        candidacy.clone(),
        shutdown.clone(),
    ));
    wait_for_holder(&client, CONSOLE).await;
    let fenced = fence.client(client.clone(), CONSOLE);
    let config_maps = |name: &str| {
        serde_json::from_value::<k8s_openapi::api::core::v1::ConfigMap>(json!({
            "metadata": {"name": name, "namespace": "acme"},
            "data": {"written-by": "the leader"}
        }))
        .expect("a ConfigMap")
    };
    let api = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(fenced.clone(), "acme");
    let params = PostParams {
        field_manager: Some(kmm_engine::runtime::writes::MANAGER.to_owned()),
        ..PostParams::default()
    };
    let written = api
        .create(&params, &config_maps("while-leading"))
        .await
        .expect("the leader writes");
    let managers: Vec<String> = written
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.manager.clone())
        .collect();
    assert_eq!(managers, [field_manager(CONSOLE)]);

    candidacy.participate.set(Participation::StandAside);
    eventually(LEASE_SECS * 2, "the Lease is released", || async {
        holder(&client).await.is_none()
    })
    .await;
    let refused = api.create(&params, &config_maps("after-handing-off")).await;
    let error = refused.expect_err("a write after the hand-off is refused");
    assert!(
        error.to_string().contains("does not hold the engine Lease"),
        "unexpected error: {error}"
    );
    // Reads still work.
    let read = wait_for(5, "a read through the fence", || async {
        api.get_opt("while-leading").await.ok().flatten()
    })
    .await;
    assert_eq!(read.metadata.name.as_deref(), Some("while-leading"));
    shutdown.cancel();
    task.await
        .expect("the engine does not panic")
        .expect("the engine stops cleanly");
    harness.shutdown().await;
}
