//! The Module reconciler: from one `Module` to one `ModuleImagesConfig` listing the images its nodes' kernels need,
//! and one `NodeModulesConfig` entry per targeted node whose image exists, with a status that says why the module
//! is, or is not, on each node.
//!
//! Triggers: the Module, its MIC, the NMCs that carry it (by their labels), its pull and worker pods, and nodes whose
//! labels, taints, kernel, boot or readiness change (any of those can change which nodes it targets).
//!
//! A pass reads nodes, NMCs and pods from caches the watches keep, never by listing them: one pass covers every
//! node, and passes follow each other closely while a rollout runs. The Module's own status writes start no pass
//! (see [`module_fingerprint`]), so a Module with nothing to do costs nothing.

mod entries;
mod finalize;
mod images;
pub mod plan;
mod reconcile;
pub mod report;

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

use super::shared::SharedWatches;
use super::stopping;
use super::{Context, kernel, labels, nodes};
use crate::api::kmm::{Module, ModuleImagesConfig, NodeModulesConfig};

/// What a Module pass reads besides the API: caches of every node, NMC, pull pod and worker pod, kept by watches.
pub struct ModuleContext {
    /// Client, images, events.
    pub engine: Arc<Context>,
    /// Every node, from the engine's shared node watch.
    pub nodes: Store<Node>,
    /// Every NodeModulesConfig.
    pub nmcs: Store<NodeModulesConfig>,
    /// Every pod labelled with the MIC it checks an image for.
    pub pull_pods: Store<Pod>,
    /// Every worker pod.
    pub worker_pods: Store<Pod>,
}

/// The Module reconciler, subscribed to the engine's shared node watch now (before it starts); the future runs it
/// until `stop` is cancelled.
pub fn run(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let node_changes = shared.node_changes(node_fingerprint);
    let nodes = shared.nodes();
    reconcile_modules(context, nodes, node_changes, stop)
}

async fn reconcile_modules(
    context: Arc<Context>,
    nodes: Store<Node>,
    node_changes: impl futures::Stream<Item = Arc<Node>> + Send + 'static,
    stop: CancellationToken,
) {
    let client = context.client.clone();
    let (modules, module_writer) = reflector::store();
    let module_changes = watcher(
        Api::<Module>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(module_writer)
    .applied_objects()
    .predicate_filter(module_fingerprint, Default::default());
    let (nmcs, nmc_writer) = reflector::store();
    let nmc_changes = watcher(
        Api::<NodeModulesConfig>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(nmc_writer)
    .applied_objects();
    let (pull_pods, pull_writer) = reflector::store();
    let pull_changes = pod_changes(&client, labels::IMAGE_OWNER, pull_writer);
    let (worker_pods, worker_writer) = reflector::store();
    let worker_changes = pod_changes(&client, labels::WORKER_ACTION, worker_writer);
    let controller = Controller::for_stream(module_changes, modules);
    let modules = controller.store();
    let own_store = modules.clone();
    let module_context = Arc::new(ModuleContext {
        engine: context,
        nodes,
        nmcs,
        pull_pods,
        worker_pods,
    });
    let passes = controller
        .owns(
            Api::<ModuleImagesConfig>::all(client),
            watcher::Config::default(),
        )
        .watches_shared_stream(node_changes, move |_node: Arc<Node>| {
            modules
                .state()
                .iter()
                .map(|m| ObjectRef::from_obj(m.as_ref()))
                .collect::<Vec<_>>()
        })
        .watches_stream(nmc_changes, modules_of_nmc)
        .watches_stream(pull_changes, |pod: Pod| {
            module_of_pod(&pod, labels::IMAGE_OWNER)
        })
        .watches_stream(worker_changes, |pod: Pod| {
            module_of_pod(&pod, labels::MODULE_NAME)
        })
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(reconcile::paced, reconcile::error_policy, module_context)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "module reconcile");
            }
        });
    stopping::until_stopped(passes, &own_store, &stop).await;
}

