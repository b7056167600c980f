//! Rows of the Shims pane: one per Shim, with its RuntimeClass, how it rolls out, how far it got, and the state a
//! person acts on (approve the next batch, look at a failed node, wait for an uninstall).

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::tui::data::ClusterData;
use kmm_api::conditions::{DEGRADED, PROGRESSING, READY};
use kmm_api::shim::max_update::MaxUpdate;
use kmm_api::shim::{Approval, RolloutType, Shim, ShimNodeState, reasons};

use super::{Health, condition, matches_filter};

/// Where a Shim's rollout stands, as the pane names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ShimState {
    /// Batches are being installed.
    Rolling,
    /// The next batch waits for a person to approve it.
    AwaitingApproval,
    /// A person paused the rollout.
    Paused,
    /// A node failed, or the Shim cannot be rolled out as written.
    Degraded,
    /// Provisioned on every node it targets.
    Complete,
    /// Deleted: the shim is being removed from every node.
    Uninstalling,
    /// No status reported yet.
    Pending,
}

impl ShimState {
    /// Every state, in the order the header counts them.
    pub const ALL: [ShimState; 7] = [
        ShimState::Complete,
        ShimState::Rolling,
        ShimState::AwaitingApproval,
        ShimState::Paused,
        ShimState::Degraded,
        ShimState::Uninstalling,
        ShimState::Pending,
    ];

    /// The state as the pane prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            ShimState::Rolling => "Rolling",
            ShimState::AwaitingApproval => "AwaitingApproval",
            ShimState::Paused => "Paused",
            ShimState::Degraded => "Degraded",
            ShimState::Complete => "Complete",
            ShimState::Uninstalling => "Uninstalling",
            ShimState::Pending => "Pending",
        }
    }

    /// The state in the header's counts, where space is shorter.
    pub fn label(self) -> &'static str {
        match self {
            ShimState::Rolling => "rolling",
            ShimState::AwaitingApproval => "awaiting",
            ShimState::Paused => "paused",
            ShimState::Degraded => "degraded",
            ShimState::Complete => "complete",
            ShimState::Uninstalling => "uninstalling",
            ShimState::Pending => "pending",
        }
    }

    /// The state in the header's counts on narrow screens.
    pub fn short_label(self) -> &'static str {
        match self {
            ShimState::Rolling => "roll",
            ShimState::AwaitingApproval => "appr",
            ShimState::Paused => "paus",
            ShimState::Degraded => "degr",
            ShimState::Complete => "ok",
            ShimState::Uninstalling => "unin",
            ShimState::Pending => "pend",
        }
    }

    /// How the state is coloured.
    pub fn health(self) -> Health {
        match self {
            ShimState::Complete => Health::Ok,
            ShimState::Rolling | ShimState::Uninstalling => Health::Progressing,
            ShimState::AwaitingApproval | ShimState::Paused => Health::Warning,
            ShimState::Degraded => Health::Error,
            ShimState::Pending => Health::Unknown,
        }
    }
}

impl fmt::Display for ShimState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One Shim as the Shims pane shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShimRow {
    /// Name (Shims are cluster-scoped).
    pub name: String,
    /// The RuntimeClass pods ask for.
    pub runtime_class: String,
    /// `rolling 2`, `rolling 10% manual`, `recreate`.
    pub strategy: String,
    /// Nodes where the shim is provisioned.
    pub ready: i32,
    /// Nodes the selector matches.
    pub targets: i32,
    /// Batch in progress and batches in all, for rolling rollouts that reported them.
    pub batch: Option<(i32, i32)>,
    /// The batch waiting for approval, when one is.
    pub awaiting_batch: Option<i32>,
    /// Nodes whose install failed.
    pub failed: usize,
    /// Whether the rollout is paused.
    pub paused: bool,
    /// Where the rollout stands.
    pub state: ShimState,
    /// Colour of the state.
    pub health: Health,
    /// `Reason: message` saying why the Shim is not complete.
    pub reason: Option<String>,
}

