//! The labels, annotations and finalizer of Shims, their installer pods and the nodes they go to: the engine writes
//! them, the console reads them and the simulation acts on them. Node labels, pod labels and the finalizer are
//! spelled as runtime-class-manager spells them, so the console reads clusters run by either the same way; the
//! spec hash and batch annotations are kmm-tui additions.

/// Pod label: the Shim the pod installs or uninstalls.
pub const SHIM_NAME: &str = "spinkube.dev/shimName";
/// Pod label: `install` or `uninstall`.
pub const OPERATION: &str = "spinkube.dev/operation";
/// Pod label marking the engine's installer pods.
pub const JOB: &str = "spinkube.dev/job";
/// Pod annotation: the node the pod works on.
pub const NODE_NAME: &str = "spinkube.dev/nodeName";
/// Prefix of every annotation kmm-tui adds for Shims, on pods and nodes.
pub const ANNOTATION_PREFIX: &str = "shims.kmm-tui.io/";
/// Pod annotation: the spec hash an install pod installs.
pub const POD_SPEC_HASH: &str = "shims.kmm-tui.io/spec-hash";
/// Pod annotation: the rollout batch an install pod belongs to.
pub const POD_BATCH: &str = "shims.kmm-tui.io/batch";
/// Finalizer on Shims, held until the shim is uninstalled from every node.
pub const FINALIZER: &str = "rcm.spinkube.dev/finalizer";
/// Namespace of the installer pods: where node agents of the cluster run.
pub const INSTALLER_NAMESPACE: &str = "kube-system";
/// Node label value: the shim is installed and containerd runs with it.
pub const PROVISIONED: &str = "provisioned";
/// Node label value: the last install or uninstall failed.
pub const FAILED: &str = "failed";
/// RuntimeClass label naming the Shim that keeps it.
pub const RUNTIME_CLASS_SHIM: &str = "spinkube.dev/shimName";

/// The installer's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Download and install the shim, add the runtime to containerd.
    Install,
    /// Remove the runtime and the shim binary.
    Uninstall,
}

impl Operation {
    /// The word the node installer takes, and the value of the operation label.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Install => "install",
            Operation::Uninstall => "uninstall",
        }
    }

    /// The operation a label value names.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "install" => Some(Operation::Install),
            "uninstall" => Some(Operation::Uninstall),
            _ => None,
        }
    }
}

/// Node label keeping the shim's state on the node: the Shim's own name, as upstream.
pub fn node_label(shim: &str) -> String {
    shim.to_owned()
}

/// Node annotation holding the spec hash installed on the node.
pub fn node_hash_annotation(shim: &str) -> String {
    format!("{ANNOTATION_PREFIX}{shim}")
}

/// Node annotation holding the rollout batch that provisioned the node, so the batch is still known once the
/// installer pod is gone.
pub fn node_batch_annotation(shim: &str) -> String {
    format!("{ANNOTATION_PREFIX}{shim}.batch")
}

/// Node annotation holding `<spec hash>/<batch>` of an install that failed, so that a retry (deleting the failed
/// installer pod) installs the node again in the batch it failed in rather than in a later one: a retry is not a
/// new batch.
pub fn node_failed_batch_annotation(shim: &str) -> String {
    format!("{ANNOTATION_PREFIX}{shim}.failed-batch")
}
