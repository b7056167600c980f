//! The Shim's status from one pass's plan: counts, the nodes a person may look at, the rollout, and four
//! conditions whose reasons say what to do next.
//!
//! | condition | True when | reasons |
//! |---|---|---|
//! | `Ready` | every selected node runs the current spec | `Complete`; else why not: `InstallFailed`, `AwaitingApproval`, `Paused`, `Rolling`, `Uninstalling`, `InvalidSpec`, `NoArtifact`, `NoFetchStrategy`, `NoTargets` |
//! | `Available` | at least one node runs the shim, so its RuntimeClass can place pods | `Provisioned`, `NotProvisioned` |
//! | `Progressing` | installers run or are about to start | `Rolling`, `Uninstalling`; else `Complete`, `AwaitingApproval`, `Paused`, `InstallFailed`, `NoTargets` |
//! | `Degraded` | the spec is refused, a node failed or has no archive | `InvalidSpec`, `InstallFailed`, `UninstallFailed`, `NoArtifact`, `NoFetchStrategy`; else `NoFailures` |

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::artifact::NoArtifact;
use super::plan::Plan;
use super::pod_names::pod_name;
use kmm_api::plural::{count, plural};
use kmm_api::shim::names::{self, Operation};
use kmm_api::shim::reasons;
use kmm_api::shim::{
    BatchApproval, NODE_STATUSES_MAX, RolloutStatus, Shim, ShimNodeCounts, ShimNodeState,
    ShimNodeStatus, ShimStatus,
};

use super::plan::Rollout;
use crate::runtime::status::set_condition;

/// The status a pass writes for `shim`.
pub(super) fn status(shim: &Shim, plan: &Plan, hash: &str) -> ShimStatus {
    let previous = shim.status.clone().unwrap_or_default();
    let generation = shim.metadata.generation;
    let deleting = shim.metadata.deletion_timestamp.is_some();
    let mut status = ShimStatus {
        conditions: previous.conditions.clone(),
        nodes: plan.selected as i32,
        nodes_ready: plan.provisioned as i32,
        observed_generation: generation,
        node_statuses: node_statuses(plan, &previous.node_statuses),
        node_counts: Some(counts(plan)),
        rollout: plan.rollout.as_ref().map(|r| RolloutStatus {
            batch: r.batch as i32,
            batches: r.batches as i32,
            awaiting_approval: r.awaiting_approval,
            batch_size: Some(r.batch_size as i32),
            spec_hash: Some(hash.to_owned()),
            approvals: approvals(previous.rollout.as_ref(), plan, hash),
        }),
    };
    let summary = Summary::of(shim, plan, deleting);
    let conditions = &mut status.conditions;
    set_condition(
        conditions,
        "Ready",
        summary.ready,
        summary.ready_reason,
        summary.ready_message.clone(),
        generation,
    );
    set_condition(
        conditions,
        "Available",
        plan.running_shim > 0,
        if plan.running_shim > 0 {
            "Provisioned"
        } else {
            "NotProvisioned"
        },
        if plan.running_shim > 0 {
            format!(
                "{} the shim; pods with runtimeClassName {} run there",
                nodes_that(plan.running_shim, "runs", "run"),
                shim.spec.runtime_class.name
            )
        } else {
            "no node runs the shim yet".to_owned()
        },
        generation,
    );
    set_condition(
        conditions,
        "Progressing",
        summary.progressing,
        summary.progress_reason,
        summary.progress_message,
        generation,
    );
    set_condition(
        conditions,
        "Degraded",
        summary.degraded_reason.is_some(),
        summary.degraded_reason.unwrap_or("NoFailures"),
        summary.degraded_message,
        generation,
    );
    status
}

/// The approval history of the rollout of spec `hash`: the approvals recorded so far for that spec, and the one
/// this pass starts a batch on (replacing an older record of the same batch, as a retried node re-starts it).
fn approvals(previous: Option<&RolloutStatus>, plan: &Plan, hash: &str) -> Vec<BatchApproval> {
    let mut approvals: Vec<BatchApproval> = previous
        .filter(|p| p.spec_hash.as_deref() == Some(hash))
        .map(|p| p.approvals.clone())
        .unwrap_or_default();
    if let Some(approved) = &plan.approved {
        approvals.retain(|a| a.batch != approved.batch);
        approvals.push(approved.clone());
    }
    approvals
}

/// The conditions' verdicts, worked out once.
struct Summary {
    ready: bool,
    ready_reason: &'static str,
    ready_message: String,
    progressing: bool,
    progress_reason: &'static str,
    progress_message: String,
    degraded_reason: Option<&'static str>,
    degraded_message: String,
}

