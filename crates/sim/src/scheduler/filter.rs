//! Which nodes can run a pod, and why the others cannot: the filters of kube-scheduler that matter for the
//! simulated cluster (node unschedulable, taints and tolerations, node selector and required node affinity, free
//! devices of the extended resources device plugins advertise, and the devices of ResourceClaims, see `dra`), run
//! in kube-scheduler's order and worded as it words them, so `kubectl describe pod` reads as on a real cluster.
//!
//! Node readiness is seen the way kube-scheduler sees it: a node whose Ready condition is not `True` carries the
//! `node.kubernetes.io/not-ready` (Ready=False or not reported yet) or `node.kubernetes.io/unreachable`
//! (Ready=Unknown) NoSchedule taint that the node lifecycle controller would put on it, so only pods that
//! tolerate it can land there.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint,
    Toleration,
};

use crate::effects::device_plugin::is_extended_resource;

/// Taint key of nodes marked unschedulable (cordoned).
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";
/// Taint key of nodes whose Ready condition is False or missing.
const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
/// Taint key of nodes whose Ready condition is Unknown.
const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";
/// The only field `matchFields` may name.
const NAME_FIELD: &str = "metadata.name";

/// Why a node cannot run a pod (the first filter that rejects it, as kube-scheduler reports).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Unfit {
    /// The node is cordoned and the pod does not tolerate it.
    Unschedulable,
    /// A NoSchedule or NoExecute taint the pod does not tolerate.
    UntoleratedTaint {
        /// Taint key.
        key: String,
        /// Taint value (empty when the taint has none).
        value: String,
    },
    /// The pod's node selector or required node affinity excludes the node.
    Affinity,
    /// The node has too few free devices of an extended resource the pod requests.
    Insufficient(String),
    /// The pod's unallocated ResourceClaims cannot all get devices the node's drivers publish.
    ClaimsUnallocatable,
    /// One of the pod's ResourceClaims is allocated on another node.
    ClaimNotOnNode,
}

impl fmt::Display for Unfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfit::Unschedulable => f.write_str("node(s) were unschedulable"),
            Unfit::UntoleratedTaint { key, value } => {
                write!(f, "node(s) had untolerated taint {{{key}: {value}}}")
            }
            Unfit::Affinity => f.write_str("node(s) didn't match Pod's node affinity/selector"),
            Unfit::Insufficient(resource) => write!(f, "Insufficient {resource}"),
            Unfit::ClaimsUnallocatable => f.write_str("cannot allocate all claims"),
            Unfit::ClaimNotOnNode => f.write_str("resourceclaim not available on the node"),
        }
    }
}

/// Whether `node` can run `pod`, or the reason it cannot.
pub(crate) fn check(pod: &Pod, node: &Node) -> Result<(), Unfit> {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        let cordon = taint(UNSCHEDULABLE_TAINT, "NoSchedule");
        if !tolerations.iter().any(|t| tolerates(t, &cordon)) {
            return Err(Unfit::Unschedulable);
        }
    }
    if let Some(untolerated) = effective_taints(node)
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| {
            !tolerations
                .iter()
                .any(|toleration| tolerates(toleration, t))
        })
    {
        return Err(Unfit::UntoleratedTaint {
            key: untolerated.key.clone(),
            value: untolerated.value.clone().unwrap_or_default(),
        });
    }
    if !matches_affinity(pod, node) {
        return Err(Unfit::Affinity);
    }
    Ok(())
}

/// The node a pod's required node affinity pins it to: a single term whose only requirement is
/// `metadata.name In [<node>]`, as the DaemonSet controller writes.
pub(crate) fn pinned_node(pod: &Pod) -> Option<&str> {
    let terms = &pod
        .spec
        .as_ref()?
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    let [term] = terms.as_slice() else {
        return None;
    };
    let [field] = term.match_fields.as_deref()? else {
        return None;
    };
    if term
        .match_expressions
        .as_ref()
        .is_some_and(|e| !e.is_empty())
        || field.key != "metadata.name"
        || field.operator != "In"
    {
        return None;
    }
    match field.values.as_deref()? {
        [name] => Some(name.as_str()),
        _ => None,
    }
}

