//! The NodeModulesConfig reconciler: runs the worker pods that load and unload kernel modules on a node, records
//! what they did in the NMC status, and labels the node with the modules it runs.
//!
//! Each NMC (cluster-scoped, named after its node) lists in its spec the modules the node must run and in its status
//! the modules the node runs. A pass compares the two with the node's worker pods and takes one step per module:
//! load, unload first when the configuration changed, reload after a reboot, replace a worker crash-looping on an
//! outdated template. Passes start on changes of the NMC, of its worker pods and of the node (kernel, boot,
//! readiness, labels, taints), and once per resync period.

mod garbage;
mod node_labels;
mod pass;
mod plan;
mod settle;
mod template;
#[cfg(test)]
mod testing;
mod workers;

use crate::runtime::family::Family;
use crate::runtime::metrics::Listed;
use crate::runtime::wiring::{Metered, Wiring};
use std::fmt;
use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::ObjectRef;

use crate::runtime::shared::{SharedStore, SharedWatches};
use tokio_util::sync::CancellationToken;

use crate::runtime::context::{Context, Error, KubeResultExt, retry_on_error};
use crate::{kmm::kernel, runtime::attention, runtime::nodes};
use kmm_api::kmm::{NodeModuleSpec, NodeModuleStatus, NodeModulesConfig};

/// How many NMCs are reconciled at once. A rollout wakes every node's NMC together; unbounded, thousands of passes
/// would hold their API calls in flight at once, and the calls of every other reconciler would queue behind them.
/// A pass is a few round trips that mostly wait on the API server, so too few at once leave the cores idle: 16
/// held a 5,000-node rollout to about 35 nodes a second at half the machine's CPU.
const CONCURRENT_PASSES: u16 = 64;

/// The reconciler, subscribed to the engine's shared node, NodeModulesConfig and worker pod watches now (before
/// they start); the future runs it until `stop` is cancelled.
pub fn run(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let node_changes = shared.node_changes(fingerprint);
    let nmcs = shared.nmcs();
    let listed = {
        let nmcs = nmcs.clone();
        Listed::after(async move { nmcs.listed().await })
    };
    let nmc_changes = shared.nmc_changes();
    let worker_changes = shared.worker_changes();
    let controller = Controller::for_shared_stream(nmc_changes, nmcs.controller_store())
        .owns_shared_stream(worker_changes)
        .watches_shared_stream(node_changes, move |node: Arc<Node>| {
            nmc_of_node(&nmcs, &node)
        });
    async move {
        let answer_context = context.clone();
        Wiring::shared(
            &context,
            Metered::new("nodemodulesconfig", Family::Kmm).at_most(CONCURRENT_PASSES),
            controller,
            listed,
        )
            .drive_answering(reconcile, retry_on_error, context, &stop, |outcome| {
                let context = answer_context.clone();
                async move {
                    match outcome {
                        Ok(_) => {}
                        // A worker pod or a deletion woke an NMC that is gone: its pods wait for their finalizer.
                        Err(controller::Error::ObjectNotFound(object)) => {
                            if let Err(error) =
                                workers::release_orphans(&context, &object.name).await
                            {
                                tracing::warn!(%error, "releasing worker pods of a deleted NodeModulesConfig");
                            }
                        }
                        Err(error) => tracing::debug!(%error, "NodeModulesConfig reconciler"),
                    }
                }
            })
            .await;
    }
}

/// One pass over the NMC; a failure a person must act on is told on it (see [`attention`]).
async fn reconcile(object: Arc<NodeModulesConfig>, ctx: Arc<Context>) -> Result<Action, Error> {
    let outcome = reconcile_nmc(&object, &ctx).await;
    attention::conclude(&ctx, object.as_ref(), &outcome).await;
    outcome
}

/// One pass over the NMC, read afresh (the controller's copy may predate this reconciler's own last status write,
/// and acting on it would load a module twice).
async fn reconcile_nmc(object: &NodeModulesConfig, ctx: &Context) -> Result<Action, Error> {
    let name = object.name_any();
    let nmc = Api::<NodeModulesConfig>::all(ctx.client.clone())
        .get_opt(&name)
        .await
        .doing(|| format!("reading NodeModulesConfig {name}"))?;
    let Some(nmc) = nmc else {
        workers::release_orphans(ctx, &name).await?;
        return Ok(Action::await_change());
    };
    let node = Api::<Node>::all(ctx.client.clone())
        .get_opt(&name)
        .await
        .doing(|| format!("reading node {name}"))?;
    // Without its node the NMC is garbage: it is owned by the node, so the collector removes it and its pods.
    if let Some(node) = node {
        pass::reconcile_node(ctx, nmc, &node).await?;
    }
    Ok(ctx.resync())
}

/// A module, by namespace and name, as NMC entries, worker pods and labels name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct ModuleKey {
    namespace: String,
    name: String,
}

impl ModuleKey {
    fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    fn of_spec(entry: &NodeModuleSpec) -> Self {
        Self::new(&entry.namespace, &entry.name)
    }

    fn of_status(entry: &NodeModuleStatus) -> Self {
        Self::new(&entry.namespace, &entry.name)
    }
}

impl fmt::Display for ModuleKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The NMC of a node whose kernel, boot, readiness, labels or taints changed (the shared watch passes only those,
/// see [`fingerprint`]), when it has one: node status heartbeats and nodes without modules start no pass.
fn nmc_of_node(
    nmcs: &SharedStore<NodeModulesConfig>,
    node: &Node,
) -> Option<ObjectRef<NodeModulesConfig>> {
    let nmc = ObjectRef::new(node.metadata.name.as_deref()?);
    nmcs.get(&nmc).is_some().then_some(nmc)
}

/// A digest of what the reconciler reads of a node.
fn fingerprint(node: &Node) -> u64 {
    let mut hasher = DefaultHasher::new();
    kernel::node_kernel(node).hash(&mut hasher);
    kernel::node_boot_id(node).hash(&mut hasher);
    nodes::is_ready(node).hash(&mut hasher);
    node.labels().hash(&mut hasher);
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_ref());
    serde_json::to_string(&taints)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(boot: &str, heartbeat: &str, taint: bool) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n", "labels": {"a": "1"}},
            "spec": {"taints": if taint { serde_json::json!([{"key": "k", "effect": "NoSchedule"}]) } else { serde_json::json!([]) }},
            "status": {
                "nodeInfo": {"kernelVersion": "5.14", "bootID": boot, "machineID": "", "systemUUID": "",
                    "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                    "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
                "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat}],
            },
        }))
        .expect("node")
    }

    #[test]
    fn only_what_the_reconciler_reads_changes_the_fingerprint() {
        let base = fingerprint(&node("b1", "2024-01-01T00:00:00Z", false));
        assert_eq!(
            base,
            fingerprint(&node("b1", "2024-01-01T00:05:00Z", false))
        );
        assert_ne!(
            base,
            fingerprint(&node("b2", "2024-01-01T00:00:00Z", false))
        );
        assert_ne!(base, fingerprint(&node("b1", "2024-01-01T00:00:00Z", true)));
    }
}