/// Changes of the pods carrying `label`, mirrored into `writer` before they start a pass.
fn pod_changes(
    client: &kube::Client,
    label: &str,
    writer: reflector::store::Writer<Pod>,
) -> impl futures::Stream<Item = Result<Pod, watcher::Error>> + Send + 'static {
    watcher(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(label),
    )
    .default_backoff()
    .reflect(writer)
    .applied_objects()
}

/// What about a Module starts a pass: its spec (through the generation), its finalizers and its deletion. The
/// status is left out: it is this reconciler's own output, and a pass over thousands of nodes after each status
/// write would never let a busy Module rest.
fn module_fingerprint(module: &Module) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    module.metadata.generation.hash(&mut hasher);
    module.metadata.finalizers.hash(&mut hasher);
    module
        .metadata
        .deletion_timestamp
        .is_some()
        .hash(&mut hasher);
    Some(hasher.finish())
}

/// What about a node matters to Modules: labels, taints, kernel, boot and readiness (not heartbeats).
fn node_fingerprint(node: &Node) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    node.metadata.labels.hash(&mut hasher);
    if let Some(taints) = node.spec.as_ref().and_then(|s| s.taints.as_ref()) {
        for taint in taints {
            (&taint.key, &taint.value, &taint.effect).hash(&mut hasher);
        }
    }
    kernel::node_kernel(node).hash(&mut hasher);
    kernel::node_boot_id(node).hash(&mut hasher);
    nodes::is_ready(node).hash(&mut hasher);
    hasher.finish()
}

/// The Modules an NMC's `module-configured` and `module-in-use` labels name.
fn modules_of_nmc(nmc: NodeModulesConfig) -> Vec<ObjectRef<Module>> {
    let mut modules = Vec::new();
    for key in nmc.metadata.labels.iter().flat_map(|l| l.keys()) {
        let Some(rest) = key.strip_prefix("beta.kmm.node.kubernetes.io/") else {
            continue;
        };
        let Some(pair) = rest
            .strip_suffix(".module-configured")
            .or_else(|| rest.strip_suffix(".module-in-use"))
        else {
            continue;
        };
        // Namespaces are DNS labels (no dots), so the first dot ends the namespace.
        if let Some((namespace, name)) = pair.split_once('.') {
            let module = ObjectRef::new(name).within(namespace);
            if !modules.contains(&module) {
                modules.push(module);
            }
        }
    }
    modules
}

/// The Module a pod works for, named by one of its labels.
fn module_of_pod(pod: &Pod, label: &str) -> Option<ObjectRef<Module>> {
    let name = pod.metadata.labels.as_ref()?.get(label)?;
    let namespace = pod.metadata.namespace.as_deref()?;
    Some(ObjectRef::new(name).within(namespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module() -> Module {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": "m", "namespace": "ns", "generation": 1, "resourceVersion": "10"},
            "spec": {"selector": {}},
        }))
        .expect("a Module")
    }

    #[test]
    fn a_status_write_does_not_change_the_fingerprint() {
        let before = module();
        let mut after = module();
        after.metadata.resource_version = Some("11".into());
        after.status = Some(serde_json::from_value(serde_json::json!({
            "moduleLoader": {"nodesMatchingSelectorNumber": 3, "desiredNumber": 3, "availableNumber": 2},
        }))
        .expect("a status"));
        assert_eq!(module_fingerprint(&before), module_fingerprint(&after));
    }

    #[test]
    fn spec_finalizer_and_deletion_changes_change_the_fingerprint() {
        let base = module_fingerprint(&module());
        let mut spec = module();
        spec.metadata.generation = Some(2);
        let mut finalized = module();
        finalized.metadata.finalizers = Some(vec![labels::MODULE_FINALIZER.to_owned()]);
        let mut deleting = module();
        deleting.metadata.deletion_timestamp = Some(
            serde_json::from_value(serde_json::json!("2026-01-01T00:00:00Z")).expect("a time"),
        );
        for changed in [spec, finalized, deleting] {
            assert_ne!(base, module_fingerprint(&changed));
        }
    }
}
