//! HorizontalPodAutoscaler between `autoscaling/v1` (one CPU utilization target) and `autoscaling/v2` (a list of
//! metrics, scaling behaviour, conditions), the form it is stored in. A v2 object read through v1 shows its CPU
//! utilization target and keeps what v1 cannot say in annotations, from which a v1 write takes it back, so an
//! object edited through v1 loses nothing, as with kube-apiserver.

use serde_json::{Map, Value, json};

/// The annotations holding, as JSON, the v2 fields a v1 object cannot carry.
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";

/// Whether `metric` is a v2 CPU utilization target: the one metric v1 spells as a field.
fn is_cpu_utilization(metric: &Value) -> bool {
    metric["type"] == "Resource"
        && metric.pointer("/resource/name") == Some(&json!("cpu"))
        && metric.pointer("/resource/target/type") == Some(&json!("Utilization"))
}

/// The stored v2 `obj` as v1 serves it.
pub(super) fn to_v1(obj: &mut Value) {
    let mut kept = Map::new();
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = match spec.remove("metrics") {
            Some(Value::Array(metrics)) => metrics,
            _ => Vec::new(),
        };
        let (cpu, others): (Vec<Value>, Vec<Value>) =
            metrics.into_iter().partition(is_cpu_utilization);
        if let Some(target) = cpu
            .first()
            .and_then(|m| m.pointer("/resource/target/averageUtilization"))
        {
            spec.insert("targetCPUUtilizationPercentage".into(), target.clone());
        }
        if !others.is_empty() {
            kept.insert(METRICS.into(), json!(others).to_string().into());
        }
        if let Some(behavior) = spec.remove("behavior").filter(|b| !b.is_null()) {
            kept.insert(BEHAVIOR.into(), behavior.to_string().into());
        }
    }
    let status = obj
        .as_object_mut()
        .map(|o| o.entry("status").or_insert_with(|| json!({})));
    if let Some(status) = status.and_then(Value::as_object_mut) {
        let current = match status.remove("currentMetrics") {
            Some(Value::Array(current)) => current,
            _ => Vec::new(),
        };
        let (cpu, others): (Vec<Value>, Vec<Value>) = current.into_iter().partition(|m| {
            m["type"] == "Resource" && m.pointer("/resource/name") == Some(&json!("cpu"))
        });
        if let Some(utilization) = cpu
            .first()
            .and_then(|m| m.pointer("/resource/current/averageUtilization"))
        {
            status.insert(
                "currentCPUUtilizationPercentage".into(),
                utilization.clone(),
            );
        }
        if !others.is_empty() {
            kept.insert(CURRENT_METRICS.into(), json!(others).to_string().into());
        }
        if let Some(conditions) = status.remove("conditions").filter(|c| !c.is_null()) {
            kept.insert(CONDITIONS.into(), conditions.to_string().into());
        }
        // Both are plain integers in v1, present even before the autoscaler first acts.
        status.entry("currentReplicas").or_insert(json!(0));
        status.entry("desiredReplicas").or_insert(json!(0));
    }
    if !kept.is_empty() {
        let annotations = super::super::objects::meta_mut(obj)
            .entry("annotations")
            .or_insert_with(|| json!({}));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.extend(kept);
        }
    }
}

/// A v1 `obj` in the v2 form it is stored in, with what the annotations kept put back.
pub(super) fn to_v2(obj: &mut Value) {
    let mut kept = Map::new();
    if let Some(annotations) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        for key in [METRICS, BEHAVIOR, CURRENT_METRICS, CONDITIONS] {
            if let Some(Value::String(text)) = annotations.remove(key)
                && let Ok(value) = serde_json::from_str::<Value>(&text)
            {
                kept.insert(key.to_owned(), value);
            }
        }
        if annotations.is_empty() {
            super::super::objects::meta_mut(obj).remove("annotations");
        }
    }
    let as_list = |value: Option<Value>| match value {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics = Vec::new();
        if let Some(target) = spec.remove("targetCPUUtilizationPercentage") {
            metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": target}}}));
        }
        metrics.extend(as_list(kept.remove(METRICS)));
        if !metrics.is_empty() {
            spec.insert("metrics".into(), json!(metrics));
        }
        if let Some(behavior) = kept.remove(BEHAVIOR) {
            spec.insert("behavior".into(), behavior);
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        let mut current = Vec::new();
        if let Some(utilization) = status.remove("currentCPUUtilizationPercentage") {
            current.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": utilization}}}));
        }
        current.extend(as_list(kept.remove(CURRENT_METRICS)));
        if !current.is_empty() {
            status.insert("currentMetrics".into(), json!(current));
        }
        if let Some(conditions) = kept.remove(CONDITIONS) {
            status.insert("conditions".into(), conditions);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_target_round_trips_and_other_metrics_survive_v1() {
        let stored = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}
                ]},
            "status": {"currentReplicas": 2, "desiredReplicas": 2,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}]}});
        let mut v1 = stored.clone();
        to_v1(&mut v1);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        assert!(v1["spec"].get("metrics").is_none());
        assert!(v1["metadata"]["annotations"][METRICS].is_string());
        let mut back = v1;
        to_v2(&mut back);
        assert_eq!(back["spec"], stored["spec"]);
        assert_eq!(back["status"], stored["status"]);
        assert!(back["metadata"].get("annotations").is_none());
    }
}
