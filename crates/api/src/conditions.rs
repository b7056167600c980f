//! Condition vocabulary shared by every kind that reports `status.conditions`.
//!
//! One condition type across kinds lets the console show "why is this not done" the same way for
//! modules, shims, image caches and day-0 configurations, and lets printer columns read one path.

/// Of a Node's conditions, only `Ready`, in a list of its length. Every cache of every node (the engine's, the
/// console's, the simulation's) keeps no more, since `Ready` is the one condition they read; a list read from JSON
/// holds room for eight where a node reports five.
pub fn node_ready_only(
    conditions: Vec<k8s_openapi::api::core::v1::NodeCondition>,
) -> Vec<k8s_openapi::api::core::v1::NodeCondition> {
    let ready = conditions.into_iter().find(|c| c.type_ == READY);
    ready.into_iter().collect()
}

/// Condition type that summarises whether the object reached its desired state.
///
/// Its `reason` is what the `REASON` printer column shows; its `message` says what to do next.
pub const READY: &str = "Ready";

/// Condition type set while work toward the desired state is under way (pods, jobs, rollouts).
pub const PROGRESSING: &str = "Progressing";

/// Condition type set when some part of the work failed and needs a person's attention.
pub const DEGRADED: &str = "Degraded";

/// Condition type of a Module: the module is loaded on every node that should have it (the Kubernetes
/// workload convention, so `kubectl wait --for=condition=Available` works).
pub const AVAILABLE: &str = "Available";
