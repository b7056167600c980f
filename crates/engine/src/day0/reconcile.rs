//! One pass over a ModuleDay0: find its pool and MachineConfig, decide the image the pool must run, prove (or
//! build and sign) it through the KMM image pipeline, and only then point the MachineConfig at it; afterwards
//! report the Machine Config Operator's rollout. Every decision is read from the cluster, so a pass may be cut
//! short anywhere and the next one picks up where it stopped.

use std::sync::Arc;

use crate::runtime::shared::SharedStore;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch};
use kube::runtime::controller::Action;
use serde_json::json;

use super::images::{self, ImageStage};
use super::pools;
use super::release::{OS_IMAGE_CONFIG_MAP, OS_IMAGE_CONFIG_MAP_NAMESPACE, Release};
use super::report::Report;
use super::target::{self, Target};
use crate::runtime::attention;
use crate::runtime::context::Context;
use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::writes::patch_params;
use kmm_api::day0::{
    ClusterVersion, KMM_MANAGED_LABEL, MachineConfig, MachineConfigPool, ModuleDay0,
    ModuleDay0Status,
};
use kmm_api::day0::{node_update, reasons};
use kmm_api::kmm::ImageState;
use kmm_api::plural::count;

/// What the day-0 reconcilers share.
pub struct Day0Context {
    /// The engine's client, images and event recorder.
    pub engine: Arc<Context>,
    /// Every node, from the engine's shared node watch.
    pub nodes: SharedStore<Node>,
}

/// The error policy of the day-0 reconcilers: the engine's, on the day-0 context.
pub(super) fn error_policy<K: kube::Resource<DynamicType = ()>>(
    object: Arc<K>,
    error: &Error,
    context: Arc<Day0Context>,
) -> Action {
    crate::runtime::context::retry_on_error(object, error, context.engine.clone())
}

/// One pass over a ModuleDay0; a failure a person must act on is told on it (see [`attention`]).
pub(super) async fn reconcile(
    day0: Arc<ModuleDay0>,
    context: Arc<Day0Context>,
) -> Result<Action, Error> {
    let outcome = reconcile_day0(&day0, &context).await;
    attention::conclude_with_condition(&context.engine, day0.as_ref(), &outcome).await;
    outcome
}

/// One pass over a ModuleDay0: decide, act, and write the status saying why.
async fn reconcile_day0(day0: &ModuleDay0, context: &Day0Context) -> Result<Action, Error> {
    if day0.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let engine = &context.engine;
    let (report, machine_config, applied) = decide(day0, context).await?;
    write_status(engine, day0, &report, machine_config, applied).await?;
    Ok(engine.resync())
}

/// The pass' decision and actions: the report, the MachineConfig managed and the image applied (None: keep the
/// recorded one). Whenever the pass ends short of building an image, the MachineModuleImage asked by an earlier pass
/// goes, so no build runs for an image nothing will boot.
async fn decide(
    day0: &ModuleDay0,
    context: &Day0Context,
) -> Result<(Report, Option<String>, Option<String>), Error> {
    let engine = &context.engine;
    let managed = match managed(day0, context).await? {
        Ok(managed) => managed,
        Err(report) => {
            images::remove_mic(engine, day0).await?;
            return Ok((report, None, None));
        }
    };
    let (pool, config) = (&managed.pool, &managed.config);
    let pool_name = pool.name_any();
    let config_name = config.name_any();
    let _ = context.nodes.listed().await;
    let members = pools::members(pool, &context.nodes.state(), &managed.pools);
    let release = read_release(&engine.client).await?;
    let nodes_os = members.iter().find_map(|n| pools::os_image(n));
    let target = match target::decide(&day0.spec.os_mapping, &release, nodes_os) {
        Ok(target) => target,
        Err(undecided) => {
            images::remove_mic(engine, day0).await?;
            let report = Report::progressing(undecided.reason, undecided.message);
            return Ok((report, Some(config_name), None));
        }
    };
    let reached = members.iter().filter(|n| target.reached_by(n)).count();
    if config.spec.os_image_url.as_deref() == Some(target.image.as_str()) {
        images::remove_mic(engine, day0).await?;
        let report = rollout(pool, &members, reached, &target);
        return Ok((report, Some(config_name), Some(target.image)));
    }
    if members.is_empty() {
        images::remove_mic(engine, day0).await?;
        let report = Report::progressing(
            reasons::WAITING_FOR_POOL,
            format!(
                "pool {pool_name} has no nodes; nothing to move to {}",
                target.image
            ),
        );
        return Ok((report, Some(config_name), None));
    }
    if reached == members.len() {
        images::remove_mic(engine, day0).await?;
        let report = done(&pool_name, members.len(), &target, Some(&config_name));
        return Ok((report, Some(config_name), None));
    }
    let (report, applied) = move_to(day0, engine, &managed, &members, reached, &target).await?;
    Ok((report, Some(config_name), applied))
}

