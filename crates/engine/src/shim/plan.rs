//! One pass's decisions, as a pure function of the Shim, the nodes and the installer pods: which pods to create and
//! delete, which node labels to write, and where the rollout stands. Nothing here is remembered between passes.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;

use super::artifact::{self, Artifact};
use super::names::{self, Operation};
use super::pods::{self, Phase};
use crate::runtime::nodes;
use kmm_api::shim::{RollingUpdate, RolloutType, Shim, ShimNodeState};

mod approvals;
mod outcome;
mod starts;

pub(super) use outcome::{NewPod, NodeView, NodeWrite, Notice, Plan, Rollout};

/// What a pass plans from.
pub(super) struct Inputs<'a> {
    /// The Shim, read fresh.
    pub shim: &'a Shim,
    /// Hash of the spec parts nodes install.
    pub hash: &'a str,
    /// Every node.
    pub nodes: &'a [Arc<Node>],
    /// Every installer pod of the Shim.
    pub pods: &'a [Pod],
}

/// Plan one pass.
pub(super) fn plan(inputs: &Inputs<'_>) -> Plan {
    Planner::new(inputs).run()
}

/// The installer pods of one node.
#[derive(Default)]
struct NodePods<'a> {
    install: Option<&'a Pod>,
    uninstall: Option<&'a Pod>,
}

/// One pass in the making. It settles every node on its own first (what its pods and labels say), in name order so
/// that the batches are the same from pass to pass, and only then decides what may start: the rollout's limits count
/// every node.
struct Planner<'a> {
    shim: &'a Shim,
    hash: &'a str,
    nodes: &'a [Arc<Node>],
    label_key: String,
    hash_key: String,
    failed_batch_key: String,
    /// The Shim is being deleted: it leaves every node, all at once.
    deleting: bool,
    /// Installer pods by node. A node's pods are taken out as the node is settled, so what is left after that
    /// belongs to nodes that are gone.
    pods_by_node: HashMap<&'a str, NodePods<'a>>,
    /// Installer pods still running, of any node, spec or operation: each holds a slot of the rollout.
    unfinished: usize,
    /// Selected nodes ready for an install of the current spec, by name, with the archive each downloads.
    install_candidates: Vec<(String, Artifact)>,
    /// Nodes whose failed install of the current spec was retried (its pod deleted), by name, with the archive and
    /// the batch they failed in: they install again in that batch.
    retry_candidates: Vec<(String, Artifact, i32)>,
    /// Nodes the Shim left that still carry something of it, by name.
    uninstall_candidates: Vec<String>,
    /// Nodes of the current spec whose install started (provisioned, installing or failed): the batch count.
    started: usize,
    /// Installs of the current spec still running: a batch is over once none is.
    installing_current: usize,
    /// The batches of the installs of the current spec that ended in this pass (their nodes get their label now);
    /// `None` for an install that records no batch.
    finished_now: Vec<Option<i32>>,
    plan: Plan,
}

/// One node as the pass finds it.
struct NodeNow<'a> {
    node: &'a Node,
    name: String,
    /// The `<shim>` label: what the node carries.
    label: Option<String>,
    /// The spec hash annotation: the spec the node was provisioned with.
    hash: Option<String>,
    /// The failed-batch annotation: `<spec hash>/<batch>` of the install that failed there.
    failed_batch: Option<String>,
    pods: NodePods<'a>,
}

impl NodeNow<'_> {
    fn view(&self, state: ShimNodeState, message: Option<String>, batch: Option<i32>) -> NodeView {
        NodeView {
            node: self.name.clone(),
            state,
            batch,
            message,
        }
    }

    fn labelled(&self, value: &str) -> bool {
        self.label.as_deref() == Some(value)
    }

    /// Whether the node records anything of the shim, so an uninstall has something to clear.
    fn marked(&self) -> bool {
        self.label.is_some() || self.hash.is_some()
    }

    /// The batch the install of spec `hash` failed in on this node, as the node records it.
    fn failed_in(&self, hash: &str) -> Option<i32> {
        let (failed_hash, batch) = self.failed_batch.as_deref()?.rsplit_once('/')?;
        (failed_hash == hash).then(|| batch.parse().ok()).flatten()
    }

    /// The write that clears what the node records of the shim, once an uninstall took the shim away.
    fn clear(&self) -> NodeWrite {
        NodeWrite {
            node: self.name.clone(),
            label: self.label.is_some().then_some(None),
            hash: self.hash.is_some().then_some(None),
            batch: None,
            failed_batch: self.failed_batch.is_some().then_some(None),
        }
    }

    /// The write that labels the node failed; its hash stays, as what is installed there did not change.
    fn mark_failed(&self) -> NodeWrite {
        NodeWrite {
            node: self.name.clone(),
            label: Some(Some(names::FAILED.to_owned())),
            hash: None,
            batch: None,
            failed_batch: None,
        }
    }
}

