//! The reasons of a Shim's conditions that the console tells states by: the engine sets them, and a person sees a
//! paused or uninstalling rollout as such whichever engine reported it.

/// Progressing and Ready: a person paused the rollout and nodes wait for it to resume.
pub const PAUSED: &str = "Paused";
/// Progressing and Ready: the shim is being removed from nodes (the Shim is deleted, or the selector no longer
/// matches them).
pub const UNINSTALLING: &str = "Uninstalling";
/// Degraded and Ready: the spec holds a value the engine refuses to act on (a `maxUpdate` validation would have
/// refused, on a cluster whose CRD does not validate it), so no installer starts until it is fixed.
pub const INVALID_SPEC: &str = "InvalidSpec";