/// The pool a ModuleDay0 targets and the MachineConfig that boots it.
struct Managed {
    /// Every pool, as a node belongs to the most specific pool that selects it.
    pools: Vec<MachineConfigPool>,
    pool: MachineConfigPool,
    config: MachineConfig,
}

/// Find the pool and the MachineConfig the ModuleDay0 manages, or the report saying why it manages none: no pool
/// matches its selector, an older ModuleDay0 claimed the pool, or no MachineConfig of the pool is labelled for it.
async fn managed(
    day0: &ModuleDay0,
    context: &Day0Context,
) -> Result<Result<Managed, Report>, Error> {
    let client = context.engine.client.clone();
    let pools: Vec<MachineConfigPool> = Api::all(client.clone())
        .list(&ListParams::default())
        .await
        .doing(|| "listing MachineConfigPools".to_owned())?
        .items;
    let selector = &day0.spec.machine_config_pool_selector;
    let Some(pool) = pools::pool_for_selector(&pools, selector) else {
        return Ok(Err(Report::degraded(
            reasons::NO_POOL,
            format!(
                "no MachineConfigPool selects nodes by {}; machineConfigPoolSelector must equal a pool's nodeSelector",
                describe_selector(selector)
            ),
        )));
    };
    let pool_name = pool.name_any();
    // Read from the server, not a cache: the pass a claimant's deletion starts must not see it still there, or the
    // verdict "already managed" would stand with nothing left to start another pass.
    let day0s: Vec<ModuleDay0> = Api::all(client.clone())
        .list(&ListParams::default())
        .await
        .doing(|| "listing ModuleDay0s".to_owned())?
        .items;
    if let Some(first) = first_claim(day0, &day0s, &pools, &pool_name) {
        return Ok(Err(Report::degraded(
            reasons::DUPLICATE_POOL,
            format!(
                "pool {pool_name} is already managed by ModuleDay0 {first}; only one ModuleDay0 may target a pool: \
                 put every module in that one's image and delete this one"
            ),
        )));
    }
    let configs: Vec<MachineConfig> = Api::all(client)
        .list(&ListParams::default())
        .await
        .doing(|| "listing MachineConfigs".to_owned())?
        .items;
    let Some(config) = pools::managed_config(pool, &configs, &day0.name_any()) else {
        return Ok(Err(Report::degraded(
            reasons::NO_MACHINE_CONFIG,
            format!(
                "no MachineConfig labelled {KMM_MANAGED_LABEL}=true feeds pool {pool_name}; label the one whose \
                 osImageURL the pool boots"
            ),
        )));
    };
    Ok(Ok(Managed {
        pool: pool.clone(),
        config: config.clone(),
        pools,
    }))
}

/// Move the pool to the target image: through the image pipeline (checked, built, signed) first, and only once the
/// image exists point the MachineConfig at it. Returns the report and the image applied.
async fn move_to(
    day0: &ModuleDay0,
    engine: &Context,
    managed: &Managed,
    members: &[Arc<Node>],
    reached: usize,
    target: &Target,
) -> Result<(Report, Option<String>), Error> {
    let (pool, config) = (&managed.pool, &managed.config);
    let pool_name = pool.name_any();
    let config_name = config.name_any();
    let current_url = config.spec.os_image_url.as_deref();
    let kernel = members
        .iter()
        .find_map(|n| pools::kernel_version(n))
        .unwrap_or_default();
    let mic = images::ensure_mic(engine, day0, target, kernel).await?;
    // A rebuild asked from the console raises the MIC's generation above the ModuleDay0's.
    let generation = images::requested_generation(&mic, &target.image)
        .unwrap_or_else(|| images::generation(day0));
    let failed = mic.status.iter().flat_map(|s| &s.images_states).any(|s| {
        s.image == target.image
            && s.observed_generation.unwrap_or(1) == generation
            && s.status == ImageState::DoesNotExist
    });
    let sign_failed = failed
        && target.sign.is_some()
        && images::sign_failed(engine, day0, &target.image, generation).await?;
    let stage = images::stage(&mic, &target.image, generation, sign_failed);
    let applied = matches!(stage, ImageStage::Exists).then(|| target.image.clone());
    let report = match stage {
        ImageStage::Exists => {
            point_config_at(engine, config, &target.image).await?;
            let from = current_url.unwrap_or("the release's OS image");
            engine
                .event(
                    day0,
                    false,
                    "OsImageApplied",
                    format!("MachineConfig {config_name} now boots {} (was {from}); pool {pool_name} rolls", target.image),
                )
                .await;
            rollout(pool, members, reached, target)
        }
        ImageStage::Checking(message) => Report::progressing(reasons::CHECKING_IMAGE, message),
        ImageStage::WaitingForImage(message) => Report::progressing(
            reasons::WAITING_FOR_IMAGE,
            format!("{message}; push it or add a build section"),
        ),
        ImageStage::Building(message) => Report::progressing(reasons::BUILDING, message),
        ImageStage::Signing(message) => Report::progressing(reasons::SIGNING, message),
        ImageStage::Failed { reason, message } => Report::degraded(
            reason,
            format!(
                "{message}; MachineConfig {config_name} is left on {}: fix the cause and edit the ModuleDay0 to try again",
                current_url.unwrap_or("the release's OS image")
            ),
        ),
    };
    Ok((report, applied))
}

