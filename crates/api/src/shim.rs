//! `Shim` (group `runtime.spinkube.dev`): a containerd shim to install on the nodes a selector
//! matches, the RuntimeClass that schedules onto it, and how to roll it out.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod max_update;
pub mod names;
pub mod reasons;

/// API group of the Shim kind.
pub const GROUP: &str = "runtime.spinkube.dev";

/// A containerd shim and where and how to install it.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "runtime.spinkube.dev",
    version = "v1alpha1",
    kind = "Shim",
    status = "ShimStatus",
    derive = "PartialEq",
    shortname = "sh",
    category = "kmm",
    printcolumn = r#"{"name": "RuntimeClass", "type": "string", "jsonPath": ".spec.runtimeClass.name"}"#,
    printcolumn = r#"{"name": "Ready", "type": "integer", "jsonPath": ".status.nodesReady"}"#,
    printcolumn = r#"{"name": "Nodes", "type": "integer", "jsonPath": ".status.nodes"}"#,
    printcolumn = r#"{"name": "Rollout", "type": "string", "jsonPath": ".spec.rolloutStrategy.type"}"#,
    printcolumn = r#"{"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ShimSpec {
    /// Node labels that select where the shim goes; every node when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Where to download the shim.
    pub fetch_strategy: FetchStrategy,
    /// RuntimeClass to create for the shim.
    pub runtime_class: RuntimeClassSpec,
    /// How changes reach the nodes.
    pub rollout_strategy: RolloutStrategy,
    /// Options written under the runtime's `options` table in the containerd config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containerd_runtime_options: Option<BTreeMap<String, String>>,
}

/// Where to download the shim archive.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FetchStrategy {
    /// Deprecated and ignored; kept so older manifests stay valid.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// One URL for every node; used only when `platforms` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_http: Option<AnonHttp>,
    /// One archive per OS and architecture; takes precedence over `anonHttp`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<PlatformArtifact>,
}

/// A public HTTP(S) archive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnonHttp {
    /// URL of the archive.
    pub location: String,
}

/// The archive for one OS and architecture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlatformArtifact {
    /// Operating system.
    pub os: PlatformOs,
    /// CPU architecture, Go style or uname style.
    pub arch: PlatformArch,
    /// URL of the archive.
    pub location: String,
    /// Hex SHA-256 of the archive, checked after download.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Operating systems a shim archive can target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlatformOs {
    /// Linux.
    Linux,
}

/// CPU architectures a shim archive can target; `amd64` and `x86_64` name the same CPUs, as do
/// `arm64` and `aarch64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PlatformArch {
    /// 64-bit x86, Go style.
    #[serde(rename = "amd64")]
    Amd64,
    /// 64-bit ARM, Go style.
    #[serde(rename = "arm64")]
    Arm64,
    /// 64-bit x86, uname style.
    #[serde(rename = "x86_64")]
    X86_64,
    /// 64-bit ARM, uname style.
    #[serde(rename = "aarch64")]
    Aarch64,
}

/// The RuntimeClass created for the shim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RuntimeClassSpec {
    /// RuntimeClass name pods refer to.
    pub name: String,
    /// containerd runtime name; must equal the Shim's name, which is also the binary suffix.
    pub handler: String,
}

/// How changes reach the nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RolloutStrategy {
    /// `rolling` (in batches) or `recreate` (all nodes at once).
    #[serde(rename = "type")]
    pub type_: RolloutType,
    /// Batch settings of a rolling rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling: Option<RollingUpdate>,
}

/// Rollout strategies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RolloutType {
    /// A batch of nodes at a time.
    Rolling,
    /// Every node at once.
    Recreate,
}

/// Batch settings of a rolling rollout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdate {
    /// Nodes updated at once: a count (`5`) or a share of the selected nodes (`"10%"`).
    pub max_update: IntOrString,
    /// Whether each batch waits for a person (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// Highest batch number a person approved; with `Manual` approval batch `n` starts only
    /// once this is at least `n` (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub approved_batch: Option<i32>,
    /// While true no node starts an install or uninstall; running installers finish (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Failed nodes the rollout tolerates before it stops starting batches; 0 (the default) stops at the first
    /// failure (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_failures: Option<i32>,
}

impl RollingUpdate {
    /// Whether each batch waits for a person.
    pub fn is_manual(&self) -> bool {
        self.approval == Some(Approval::Manual)
    }

    /// The first batch no person has approved yet: the one after `approvedBatch`.
    pub fn next_unapproved(&self) -> i32 {
        self.approved_batch.unwrap_or(0).max(0).saturating_add(1)
    }

    /// Whether batch `batch` (from 1) may start: every batch of an automatic rollout, and the batches up to
    /// `approvedBatch` of a manual one. The engine starts batches by it; the console names the batch it waits for.
    pub fn approves(&self, batch: i32) -> bool {
        !self.is_manual() || batch < self.next_unapproved()
    }
}

/// Who starts each batch of a rolling rollout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Approval {
    /// The engine starts the next batch as soon as the previous one is provisioned.
    #[default]
    Automatic,
    /// A person approves each batch by raising `approvedBatch`.
    Manual,
}

impl Shim {
    /// The batch of a manual rollout that waits for a person's approval, as the status reports it: never one
    /// already approved (an approval the status does not answer yet has moved the wait on), and none once every
    /// batch is approved.
    pub fn awaiting_batch(&self) -> Option<i32> {
        let rollout = self.status.as_ref()?.rollout.as_ref()?;
        if !rollout.awaiting_approval {
            return None;
        }
        let rolling = self.spec.rollout_strategy.rolling.as_ref();
        let batch = rolling.map_or(rollout.batch, |r| r.next_unapproved().max(rollout.batch));
        (batch <= rollout.batches).then_some(batch)
    }
}