/// Extended resources (devices of device plugins) by name, with counts.
pub(crate) type Devices = BTreeMap<String, u64>;

/// The devices a pod asks for: per extended resource, the sum over its containers (a request, or the limit when
/// there is no request, as the API server defaults it), or the largest init container's if that is more.
pub(crate) fn requested_devices(pod: &Pod) -> Devices {
    let Some(spec) = pod.spec.as_ref() else {
        return Devices::new();
    };
    let of = |container: &Container| -> Devices {
        let resources = container.resources.as_ref();
        let requests = resources.and_then(|r| r.requests.as_ref());
        let limits = resources.and_then(|r| r.limits.as_ref());
        requests
            .into_iter()
            .chain(limits)
            .flatten()
            .filter(|(name, _)| is_extended_resource(name))
            .filter_map(|(name, quantity)| Some((name.clone(), quantity.0.trim().parse().ok()?)))
            .fold(Devices::new(), |mut devices, (name, count)| {
                devices.entry(name).or_insert(count);
                devices
            })
    };
    let mut wanted = Devices::new();
    for container in &spec.containers {
        for (name, count) in of(container) {
            *wanted.entry(name).or_default() += count;
        }
    }
    for container in spec.init_containers.iter().flatten() {
        for (name, count) in of(container) {
            let entry = wanted.entry(name).or_default();
            *entry = (*entry).max(count);
        }
    }
    wanted
}

/// Whether the node has the devices `wanted` free, given what its pods already use (`used`), or the first resource
/// it lacks (kube-scheduler's NodeResourcesFit, for the extended resources the simulation accounts).
pub(crate) fn check_devices(
    wanted: &Devices,
    node: &Node,
    used: Option<&Devices>,
) -> Result<(), Unfit> {
    let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
    for (resource, count) in wanted.iter().filter(|(_, count)| **count > 0) {
        let offered: u64 = allocatable
            .and_then(|a| a.get(resource))
            .and_then(|q| q.0.trim().parse().ok())
            .unwrap_or(0);
        let taken = used.and_then(|u| u.get(resource)).copied().unwrap_or(0);
        if offered < taken.saturating_add(*count) {
            return Err(Unfit::Insufficient(resource.clone()));
        }
    }
    Ok(())
}

/// Where a DaemonSet wants its pod, judged as the DaemonSet controller judges a node with the pod its template
/// makes (the node's readiness is left to the scheduler, as the controller leaves it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DaemonPlacement {
    /// The node should run a pod.
    Run,
    /// No new pod, but one already there may stay: a NoSchedule taint it does not tolerate.
    Keep,
    /// No pod here: the selector or affinity excludes the node, or a NoExecute taint would evict the pod.
    None,
}

/// Where a DaemonSet's pod `pod` (its template, with the DaemonSet tolerations) belongs relative to `node`.
pub(crate) fn daemon_placement(pod: &Pod, node: &Node) -> DaemonPlacement {
    if !matches_affinity(pod, node) {
        return DaemonPlacement::None;
    }
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    let mut taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        taints.push(taint(UNSCHEDULABLE_TAINT, "NoSchedule"));
    }
    let untolerated = |effect: &str| {
        taints.iter().filter(|t| t.effect == effect).any(|t| {
            !tolerations
                .iter()
                .any(|toleration| tolerates(toleration, t))
        })
    };
    if untolerated("NoExecute") {
        DaemonPlacement::None
    } else if untolerated("NoSchedule") {
        DaemonPlacement::Keep
    } else {
        DaemonPlacement::Run
    }
}