/// `namespace/name` of the ModuleDay0 that claimed `pool` before `day0`, if one did: the oldest, by creation
/// time and then by name, among those targeting the pool.
fn first_claim(
    day0: &ModuleDay0,
    all: &[ModuleDay0],
    pools: &[MachineConfigPool],
    pool: &str,
) -> Option<String> {
    let key = |d: &ModuleDay0| {
        (
            d.metadata.creation_timestamp.as_ref().map(|t| t.0),
            d.namespace().unwrap_or_default(),
            d.name_any(),
        )
    };
    let first = all
        .iter()
        .filter(|d| d.metadata.deletion_timestamp.is_none() && d.uid() != day0.uid())
        .filter(|d| {
            pools::pool_for_selector(pools, &d.spec.machine_config_pool_selector)
                .is_some_and(|p| p.name_any() == pool)
        })
        .min_by_key(|d| key(d))?;
    (key(first) < key(day0)).then(|| {
        format!(
            "{}/{}",
            first.namespace().unwrap_or_default(),
            first.name_any()
        )
    })
}

/// The release the cluster moves to and the OS image it ships.
async fn read_release(client: &kube::Client) -> Result<Release, Error> {
    let version = Api::<ClusterVersion>::all(client.clone())
        .get_opt("version")
        .await
        .doing(|| "reading ClusterVersion version".to_owned())?;
    let os_images = Api::<ConfigMap>::namespaced(client.clone(), OS_IMAGE_CONFIG_MAP_NAMESPACE)
        .get_opt(OS_IMAGE_CONFIG_MAP)
        .await
        .doing(|| {
            format!("reading ConfigMap {OS_IMAGE_CONFIG_MAP_NAMESPACE}/{OS_IMAGE_CONFIG_MAP}")
        })?;
    Ok(Release::read(version.as_ref(), os_images.as_ref()))
}

/// Set the MachineConfig's `osImageURL`, guarded by the resourceVersion it was read at.
async fn point_config_at(
    context: &Context,
    config: &MachineConfig,
    image: &str,
) -> Result<(), Error> {
    let name = config.name_any();
    let patch = json!({
        "metadata": {"resourceVersion": config.resource_version()},
        "spec": {"osImageURL": image},
    });
    Api::<MachineConfig>::all(context.client.clone())
        .patch(&name, &patch_params(), &Patch::Merge(&patch))
        .await
        .doing(|| format!("setting the osImageURL of MachineConfig {name}"))?;
    Ok(())
}

/// The report once the MachineConfig names the target image: the pool's rollout.
fn rollout(
    pool: &MachineConfigPool,
    members: &[Arc<Node>],
    reached: usize,
    target: &Target,
) -> Report {
    let pool_name = pool.name_any();
    let total = members.len();
    let failed: Vec<String> = members
        .iter()
        .filter(|n| {
            n.annotations().get(node_update::STATE).map(String::as_str)
                == Some(node_update::DEGRADED)
        })
        .map(|n| {
            let why = n
                .annotations()
                .get(node_update::REASON)
                .cloned()
                .unwrap_or_default();
            format!("{}: {why}", n.name_any())
        })
        .collect();
    if !failed.is_empty() {
        return Report::degraded(
            reasons::POOL_DEGRADED,
            format!(
                "{} of {} of pool {pool_name} failed to move to {} ({}); the pool stops rolling until they are fixed",
                failed.len(),
                count(total, "node"),
                target.image,
                failed.join("; ")
            ),
        );
    }
    if total == 0 {
        return Report::progressing(
            reasons::WAITING_FOR_POOL,
            format!("pool {pool_name} has no nodes"),
        );
    }
    if reached == total {
        return done(&pool_name, total, target, None);
    }
    if pool.spec.paused == Some(true) {
        return Report::progressing(
            reasons::WAITING_FOR_POOL,
            format!(
                "pool {pool_name} is paused with {reached} of {} updated; unpause it to roll the rest",
                count(total, "node")
            ),
        );
    }
    Report::progressing(
        reasons::ROLLING,
        format!(
            "{reached} of {} updated to {} ({})",
            count(total, "node"),
            target.image,
            target.describe_goal()
        ),
    )
}

