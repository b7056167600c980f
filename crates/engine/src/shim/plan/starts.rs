//! What may start in one pass, once every node is settled: uninstalls first (a node leaving frees what it held),
//! then installs, all at once under `recreate` and batch by batch under `rolling`. Every installer pod still running
//! holds a slot, so a restart never starts more than the limit allows.

use super::{NewPod, NodeView, Notice, Planner, Rollout, approvals, install, list};
use crate::shim::artifact::Artifact;
use crate::shim::names::Operation;
use kmm_api::plural::count;
use kmm_api::shim::max_update::{InvalidMaxUpdate, batch_size};
use kmm_api::shim::reasons;
use kmm_api::shim::{Approval, RolloutType, ShimNodeState};

/// Where a rolling rollout stands when the pass decides what starts.
struct Position {
    /// Nodes per batch.
    size: usize,
    /// Batches in all.
    batches: usize,
    /// The batch the next installs belong to, from 1.
    next: usize,
    /// How many nodes of `next` started already: none for a new batch, some when it fills up (after a restart, or
    /// a retried node).
    filled: usize,
    /// More installs failed than `maxFailures` tolerates: no new batch starts.
    stopped: bool,
    /// The failures tolerated.
    max_failures: usize,
}

/// What the rollout does with its next batch in this pass.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BatchDecision {
    /// Start this many nodes of it (the room left in the batch and the free slots bound it).
    Start(usize),
    /// It may start but waits for `approvedBatch` (paused or not: the approval is wanted either way).
    AwaitApproval,
    /// It is approved and may start, but the rollout is paused: it starts once resumed.
    Paused,
    /// Nothing starts: nothing waits, the batch before runs, or failures stopped the rollout.
    Hold,
}

/// The batch the next installs belong to and how many of its nodes started already, from the nodes of the current
/// spec whose install started: the batches are filled in node name order, so the count alone places the rollout.
fn next_batch(started: usize, size: usize) -> (usize, usize) {
    (started / size + 1, started % size)
}

