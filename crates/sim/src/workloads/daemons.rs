//! The DaemonSet controller of kube-controller-manager: one pod per eligible node.
//!
//! - A node is eligible when the pod of the DaemonSet's template (with the tolerations the controller adds: not-ready
//!   and unreachable NoExecute; disk-, memory- and pid-pressure and unschedulable NoSchedule) matches its
//!   `nodeSelector` and required node affinity and tolerates its NoSchedule and NoExecute taints, judged by the
//!   scheduler's own filters ([`filter::daemon_placement`]). A pod stays on a node that gained a NoSchedule taint it
//!   does not tolerate, and is deleted from a node it no longer matches or whose NoExecute taint it does not
//!   tolerate (or that is gone).
//! - Pods are created with `generateName: <daemonset>-`, owned by the DaemonSet (so deleting it cascades through the
//!   API server's garbage collector), labelled `controller-revision-hash` with a hash of the template, and pinned to
//!   their node by a required node affinity on `metadata.name`, which the scheduler honours. Failed or succeeded pods
//!   are deleted and replaced; a second pod on a node is deleted.
//! - A new template rolls out node by node (`RollingUpdate`, the default): pods of an older template are deleted
//!   while no more than `maxUnavailable` (a count or a percentage of the desired nodes, rounded up; default 1) of
//!   the desired nodes lack an available pod; not-ready old pods go at once. `maxSurge` is not simulated. With
//!   `OnDelete` old pods stay until someone deletes them.
//! - Status: `desiredNumberScheduled`, `currentNumberScheduled`, `numberMisscheduled`, `numberReady`,
//!   `numberAvailable` (ready for `minReadySeconds`), `numberUnavailable`, `updatedNumberScheduled` and
//!   `observedGeneration`, written when they change. Events `SuccessfulCreate` and `SuccessfulDelete`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    Toleration,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::replicas::is_ready;
use super::{
    controlled_by, controller_ref, params, patch_status_if_changed, record, template_hash,
};
use crate::scheduler::events::Recorder;
use crate::scheduler::filter::{self, DaemonPlacement};

/// The label tying a DaemonSet's pod to the template it was made from.
pub const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";

/// Whether a DaemonSet controls the pod.
pub fn has_daemon_controller(pod: &Pod) -> bool {
    pod.owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.kind == "DaemonSet")
}

/// The tolerations the DaemonSet controller adds to every pod it makes, so that node conditions do not evict
/// or keep out what must run on every node.
fn daemon_tolerations() -> Vec<Toleration> {
    let toleration = |key: &str, effect: &str| Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        effect: Some(effect.to_owned()),
        ..Toleration::default()
    };
    vec![
        toleration("node.kubernetes.io/not-ready", "NoExecute"),
        toleration("node.kubernetes.io/unreachable", "NoExecute"),
        toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
}

/// The pod of the DaemonSet's template, labelled with its hash and carrying the controller's tolerations, not yet
/// pinned to a node.
fn template_pod(daemon_set: &DaemonSet, hash: &str) -> Pod {
    let template = daemon_set
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let meta = template.metadata.unwrap_or_default();
    let mut labels = meta.labels.unwrap_or_default();
    labels.insert(CONTROLLER_REVISION_HASH.to_owned(), hash.to_owned());
    let mut spec = template.spec.unwrap_or_default();
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for toleration in daemon_tolerations() {
        if !tolerations.contains(&toleration) {
            tolerations.push(toleration);
        }
    }
    Pod {
        metadata: kube::api::ObjectMeta {
            generate_name: Some(format!("{}-", daemon_set.name_any())),
            namespace: daemon_set.namespace(),
            labels: Some(labels),
            annotations: meta.annotations,
            owner_references: controller_ref(daemon_set).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// `pod` pinned to `node` by required node affinity on the node's name (replacing any required node affinity
/// the template had: the controller has already judged the node against it).
fn pinned_to(pod: &Pod, node: &str) -> Pod {
    let mut pod = pod.clone();
    let spec = pod.spec.get_or_insert_with(Default::default);
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: "metadata.name".to_owned(),
                operator: "In".to_owned(),
                values: Some(vec![node.to_owned()]),
            }]),
            match_expressions: None,
        }],
    });
    pod
}

