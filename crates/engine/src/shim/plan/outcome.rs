//! What one pass decides and sees: the pods to create and delete, the node writes, the events, and
//! where every node and the rollout stand.

use crate::shim::artifact::{Artifact, NoArtifact};
use kmm_api::shim::names::Operation;
use kmm_api::shim::{BatchApproval, ShimNodeState};

/// Where the shim stands on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeView {
    /// Node name.
    pub node: String,
    /// Install state.
    pub state: ShimNodeState,
    /// The batch of its install, when known.
    pub batch: Option<i32>,
    /// Why it fails, or what it waits for.
    pub message: Option<String>,
}

/// A pod to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NewPod {
    /// The node it runs on.
    pub node: String,
    /// Install or uninstall.
    pub operation: Operation,
    /// The archive, for installs.
    pub artifact: Option<Artifact>,
    /// The rollout batch, for rolling installs.
    pub batch: Option<i32>,
}

/// A label and annotation write on one node: `Some(None)` removes, `None` leaves alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeWrite {
    /// Node name.
    pub node: String,
    /// New value of the `<shim>` label.
    pub label: Option<Option<String>>,
    /// New value of the spec hash annotation; removing it removes the batch annotation too.
    pub hash: Option<Option<String>>,
    /// The rollout batch that provisioned the node, recorded beside a new hash so the node's batch is still known
    /// once its installer pod is gone.
    pub batch: Option<i32>,
    /// New value of the failed-batch annotation (`<spec hash>/<batch>` of a failed install): `Some(None)` removes.
    pub failed_batch: Option<Option<String>>,
}

/// Something worth an event on the Shim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Notice {
    /// Warning (else normal).
    pub warning: bool,
    /// Event reason.
    pub reason: &'static str,
    /// What happened, for a person.
    pub note: String,
}

/// Where a rolling rollout stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rollout {
    /// Nodes per batch.
    pub batch_size: usize,
    /// The batch in progress, or the next one while it waits.
    pub batch: usize,
    /// Batches in all.
    pub batches: usize,
    /// The next batch waits for `approvedBatch`.
    pub awaiting_approval: bool,
    /// Failures stopped the rollout.
    pub stopped: bool,
}

/// Everything one pass decided and saw.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    /// Pods to create.
    pub create: Vec<NewPod>,
    /// Finished pods whose outcome is recorded (or no longer matters), to delete.
    pub delete: Vec<String>,
    /// Node labels and annotations to write.
    pub node_writes: Vec<NodeWrite>,
    /// Events to publish.
    pub notices: Vec<Notice>,
    /// Every node the Shim concerns that is not provisioned, in no particular order.
    pub views: Vec<NodeView>,
    /// Nodes the selector matches.
    pub selected: usize,
    /// Of those, nodes provisioned on the current spec.
    pub provisioned: usize,
    /// Nodes that carry the shim in any version (the RuntimeClass can schedule there).
    pub running_shim: usize,
    /// Selected nodes that are Ready and schedulable and have an archive: what the rollout covers.
    pub installable: usize,
    /// Install pods that are not finished.
    pub installing: usize,
    /// Nodes whose uninstall runs or waits.
    pub uninstalling: usize,
    /// Failed installs on the current spec.
    pub install_failures: Vec<(String, String)>,
    /// Failed uninstalls.
    pub uninstall_failures: Vec<(String, String)>,
    /// Selected nodes without an archive.
    pub no_artifact: Vec<(String, NoArtifact)>,
    /// Selected nodes waiting (for their batch, an approval, or to become Ready).
    pub waiting: usize,
    /// The rollout, for rolling Shims.
    pub rollout: Option<Rollout>,
    /// Nothing starts: the spec pauses the rollout.
    pub paused: bool,
    /// The approval of the batch this pass starts, for the status's approval history.
    pub approved: Option<BatchApproval>,
    /// Why nothing starts: the spec holds a value the engine refuses to act on (reason `InvalidSpec`).
    pub invalid_spec: Option<String>,
}