impl Summary {
    /// The three verdicts in the order they depend on each other: `Progressing` names the pause `Ready` repeats,
    /// and `Ready` falls back on the `Degraded` reason when nothing else explains it.
    fn of(shim: &Shim, plan: &Plan, deleting: bool) -> Self {
        let facts = Facts::of(shim, plan, deleting);
        let (degraded_reason, degraded_message) = facts.degraded();
        let (progressing, progress_reason, progress_message) = facts.progress();
        let complete = plan.selected > 0
            && plan.provisioned == plan.selected
            && plan.uninstalling == 0
            && degraded_reason.is_none();
        let (ready_reason, ready_message) = if complete {
            ("Complete", facts.provisioned.clone())
        } else {
            facts.not_ready(
                (progress_reason, &progress_message),
                (degraded_reason, &degraded_message),
            )
        };
        Self {
            ready: complete,
            ready_reason,
            ready_message,
            progressing,
            progress_reason,
            progress_message,
            degraded_reason,
            degraded_message,
        }
    }
}

/// What the conditions are judged from, worked out once, and the messages more than one condition uses.
struct Facts<'a> {
    plan: &'a Plan,
    shim_name: String,
    deleting: bool,
    rollout: Option<&'a Rollout>,
    /// Failures stopped the rollout.
    stopped: bool,
    /// `<n> of <m> nodes provisioned`.
    provisioned: String,
    /// Installers run or start in this pass.
    installs_active: bool,
}

impl<'a> Facts<'a> {
    fn of(shim: &Shim, plan: &'a Plan, deleting: bool) -> Self {
        let rollout = plan.rollout.as_ref();
        Self {
            plan,
            shim_name: shim.metadata.name.clone().unwrap_or_default(),
            deleting,
            rollout,
            stopped: rollout.is_some_and(|r| r.stopped),
            provisioned: format!(
                "{} of {} provisioned",
                plan.provisioned,
                count(plan.selected, "node")
            ),
            installs_active: plan.installing > 0
                || plan.create.iter().any(|p| p.artifact.is_some()),
        }
    }

    /// `Degraded`: the first thing failed, most fundamental first (a spec with no archive at all fails every node
    /// alike, so it is named before any one node's failure).
    fn degraded(&self) -> (Option<&'static str>, String) {
        let plan = self.plan;
        let no_strategy = plan
            .no_artifact
            .iter()
            .any(|(_, reason)| *reason == NoArtifact::NoStrategy);
        if let Some(message) = &plan.invalid_spec {
            (Some(reasons::INVALID_SPEC), message.clone())
        } else if no_strategy {
            (
                Some("NoFetchStrategy"),
                "spec.fetchStrategy names neither platforms nor anonHttp: nothing to install"
                    .to_owned(),
            )
        } else if !plan.install_failures.is_empty() {
            let extra = if self.stopped {
                "the rollout stopped; "
            } else {
                ""
            };
            (Some("InstallFailed"), self.failure_message(extra))
        } else if let Some((node, message)) = plan.uninstall_failures.first() {
            (
                Some("UninstallFailed"),
                format!(
                    "{node}: {message}; retry by deleting pod {} in {}",
                    pod_name(node, &self.shim_name, Operation::Uninstall),
                    names::INSTALLER_NAMESPACE
                ),
            )
        } else if let Some((node, reason)) = plan.no_artifact.first() {
            let more = match plan.no_artifact.len() {
                1 => String::new(),
                n => format!(" ({} more {})", n - 1, plural(n - 1, "node")),
            };
            (Some("NoArtifact"), format!("{node}: {reason}{more}"))
        } else {
            (None, "no node failed".to_owned())
        }
    }

    /// `Progressing`: whether installers run or are about to, else what holds the rollout, in the order a person
    /// acts on it (a deletion overrides everything, a pause or a wanted approval comes before failures).
    fn progress(&self) -> (bool, &'static str, String) {
        let plan = self.plan;
        if self.deleting {
            (
                true,
                reasons::UNINSTALLING,
                format!(
                    "the Shim is being deleted: {} the shim",
                    nodes_that(plan.uninstalling, "still carries", "still carry")
                ),
            )
        } else if plan.paused && plan.waiting > 0 {
            // The pause does not hide an approval the next batch still wants: both are for a person to act on.
            let approval = self
                .rollout
                .filter(|r| r.awaiting_approval)
                .map(|r| format!("{}; ", approval_message(r)))
                .unwrap_or_default();
            (
                false,
                reasons::PAUSED,
                format!(
                    "paused by spec.rolloutStrategy.rolling.paused with {} waiting; {approval}{}",
                    count(plan.waiting, "node"),
                    self.provisioned
                ),
            )
        } else if let Some(r) = self
            .rollout
            .filter(|r| r.awaiting_approval && plan.installing == 0)
        {
            (false, "AwaitingApproval", approval_message(r))
        } else if self.stopped && plan.installing == 0 {
            (
                false,
                "InstallFailed",
                self.failure_message("the rollout stopped; "),
            )
        } else if self.installs_active {
            (true, "Rolling", self.rolling_message())
        } else if plan.uninstalling > 0 {
            (
                true,
                reasons::UNINSTALLING,
                format!(
                    "uninstalling from {} the selector no longer matches",
                    count(plan.uninstalling, "node")
                ),
            )
        } else if plan.selected == 0 {
            (
                false,
                "NoTargets",
                "no node matches spec.nodeSelector".to_owned(),
            )
        } else {
            (false, "Complete", self.provisioned.clone())
        }
    }