impl Planner<'_> {
    /// Start what the limits allow: uninstalls first, then installs by the rollout type. A `maxUpdate` the API's
    /// rule refuses starts nothing (see [`refuse`](Self::refuse)).
    pub(super) fn start(&mut self) {
        let limit = match self.limit() {
            Ok(limit) => limit,
            Err(invalid) => return self.refuse(&invalid),
        };
        let slots = self.start_uninstalls(self.free_slots(limit));
        let slots = self.start_retries(limit, slots);
        match self.shim.spec.rollout_strategy.type_ {
            RolloutType::Recreate => self.start_all(slots),
            RolloutType::Rolling => self.start_batch(limit, slots),
        }
    }

    /// How many installer pods may run at once: all under `recreate` or while the Shim is deleted (nothing is there
    /// to protect), `maxUpdate` of the nodes the rollout covers under `rolling`, which is also the batch size (one
    /// node when the spec gives no rolling settings).
    fn limit(&self) -> Result<usize, InvalidMaxUpdate> {
        match (self.deleting, self.shim.spec.rollout_strategy.type_) {
            (true, _) | (false, RolloutType::Recreate) => Ok(usize::MAX),
            (false, RolloutType::Rolling) => match self.rolling() {
                Some(rolling) => batch_size(&rolling.max_update, self.plan.installable),
                None => Ok(1),
            },
        }
    }

    /// A `maxUpdate` validation would have refused (a cluster serving a CRD without it lets one through): guessing a
    /// batch size could roll more nodes at once than the person meant, so nothing starts, the nodes say why they
    /// wait, and a warning tells what to fix. Pods already running finish as they would.
    fn refuse(&mut self, invalid: &InvalidMaxUpdate) {
        let message = format!(
            "spec.rolloutStrategy.rolling.{invalid}; no installer starts until it is fixed"
        );
        self.plan
            .views
            .extend(waiting_views(&self.install_candidates, &message, None));
        self.plan.notices.push(Notice {
            warning: true,
            reason: reasons::INVALID_SPEC,
            note: message.clone(),
        });
        self.plan.invalid_spec = Some(message);
    }

    /// The pods that may start now: the limit less every installer pod still running, none while paused.
    fn free_slots(&self, limit: usize) -> usize {
        if self.plan.paused {
            0
        } else {
            limit.saturating_sub(self.unfinished)
        }
    }

    /// Uninstalls of the nodes the Shim left, in name order, as far as `slots` go; the slots left.
    fn start_uninstalls(&mut self, mut slots: usize) -> usize {
        let take = slots.min(self.uninstall_candidates.len());
        for node in self.uninstall_candidates.drain(..take) {
            slots -= 1;
            self.plan.create.push(NewPod {
                node,
                operation: Operation::Uninstall,
                artifact: None,
                batch: None,
            });
        }
        if let Some(first) = self.plan.create.first().filter(|_| self.deleting) {
            self.plan.notices.push(Notice {
                warning: false,
                reason: "Uninstalling",
                note: format!(
                    "uninstalling from {}, {} first",
                    count(self.plan.create.len(), "node"),
                    first.node
                ),
            });
        }
        slots
    }

    /// Retried nodes install again in the batch they failed in, as far as `slots` go: their batch was approved
    /// already and keeps its number, so a retry neither waits for nor starts a new batch. The slots left.
    fn start_retries(&mut self, size: usize, mut slots: usize) -> usize {
        let batches = self.plan.installable.div_ceil(size.max(1)).max(1);
        let retries = std::mem::take(&mut self.retry_candidates);
        let mut waiting = Vec::new();
        for (node, artifact, batch) in retries {
            if slots == 0 {
                waiting.push(NodeView {
                    node,
                    state: ShimNodeState::Waiting,
                    batch: Some(batch),
                    message: Some(
                        if self.plan.paused {
                            "the rollout is paused; its retry waits"
                        } else {
                            "its retry waits for a free slot"
                        }
                        .to_owned(),
                    ),
                });
                continue;
            }
            slots -= 1;
            self.plan.notices.push(Notice {
                warning: false,
                reason: "Retrying",
                note: format!("batch {batch} of {batches}: installing again on {node}"),
            });
            self.plan.create.push(install(node, artifact, Some(batch)));
        }
        self.plan.views.extend(waiting);
        slots
    }

    /// `recreate`: every waiting node installs as far as `slots` go, with no batches.
    fn start_all(&mut self, slots: usize) {
        let mut starting = std::mem::take(&mut self.install_candidates);
        let rest = starting.split_off(slots.min(starting.len()));
        if !starting.is_empty() {
            self.plan.notices.push(Notice {
                warning: false,
                reason: "Installing",
                note: format!(
                    "installing on {}: {}",
                    count(starting.len(), "node"),
                    list(starting.iter().map(|(n, _)| n.as_str()))
                ),
            });
        }
        for (node, artifact) in starting {
            self.plan.create.push(install(node, artifact, None));
        }
        let why = if self.plan.paused {
            "the rollout is paused"
        } else {
            "waits for a free slot"
        };
        self.plan.views.extend(waiting_views(&rest, why, None));
    }

    /// `rolling`: the batch in progress is told over when it is, then the next batch starts or fills up as far as
    /// the decision allows; every waiting node shows the batch it is planned in.
    fn start_batch(&mut self, size: usize, slots: usize) {
        let position = self.position(size);
        self.tell_batch_over(&position);
        let decision = self.decide_batch(&position, slots);
        let starting: Vec<(String, Artifact)> = match decision {
            BatchDecision::Start(count) => self.install_candidates.drain(..count).collect(),
            BatchDecision::AwaitApproval | BatchDecision::Paused | BatchDecision::Hold => {
                Vec::new()
            }
        };
        if !starting.is_empty() {
            self.announce_batch(&position, &starting);
        }
        let now_started = self.started + starting.len();
        for (node, artifact) in starting {
            self.plan
                .create
                .push(install(node, artifact, Some(position.next as i32)));
        }
        let awaiting = decision == BatchDecision::AwaitApproval;
        let why = if self.plan.paused && awaiting {
            format!(
                "the rollout is paused; batch {} waits for approval",
                position.next
            )
        } else if self.plan.paused {
            "the rollout is paused".to_owned()
        } else if awaiting {
            format!("batch {} waits for approval", position.next)
        } else if position.stopped {
            "the rollout stopped on failures".to_owned()
        } else {
            "waits for its batch".to_owned()
        };
        self.plan.views.extend(waiting_views(
            &self.install_candidates,
            &why,
            Some((now_started, size)),
        ));
        // A rollout held before its next batch (for an approval or by the pause) names that batch: it is what a
        // person acts on.
        let batch = if matches!(
            decision,
            BatchDecision::AwaitApproval | BatchDecision::Paused
        ) {
            position.next
        } else {
            now_started.div_ceil(size).max(1)
        };
        self.plan.rollout = Some(Rollout {
            batch_size: size,
            batch: batch.min(position.batches),
            batches: position.batches,
            awaiting_approval: awaiting,
            stopped: position.stopped && !self.install_candidates.is_empty(),
        });
    }

    /// Where the rollout stands, from the nodes of the current spec whose install started and the failures so far.
    fn position(&self, size: usize) -> Position {
        let max_failures = self
            .rolling()
            .and_then(|r| r.max_failures)
            .and_then(|m| usize::try_from(m).ok())
            .unwrap_or(0);
        let (next, filled) = next_batch(self.started, size);
        Position {
            size,
            batches: self.plan.installable.div_ceil(size).max(1),
            next,
            filled,
            stopped: self.plan.install_failures.len() > max_failures,
            max_failures,
        }
    }

    /// The batch decision. A new batch starts once the one before is over (no install of the current spec runs)
    /// and failures did not stop the rollout; a batch cut short fills up regardless, as its nodes were already
    /// let go. Either needs the batch approved when approval is manual, and neither happens while paused; a pause
    /// does not hide the approval the batch still wants.
    fn decide_batch(&self, position: &Position, slots: usize) -> BatchDecision {
        let may_continue =
            position.filled != 0 || (self.installing_current == 0 && !position.stopped);
        if self.install_candidates.is_empty() || !may_continue {
            return BatchDecision::Hold;
        }
        let next = i32::try_from(position.next).unwrap_or(i32::MAX);
        if !self.rolling().is_none_or(|r| r.approves(next)) {
            return BatchDecision::AwaitApproval;
        }
        if self.plan.paused {
            return BatchDecision::Paused;
        }
        let room = position.size - position.filled;
        BatchDecision::Start(room.min(slots).min(self.install_candidates.len()))
    }

    /// The batch in progress is over once its last install ended in this pass and nothing of it is left to start.
    /// It is told before the next batch starts, so the Events read in order; more failures than tolerated make it
    /// a failed batch that stops the rollout.
    fn tell_batch_over(&mut self, position: &Position) {
        let done_batch = self.started.div_ceil(position.size).max(1);
        // A retried node of an earlier batch ending is not the batch in progress ending.
        let batch_ended = self
            .finished_now
            .iter()
            .any(|batch| batch.is_none_or(|b| usize::try_from(b).is_ok_and(|b| b >= done_batch)));
        let over = batch_ended
            && self.installing_current == 0
            && (position.filled == 0 || self.install_candidates.is_empty());
        if !over {
            return;
        }
        let batches = position.batches;
        let failed = self.plan.install_failures.len();
        let tally = format!(
            "{} of {} provisioned, {failed} failed",
            self.plan.provisioned,
            count(self.plan.installable, "node")
        );
        self.plan.notices.push(if position.stopped {
            Notice {
                warning: true,
                reason: "BatchFailed",
                note: format!(
                    "batch {done_batch} of {batches} failed: {tally}, more than maxFailures {}; \
                     the rollout stopped until failed installer pods are deleted to retry them",
                    position.max_failures
                ),
            }
        } else {
            Notice {
                warning: failed > 0,
                reason: "BatchFinished",
                note: format!("batch {done_batch} of {batches} finished: {tally}"),
            }
        });
    }

    /// Events for the nodes a batch starts on; a new batch under manual approval also records who approved it, for
    /// the Event and the status's approval history.
    fn announce_batch(&mut self, position: &Position, starting: &[(String, Artifact)]) {
        let (next, batches) = (position.next, position.batches);
        let rolling = self.rolling();
        let manual = rolling.and_then(|r| r.approval) == Some(Approval::Manual);
        let approved = rolling.and_then(|r| r.approved_batch).unwrap_or(0);
        if manual && position.filled == 0 {
            let approval = approvals::approval(self.shim, next);
            self.plan.notices.push(Notice {
                warning: false,
                reason: "BatchApproved",
                note: format!(
                    "batch {next} of {batches} approved by {} (approvedBatch {approved})",
                    approval.approved_by
                ),
            });
            self.plan.approved = Some(approval);
        }
        let verb = if position.filled == 0 {
            "started"
        } else {
            "continued"
        };
        self.plan.notices.push(Notice {
            warning: false,
            reason: "BatchStarted",
            note: format!(
                "batch {next} of {batches} {verb} on {}",
                list(starting.iter().map(|(n, _)| n.as_str()))
            ),
        });
    }
}

/// Waiting nodes, each with the batch it is planned in when the rollout has batches (`first` is the batch position
/// of the first of them, `size` the batch size), so a person sees when each node's turn comes.
fn waiting_views(
    candidates: &[(String, Artifact)],
    message: &str,
    batches: Option<(usize, usize)>,
) -> Vec<NodeView> {
    candidates
        .iter()
        .enumerate()
        .map(|(index, (node, _))| NodeView {
            node: node.clone(),
            state: ShimNodeState::Waiting,
            batch: batches.and_then(|(first, size)| i32::try_from((first + index) / size + 1).ok()),
            message: Some(message.to_owned()),
        })
        .collect()
}