/// The node a pod of the DaemonSet is on, or is pinned to while it waits for the scheduler.
fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
        .or_else(|| filter::pinned_node(pod))
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.phase.as_deref())
}

/// Ready for at least `min_ready_seconds`.
fn is_available(pod: &Pod, min_ready_seconds: i32) -> bool {
    if !is_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    let since = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0);
    since.is_some_and(|since| {
        jiff::Timestamp::now().duration_since(since)
            >= jiff::SignedDuration::from_secs(i64::from(min_ready_seconds))
    })
}

/// How many desired nodes may lack an available pod while a new template rolls out.
fn max_unavailable(daemon_set: &DaemonSet, desired: usize) -> usize {
    let value = daemon_set
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.max_unavailable.clone());
    let scaled = match value {
        None => 1,
        Some(IntOrString::Int(n)) => usize::try_from(n).unwrap_or(0),
        Some(IntOrString::String(text)) => match text.trim().strip_suffix('%') {
            Some(percent) => {
                let percent = percent.trim().parse::<usize>().unwrap_or(0);
                (desired * percent).div_ceil(100)
            }
            None => text.trim().parse().unwrap_or(1),
        },
    };
    scaled.max(1)
}

fn rolls_on_its_own(daemon_set: &DaemonSet) -> bool {
    daemon_set
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        != Some("OnDelete")
}

/// How long a created pod may take to show in the pod cache before the controller stops waiting for it.
const EXPECTATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Pods created but not yet seen in the cache, by DaemonSet UID and node: the controller's expectations, which keep
/// a pass that runs before the pod watch catches up from creating a second pod on the node.
#[derive(Default)]
pub struct Expectations(HashMap<(String, String), (String, tokio::time::Instant)>);

impl Expectations {
    /// Whether a pod created for `node` is still on its way (and not seen among `owned`).
    fn awaiting(&mut self, uid: &str, node: &str, owned: &[&Arc<Pod>]) -> bool {
        let key = (uid.to_owned(), node.to_owned());
        let Some((name, since)) = self.0.get(&key) else {
            return false;
        };
        let seen = owned.iter().any(|p| p.metadata.name.as_ref() == Some(name));
        if seen || since.elapsed() > EXPECTATION_TIMEOUT {
            self.0.remove(&key);
            return false;
        }
        true
    }

    fn expect(&mut self, uid: &str, node: &str, pod: String) {
        self.0.insert(
            (uid.to_owned(), node.to_owned()),
            (pod, tokio::time::Instant::now()),
        );
    }

    /// Forget the DaemonSets that are gone.
    pub fn retain(&mut self, uids: &std::collections::HashSet<String>) {
        self.0.retain(|(uid, _), _| uids.contains(uid));
    }
}

/// One node as the pass sees it.
struct NodeState<'a> {
    placement: DaemonPlacement,
    /// Pods of the DaemonSet on the node that are neither terminating nor finished, oldest first.
    active: Vec<&'a Arc<Pod>>,
}

