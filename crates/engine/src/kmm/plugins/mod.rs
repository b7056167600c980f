//! What a Module's device plugin and its DRA driver have in common, as upstream KMM runs both: a DaemonSet per
//! module version placed on the nodes where the module is loaded, two node labels (`…-target` where the workload
//! may run, `…-ready` where it runs and is ready), counts in the Module's status, and removal before the module is
//! unloaded. [`Role`] says which of the two a pass is about; [`crate::kmm::deviceplugin`] and [`crate::kmm::dra`]
//! add what only one of them has (the kubelet directories each mounts, the DRA driver's DeviceClasses and version
//! gate).
//!
//! - [`daemonset`] shapes the DaemonSet; [`rollout`] places it, counts it and takes it away; [`node_labels`] keeps
//!   the two labels; [`cleanup`] removes everything straight from the API (also from the Module's finalizer).
//! - Triggers: the Module (spec, finalizers, deletion), the role's DaemonSets and pods, and nodes whose labels,
//!   taints, cordon or readiness change. Everything is read from caches and decided afresh on each pass.

pub(super) mod cleanup;
pub(super) mod daemonset;
pub(super) mod node_labels;
pub(super) mod rollout;

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Resource;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

use crate::kmm::fingerprint::module_wiring;
use crate::runtime::context::{Context, Error};
use crate::runtime::nodes;
use crate::runtime::shared::{SharedStore, SharedWatches};
use kmm_api::kmm::Module;
use kmm_api::kmm::labels;

/// Which of a Module's node workloads a DaemonSet, pod, label or status field belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// `spec.devicePlugin`.
    DevicePlugin,
    /// `spec.dra`.
    Dra,
}

impl Role {
    /// Value of [`labels::DAEMONSET_ROLE`] on the role's DaemonSets and pods.
    pub(crate) fn label_value(self) -> &'static str {
        match self {
            Role::DevicePlugin => labels::DEVICE_PLUGIN_ROLE,
            Role::Dra => labels::DRA_ROLE,
        }
    }

    /// Label selector of every DaemonSet and pod of the role.
    pub(crate) fn selector(self) -> String {
        format!("{}={}", labels::DAEMONSET_ROLE, self.label_value())
    }

    /// Node label: the Module's workload may run on the node.
    pub(crate) fn target_label(self, namespace: &str, module: &str) -> String {
        match self {
            Role::DevicePlugin => labels::device_plugin_target_label(namespace, module),
            Role::Dra => labels::dra_target_label(namespace, module),
        }
    }

    /// Node label: the Module's workload runs and is ready on the node.
    pub(crate) fn ready_label(self, namespace: &str, module: &str) -> String {
        match self {
            Role::DevicePlugin => labels::device_plugin_ready_label(namespace, module),
            Role::Dra => labels::dra_ready_label(namespace, module),
        }
    }

    /// Annotation holding the hash of the DaemonSet the engine wrote.
    pub(crate) fn hash_annotation(self) -> &'static str {
        match self {
            Role::DevicePlugin => labels::DEVICE_PLUGIN_HASH,
            Role::Dra => labels::DRA_HASH,
        }
    }

    /// Name of the main container (`<name>-init` for the init container), as upstream names them.
    pub(crate) fn container_name(self) -> &'static str {
        match self {
            Role::DevicePlugin => "device-plugin",
            Role::Dra => "dra",
        }
    }

    /// The role in the engine's messages.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Role::DevicePlugin => "device plugin",
            Role::Dra => "DRA driver",
        }
    }

    /// Field of `Module.status` that counts the role's nodes.
    pub(crate) fn status_field(self) -> &'static str {
        match self {
            Role::DevicePlugin => "devicePlugin",
            Role::Dra => "dra",
        }
    }

    /// Reason of the Event told when the role's DaemonSet is created.
    pub(crate) fn created_reason(self) -> &'static str {
        match self {
            Role::DevicePlugin => "DevicePluginCreated",
            Role::Dra => "DRADriverCreated",
        }
    }

    /// Whether the Module asks for the role's workload.
    pub(crate) fn wanted_by(self, module: &Module) -> bool {
        match self {
            Role::DevicePlugin => module.spec.device_plugin.is_some(),
            Role::Dra => module.spec.dra.is_some(),
        }
    }
}

