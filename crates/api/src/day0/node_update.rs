//! The node annotations through which the Machine Config Operator's daemon reports a node's update, as OpenShift
//! spells them: the simulated operator writes them, the day-0 engine and the console read them.

/// Node annotation: the configuration the node runs.
pub const CURRENT_CONFIG: &str = "machineconfiguration.openshift.io/currentConfig";
/// Node annotation: the configuration the node must move to.
pub const DESIRED_CONFIG: &str = "machineconfiguration.openshift.io/desiredConfig";
/// Node annotation: how the node's update goes, [`DONE`], [`WORKING`] or [`DEGRADED`].
pub const STATE: &str = "machineconfiguration.openshift.io/state";
/// Node annotation: why the node's update failed.
pub const REASON: &str = "machineconfiguration.openshift.io/reason";
/// [`STATE`] of a node that runs its desired configuration.
pub const DONE: &str = "Done";
/// [`STATE`] of a node being updated.
pub const WORKING: &str = "Working";
/// [`STATE`] of a node whose update failed; its pool stops rolling.
pub const DEGRADED: &str = "Degraded";