/// The report when every node runs the target's OS.
fn done(pool: &str, total: usize, target: &Target, untouched: Option<&str>) -> Report {
    if let Some(note) = &target.upgrade_not_followed {
        return Report::available(reasons::LAYERED_IMAGE_KEPT, note.clone());
    }
    let mut message = if total == 1 {
        format!("the 1 node of pool {pool} runs {}", target.describe_goal())
    } else {
        format!(
            "all {total} nodes of pool {pool} run {}",
            target.describe_goal()
        )
    };
    match untouched {
        Some(config) => message.push_str(&format!("; MachineConfig {config} left as it is")),
        None => message.push_str(&format!(" from {}", target.image)),
    }
    Report::available(reasons::APPLIED, message)
}

/// A selector as `key=value,...`.
fn describe_selector(selector: &std::collections::BTreeMap<String, String>) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Write the status when it differs from what is stored (guarded by the resourceVersion the pass read), and
/// announce a new reason with an event.
async fn write_status(
    context: &Context,
    day0: &ModuleDay0,
    report: &Report,
    machine_config: Option<String>,
    applied: Option<String>,
) -> Result<(), Error> {
    let current = day0.status.clone().unwrap_or_default();
    let mut status: ModuleDay0Status = report.apply(&current, day0.metadata.generation);
    status.machine_config = machine_config;
    if applied.is_some() {
        status.applied_image = applied;
    }
    if status == current {
        return Ok(());
    }
    let namespace = day0.namespace().unwrap_or_default();
    let name = day0.name_any();
    let patch = json!({
        "metadata": {"resourceVersion": day0.resource_version()},
        "status": {
            "machineConfig": status.machine_config,
            "appliedImage": status.applied_image,
            "observedGeneration": status.observed_generation,
            "conditions": status.conditions,
        },
    });
    Api::<ModuleDay0>::namespaced(context.client.clone(), &namespace)
        .patch_status(&name, &patch_params(), &Patch::Merge(&patch))
        .await
        .doing(|| format!("writing the status of ModuleDay0 {namespace}/{name}"))?;
    let reason_before = |type_: &str| {
        current
            .conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status == "True")
            .map(|c| c.reason.clone())
    };
    let now_reason = report.reason();
    let previous = reason_before(kmm_api::conditions::DEGRADED)
        .or_else(|| reason_before(kmm_api::conditions::PROGRESSING))
        .or_else(|| reason_before(kmm_api::conditions::AVAILABLE));
    if previous.as_deref() != Some(now_reason) {
        context
            .event(
                day0,
                report.degraded.0,
                now_reason,
                report.message().to_owned(),
            )
            .await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::day0::target::Goal;

    fn target() -> Target {
        Target {
            image: "quay.io/acme/os:kmod".to_owned(),
            goal: Goal::Mapping("RHCOS 9.4".to_owned()),
            build: None,
            sign: None,
            upgrade_not_followed: None,
        }
    }

    fn pool(paused: bool) -> MachineConfigPool {
        serde_json::from_value(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
            "metadata": {"name": "worker"}, "spec": {"paused": paused},
        }))
        .expect("a MachineConfigPool")
    }

    fn nodes(count: usize) -> Vec<Arc<Node>> {
        (0..count)
            .map(|i| {
                let mut node = Node::default();
                node.metadata.name = Some(format!("n{i}"));
                Arc::new(node)
            })
            .collect()
    }

    #[test]
    fn pool_messages_count_one_node_as_one() {
        let one = nodes(1);
        assert_eq!(
            rollout(&pool(false), &one, 0, &target()).progressing.2,
            "0 of 1 node updated to quay.io/acme/os:kmod (RHCOS 9.4)"
        );
        assert_eq!(
            rollout(&pool(true), &one, 0, &target()).progressing.2,
            "pool worker is paused with 0 of 1 node updated; unpause it to roll the rest"
        );
        assert_eq!(
            rollout(&pool(false), &one, 1, &target()).available.2,
            "the 1 node of pool worker runs RHCOS 9.4 from quay.io/acme/os:kmod"
        );
        assert_eq!(
            rollout(&pool(false), &nodes(3), 3, &target()).available.2,
            "all 3 nodes of pool worker run RHCOS 9.4 from quay.io/acme/os:kmod"
        );
    }
}