impl ShimRow {
    /// The row of one Shim.
    pub fn of(shim: &Shim) -> ShimRow {
        let name = shim.metadata.name.clone().unwrap_or_default();
        let spec = &shim.spec;
        let rolling = spec.rollout_strategy.rolling.as_ref();
        let manual = rolling.and_then(|r| r.approval) == Some(Approval::Manual);
        let strategy = match spec.rollout_strategy.type_ {
            RolloutType::Recreate => "recreate".to_owned(),
            RolloutType::Rolling => {
                let step =
                    rolling.map_or_else(String::new, |r| match MaxUpdate::parse(&r.max_update) {
                        Ok(max_update) => format!(" {max_update}"),
                        Err(_) => " invalid".to_owned(),
                    });
                format!("rolling{step}{}", if manual { " manual" } else { "" })
            }
        };
        let status = shim.status.as_ref();
        let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        let rollout = status.and_then(|s| s.rollout.as_ref());
        let awaiting_batch = shim.awaiting_batch();
        let failed = status.map_or(0, |s| {
            s.node_statuses
                .iter()
                .filter(|n| n.state == ShimNodeState::Failed)
                .count()
        });
        let paused = rolling.is_some_and(|r| r.paused) || is_paused(conditions);
        let (state, reason) = judge(shim, conditions, awaiting_batch, failed, paused);
        ShimRow {
            runtime_class: spec.runtime_class.name.clone(),
            strategy,
            ready: status.map_or(0, |s| s.nodes_ready),
            targets: status.map_or(0, |s| s.nodes),
            batch: rollout
                .filter(|r| r.batches > 0)
                .map(|r| (r.batch, r.batches)),
            awaiting_batch,
            failed,
            paused,
            health: state.health(),
            state,
            reason,
            name,
        }
    }

    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[
                &self.name,
                &self.runtime_class,
                self.state.as_str(),
                self.reason.as_deref().unwrap_or_default(),
            ],
        )
    }

    /// `2/3`, or `-` for rollouts without batches.
    pub fn batch_label(&self) -> String {
        self.batch
            .map_or_else(|| "-".to_owned(), |(batch, of)| format!("{batch}/{of}"))
    }
}

/// Whether the engine reports the rollout paused (the spec may say so before the engine answered).
fn is_paused(conditions: &[Condition]) -> bool {
    [PROGRESSING, READY]
        .iter()
        .filter_map(|type_| condition(conditions, type_))
        .any(|c| c.reason == reasons::PAUSED)
}

/// State and explanation, in the engine's order: deletion first, then pause, approval, failure, completion.
fn judge(
    shim: &Shim,
    conditions: &[Condition],
    awaiting_batch: Option<i32>,
    failed: usize,
    paused: bool,
) -> (ShimState, Option<String>) {
    let explain = |c: &Condition| {
        Some(if c.message.is_empty() {
            c.reason.clone()
        } else if c.message.starts_with(&c.reason) {
            c.message.clone()
        } else {
            format!("{}: {}", c.reason, c.message)
        })
    };
    let is_true = |type_| condition(conditions, type_).filter(|c| c.status == "True");
    if shim.metadata.deletion_timestamp.is_some() {
        let why = condition(conditions, PROGRESSING)
            .filter(|c| c.reason == reasons::UNINSTALLING)
            .and_then(explain)
            .unwrap_or_else(|| "Uninstalling: removing the shim from every node".to_owned());
        return (ShimState::Uninstalling, Some(why));
    }
    let Some(status) = shim.status.as_ref() else {
        return (
            ShimState::Pending,
            Some("Pending: no status reported yet".to_owned()),
        );
    };
    let done = status.nodes_ready >= status.nodes;
    if paused && !done {
        let why = [PROGRESSING, READY]
            .iter()
            .filter_map(|type_| condition(conditions, type_))
            .find(|c| c.reason == reasons::PAUSED)
            .and_then(explain)
            .unwrap_or_else(|| "Paused: spec.rolloutStrategy.rolling.paused is set".to_owned());
        return (ShimState::Paused, Some(why));
    }
    if let Some(batch) = awaiting_batch {
        let of = status.rollout.as_ref().map_or(0, |r| r.batches);
        let mut why = format!("AwaitingApproval: batch {batch} of {of} waits for approval");
        if failed > 0 {
            why.push_str(&format!("; {failed} failed (tolerated)"));
        }
        return (ShimState::AwaitingApproval, Some(why));
    }
    if let Some(degraded) = is_true(DEGRADED) {
        return (ShimState::Degraded, explain(degraded));
    }
    if failed > 0 {
        let first = status
            .node_statuses
            .iter()
            .find(|n| n.state == ShimNodeState::Failed);
        let why = first.map_or_else(String::new, |n| {
            format!(
                "InstallFailed: {}: {}",
                n.node,
                n.message.as_deref().unwrap_or("install failed")
            )
        });
        return (ShimState::Degraded, Some(why));
    }
    let current = status.observed_generation.is_none()
        || status.observed_generation == shim.metadata.generation;
    if current && done && is_true(PROGRESSING).is_none() {
        return (ShimState::Complete, None);
    }
    let why = is_true(PROGRESSING)
        .and_then(explain)
        .or_else(|| condition(conditions, READY).and_then(explain))
        .unwrap_or_else(|| {
            format!(
                "Rolling: provisioned on {} of {}",
                status.nodes_ready,
                kmm_api::plural::count(status.nodes, "node")
            )
        });
    (ShimState::Rolling, Some(why))
}