/// The message of a pod that cannot be scheduled before any node is looked at (a ResourceClaim it waits for), as
/// kube-scheduler words a pre-filter's verdict.
pub(crate) fn waiting_message(total: usize, reason: &str) -> String {
    format!(
        "0/{total} nodes are available: {reason}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
    )
}

/// Whether `node` matches a node selector (one of its terms), as a claim's allocation pins its pods.
pub(crate) fn node_selector_matches(selector: &NodeSelector, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let name = node.metadata.name.as_deref().unwrap_or_default();
    selector
        .node_selector_terms
        .iter()
        .any(|term| term_matches(term, labels, name))
}

/// The message of a pod no node can run, from the number of nodes and why each was rejected.
pub(crate) fn unschedulable_message(total: usize, reasons: &BTreeMap<Unfit, usize>) -> String {
    if total == 0 {
        return "no nodes available to schedule pods".to_string();
    }
    let mut histogram: Vec<String> = reasons
        .iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    histogram.sort();
    format!(
        "0/{total} nodes are available: {}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling.",
        histogram.join(", ")
    )
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.to_string(),
        effect: effect.to_string(),
        ..Taint::default()
    }
}

/// The node's taints plus the one its readiness implies.
fn effective_taints(node: &Node) -> Vec<Taint> {
    let mut taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.status.as_str());
    let implied = match ready {
        Some("True") => None,
        Some("Unknown") => Some(UNREACHABLE_TAINT),
        _ => Some(NOT_READY_TAINT),
    };
    if let Some(key) = implied
        && !taints
            .iter()
            .any(|t| t.key == key && t.effect == "NoSchedule")
    {
        taints.push(taint(key, "NoSchedule"));
    }
    taints
}

/// Whether a toleration tolerates a taint: same effect (or any), same key (or any, with `Exists`), and
/// `Exists` or an equal value.
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect
    {
        return false;
    }
    if let Some(key) = toleration.key.as_deref().filter(|k| !k.is_empty())
        && key != taint.key
    {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// `spec.nodeSelector` and required node affinity.
fn matches_affinity(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return true;
    };
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let selector_ok = spec
        .node_selector
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let affinity_ok = required.is_none_or(|selector| {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        selector
            .node_selector_terms
            .iter()
            .any(|term| term_matches(term, labels, name))
    });
    selector_ok && affinity_ok
}

/// A term matches when all its requirements do; a term without requirements matches nothing.
fn term_matches(term: &NodeSelectorTerm, labels: &BTreeMap<String, String>, name: &str) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    let name_field = BTreeMap::from([(NAME_FIELD.to_string(), name.to_string())]);
    expressions
        .iter()
        .all(|e| requirement_matches(e, labels, true))
        && fields
            .iter()
            .all(|f| f.key == NAME_FIELD && requirement_matches(f, &name_field, false))
}

