//! The Lease that elects the acting engine, as every party finds it by default: the engine in the console, the
//! `kmm-tui controller` pods `kmm-tui install` deploys (and the simulation runs), the console's engine pane and the
//! RBAC that grants the Lease. They meet on one Lease only when they agree on its namespace and name, and a
//! standby's wait after a dead leader is the duration they all assume.

use std::time::Duration;

/// Namespace of the engine's Lease unless configured otherwise: it exists on every cluster.
pub const DEFAULT_LEASE_NAMESPACE: &str = "kube-system";

/// Name of the engine's Lease unless configured otherwise.
pub const DEFAULT_LEASE_NAME: &str = "kmm-tui-engine";

/// How long a leader's Lease holds without renewal unless configured otherwise: short enough that a standby takes
/// over within seconds of a leader's death, long enough that a few lost renewals do not end a healthy term.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);

/// Annotation on the Lease asking its holder to yield: the identity that should hold it next, or [`ANYONE`]. The
/// console writes it to hand the engine off or take it back; every engine reads it.
pub const HANDOFF_ANNOTATION: &str = "kmm-tui.io/handoff-to";

/// Value of [`HANDOFF_ANNOTATION`] asking the holder to release the Lease to whoever claims it first.
pub const ANYONE: &str = "*";

/// Annotation on the Lease carrying its holder's recent activity as JSON, for the console's engine pane.
pub const ACTIVITY_ANNOTATION: &str = "kmm-tui.io/engine-activity";