impl<'a> Planner<'a> {
    fn new(inputs: &Inputs<'a>) -> Self {
        let shim = inputs.shim;
        let shim_name = shim.name_any();
        let deleting = shim.metadata.deletion_timestamp.is_some();
        let paused = !deleting
            && shim
                .spec
                .rollout_strategy
                .rolling
                .as_ref()
                .is_some_and(|r| r.paused);
        let (pods_by_node, unfinished) = pods_by_node(inputs.pods);
        Self {
            shim,
            hash: inputs.hash,
            nodes: inputs.nodes,
            label_key: names::node_label(&shim_name),
            hash_key: names::node_hash_annotation(&shim_name),
            failed_batch_key: names::node_failed_batch_annotation(&shim_name),
            deleting,
            pods_by_node,
            unfinished,
            install_candidates: Vec::new(),
            retry_candidates: Vec::new(),
            uninstall_candidates: Vec::new(),
            started: 0,
            installing_current: 0,
            finished_now: Vec::new(),
            plan: Plan {
                paused,
                ..Plan::default()
            },
        }
    }

    fn run(mut self) -> Plan {
        self.drop_pods_of_gone_nodes();
        let mut sorted: Vec<&'a Arc<Node>> = self.nodes.iter().collect();
        sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for node in sorted {
            self.node(node);
        }
        self.plan.installable = self.started + self.install_candidates.len();
        self.count_installs_of_gone_nodes();
        self.start();
        self.plan
    }

