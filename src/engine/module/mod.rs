//! The Module reconciler: from one `Module` to one `ModuleImagesConfig` listing the images its nodes' kernels need,
//! and one `NodeModulesConfig` entry per targeted node whose image exists, with a status that says why the module
//! is, or is not, on each node.
//!
//! Triggers: the Module, its MIC, the NMCs that carry it (by their labels), its pull and worker pods, and nodes whose
//! labels, taints, kernel, boot or readiness change (any of those can change which nodes it targets).

mod entries;
mod finalize;
mod images;
pub mod plan;
mod reconcile;
pub mod report;

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

use super::{Context, kernel, labels, nodes};
use crate::api::kmm::{Module, ModuleImagesConfig, NodeModulesConfig};

/// What a Module pass reads besides the API: caches of every node and NMC, kept by watches.
pub struct ModuleContext {
    /// Client, images, events.
    pub engine: Arc<Context>,
    /// Every node.
    pub nodes: Store<Node>,
    /// Every NodeModulesConfig.
    pub nmcs: Store<NodeModulesConfig>,
}

/// Run the Module reconciler until `stop` is cancelled.
pub async fn run(context: Arc<Context>, stop: CancellationToken) {
    let client = context.client.clone();
    let (nodes, node_writer) = reflector::store();
    let (nmcs, nmc_writer) = reflector::store();
    let node_changes = watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(node_writer)
        .applied_objects()
        .predicate_filter(node_fingerprint, Default::default());
    let nmc_changes = watcher(
        Api::<NodeModulesConfig>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(nmc_writer)
    .applied_objects();
    let controller = Controller::new(
        Api::<Module>::all(client.clone()),
        watcher::Config::default(),
    );
    let modules = controller.store();
    let module_context = Arc::new(ModuleContext {
        engine: context,
        nodes,
        nmcs,
    });
    controller
        .owns(
            Api::<ModuleImagesConfig>::all(client.clone()),
            watcher::Config::default(),
        )
        .watches_stream(node_changes, move |_node: Node| {
            modules
                .state()
                .iter()
                .map(|m| ObjectRef::from_obj(m.as_ref()))
                .collect::<Vec<_>>()
        })
        .watches_stream(nmc_changes, modules_of_nmc)
        .watches(
            Api::<Pod>::all(client.clone()),
            watcher::Config::default().labels(labels::IMAGE_OWNER),
            |pod: Pod| module_of_pod(&pod, labels::IMAGE_OWNER),
        )
        .watches(
            Api::<Pod>::all(client),
            watcher::Config::default().labels(labels::WORKER_ACTION),
            |pod: Pod| module_of_pod(&pod, labels::MODULE_NAME),
        )
        .graceful_shutdown_on(stop.cancelled_owned())
        .run(
            reconcile::reconcile,
            reconcile::error_policy,
            module_context,
        )
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "module reconcile");
            }
        })
        .await;
}

/// What about a node matters to Modules: labels, taints, kernel, boot and readiness (not heartbeats).
fn node_fingerprint(node: &Node) -> Option<u64> {
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
    Some(hasher.finish())
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
