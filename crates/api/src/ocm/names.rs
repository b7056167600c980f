//! The names OCM's hub, agents and the KMM hub operator agree on: labels, condition types and reasons, the
//! registration Lease and the cluster claims. The agent that writes them and the engine or console that read them
//! spell each one here, once.

/// Label naming the ManagedClusterSet a cluster belongs to (an exclusive set selects its clusters by it).
pub const CLUSTERSET_LABEL: &str = "cluster.open-cluster-management.io/clusterset";

/// Label the hub gives every ManagedCluster: its own name, so selectors can pick one cluster.
pub const NAME_LABEL: &str = "name";

/// The set every cluster joins unless it says otherwise.
pub const DEFAULT_CLUSTERSET: &str = "default";

/// Condition: the hub's administrator accepted the cluster (`spec.hubAcceptsClient`).
pub const CONDITION_HUB_ACCEPTED: &str = "HubAcceptedManagedCluster";

/// Condition: the cluster's registration agent joined the hub.
pub const CONDITION_JOINED: &str = "ManagedClusterJoined";

/// Condition: the registration agent renews its Lease in time; `Unknown` once it stops.
pub const CONDITION_AVAILABLE: &str = "ManagedClusterConditionAvailable";

/// Reason of `HubAcceptedManagedCluster` when accepted.
pub const REASON_HUB_ACCEPTED: &str = "HubClusterAdminAccepted";

/// Reason of `ManagedClusterJoined`.
pub const REASON_JOINED: &str = "ManagedClusterJoined";

/// Reason of an available cluster.
pub const REASON_AVAILABLE: &str = "ManagedClusterAvailable";

/// Reason of a cluster whose agent stopped renewing its Lease.
pub const REASON_LEASE_STOPPED: &str = "ManagedClusterLeaseUpdateStopped";

/// The Lease the registration agent renews in its cluster's namespace on the hub.
pub const CLUSTER_LEASE: &str = "managed-cluster-lease";

/// How many lease durations the hub waits for a renewal before it calls the cluster's availability unknown, as
/// OCM's lease controller does.
pub const LEASE_GRACE_FACTOR: u32 = 5;

/// `spec.leaseDurationSeconds` when a ManagedCluster does not say.
pub const DEFAULT_LEASE_DURATION_SECONDS: i32 = 60;

/// Cluster claim with the cluster's identity.
pub const CLAIM_ID: &str = "id.k8s.io";

/// Cluster claim with the cluster's platform (`AWS`, `BareMetal`, `Other`, …).
pub const CLAIM_PLATFORM: &str = "platform.open-cluster-management.io";

/// Cluster claim with the kernels the cluster's nodes run, one per line, sorted: what KMM's hub builds images for.
pub const CLAIM_KERNEL_VERSIONS: &str = "kernel-versions.kmm.node.kubernetes.io";

/// ManifestWork condition: every manifest was applied.
pub const WORK_APPLIED: &str = "Applied";

/// ManifestWork condition: every applied object exists on the spoke.
pub const WORK_AVAILABLE: &str = "Available";

/// ManifestWork condition: the work is degraded (set by whoever judges the feedback).
pub const WORK_DEGRADED: &str = "Degraded";

/// ManifestWork condition: the work is being applied.
pub const WORK_PROGRESSING: &str = "Progressing";

/// Manifest condition: the status feedback rules were evaluated.
pub const MANIFEST_FEEDBACK_SYNCED: &str = "StatusFeedbackSynced";

/// Reason of `Applied=True` on a work.
pub const REASON_WORK_APPLIED: &str = "AppliedManifestWorkComplete";

/// Reason of `Applied=False` on a work.
pub const REASON_WORK_APPLY_FAILED: &str = "AppliedManifestWorkFailed";

/// Reason of `Applied=True` on one manifest.
pub const REASON_MANIFEST_APPLIED: &str = "AppliedManifestComplete";

/// Reason of `Applied=False` on one manifest.
pub const REASON_MANIFEST_APPLY_FAILED: &str = "AppliedManifestFailed";

/// Reason of `Available=True` on a work.
pub const REASON_RESOURCES_AVAILABLE: &str = "ResourcesAvailable";

/// Reason of `Available=False` on a work.
pub const REASON_RESOURCES_NOT_AVAILABLE: &str = "ResourcesNotAvailable";

/// Reason of `Available=True` on one manifest.
pub const REASON_RESOURCE_AVAILABLE: &str = "ResourceAvailable";

/// Reason of `Available=False` on one manifest.
pub const REASON_RESOURCE_NOT_AVAILABLE: &str = "ResourceNotAvailable";

/// Reason of `StatusFeedbackSynced=True`.
pub const REASON_FEEDBACK_SYNCED: &str = "StatusFeedbackSynced";

/// Reason of `StatusFeedbackSynced=False`: a rule named a field the object does not have.
pub const REASON_FEEDBACK_INCOMPLETE: &str = "StatusFeedbackSyncFailed";

/// Finalizer the work agent holds on a ManifestWork until it removed the work's objects from its spoke.
pub const WORK_CLEANUP_FINALIZER: &str = "cluster.open-cluster-management.io/manifest-work-cleanup";
