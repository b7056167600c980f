//! Which nodes a Module targets: its equality selector, and the taints its tolerations (plus the pressure taints
//! the engine always tolerates) let it onto.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Taint, Toleration};

/// Pressure taints every engine pod tolerates: a node short of disk, memory or PIDs can still load a module.
pub fn internal_tolerations() -> Vec<Toleration> {
    [
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
    ]
    .into_iter()
    .map(|key| Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        effect: Some("NoSchedule".to_owned()),
        ..Default::default()
    })
    .collect()
}

/// `tolerations` followed by the internal ones.
pub fn with_internal_tolerations(tolerations: &[Toleration]) -> Vec<Toleration> {
    let mut all = tolerations.to_vec();
    all.extend(internal_tolerations());
    all
}

/// Whether every `key: value` of the selector is a label of the node.
pub fn matches_selector(node: &Node, selector: &BTreeMap<String, String>) -> bool {
    let labels = node.metadata.labels.as_ref();
    selector
        .iter()
        .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
}

/// The first `NoSchedule` or `NoExecute` taint of the node that none of `tolerations` tolerates: the reason pods
/// with those tolerations cannot run there.
pub fn blocking_taint<'n>(node: &'n Node, tolerations: &[Toleration]) -> Option<&'n Taint> {
    node.spec
        .as_ref()?
        .taints
        .as_ref()?
        .iter()
        .filter(|taint| matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute"))
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

/// Whether one toleration tolerates one taint, by the Kubernetes rules.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect
    {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => key.is_empty() || key == taint.key,
        "Equal" => {
            key == taint.key
                && toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        _ => false,
    }
}

/// How a taint reads in a condition message: `key=value:Effect`.
pub fn describe_taint(taint: &Taint) -> String {
    match taint.value.as_deref().filter(|v| !v.is_empty()) {
        Some(value) => format!("{}={}:{}", taint.key, value, taint.effect),
        None => format!("{}:{}", taint.key, taint.effect),
    }
}

/// Whether the node's `Ready` condition is `True`.
pub fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_with(labels: &[(&str, &str)], taints: &[(&str, &str, &str)]) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n", "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()},
            "spec": {"taints": taints.iter().map(|(k, v, e)| serde_json::json!({"key": k, "value": v, "effect": e})).collect::<Vec<_>>()},
        }))
        .expect("node")
    }

    #[test]
    fn selector_needs_every_pair() {
        let node = node_with(&[("a", "1"), ("b", "2")], &[]);
        let sel = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(matches_selector(&node, &sel(&[("a", "1")])));
        assert!(!matches_selector(&node, &sel(&[("a", "1"), ("c", "3")])));
        assert!(!matches_selector(&node, &sel(&[("a", "2")])));
    }

    #[test]
    fn untolerated_no_schedule_taint_blocks() {
        let node = node_with(
            &[],
            &[
                ("maintenance", "true", "NoSchedule"),
                ("soft", "", "PreferNoSchedule"),
            ],
        );
        let taint = blocking_taint(&node, &internal_tolerations()).expect("blocked");
        assert_eq!(describe_taint(taint), "maintenance=true:NoSchedule");
        let tolerate = Toleration {
            key: Some("maintenance".into()),
            operator: Some("Exists".into()),
            ..Default::default()
        };
        assert!(blocking_taint(&node, &[tolerate]).is_none());
        let wrong_value = Toleration {
            key: Some("maintenance".into()),
            value: Some("false".into()),
            ..Default::default()
        };
        assert!(blocking_taint(&node, &[wrong_value]).is_some());
    }

    #[test]
    fn pressure_taints_are_always_tolerated() {
        let node = node_with(
            &[],
            &[("node.kubernetes.io/memory-pressure", "", "NoSchedule")],
        );
        assert!(blocking_taint(&node, &internal_tolerations()).is_none());
        assert!(blocking_taint(&node, &[]).is_some());
    }
}
