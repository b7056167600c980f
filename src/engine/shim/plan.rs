//! One pass's decisions, as a pure function of the Shim, the nodes and the installer pods: which pods to create and
//! delete, which node labels to write, and where the rollout stands. Nothing here is remembered between passes.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;

use super::artifact::{self, Artifact};
use super::pods::{self, Phase};
use crate::api::shim::names::{self, Operation};
use crate::api::shim::{Approval, RolloutType, Shim, ShimNodeState};
use crate::engine::nodes;

mod approvals;
mod outcome;

pub use outcome::{NewPod, NodeView, NodeWrite, Notice, Plan, Rollout};

/// What a pass plans from.
pub struct Inputs<'a> {
    /// The Shim, read fresh.
    pub shim: &'a Shim,
    /// Hash of the spec parts nodes install.
    pub hash: &'a str,
    /// Every node.
    pub nodes: &'a [Arc<Node>],
    /// Every installer pod of the Shim.
    pub pods: &'a [Pod],
}

/// `maxUpdate` resolved against `targets` nodes, rounded down like Kubernetes rounds `maxUnavailable`, and at
/// least 1 so that a rollout always moves.
pub fn batch_size(max_update: &IntOrString, targets: usize) -> usize {
    let size = match max_update {
        IntOrString::Int(n) => usize::try_from(*n).unwrap_or(0),
        IntOrString::String(text) => match text.trim().strip_suffix('%') {
            Some(percent) => percent
                .trim()
                .parse::<usize>()
                .map(|p| targets * p / 100)
                .unwrap_or(0),
            None => text.trim().parse().unwrap_or(0),
        },
    };
    size.max(1)
}

/// The installer pods of one node.
#[derive(Default)]
struct NodePods<'a> {
    install: Option<&'a Pod>,
    uninstall: Option<&'a Pod>,
}

