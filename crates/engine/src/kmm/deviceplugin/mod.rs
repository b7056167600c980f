//! The device plugin reconciler: for each Module with `spec.devicePlugin`, one DaemonSet that runs the plugin on
//! the nodes where the module is loaded, as upstream KMM runs it.
//!
//! - Nodes the Module selects, that are not cordoned and whose taints its tolerations allow, carry
//!   `kmm.node.kubernetes.io/<ns>.<module>.device-plugin-target`; the DaemonSet's node selector asks for that label
//!   and the module's `…ready` label (and, during an ordered upgrade, the `version-schedule-pod` label of its
//!   version), so a plugin starts only where its driver is loaded and leaves a node cordoned for a drain. A Module
//!   without a loader places its plugin by its own selector.
//! - One DaemonSet per module version (`<module>-device-plugin-<five characters from the version>`, labelled
//!   `kmm.node.kubernetes.io/role=device-plugin` and with the Module's name); the DaemonSet of an earlier version is deleted once it places its
//!   plugin on no node.
//! - Nodes where a plugin pod is ready carry `…device-plugin-ready`.
//! - `status.devicePlugin`: `nodesMatchingSelectorNumber` and `desiredNumber` count the target nodes,
//!   `availableNumber` the available plugin pods of every version.
//! - A deleted Module, or one that no longer asks for a plugin, loses its DaemonSets and both labels ([`cleanup`]);
//!   the Module's finalizer waits for the plugin pods to be gone before the module is unloaded.
//!
//! Triggers: the Module (spec, finalizers, deletion), its DaemonSets, its plugin pods and nodes whose labels, taints,
//! cordon or readiness change. Everything is read from caches and decided afresh on each pass, so passes are
//! idempotent and a restarted engine carries on.

pub(super) mod cleanup;
mod daemonset;
mod node_labels;
mod reconcile;

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

use crate::kmm::fingerprint::module_wiring;
use crate::runtime::context::Context;
use crate::runtime::nodes;
use crate::runtime::shared::{SharedStore, SharedWatches};
use kmm_api::kmm::Module;
use kmm_api::kmm::labels;

/// What a device plugin pass reads besides the API.
pub(super) struct DevicePluginContext {
    /// Client, events, resync.
    pub engine: Arc<Context>,
    /// Every node, from the engine's shared node watch.
    pub nodes: SharedStore<Node>,
    /// Every device plugin DaemonSet.
    pub daemon_sets: Store<DaemonSet>,
    /// Every device plugin pod.
    pub pods: Store<Pod>,
}

/// The device plugin reconciler, subscribed to the engine's shared node watch now (before it starts); the future
/// runs it until `stop` is cancelled.
pub(super) fn run(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let nodes = shared.nodes();
    let node_changes = shared.node_changes(node_fingerprint);
    reconcile_plugins(context, nodes, node_changes, stop)
}

async fn reconcile_plugins<N>(
    context: Arc<Context>,
    nodes: SharedStore<Node>,
    node_changes: N,
    stop: CancellationToken,
) where
    N: futures::Stream<Item = Arc<Node>> + Send + 'static,
{
    let client = context.client.clone();
    let role = format!("{}={}", labels::DAEMONSET_ROLE, labels::DEVICE_PLUGIN_ROLE);
    let (daemon_sets, daemon_set_writer) = reflector::store();
    let daemon_set_changes = watcher(
        Api::<DaemonSet>::all(client.clone()),
        watcher::Config::default().labels(&role),
    )
    .modify(|ds: &mut DaemonSet| ds.meta_mut().managed_fields = None)
    .default_backoff()
    .reflect(daemon_set_writer)
    .applied_objects();
    let (pods, pod_writer) = reflector::store();
    let pod_changes = watcher(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(&role),
    )
    .modify(|pod: &mut Pod| pod.meta_mut().managed_fields = None)
    .default_backoff()
    .reflect(pod_writer)
    .touched_objects();
    let wiring = module_wiring(&context, "deviceplugin");
    let modules = wiring.store();
    let plugin_context = Arc::new(DevicePluginContext {
        engine: context,
        nodes,
        daemon_sets,
        pods,
    });
    wiring
        .with(|controller| {
            controller
                .watches_stream(daemon_set_changes, |ds: DaemonSet| {
                    reconcile::controlling_module(&ds)
                })
                .watches_stream(pod_changes, |pod: Pod| module_of_pod(&pod))
                .watches_shared_stream(node_changes, move |_node: Arc<Node>| {
                    modules
                        .state()
                        .iter()
                        .filter(|m| m.spec.device_plugin.is_some())
                        .map(|m| ObjectRef::from_obj(m.as_ref()))
                        .collect::<Vec<_>>()
                })
        })
        .drive(
            reconcile::reconcile,
            reconcile::error_policy,
            plugin_context,
            &stop,
            "device plugin",
        )
        .await;
}

/// What about a node decides where plugins run: labels, taints, cordon and readiness.
fn node_fingerprint(node: &Node) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    node.metadata.labels.hash(&mut hasher);
    if let Some(spec) = &node.spec {
        spec.unschedulable.hash(&mut hasher);
        for taint in spec.taints.iter().flatten() {
            (&taint.key, &taint.value, &taint.effect).hash(&mut hasher);
        }
    }
    nodes::is_ready(node).hash(&mut hasher);
    hasher.finish()
}

/// The Module a device plugin pod runs for (its namespace and `module.name` label).
fn module_of_pod(pod: &Pod) -> Option<ObjectRef<Module>> {
    let name = pod.metadata.labels.as_ref()?.get(labels::MODULE_NAME)?;
    let namespace = pod.metadata.namespace.as_deref()?;
    Some(ObjectRef::new(name).within(namespace))
}