/// One requirement against labels (or fields, which allow only `In` and `NotIn`).
fn requirement_matches(
    requirement: &NodeSelectorRequirement,
    values_by_key: &BTreeMap<String, String>,
    labels: bool,
) -> bool {
    let value = values_by_key.get(&requirement.key);
    let wanted = requirement.values.as_deref().unwrap_or_default();
    match (requirement.operator.as_str(), labels) {
        ("In", _) => value.is_some_and(|v| wanted.contains(v)),
        ("NotIn", _) => !value.is_some_and(|v| wanted.contains(v)),
        ("Exists", true) => value.is_some(),
        ("DoesNotExist", true) => value.is_none(),
        (operator @ ("Gt" | "Lt"), true) => {
            let (Some(actual), [bound]) = (value, wanted) else {
                return false;
            };
            match (actual.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(actual), Ok(bound)) if operator == "Gt" => actual > bound,
                (Ok(actual), Ok(bound)) => actual < bound,
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(value: serde_json::Value) -> Node {
        serde_json::from_value(value).expect("a node")
    }

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).expect("a pod")
    }

    fn ready_node(name: &str, labels: serde_json::Value, taints: serde_json::Value) -> Node {
        node(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }))
    }

    #[test]
    fn tolerations_follow_operator_key_and_effect() {
        let n = ready_node(
            "n",
            json!({}),
            json!([{"key": "gpu", "value": "a100", "effect": "NoSchedule"}]),
        );
        let untolerated = Err(Unfit::UntoleratedTaint {
            key: "gpu".into(),
            value: "a100".into(),
        });
        assert_eq!(check(&pod(json!({"containers": []})), &n), untolerated);
        let cases = [
            (
                json!({"key": "gpu", "operator": "Equal", "value": "a100"}),
                true,
            ),
            (
                json!({"key": "gpu", "value": "a100", "effect": "NoSchedule"}),
                true,
            ),
            (json!({"key": "gpu", "value": "h100"}), false),
            (json!({"key": "gpu", "operator": "Exists"}), true),
            (
                json!({"key": "gpu", "operator": "Exists", "effect": "NoExecute"}),
                false,
            ),
            (json!({"operator": "Exists"}), true),
            (json!({"key": "other", "operator": "Exists"}), false),
        ];
        for (toleration, fits) in cases {
            let p = pod(json!({"containers": [], "tolerations": [toleration.clone()]}));
            assert_eq!(check(&p, &n).is_ok(), fits, "{toleration}");
        }
        let soft = ready_node(
            "s",
            json!({}),
            json!([{"key": "x", "effect": "PreferNoSchedule"}]),
        );
        assert_eq!(check(&pod(json!({"containers": []})), &soft), Ok(()));
    }

    #[test]
    fn readiness_and_cordon_act_as_taints() {
        let p = pod(json!({"containers": []}));
        let not_ready = node(json!({"metadata": {"name": "n"},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}}));
        assert_eq!(
            check(&p, &not_ready),
            Err(Unfit::UntoleratedTaint {
                key: NOT_READY_TAINT.into(),
                value: String::new()
            })
        );
        let unknown = node(json!({"metadata": {"name": "n"},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}));
        assert!(
            matches!(check(&p, &unknown), Err(Unfit::UntoleratedTaint { key, .. }) if key == UNREACHABLE_TAINT)
        );
        let cordoned = node(
            json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        );
        assert_eq!(check(&p, &cordoned), Err(Unfit::Unschedulable));
        let tolerant = pod(json!({"containers": [], "tolerations": [
            {"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"}]}));
        assert_eq!(check(&tolerant, &cordoned), Ok(()));
    }

    #[test]
    fn node_affinity_operators() {
        let n = ready_node("w-1", json!({"zone": "a", "cores": "16"}), json!([]));
        let with = |expressions: serde_json::Value, fields: serde_json::Value| {
            pod(json!({"containers": [], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": expressions, "matchFields": fields}]}}}}))
        };
        let cases = [
            (
                json!([{"key": "zone", "operator": "In", "values": ["a", "b"]}]),
                json!([]),
                true,
            ),
            (
                json!([{"key": "zone", "operator": "NotIn", "values": ["a"]}]),
                json!([]),
                false,
            ),
            (
                json!([{"key": "rack", "operator": "NotIn", "values": ["a"]}]),
                json!([]),
                true,
            ),
            (
                json!([{"key": "zone", "operator": "Exists"}]),
                json!([]),
                true,
            ),
            (
                json!([{"key": "zone", "operator": "DoesNotExist"}]),
                json!([]),
                false,
            ),
            (
                json!([{"key": "cores", "operator": "Gt", "values": ["8"]}]),
                json!([]),
                true,
            ),
            (
                json!([{"key": "cores", "operator": "Lt", "values": ["8"]}]),
                json!([]),
                false,
            ),
            (
                json!([{"key": "zone", "operator": "Gt", "values": ["1"]}]),
                json!([]),
                false,
            ),
            (
                json!([]),
                json!([{"key": "metadata.name", "operator": "In", "values": ["w-1"]}]),
                true,
            ),
            (
                json!([]),
                json!([{"key": "metadata.name", "operator": "NotIn", "values": ["w-1"]}]),
                false,
            ),
            (json!([]), json!([]), false),
        ];
        for (expressions, fields, fits) in cases {
            let p = with(expressions.clone(), fields.clone());
            assert_eq!(check(&p, &n).is_ok(), fits, "{expressions} {fields}");
        }
        let selector = pod(json!({"containers": [], "nodeSelector": {"zone": "b"}}));
        assert_eq!(check(&selector, &n), Err(Unfit::Affinity));
    }

    #[test]
    fn extended_resources_fit_only_where_enough_devices_are_free() {
        let pod = pod(json!({
            "initContainers": [{"name": "i", "resources": {"limits": {"example.com/gpu": "3"}}}],
            "containers": [
                {"name": "a", "resources": {"requests": {"example.com/gpu": "1", "cpu": "1"}}},
                {"name": "b", "resources": {"limits": {"example.com/gpu": "1", "kubernetes.io/x": "1"}}}
            ]
        }));
        let wanted = requested_devices(&pod);
        assert_eq!(wanted, Devices::from([("example.com/gpu".to_owned(), 3)]));
        let with_gpus = |count: &str| {
            node(
                json!({"metadata": {"name": "n"}, "status": {"allocatable": {"example.com/gpu": count}}}),
            )
        };
        assert_eq!(check_devices(&wanted, &with_gpus("4"), None), Ok(()));
        let used = Devices::from([("example.com/gpu".to_owned(), 2)]);
        assert_eq!(
            check_devices(&wanted, &with_gpus("4"), Some(&used)),
            Err(Unfit::Insufficient("example.com/gpu".into()))
        );
        let none = node(json!({"metadata": {"name": "n"}}));
        let reason = check_devices(&wanted, &none, None).expect_err("no devices");
        assert_eq!(reason.to_string(), "Insufficient example.com/gpu");
        assert_eq!(check_devices(&Devices::new(), &none, None), Ok(()));
    }

    #[test]
    fn daemon_pods_stay_through_no_schedule_but_not_no_execute() {
        let daemon = pod(json!({"nodeSelector": {"gpu": "yes"}, "containers": []}));
        let labelled = |taints: serde_json::Value| {
            node(
                json!({"metadata": {"name": "n", "labels": {"gpu": "yes"}}, "spec": {"taints": taints}}),
            )
        };
        assert_eq!(
            daemon_placement(&daemon, &labelled(json!([]))),
            DaemonPlacement::Run
        );
        let no_schedule = labelled(json!([{"key": "k", "effect": "NoSchedule"}]));
        assert_eq!(
            daemon_placement(&daemon, &no_schedule),
            DaemonPlacement::Keep
        );
        let no_execute = labelled(json!([{"key": "k", "effect": "NoExecute"}]));
        assert_eq!(
            daemon_placement(&daemon, &no_execute),
            DaemonPlacement::None
        );
        let other = node(json!({"metadata": {"name": "n", "labels": {"gpu": "no"}}}));
        assert_eq!(daemon_placement(&daemon, &other), DaemonPlacement::None);
    }

    #[test]
    fn messages_read_like_kube_scheduler() {
        let reasons = BTreeMap::from([
            (
                Unfit::UntoleratedTaint {
                    key: "key".into(),
                    value: "value".into(),
                },
                3,
            ),
            (Unfit::Affinity, 9),
        ]);
        assert_eq!(
            unschedulable_message(12, &reasons),
            "0/12 nodes are available: 3 node(s) had untolerated taint {key: value}, 9 node(s) didn't match Pod's node affinity/selector. preemption: 0/12 nodes are available: 12 Preemption is not helpful for scheduling."
        );
        assert_eq!(
            unschedulable_message(0, &BTreeMap::new()),
            "no nodes available to schedule pods"
        );
    }
}