/// Every Shim's row, in name order.
pub fn rows(data: &ClusterData) -> Vec<ShimRow> {
    data.shims.iter().map(|shim| ShimRow::of(shim)).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn shim(rolling: Value, status: Value) -> Shim {
        serde_json::from_value(json!({
            "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
            "metadata": {"name": "spin-v2", "generation": 1},
            "spec": {"fetchStrategy": {"anonHttp": {"location": "https://example.com/s.tar.gz"}},
                "runtimeClass": {"name": "wasmtime-spin-v2", "handler": "spin-v2"},
                "rolloutStrategy": {"type": "rolling", "rolling": rolling}},
            "status": status,
        }))
        .expect("a Shim")
    }

    fn failed_node() -> Value {
        json!({"node": "worker-b-2", "state": "failed", "batch": 2, "message": "containerd did not restart"})
    }

    #[test]
    fn an_awaited_batch_wins_over_a_tolerated_failure() {
        let row = ShimRow::of(&shim(
            json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 2, "maxFailures": 1}),
            json!({"nodes": 6, "nodesReady": 3, "nodeStatuses": [failed_node()],
                "rollout": {"batch": 3, "batches": 3, "awaitingApproval": true}}),
        ));
        assert_eq!(row.state, ShimState::AwaitingApproval);
        assert_eq!(row.awaiting_batch, Some(3));
        assert_eq!(row.failed, 1);
        assert_eq!(
            row.reason.as_deref(),
            Some("AwaitingApproval: batch 3 of 3 waits for approval; 1 failed (tolerated)")
        );
        assert_eq!(row.strategy, "rolling 2 manual");
        assert_eq!(row.batch_label(), "3/3");
    }

    #[test]
    fn a_rollout_with_every_batch_approved_and_a_failure_is_degraded() {
        let row = ShimRow::of(&shim(
            json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 3, "maxFailures": 1}),
            json!({"nodes": 6, "nodesReady": 5, "nodeStatuses": [failed_node()],
                "rollout": {"batch": 3, "batches": 3, "awaitingApproval": true}}),
        ));
        assert_eq!(row.state, ShimState::Degraded);
    }

    #[test]
    fn a_failure_without_an_approval_pending_is_degraded_and_names_the_node() {
        let row = ShimRow::of(&shim(
            json!({"maxUpdate": "25%"}),
            json!({"nodes": 6, "nodesReady": 3, "nodeStatuses": [failed_node()],
                "rollout": {"batch": 2, "batches": 3}}),
        ));
        assert_eq!(row.state, ShimState::Degraded);
        assert_eq!(
            row.reason.as_deref(),
            Some("InstallFailed: worker-b-2: containerd did not restart")
        );
    }

    #[test]
    fn pause_wins_until_every_node_is_done() {
        let status =
            |ready| json!({"nodes": 4, "nodesReady": ready, "rollout": {"batch": 1, "batches": 2}});
        let paused = ShimRow::of(&shim(json!({"maxUpdate": 2, "paused": true}), status(2)));
        assert_eq!(paused.state, ShimState::Paused);
        assert!(paused.paused);
        let done = ShimRow::of(&shim(json!({"maxUpdate": 2, "paused": true}), status(4)));
        assert_eq!(done.state, ShimState::Complete);
        assert_eq!(done.reason, None);
    }

    #[test]
    fn a_shim_without_status_is_pending() {
        let mut unreported = shim(
            json!({"maxUpdate": 1}),
            json!({"nodes": 0, "nodesReady": 0}),
        );
        unreported.status = None;
        let row = ShimRow::of(&unreported);
        assert_eq!(row.state, ShimState::Pending);
        assert_eq!(row.batch_label(), "-");
    }
}
