//! HorizontalPodAutoscalers, in either served version: a target to scale (kind and name), replica bounds that make
//! sense (at least one, the maximum not below the minimum), and targets a controller can act on (a CPU percentage
//! in v1; typed metrics with a typed target in v2).

use serde_json::{Value, json};

use super::field::{Errors, child, index, items, text};
use super::meta;

const METRIC_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];

const TARGET_TYPES: &[&str] = &["AverageValue", "Utilization", "Value"];

/// A HorizontalPodAutoscaler, as written in `autoscaling/v1` or `autoscaling/v2`.
pub(super) fn horizontal_pod_autoscaler(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let target = spec.get("scaleTargetRef").unwrap_or(&Value::Null);
    for field in ["kind", "name"] {
        if text(target, field).is_empty() {
            errors.required(&format!("spec.scaleTargetRef.{field}"), "");
        }
    }
    let min = spec.get("minReplicas").and_then(Value::as_i64);
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if let Some(min) = min
        && min < 1
    {
        errors.invalid(
            "spec.minReplicas",
            &json!(min),
            "must be greater than or equal to 1",
        );
    }
    if max < 1 {
        errors.invalid("spec.maxReplicas", &json!(max), "must be greater than 0");
    } else if min.is_some_and(|min| max < min) {
        errors.invalid(
            "spec.maxReplicas",
            &json!(max),
            "must be greater than or equal to `minReplicas`",
        );
    }
    if let Some(percent) = spec
        .get("targetCPUUtilizationPercentage")
        .and_then(Value::as_i64)
        && percent < 1
    {
        errors.invalid(
            "spec.targetCPUUtilizationPercentage",
            &json!(percent),
            "must be greater than or equal to 1",
        );
    }
    for (i, metric) in items(spec, "metrics").iter().enumerate() {
        self::metric(&mut errors, metric, &index("spec.metrics", i));
    }
    errors
}

/// One v2 metric: a known type whose source (the field named after the type) has a typed target.
fn metric(errors: &mut Errors, metric: &Value, at: &str) {
    let kind = text(metric, "type");
    if kind.is_empty() {
        errors.required(&child(at, "type"), "must specify a metric source type");
        return;
    }
    if !METRIC_TYPES.contains(&kind) {
        errors.not_supported(&child(at, "type"), &json!(kind), METRIC_TYPES);
        return;
    }
    let field = match kind {
        "ContainerResource" => "containerResource",
        "External" => "external",
        "Object" => "object",
        "Pods" => "pods",
        _ => "resource",
    };
    let Some(source) = metric.get(field) else {
        errors.required(
            &child(at, field),
            &format!("must populate information for the given metric source (type {kind})"),
        );
        return;
    };
    let source_at = child(at, field);
    if matches!(kind, "Resource" | "ContainerResource") && text(source, "name").is_empty() {
        errors.required(&child(&source_at, "name"), "must specify a resource name");
    }
    let target = source.get("target").unwrap_or(&Value::Null);
    let target_at = child(&source_at, "target");
    let target_type = text(target, "type");
    if target_type.is_empty() {
        errors.required(
            &child(&target_at, "type"),
            "must specify a metric target type",
        );
    } else if !TARGET_TYPES.contains(&target_type) {
        errors.not_supported(
            &child(&target_at, "type"),
            &json!(target_type),
            TARGET_TYPES,
        );
    }
    if target_type == "Utilization" {
        match target.get("averageUtilization").and_then(Value::as_i64) {
            None => errors.required(
                &child(&target_at, "averageUtilization"),
                "must set averageUtilization when type is Utilization",
            ),
            Some(n) if n < 1 => errors.invalid(
                &child(&target_at, "averageUtilization"),
                &json!(n),
                "must be greater than 0",
            ),
            Some(_) => {}
        }
    }
}
