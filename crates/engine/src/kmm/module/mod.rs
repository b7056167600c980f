//! The Module reconciler: from one `Module` to one `ModuleImagesConfig` listing the images its nodes' kernels need,
//! and one `NodeModulesConfig` entry per targeted node whose image exists, with a status that says why the module
//! is, or is not, on each node.
//!
//! Triggers: the Module, its MIC, the NMCs that carry it (by their labels), its pull, worker, device plugin and DRA
//! driver pods, and nodes whose labels, taints, kernel, boot or readiness change (any of those can change which
//! nodes it targets).
//!
//! A pass reads nodes, NMCs and pods from caches the watches keep, never by listing them: one pass covers every
//! node, and passes follow each other closely while a rollout runs. The Module's own status writes start no pass
//! (see [`module_wiring`](crate::kmm::fingerprint::module_wiring)), so a Module with nothing to do costs nothing.

mod entries;
mod finalize;
mod images;
pub mod plan;
mod reconcile;
pub mod report;

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

use crate::kmm::fingerprint::module_wiring;
use crate::runtime::shared::{SharedStore, SharedWatches};
use crate::{kmm::kernel, runtime::context::Context, runtime::nodes};
use kmm_api::kmm::labels;
use kmm_api::kmm::{Module, ModuleImagesConfig, NodeModulesConfig};

/// What a Module pass reads besides the API: caches of every node, NMC, pull pod and worker pod, kept by watches
/// (nodes, NMCs and worker pods by the engine's shared ones).
pub struct ModuleContext {
    /// Client, images, events.
    pub engine: Arc<Context>,
    /// Every node, from the engine's shared node watch.
    pub nodes: SharedStore<Node>,
    /// Every NodeModulesConfig.
    pub nmcs: SharedStore<NodeModulesConfig>,
    /// Every pod labelled with the MIC it checks an image for.
    pub pull_pods: Store<Pod>,
    /// Every worker pod.
    pub worker_pods: SharedStore<Pod>,
    /// Every device plugin and DRA driver pod (an ordered upgrade waits for them to leave a node).
    pub plugin_pods: Store<Pod>,
}

/// The Module reconciler, subscribed to the engine's shared node, NodeModulesConfig and worker pod watches now
/// (before they start); the future runs it until `stop` is cancelled.
pub fn run(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let watched = Watched {
        nodes: shared.nodes(),
        node_changes: shared.node_changes(node_fingerprint),
        nmcs: shared.nmcs(),
        nmc_changes: shared.nmc_changes(),
        worker_pods: shared.workers(),
        worker_changes: shared.worker_changes(),
    };
    reconcile_modules(context, watched, stop)
}

/// The shared caches a Module pass reads and the changes that start passes.
struct Watched<N, C, W> {
    nodes: SharedStore<Node>,
    node_changes: N,
    nmcs: SharedStore<NodeModulesConfig>,
    nmc_changes: C,
    worker_pods: SharedStore<Pod>,
    worker_changes: W,
}

async fn reconcile_modules<N, C, W>(
    context: Arc<Context>,
    watched: Watched<N, C, W>,
    stop: CancellationToken,
) where
    N: futures::Stream<Item = Arc<Node>> + Send + 'static,
    C: futures::Stream<Item = Arc<NodeModulesConfig>> + Send + 'static,
    W: futures::Stream<Item = Arc<Pod>> + Send + 'static,
{
    let client = context.client.clone();
    let (pull_pods, pull_writer) = reflector::store();
    let pull_changes = pull_pod_changes(&client, pull_writer);
    let (plugin_pods, plugin_writer) = reflector::store();
    let plugin_changes = plugin_pod_changes(&client, plugin_writer);
    let wiring = module_wiring(&context, "module");
    let modules = wiring.store();
    let module_context = Arc::new(ModuleContext {
        engine: context,
        nodes: watched.nodes,
        nmcs: watched.nmcs,
        pull_pods,
        worker_pods: watched.worker_pods,
        plugin_pods,
    });
    wiring
        .with(|controller| {
            controller
                .owns(
                    Api::<ModuleImagesConfig>::all(client),
                    watcher::Config::default(),
                )
                .watches_shared_stream(watched.node_changes, move |_node: Arc<Node>| {
                    modules
                        .state()
                        .iter()
                        .map(|m| ObjectRef::from_obj(m.as_ref()))
                        .collect::<Vec<_>>()
                })
                .watches_shared_stream(watched.nmc_changes, |nmc: Arc<NodeModulesConfig>| {
                    modules_of_nmc(&nmc)
                })
                .watches_stream(pull_changes, |pod: Pod| {
                    module_of_pod(&pod, labels::IMAGE_OWNER)
                })
                .watches_shared_stream(watched.worker_changes, |pod: Arc<Pod>| {
                    module_of_pod(&pod, labels::MODULE_NAME)
                })
                .watches_stream(plugin_changes, |pod: Pod| {
                    module_of_pod(&pod, labels::MODULE_NAME)
                })
        })
        .drive(
            reconcile::paced,
            reconcile::error_policy,
            module_context,
            &stop,
            "Module",
        )
        .await;
}

/// Changes of the pods that check a MIC's images, mirrored into `writer` (without `managedFields`) before they
/// start a pass.
fn pull_pod_changes(
    client: &kube::Client,
    writer: reflector::store::Writer<Pod>,
) -> impl futures::Stream<Item = Result<Pod, watcher::Error>> + Send + 'static {
    watcher(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(labels::IMAGE_OWNER),
    )
    .modify(|pod: &mut Pod| pod.meta_mut().managed_fields = None)
    .default_backoff()
    .reflect(writer)
    .applied_objects()
}

/// Changes of the Modules' device plugin and DRA driver pods (only their coming and going matters here), mirrored
/// into `writer`.
fn plugin_pod_changes(
    client: &kube::Client,
    writer: reflector::store::Writer<Pod>,
) -> impl futures::Stream<Item = Result<Pod, watcher::Error>> + Send + 'static {
    let role = format!(
        "{} in ({},{})",
        labels::DAEMONSET_ROLE,
        labels::DEVICE_PLUGIN_ROLE,
        labels::DRA_ROLE
    );
    watcher(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(&role),
    )
    .modify(|pod: &mut Pod| pod.meta_mut().managed_fields = None)
    .default_backoff()
    .reflect(writer)
    .touched_objects()
    .predicate_filter(pod_placement, Default::default())
}

/// What about a device plugin or DRA driver pod matters to its Module: the node it is on, and whether it is going.
fn pod_placement(pod: &Pod) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .hash(&mut hasher);
    pod.metadata.deletion_timestamp.is_some().hash(&mut hasher);
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
fn modules_of_nmc(nmc: &NodeModulesConfig) -> Vec<ObjectRef<Module>> {
    let mut modules = Vec::new();
    for key in nmc.metadata.labels.iter().flat_map(|l| l.keys()) {
        let Some(rest) = key.strip_prefix(labels::NMC_LABEL_PREFIX) else {
            continue;
        };
        let Some(pair) = rest
            .strip_suffix(labels::MODULE_CONFIGURED_SUFFIX)
            .or_else(|| rest.strip_suffix(labels::MODULE_IN_USE_SUFFIX))
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