/// Rollout progress of a shim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShimStatus {
    /// Available, Progressing, Degraded and Ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Nodes the selector matches.
    pub nodes: i32,
    /// Of those, nodes where the shim is provisioned.
    pub nodes_ready: i32,
    /// `metadata.generation` the status answers (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Per-node state of the nodes that are not provisioned, so a failure names its node; failed nodes first, then
    /// installing, uninstalling and waiting ones, at most [`NODE_STATUSES_MAX`] entries so that the object stays
    /// small on thousands of nodes (`nodeCounts` has the totals; a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["node"]
    ))]
    pub node_statuses: Vec<ShimNodeStatus>,
    /// How many nodes are in each state, including those `nodeStatuses` leaves out (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_counts: Option<ShimNodeCounts>,
    /// Where a rolling rollout stands (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStatus>,
}

/// The most entries `status.nodeStatuses` holds: enough to name every failure a person acts on, small enough that a
/// Shim on 5,000 nodes stays far below the API server's object size limit.
pub const NODE_STATUSES_MAX: usize = 100;

/// How many of the nodes a Shim concerns are in each state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShimNodeCounts {
    /// Selected nodes waiting for their batch, its approval, or for the node to become Ready.
    #[serde(default)]
    pub waiting: i32,
    /// Nodes whose installer runs.
    #[serde(default)]
    pub pending: i32,
    /// Nodes running the shim as the spec asks.
    #[serde(default)]
    pub provisioned: i32,
    /// Nodes whose install or uninstall failed.
    #[serde(default)]
    pub failed: i32,
    /// Nodes the shim is being removed from.
    #[serde(default)]
    pub uninstalling: i32,
}

/// The shim on one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShimNodeStatus {
    /// Node name.
    pub node: String,
    /// Install state.
    pub state: ShimNodeState,
    /// Rollout batch the node belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<i32>,
    /// What went wrong, or what the node waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When `state` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// Install state of the shim on a node, matching upstream's node label values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ShimNodeState {
    /// Waiting for its batch or its approval.
    Waiting,
    /// The install job runs.
    Pending,
    /// Installed, and containerd restarted with it.
    Provisioned,
    /// The install job failed.
    Failed,
    /// The uninstall job runs.
    Uninstall,
}

/// Where a rolling rollout stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// Batch in progress, or the next one while it waits for approval; from 1.
    pub batch: i32,
    /// Batches the rollout needs in all.
    pub batches: i32,
    /// Whether the next batch waits for `approvedBatch`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub awaiting_approval: bool,
    /// Nodes per batch, `maxUpdate` resolved against the selected nodes (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<i32>,
    /// Hash of the spec parts the nodes install (artifacts and runtime options); nodes carry the hash they
    /// installed, and a node on another hash is rolled again (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
    /// The approvals of this rollout's batches, oldest first, so a person sees who let each batch start and when
    /// (a kmm-tui addition; a new spec hash starts a new list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<BatchApproval>,
}

/// The approval that let one batch of a manual rollout start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchApproval {
    /// The batch, from 1.
    pub batch: i32,
    /// The field manager of the write that raised `approvedBatch` to it or past it (`kmm-tui-console`,
    /// `kubectl-patch`), as `metadata.managedFields` records it.
    pub approved_by: String,
    /// When that write was made, as `managedFields` records it (else when the batch started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<Time>,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn shim(rolling: Value, rollout: Value) -> Shim {
        serde_json::from_value(json!({
            "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
            "metadata": {"name": "spin-v2"},
            "spec": {"fetchStrategy": {"anonHttp": {"location": "https://example.com/s.tar.gz"}},
                "runtimeClass": {"name": "wasmtime-spin-v2", "handler": "spin-v2"},
                "rolloutStrategy": {"type": "rolling", "rolling": rolling}},
            "status": {"nodes": 6, "nodesReady": 3, "rollout": rollout},
        }))
        .expect("a Shim")
    }

    fn rolling(value: Value) -> RollingUpdate {
        serde_json::from_value(value).expect("a rolling section")
    }

    #[test]
    fn a_manual_rollout_starts_the_batches_approved_and_an_automatic_one_every_batch() {
        let manual = rolling(json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 2}));
        assert!(manual.approves(1) && manual.approves(2));
        assert!(!manual.approves(3));
        assert_eq!(manual.next_unapproved(), 3);
        let unapproved = rolling(json!({"maxUpdate": 2, "approval": "Manual"}));
        assert!(!unapproved.approves(1));
        assert_eq!(unapproved.next_unapproved(), 1);
        let automatic = rolling(json!({"maxUpdate": 2}));
        assert!(automatic.approves(5));
    }

    #[test]
    fn the_awaited_batch_is_the_reported_one_unless_an_approval_moved_past_it() {
        let waiting = json!({"batch": 3, "batches": 3, "awaitingApproval": true});
        let approved_two = json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 2});
        assert_eq!(
            shim(approved_two.clone(), waiting.clone()).awaiting_batch(),
            Some(3)
        );
        // The status still says batch 2 waits, but batch 2 was approved since: batch 3 is next.
        let stale = json!({"batch": 2, "batches": 3, "awaitingApproval": true});
        assert_eq!(shim(approved_two.clone(), stale).awaiting_batch(), Some(3));
        let running = json!({"batch": 3, "batches": 3});
        assert_eq!(shim(approved_two, running).awaiting_batch(), None);
    }

    #[test]
    fn nothing_waits_once_the_last_batch_is_approved() {
        let all_approved = json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 3});
        let waiting = json!({"batch": 3, "batches": 3, "awaitingApproval": true});
        assert_eq!(shim(all_approved, waiting).awaiting_batch(), None);
    }
}