/// Plan one pass.
pub fn plan(inputs: &Inputs<'_>) -> Plan {
    let shim = inputs.shim;
    let shim_name = shim.name_any();
    let label_key = names::node_label(&shim_name);
    let hash_key = names::node_hash_annotation(&shim_name);
    let deleting = shim.metadata.deletion_timestamp.is_some();
    let rolling = shim.spec.rollout_strategy.rolling.as_ref();
    let mut plan = Plan {
        paused: !deleting && rolling.is_some_and(|r| r.paused),
        ..Plan::default()
    };

    let mut pods_by_node: HashMap<&str, NodePods<'_>> = HashMap::new();
    let mut unfinished = 0usize;
    for pod in inputs.pods {
        let (Some(node), Some(operation)) = (pods::node_of(pod), pods::operation_of(pod)) else {
            continue;
        };
        if pods::phase(pod) == Phase::Running {
            unfinished += 1;
        }
        let entry = pods_by_node.entry(node).or_default();
        match operation {
            Operation::Install => entry.install = Some(pod),
            Operation::Uninstall => entry.uninstall = Some(pod),
        }
    }
    let known: std::collections::HashSet<&str> = inputs
        .nodes
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    // Pods of nodes that are gone: finished ones are dropped, running ones finish first.
    for (node, node_pods) in &pods_by_node {
        if known.contains(node) {
            continue;
        }
        for pod in [node_pods.install, node_pods.uninstall]
            .into_iter()
            .flatten()
        {
            if pods::phase(pod) != Phase::Running {
                plan.delete.push(pod.name_any());
            }
        }
    }

    let mut install_candidates: Vec<(String, Artifact)> = Vec::new();
    let mut uninstall_candidates: Vec<String> = Vec::new();
    // Nodes of the current spec whose install started (provisioned, installing or failed): the batch count.
    let mut started = 0usize;
    let mut installing_current = 0usize;
    let mut finished_now = false;
    let mut sorted: Vec<&Arc<Node>> = inputs.nodes.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for node in sorted {
        let name = node.name_any();
        let label = node.labels().get(&label_key).cloned();
        let node_hash = node.annotations().get(&hash_key).cloned();
        let node_pods = pods_by_node.remove(name.as_str()).unwrap_or_default();
        let selected = !deleting
            && shim
                .spec
                .node_selector
                .as_ref()
                .is_none_or(|s| nodes::matches_selector(node, s));
        if label.as_deref() == Some(names::PROVISIONED) {
            plan.running_shim += 1;
        }
        let view = |state, message: Option<String>, batch| NodeView {
            node: name.clone(),
            state,
            batch,
            message,
        };
        if !selected {
            // The shim leaves this node: finish what runs, then uninstall if anything of it is there.
            if let Some(pod) = node_pods.install {
                match pods::phase(pod) {
                    Phase::Running => {
                        plan.installing += 1;
                        plan.uninstalling += 1;
                        plan.views.push(view(
                            ShimNodeState::Uninstall,
                            Some(
                                "waits for its installer to finish before the uninstall".to_owned(),
                            ),
                            None,
                        ));
                        continue;
                    }
                    _ => plan.delete.push(pod.name_any()),
                }
            }
            match node_pods.uninstall.map(|p| (p, pods::phase(p))) {
                Some((_, Phase::Running)) => {
                    plan.uninstalling += 1;
                    plan.views.push(view(ShimNodeState::Uninstall, None, None));
                }
                Some((pod, Phase::Succeeded)) => {
                    if label.is_some() || node_hash.is_some() {
                        plan.node_writes.push(NodeWrite {
                            node: name.clone(),
                            label: label.is_some().then_some(None),
                            hash: node_hash.is_some().then_some(None),
                            batch: None,
                        });
                        plan.uninstalling += 1;
                        plan.views.push(view(ShimNodeState::Uninstall, None, None));
                    } else {
                        plan.delete.push(pod.name_any());
                    }
                }
                Some((pod, Phase::Failed(message))) => {
                    if label.as_deref() != Some(names::FAILED) {
                        plan.node_writes.push(NodeWrite {
                            node: name.clone(),
                            label: Some(Some(names::FAILED.to_owned())),
                            hash: None,
                            batch: None,
                        });
                        plan.notices.push(Notice {
                            warning: true,
                            reason: "UninstallFailed",
                            note: format!(
                                "{name}: {message} (delete pod {} to retry)",
                                pod.name_any()
                            ),
                        });
                    }
                    plan.uninstall_failures
                        .push((name.clone(), message.clone()));
                    plan.views.push(view(
                        ShimNodeState::Failed,
                        Some(format!("uninstall: {message}")),
                        None,
                    ));
                }
                None => {
                    if label.is_some() || node_hash.is_some() {
                        plan.uninstalling += 1;
                        uninstall_candidates.push(name.clone());
                        plan.views.push(view(ShimNodeState::Uninstall, None, None));
                    }
                }
            }
            continue;
        }

        plan.selected += 1;
        let target = nodes::is_ready(node)
            && !node
                .spec
                .as_ref()
                .and_then(|s| s.unschedulable)
                .unwrap_or(false);
        let artifact = artifact::resolve(&shim.spec.fetch_strategy, node);
        if let Some(pod) = node_pods.uninstall {
            // The node came back before its uninstall ended: let it finish, then install afresh.
            match pods::phase(pod) {
                Phase::Running => {
                    plan.uninstalling += 1;
                    plan.views.push(view(
                        ShimNodeState::Uninstall,
                        Some("selected again; installs once the uninstall ends".to_owned()),
                        None,
                    ));
                    continue;
                }
                Phase::Succeeded if label.is_some() || node_hash.is_some() => {
                    plan.node_writes.push(NodeWrite {
                        node: name.clone(),
                        label: label.is_some().then_some(None),
                        hash: node_hash.is_some().then_some(None),
                        batch: None,
                    });
                    plan.waiting += 1;
                    plan.views.push(view(ShimNodeState::Waiting, None, None));
                    continue;
                }
                _ => {
                    plan.delete.push(pod.name_any());
                    plan.waiting += 1;
                    plan.views.push(view(ShimNodeState::Waiting, None, None));
                    continue;
                }
            }
        }
        let current_pod = node_pods
            .install
            .filter(|p| pods::hash_of(p) == Some(inputs.hash));
        if let Some(pod) = node_pods.install.filter(|_| current_pod.is_none()) {
            // An install of an older spec: it finishes, then gives way to the current one.
            if pods::phase(pod) == Phase::Running {
                plan.installing += 1;
                plan.views.push(view(
                    ShimNodeState::Pending,
                    Some("installing an older spec; reinstalls when done".to_owned()),
                    None,
                ));
            } else {
                plan.delete.push(pod.name_any());
                plan.waiting += 1;
                plan.views.push(view(ShimNodeState::Waiting, None, None));
            }
            continue;
        }
        if let Some(pod) = current_pod {
            let batch = pods::batch_of(pod);
            started += 1;
            match pods::phase(pod) {
                Phase::Running => {
                    plan.installing += 1;
                    installing_current += 1;
                    plan.views.push(view(ShimNodeState::Pending, None, batch));
                }
                Phase::Succeeded => {
                    plan.provisioned += 1;
                    if label.as_deref() != Some(names::PROVISIONED)
                        || node_hash.as_deref() != Some(inputs.hash)
                    {
                        plan.node_writes.push(NodeWrite {
                            node: name.clone(),
                            label: Some(Some(names::PROVISIONED.to_owned())),
                            hash: Some(Some(inputs.hash.to_owned())),
                            batch,
                        });
                        if label.as_deref() != Some(names::PROVISIONED) {
                            plan.running_shim += 1;
                        }
                        finished_now = true;
                    } else {
                        // The node shows the outcome: the pod has nothing left to say.
                        plan.delete.push(pod.name_any());
                    }
                }
                Phase::Failed(message) => {
                    if label.as_deref() != Some(names::FAILED) {
                        plan.node_writes.push(NodeWrite {
                            node: name.clone(),
                            label: Some(Some(names::FAILED.to_owned())),
                            hash: None,
                            batch: None,
                        });
                        let rolled_back = message.contains("rolled back");
                        plan.notices.push(Notice {
                            warning: true,
                            reason: if rolled_back {
                                "RolledBack"
                            } else {
                                "InstallFailed"
                            },
                            note: format!(
                                "{name}: {message} (delete pod {} in {} to retry)",
                                pod.name_any(),
                                names::INSTALLER_NAMESPACE
                            ),
                        });
                        finished_now = true;
                    }
                    plan.install_failures.push((name.clone(), message.clone()));
                    plan.views
                        .push(view(ShimNodeState::Failed, Some(message), batch));
                }
            }
            continue;
        }
        match artifact {
            Err(reason) => {
                if label.as_deref() != Some(names::FAILED) {
                    plan.node_writes.push(NodeWrite {
                        node: name.clone(),
                        label: Some(Some(names::FAILED.to_owned())),
                        hash: None,
                        batch: None,
                    });
                }
                plan.views
                    .push(view(ShimNodeState::Failed, Some(reason.to_string()), None));
                plan.no_artifact.push((name.clone(), reason));
            }
            Ok(artifact) => {
                if label.as_deref() == Some(names::PROVISIONED)
                    && node_hash.as_deref() == Some(inputs.hash)
                {
                    started += 1;
                    plan.provisioned += 1;
                } else if target {
                    plan.waiting += 1;
                    install_candidates.push((name.clone(), artifact));
                } else {
                    plan.waiting += 1;
                    plan.views.push(view(
                        ShimNodeState::Waiting,
                        Some("the node is not Ready and schedulable".to_owned()),
                        None,
                    ));
                }
            }
        }
    }
    plan.installable = started + install_candidates.len();
    // Pods of nodes listed above were taken out; what is left belongs to nodes that are gone.
    plan.installing += pods_by_node
        .values()
        .filter_map(|p| p.install)
        .filter(|p| pods::phase(p) == Phase::Running)
        .count();

    // How many pods may start now.
    let limit = match (deleting, shim.spec.rollout_strategy.type_) {
        (true, _) | (false, RolloutType::Recreate) => usize::MAX,
        (false, RolloutType::Rolling) => batch_size(
            &rolling
                .map(|r| r.max_update.clone())
                .unwrap_or(IntOrString::Int(1)),
            plan.installable,
        ),
    };
    let mut slots = if plan.paused {
        0
    } else {
        limit.saturating_sub(unfinished)
    };
    for node in uninstall_candidates.into_iter().take(slots) {
        slots -= 1;
        plan.create.push(NewPod {
            node,
            operation: Operation::Uninstall,
            artifact: None,
            batch: None,
        });
    }
    if let Some(first) = plan.create.first().filter(|_| deleting) {
        plan.notices.push(Notice {
            warning: false,
            reason: "Uninstalling",
            note: format!(
                "uninstalling from {} nodes, {} first",
                plan.create.len(),
                first.node
            ),
        });
    }

    // Waiting nodes, each with the batch it is planned in when the rollout has batches (`first` is the batch
    // position of the first of them, `size` the batch size).
    let waiting_views =
        |candidates: &[(String, Artifact)], message: &str, batches: Option<(usize, usize)>| {
            candidates
                .iter()
                .enumerate()
                .map(|(index, (node, _))| NodeView {
                    node: node.clone(),
                    state: ShimNodeState::Waiting,
                    batch: batches
                        .and_then(|(first, size)| i32::try_from((first + index) / size + 1).ok()),
                    message: Some(message.to_owned()),
                })
                .collect::<Vec<_>>()
        };
    match shim.spec.rollout_strategy.type_ {
        RolloutType::Recreate => {
            let take = slots.min(install_candidates.len());
            let rest = install_candidates.split_off(take);
            if !install_candidates.is_empty() {
                plan.notices.push(Notice {
                    warning: false,
                    reason: "Installing",
                    note: format!(
                        "installing on {} nodes: {}",
                        install_candidates.len(),
                        list(install_candidates.iter().map(|(n, _)| n.as_str()))
                    ),
                });
            }
            for (node, artifact) in install_candidates {
                plan.create.push(install(node, artifact, None));
            }
            let why = if plan.paused {
                "the rollout is paused"
            } else {
                "waits for a free slot"
            };
            plan.views.extend(waiting_views(&rest, why, None));
        }
        RolloutType::Rolling => {
            let size = limit;
            let max_failures = rolling
                .and_then(|r| r.max_failures)
                .and_then(|m| usize::try_from(m).ok())
                .unwrap_or(0);
            let stopped = plan.install_failures.len() > max_failures;
            let fill = started % size;
            let next = started / size + 1;
            let manual = rolling.and_then(|r| r.approval) == Some(Approval::Manual);
            let approved = rolling.and_then(|r| r.approved_batch).unwrap_or(0);
            let batches = plan.installable.div_ceil(size).max(1);
            // A batch starts once the one before is over and nothing stopped the rollout; a started batch fills
            // up (after a restart, or a retried node) as long as it is approved.
            let may_continue = fill != 0 || (installing_current == 0 && !stopped);
            let is_approved =
                rolling.is_none_or(|r| r.approves(i32::try_from(next).unwrap_or(i32::MAX)));
            // The batch in progress is over once its last install finished in this pass and nothing of it is left
            // to start; it is told before the next batch starts, so the Events read in order.
            if finished_now
                && installing_current == 0
                && (fill == 0 || install_candidates.is_empty())
            {
                let done_batch = started.div_ceil(size).max(1);
                let failed = plan.install_failures.len();
                let tally = format!(
                    "{} of {} nodes provisioned, {failed} failed",
                    plan.provisioned, plan.installable
                );
                plan.notices.push(if stopped {
                    Notice {
                        warning: true,
                        reason: "BatchFailed",
                        note: format!(
                            "batch {done_batch} of {batches} failed: {tally}, more than maxFailures {max_failures}; \
                             the rollout stopped until failed installer pods are deleted to retry them"
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
            let mut awaiting = false;
            let mut starting = Vec::new();
            if !install_candidates.is_empty() && may_continue && !plan.paused {
                if is_approved {
                    let room = size - fill;
                    let take = room.min(slots).min(install_candidates.len());
                    starting = install_candidates.drain(..take).collect::<Vec<_>>();
                } else {
                    awaiting = true;
                }
            }
            if !starting.is_empty() {
                let verb = if fill == 0 { "started" } else { "continued" };
                if manual && fill == 0 {
                    let approval = approvals::approval(shim, next);
                    plan.notices.push(Notice {
                        warning: false,
                        reason: "BatchApproved",
                        note: format!(
                            "batch {next} of {batches} approved by {} (approvedBatch {approved})",
                            approval.approved_by
                        ),
                    });
                    plan.approved = Some(approval);
                }
                plan.notices.push(Notice {
                    warning: false,
                    reason: "BatchStarted",
                    note: format!(
                        "batch {next} of {batches} {verb} on {}",
                        list(starting.iter().map(|(n, _)| n.as_str()))
                    ),
                });
            }
            let now_started = started + starting.len();
            for (node, artifact) in starting {
                plan.create.push(install(node, artifact, Some(next as i32)));
            }
            let why = if plan.paused {
                "the rollout is paused".to_owned()
            } else if awaiting {
                format!("batch {next} waits for approval")
            } else if stopped {
                "the rollout stopped on failures".to_owned()
            } else {
                "waits for its batch".to_owned()
            };
            plan.views.extend(waiting_views(
                &install_candidates,
                &why,
                Some((now_started, size)),
            ));
            let batch = if awaiting {
                next
            } else {
                now_started.div_ceil(size).max(1)
            };
            plan.rollout = Some(Rollout {
                batch_size: size,
                batch: batch.min(batches),
                batches,
                awaiting_approval: awaiting,
                stopped: stopped && !install_candidates.is_empty(),
            });
        }
    }
    plan
}

fn install(node: String, artifact: Artifact, batch: Option<i32>) -> NewPod {
    NewPod {
        node,
        operation: Operation::Install,
        artifact: Some(artifact),
        batch,
    }
}

/// Node names for a message: the first few, then how many more.
fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    const SHOWN: usize = 5;
    if names.len() <= SHOWN {
        names.join(", ")
    } else {
        format!(
            "{} and {} more",
            names[..SHOWN].join(", "),
            names.len() - SHOWN
        )
    }
}

#[cfg(test)]
mod tests;