    /// The rolling strategy's settings, when the spec gives them.
    fn rolling(&self) -> Option<&'a RollingUpdate> {
        self.shim.spec.rollout_strategy.rolling.as_ref()
    }

    /// Pods of nodes that are gone: a finished one has nothing left to do, a running one finishes first (deleting
    /// it would not stop what it does on a node that may come back).
    fn drop_pods_of_gone_nodes(&mut self) {
        let known: std::collections::HashSet<&str> = self
            .nodes
            .iter()
            .filter_map(|n| n.metadata.name.as_deref())
            .collect();
        for (node, node_pods) in &self.pods_by_node {
            if known.contains(node) {
                continue;
            }
            for pod in [node_pods.install, node_pods.uninstall]
                .into_iter()
                .flatten()
            {
                if pods::phase(pod) != Phase::Running {
                    self.plan.delete.push(pod.name_any());
                }
            }
        }
    }

    /// Installs still running on nodes that are gone count as installing: they hold a slot until they end.
    fn count_installs_of_gone_nodes(&mut self) {
        self.plan.installing += self
            .pods_by_node
            .values()
            .filter_map(|p| p.install)
            .filter(|p| pods::phase(p) == Phase::Running)
            .count();
    }

    /// Settle one node: the step that fits what its pods and labels say.
    fn node(&mut self, node: &'a Node) {
        let name = node.name_any();
        let now = NodeNow {
            node,
            label: node.labels().get(&self.label_key).cloned(),
            hash: node.annotations().get(&self.hash_key).cloned(),
            failed_batch: node.annotations().get(&self.failed_batch_key).cloned(),
            pods: self.pods_by_node.remove(name.as_str()).unwrap_or_default(),
            name,
        };
        if now.labelled(names::PROVISIONED) {
            self.plan.running_shim += 1;
        }
        if !self.selects(node) {
            self.leave(&now);
            return;
        }
        self.plan.selected += 1;
        if let Some(pod) = now.pods.uninstall {
            self.come_back(&now, pod);
            return;
        }
        match now.pods.install {
            Some(pod) if pods::hash_of(pod) == Some(self.hash) => self.current_install(&now, pod),
            Some(pod) => self.older_install(&now, pod),
            None => self.no_installer(&now),
        }
    }

    /// The batch a node failed in under the current spec, when its failed install was retried: only rollouts in
    /// batches have one.
    fn retried_batch(&self, now: &NodeNow<'_>) -> Option<i32> {
        (self.shim.spec.rollout_strategy.type_ == RolloutType::Rolling)
            .then(|| now.failed_in(self.hash))
            .flatten()
    }

    /// Whether the Shim belongs on `node`: its selector matches and the Shim is not being deleted.
    fn selects(&self, node: &Node) -> bool {
        !self.deleting
            && self
                .shim
                .spec
                .node_selector
                .as_ref()
                .is_none_or(|s| nodes::matches_selector(node, s))
    }

    /// A node the Shim leaves: an install running there finishes first (the uninstall would race it), then the node
    /// uninstalls.
    fn leave(&mut self, now: &NodeNow<'_>) {
        if let Some(pod) = now.pods.install {
            if pods::phase(pod) == Phase::Running {
                self.plan.installing += 1;
                self.plan.uninstalling += 1;
                self.plan.views.push(now.view(
                    ShimNodeState::Uninstall,
                    Some("waits for its installer to finish before the uninstall".to_owned()),
                    None,
                ));
                return;
            }
            self.plan.delete.push(pod.name_any());
        }
        self.uninstall(now);
    }

    /// Where the uninstall of a node the Shim left stands. A node that records nothing of the shim has nothing to
    /// uninstall; one whose uninstall succeeded is cleared before its pod goes, so that a crash in between uninstalls
    /// again rather than leaving a label behind.
    fn uninstall(&mut self, now: &NodeNow<'_>) {
        match now.pods.uninstall.map(|p| (p, pods::phase(p))) {
            Some((_, Phase::Running)) => {
                self.plan.uninstalling += 1;
                self.plan
                    .views
                    .push(now.view(ShimNodeState::Uninstall, None, None));
            }
            Some((pod, Phase::Succeeded)) => {
                if now.marked() {
                    self.plan.node_writes.push(now.clear());
                    self.plan.uninstalling += 1;
                    self.plan
                        .views
                        .push(now.view(ShimNodeState::Uninstall, None, None));
                } else {
                    self.plan.delete.push(pod.name_any());
                }
            }
            Some((pod, Phase::Failed(message))) => self.uninstall_failed(now, pod, message),
            None => {
                if now.marked() {
                    self.plan.uninstalling += 1;
                    self.uninstall_candidates.push(now.name.clone());
                    self.plan
                        .views
                        .push(now.view(ShimNodeState::Uninstall, None, None));
                }
            }
        }
    }

    /// A failed uninstall stays (its pod is the way to retry, by deleting it); the node is labelled failed and an
    /// event told once, when the label changes.
    fn uninstall_failed(&mut self, now: &NodeNow<'_>, pod: &Pod, message: String) {
        if !now.labelled(names::FAILED) {
            self.plan.node_writes.push(now.mark_failed());
            self.plan.notices.push(Notice {
                warning: true,
                reason: "UninstallFailed",
                note: format!(
                    "{}: {message} (delete pod {} to retry)",
                    now.name,
                    pod.name_any()
                ),
            });
        }
        self.plan
            .uninstall_failures
            .push((now.name.clone(), message.clone()));
        self.plan.views.push(now.view(
            ShimNodeState::Failed,
            Some(format!("uninstall: {message}")),
            None,
        ));
    }

    /// A selected node whose uninstall has not ended (it came back while leaving): the uninstall finishes, the node
    /// is cleared, and only then does it wait to install afresh, so the two never run at once.
    fn come_back(&mut self, now: &NodeNow<'_>, pod: &Pod) {
        match pods::phase(pod) {
            Phase::Running => {
                self.plan.uninstalling += 1;
                self.plan.views.push(now.view(
                    ShimNodeState::Uninstall,
                    Some("selected again; installs once the uninstall ends".to_owned()),
                    None,
                ));
            }
            Phase::Succeeded if now.marked() => {
                self.plan.node_writes.push(now.clear());
                self.plan.waiting += 1;
                self.plan
                    .views
                    .push(now.view(ShimNodeState::Waiting, None, None));
            }
            _ => {
                self.plan.delete.push(pod.name_any());
                self.plan.waiting += 1;
                self.plan
                    .views
                    .push(now.view(ShimNodeState::Waiting, None, None));
            }
        }
    }

    /// An install of an older spec: it finishes (stopping it halfway could leave the node without a shim), then
    /// gives way to the current one.
    fn older_install(&mut self, now: &NodeNow<'_>, pod: &Pod) {
        if pods::phase(pod) == Phase::Running {
            self.plan.installing += 1;
            self.plan.views.push(now.view(
                ShimNodeState::Pending,
                Some("installing an older spec; reinstalls when done".to_owned()),
                None,
            ));
        } else {
            self.plan.delete.push(pod.name_any());
            self.plan.waiting += 1;
            self.plan
                .views
                .push(now.view(ShimNodeState::Waiting, None, None));
        }
    }

    /// An install of the current spec: it counts in its batch whatever its outcome.
    fn current_install(&mut self, now: &NodeNow<'_>, pod: &Pod) {
        let batch = pods::batch_of(pod);
        self.started += 1;
        match pods::phase(pod) {
            Phase::Running => {
                self.plan.installing += 1;
                self.installing_current += 1;
                self.plan
                    .views
                    .push(now.view(ShimNodeState::Pending, None, batch));
            }
            Phase::Succeeded => self.installed(now, pod, batch),
            Phase::Failed(message) => self.install_failed(now, pod, message, batch),
        }
    }

    /// A succeeded install: the node is labelled first, with the batch beside the hash, and the pod goes in a
    /// later pass, once the node shows the outcome (a crash in between loses nothing).
    fn installed(&mut self, now: &NodeNow<'_>, pod: &Pod, batch: Option<i32>) {
        self.plan.provisioned += 1;
        if !now.labelled(names::PROVISIONED) || now.hash.as_deref() != Some(self.hash) {
            self.plan.node_writes.push(NodeWrite {
                node: now.name.clone(),
                label: Some(Some(names::PROVISIONED.to_owned())),
                hash: Some(Some(self.hash.to_owned())),
                batch,
                failed_batch: now.failed_batch.is_some().then_some(None),
            });
            if !now.labelled(names::PROVISIONED) {
                self.plan.running_shim += 1;
            }
            self.finished_now.push(batch);
        } else {
            self.plan.delete.push(pod.name_any());
        }
    }

    /// A failed install stays (deleting its pod retries it) and counts against `maxFailures`; the node is labelled
    /// failed, with the batch it failed in (so that a retry stays in that batch), and an event told once, when the
    /// label changes, which also ends the install for the batch's tally.
    fn install_failed(
        &mut self,
        now: &NodeNow<'_>,
        pod: &Pod,
        message: String,
        batch: Option<i32>,
    ) {
        let failed_batch = batch.map(|b| format!("{}/{b}", self.hash));
        if failed_batch.is_some() && now.failed_batch != failed_batch {
            self.plan.node_writes.push(NodeWrite {
                failed_batch: Some(failed_batch),
                ..now.mark_failed()
            });
        } else if !now.labelled(names::FAILED) {
            self.plan.node_writes.push(now.mark_failed());
        }
        if !now.labelled(names::FAILED) {
            let rolled_back = message.contains("rolled back");
            self.plan.notices.push(Notice {
                warning: true,
                reason: if rolled_back {
                    "RolledBack"
                } else {
                    "InstallFailed"
                },
                note: format!(
                    "{}: {message} (delete pod {} in {} to retry)",
                    now.name,
                    pod.name_any(),
                    names::INSTALLER_NAMESPACE
                ),
            });
            self.finished_now.push(batch);
        }
        self.plan
            .install_failures
            .push((now.name.clone(), message.clone()));
        self.plan
            .views
            .push(now.view(ShimNodeState::Failed, Some(message), batch));
    }

    /// A selected node without an installer pod: provisioned on the current spec already, waiting to install (a
    /// candidate only when Ready and schedulable, as an installer pod could not run elsewhere), or failed for want
    /// of an archive.
    fn no_installer(&mut self, now: &NodeNow<'_>) {
        match artifact::resolve(&self.shim.spec.fetch_strategy, now.node) {
            Err(reason) => {
                if !now.labelled(names::FAILED) {
                    self.plan.node_writes.push(now.mark_failed());
                }
                self.plan.views.push(now.view(
                    ShimNodeState::Failed,
                    Some(reason.to_string()),
                    None,
                ));
                self.plan.no_artifact.push((now.name.clone(), reason));
            }
            Ok(_) if now.labelled(names::PROVISIONED) && now.hash.as_deref() == Some(self.hash) => {
                self.started += 1;
                self.plan.provisioned += 1;
            }
            Ok(artifact) if takes_pods(now.node) => {
                self.plan.waiting += 1;
                match self.retried_batch(now) {
                    // Its place in its batch stays taken: the batches after it keep their nodes and numbers.
                    Some(batch) => {
                        self.started += 1;
                        self.retry_candidates
                            .push((now.name.clone(), artifact, batch));
                    }
                    None => self.install_candidates.push((now.name.clone(), artifact)),
                }
            }
            Ok(_) => {
                self.plan.waiting += 1;
                self.plan.views.push(now.view(
                    ShimNodeState::Waiting,
                    Some("the node is not Ready and schedulable".to_owned()),
                    None,
                ));
            }
        }
    }
}

/// The installer pods by node, and how many of them run. A pod that names no node or operation is not one of ours
/// to plan.
fn pods_by_node(all: &[Pod]) -> (HashMap<&str, NodePods<'_>>, usize) {
    let mut by_node: HashMap<&str, NodePods<'_>> = HashMap::new();
    let mut unfinished = 0usize;
    for pod in all {
        let (Some(node), Some(operation)) = (pods::node_of(pod), pods::operation_of(pod)) else {
            continue;
        };
        if pods::phase(pod) == Phase::Running {
            unfinished += 1;
        }
        let entry = by_node.entry(node).or_default();
        match operation {
            Operation::Install => entry.install = Some(pod),
            Operation::Uninstall => entry.uninstall = Some(pod),
        }
    }
    (by_node, unfinished)
}

/// Whether an installer pod can run on `node` now: it is Ready and not cordoned.
fn takes_pods(node: &Node) -> bool {
    nodes::is_ready(node)
        && !node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false)
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