/// What a pass of one role reads besides the API.
pub(crate) struct PluginContext {
    /// Client, events, resync.
    pub engine: Arc<Context>,
    /// The workload this reconciler runs.
    pub role: Role,
    /// Every node, from the engine's shared node watch.
    pub nodes: SharedStore<Node>,
    /// Every DaemonSet of the role.
    pub daemon_sets: Store<DaemonSet>,
    /// Every pod of the role.
    pub pods: Store<Pod>,
}

/// The reconciler of `role`, subscribed to the engine's shared node watch now (before it starts); the future runs
/// `reconcile` on every Module until `stop` is cancelled.
pub(super) fn run<R, Fut>(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
    role: Role,
    reconcile: R,
) -> impl Future<Output = ()> + Send + 'static
where
    R: FnMut(Arc<Module>, Arc<PluginContext>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Action, Error>> + Send + 'static,
{
    let nodes = shared.nodes();
    let node_changes = shared.node_changes(node_fingerprint);
    reconcile_role(context, nodes, node_changes, stop, role, reconcile)
}

async fn reconcile_role<N, R, Fut>(
    context: Arc<Context>,
    nodes: SharedStore<Node>,
    node_changes: N,
    stop: CancellationToken,
    role: Role,
    reconcile: R,
) where
    N: futures::Stream<Item = Arc<Node>> + Send + 'static,
    R: FnMut(Arc<Module>, Arc<PluginContext>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Action, Error>> + Send + 'static,
{
    let client = context.client.clone();
    let selector = role.selector();
    let (daemon_sets, daemon_set_writer) = reflector::store();
    let daemon_set_changes = watcher(
        Api::<DaemonSet>::all(client.clone()),
        watcher::Config::default().labels(&selector),
    )
    .modify(|ds: &mut DaemonSet| ds.meta_mut().managed_fields = None)
    .default_backoff()
    .reflect(daemon_set_writer)
    .applied_objects();
    let (pods, pod_writer) = reflector::store();
    let pod_changes = watcher(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(&selector),
    )
    .modify(|pod: &mut Pod| pod.meta_mut().managed_fields = None)
    .default_backoff()
    .reflect(pod_writer)
    .touched_objects();
    let (metered, what) = match role {
        Role::DevicePlugin => ("deviceplugin", "device plugin"),
        Role::Dra => ("dra", "DRA driver"),
    };
    let wiring = module_wiring(&context, metered);
    let modules = wiring.store();
    let plugin_context = Arc::new(PluginContext {
        engine: context,
        role,
        nodes,
        daemon_sets,
        pods,
    });
    wiring
        .with(|controller| {
            controller
                .watches_stream(daemon_set_changes, |ds: DaemonSet| {
                    rollout::controlling_module(&ds)
                })
                .watches_stream(pod_changes, |pod: Pod| module_of_pod(&pod))
                .watches_shared_stream(node_changes, move |_node: Arc<Node>| {
                    modules
                        .state()
                        .iter()
                        .filter(|m| role.wanted_by(m))
                        .map(|m| ObjectRef::from_obj(m.as_ref()))
                        .collect::<Vec<_>>()
                })
        })
        .drive(
            reconcile,
            rollout::error_policy,
            plugin_context,
            &stop,
            what,
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

/// The Module a plugin pod runs for (its namespace and `module.name` label).
fn module_of_pod(pod: &Pod) -> Option<ObjectRef<Module>> {
    let name = pod.metadata.labels.as_ref()?.get(labels::MODULE_NAME)?;
    let namespace = pod.metadata.namespace.as_deref()?;
    Some(ObjectRef::new(name).within(namespace))
}