    /// Why `Ready` is not true: what stops the rollout first, then what it waits for, then what failed; the
    /// `Progressing` and `Degraded` verdicts are reused where they already say it.
    fn not_ready(
        &self,
        (progress_reason, progress_message): (&'static str, &str),
        (degraded_reason, degraded_message): (Option<&'static str>, &str),
    ) -> (&'static str, String) {
        let plan = self.plan;
        if self.deleting {
            (reasons::UNINSTALLING, progress_message.to_owned())
        } else if self.stopped {
            (
                "InstallFailed",
                self.failure_message("the rollout stopped; "),
            )
        } else if let Some(r) = self.rollout.filter(|r| r.awaiting_approval) {
            ("AwaitingApproval", approval_message(r))
        } else if progress_reason == reasons::PAUSED {
            (reasons::PAUSED, progress_message.to_owned())
        } else if self.installs_active {
            ("Rolling", self.rolling_message())
        } else if plan.uninstalling > 0 {
            (reasons::UNINSTALLING, progress_message.to_owned())
        } else if let Some(reason) = degraded_reason {
            (reason, degraded_message.to_owned())
        } else if plan.selected == 0 {
            ("NoTargets", "no node matches spec.nodeSelector".to_owned())
        } else {
            (
                "Waiting",
                format!(
                    "{}; {} to become Ready and schedulable",
                    self.provisioned,
                    nodes_that(plan.waiting, "waits", "wait")
                ),
            )
        }
    }

    /// The first failed install, how many more failed, and the pod to delete to retry it.
    fn failure_message(&self, extra: &str) -> String {
        let (node, message) = self
            .plan
            .install_failures
            .first()
            .cloned()
            .unwrap_or_default();
        let more = match self.plan.install_failures.len() {
            0 | 1 => String::new(),
            n => format!(" ({} more {} failed)", n - 1, plural(n - 1, "node")),
        };
        format!(
            "{node}: {message}{more}; {extra}retry by deleting pod {} in {}",
            pod_name(&node, &self.shim_name, Operation::Install),
            names::INSTALLER_NAMESPACE
        )
    }

    /// How far the rollout got, by batch when it has batches.
    fn rolling_message(&self) -> String {
        let (plan, provisioned) = (self.plan, &self.provisioned);
        match self.rollout {
            Some(r) => format!(
                "batch {} of {}: {} installing, {provisioned}",
                r.batch,
                r.batches,
                count(plan.installing, "node")
            ),
            None => format!(
                "{} installing, {provisioned}",
                count(plan.installing, "node")
            ),
        }
    }
}

/// `1 node runs` or `3 nodes run`: a count of nodes and the verb that agrees with it.
fn nodes_that(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", count(n, "node"), if n == 1 { one } else { many })
}

/// What a person does to let a waiting batch start.
fn approval_message(r: &Rollout) -> String {
    format!(
        "batch {} of {} waits for approval: set spec.rolloutStrategy.rolling.approvedBatch to {}",
        r.batch, r.batches, r.batch
    )
}

/// Totals per state.
fn counts(plan: &Plan) -> ShimNodeCounts {
    let count = |state| plan.views.iter().filter(|v| v.state == state).count() as i32;
    ShimNodeCounts {
        waiting: count(ShimNodeState::Waiting),
        pending: count(ShimNodeState::Pending),
        provisioned: plan.provisioned as i32,
        failed: count(ShimNodeState::Failed),
        uninstalling: count(ShimNodeState::Uninstall),
    }
}

/// The nodes worth listing: failed first, then installing, uninstalling and waiting, by name, at most
/// [`NODE_STATUSES_MAX`]; a node keeps its transition time while its state stays.
fn node_statuses(plan: &Plan, previous: &[ShimNodeStatus]) -> Vec<ShimNodeStatus> {
    let rank = |state: ShimNodeState| match state {
        ShimNodeState::Failed => 0,
        ShimNodeState::Pending => 1,
        ShimNodeState::Uninstall => 2,
        ShimNodeState::Waiting => 3,
        ShimNodeState::Provisioned => 4,
    };
    let mut views: Vec<_> = plan.views.iter().collect();
    views.sort_by(|a, b| (rank(a.state), &a.node).cmp(&(rank(b.state), &b.node)));
    let now = Time(jiff::Timestamp::now());
    views
        .into_iter()
        .take(NODE_STATUSES_MAX)
        .map(|view| {
            let since = previous
                .iter()
                .find(|p| p.node == view.node && p.state == view.state)
                .and_then(|p| p.last_transition_time.clone())
                .unwrap_or_else(|| now.clone());
            ShimNodeStatus {
                node: view.node.clone(),
                state: view.state,
                batch: view.batch,
                message: view.message.clone(),
                last_transition_time: Some(since),
            }
        })
        .collect()
}