/// Keep one pod per eligible node, roll out a new template, and report.
pub async fn sync(
    client: &kube::Client,
    recorder: &Recorder,
    expectations: &mut Expectations,
    daemon_set: &DaemonSet,
    nodes: &[Arc<Node>],
    pods: &[Arc<Pod>],
) -> kube::Result<()> {
    let (Some(namespace), Some(uid), Some(spec)) = (
        daemon_set.namespace(),
        daemon_set.uid(),
        daemon_set.spec.as_ref(),
    ) else {
        return Ok(());
    };
    let api = Api::<Pod>::namespaced(client.clone(), &namespace);
    let hash = template_hash(&spec.template);
    let probe = template_pod(daemon_set, &hash);
    let owned: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|p| controlled_by(p.meta(), &uid))
        .collect();
    let (by_node, doomed) = place(&probe, nodes, &owned);
    let pass = Pass::decide(
        daemon_set,
        &uid,
        &hash,
        by_node,
        doomed,
        &owned,
        expectations,
    );
    for node in pass.create {
        let created = api.create(&params(), &pinned_to(&probe, node)).await?;
        expectations.expect(&uid, node, created.name_any());
        let message = format!("Created pod: {}", created.name_any());
        record(recorder, daemon_set, "SuccessfulCreate", &message).await;
    }
    for pod in pass.doomed {
        match api.delete(&pod.name_any(), &DeleteParams::default()).await {
            Ok(_) => {
                let message = format!("Deleted pod: {}", pod.name_any());
                record(recorder, daemon_set, "SuccessfulDelete", &message).await;
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    let old = serde_json::to_value(&daemon_set.status).unwrap_or(Value::Null);
    patch_status_if_changed(client, daemon_set, &old, pass.counts.status(daemon_set))
        .await
        .map(drop)
}

/// Every node with its placement and the active pods of the DaemonSet on it, and the pods to delete whatever
/// happens: finished ones, and those of nodes that are gone.
fn place<'a>(
    probe: &Pod,
    nodes: &'a [Arc<Node>],
    owned: &[&'a Arc<Pod>],
) -> (BTreeMap<&'a str, NodeState<'a>>, Vec<&'a Arc<Pod>>) {
    let mut by_node: BTreeMap<&str, NodeState> = nodes
        .iter()
        .filter_map(|node| {
            let name = node.metadata.name.as_deref()?;
            let placement = filter::daemon_placement(probe, node);
            Some((
                name,
                NodeState {
                    placement,
                    active: Vec::new(),
                },
            ))
        })
        .collect();
    let mut doomed: Vec<&Arc<Pod>> = Vec::new();
    for pod in owned {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if matches!(phase(pod), Some("Failed" | "Succeeded")) {
            doomed.push(pod);
            continue;
        }
        match node_of(pod).and_then(|node| by_node.get_mut(node)) {
            Some(state) => state.active.push(pod),
            None => doomed.push(pod),
        }
    }
    (by_node, doomed)
}

/// The status counts of one pass.
#[derive(Default)]
struct Counts {
    desired: usize,
    current: usize,
    misscheduled: usize,
    ready: usize,
    available: usize,
    updated: usize,
}

impl Counts {
    fn status(&self, daemon_set: &DaemonSet) -> Value {
        let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        json!({
            "desiredNumberScheduled": count(self.desired),
            "currentNumberScheduled": count(self.current),
            "numberMisscheduled": count(self.misscheduled),
            "numberReady": count(self.ready),
            "numberAvailable": count(self.available),
            "numberUnavailable": count(self.desired.saturating_sub(self.available)),
            "updatedNumberScheduled": count(self.updated),
            "observedGeneration": daemon_set.meta().generation,
        })
    }
}

/// What one pass does: the nodes that get a pod, the pods that go, and the counts it reports.
struct Pass<'a> {
    create: Vec<&'a str>,
    doomed: Vec<&'a Arc<Pod>>,
    counts: Counts,
}

impl<'a> Pass<'a> {
    /// Decide node by node: a node keeps its oldest pod, gets one if it wants one (unless a create is still on its
    /// way), loses one it should not have; old-template pods go within the `maxUnavailable` budget left.
    fn decide(
        daemon_set: &DaemonSet,
        uid: &str,
        hash: &str,
        mut by_node: BTreeMap<&'a str, NodeState<'a>>,
        doomed: Vec<&'a Arc<Pod>>,
        owned: &[&Arc<Pod>],
        expectations: &mut Expectations,
    ) -> Self {
        let min_ready = daemon_set
            .spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0);
        let mut pass = Pass {
            create: Vec::new(),
            doomed,
            counts: Counts::default(),
        };
        let counts = &mut pass.counts;
        let mut old_ready: Vec<&Arc<Pod>> = Vec::new();
        let mut unavailable = 0;
        for (node, state) in &mut by_node {
            state
                .active
                .sort_by_key(|p| p.creation_timestamp().map(|t| t.0));
            if state.active.len() > 1 {
                pass.doomed.extend(state.active.drain(1..));
            }
            let pod = state.active.first().copied();
            let wanted = match state.placement {
                DaemonPlacement::Run => true,
                DaemonPlacement::Keep => pod.is_some(),
                DaemonPlacement::None => false,
            };
            if !wanted {
                if let Some(pod) = pod {
                    counts.misscheduled += 1;
                    pass.doomed.push(pod);
                }
                continue;
            }
            counts.desired += 1;
            let awaiting = expectations.awaiting(uid, node, owned);
            let Some(pod) = pod else {
                unavailable += 1;
                if !awaiting {
                    pass.create.push(node);
                }
                continue;
            };
            counts.current += 1;
            let is_current = pod
                .labels()
                .get(CONTROLLER_REVISION_HASH)
                .map(String::as_str)
                == Some(hash);
            counts.updated += usize::from(is_current);
            counts.ready += usize::from(is_ready(pod));
            let pod_available = is_available(pod, min_ready);
            counts.available += usize::from(pod_available);
            if !pod_available {
                unavailable += 1;
            }
            if !is_current && rolls_on_its_own(daemon_set) {
                if pod_available {
                    old_ready.push(pod);
                } else {
                    pass.doomed.push(pod);
                }
            }
        }
        let budget = max_unavailable(daemon_set, counts.desired).saturating_sub(unavailable);
        pass.doomed.extend(old_ready.into_iter().take(budget));
        pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn daemon_set(strategy: Value) -> DaemonSet {
        serde_json::from_value(json!({
            "metadata": {"name": "dp", "namespace": "ns", "uid": "u1"},
            "spec": {
                "selector": {"matchLabels": {"app": "dp"}},
                "updateStrategy": strategy,
                "template": {
                    "metadata": {"labels": {"app": "dp"}},
                    "spec": {"containers": [{"name": "c", "image": "i:1"}], "nodeSelector": {"gpu": "yes"}}
                }
            }
        }))
        .expect("a DaemonSet")
    }

    #[test]
    fn max_unavailable_is_a_count_or_a_rounded_up_percentage() {
        assert_eq!(max_unavailable(&daemon_set(json!({})), 10), 1);
        let percent = daemon_set(json!({"rollingUpdate": {"maxUnavailable": "25%"}}));
        assert_eq!(max_unavailable(&percent, 10), 3);
        assert_eq!(max_unavailable(&percent, 0), 1);
        let count = daemon_set(json!({"rollingUpdate": {"maxUnavailable": 2}}));
        assert_eq!(max_unavailable(&count, 10), 2);
        assert!(rolls_on_its_own(&count));
        assert!(!rolls_on_its_own(&daemon_set(json!({"type": "OnDelete"}))));
    }

    #[test]
    fn pods_carry_the_template_hash_tolerations_owner_and_pin() {
        let ds = daemon_set(json!({}));
        let pod = pinned_to(&template_pod(&ds, "abc"), "node-1");
        assert_eq!(pod.labels()[CONTROLLER_REVISION_HASH], "abc");
        assert_eq!(pod.labels()["app"], "dp");
        assert_eq!(filter::pinned_node(&pod), Some("node-1"));
        assert_eq!(node_of(&pod), Some("node-1"));
        assert!(has_daemon_controller(&pod));
        let tolerations = pod.spec.and_then(|s| s.tolerations).unwrap_or_default();
        assert_eq!(tolerations.len(), 6);
    }
}
