//! The HorizontalPodAutoscaler printer, reading either served version: what it scales, its targets against what
//! was last measured, its bounds and its replicas.

use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::age_column;
use super::read::{array, get, int, text};

/// How many targets the Targets column spells out before counting the rest.
const SHOWN_TARGETS: usize = 2;

/// `kubectl get hpa`.
pub(super) fn autoscaler_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Reference",
            ColumnType::String,
            0,
            "The object the autoscaler scales.",
            |o, _| {
                let target = ["spec", "scaleTargetRef"];
                let kind = text(o, &[target[0], target[1], "kind"]);
                let name = text(o, &[target[0], target[1], "name"]);
                Value::String(format!("{kind}/{name}"))
            },
        ),
        Column::computed(
            "Targets",
            ColumnType::String,
            0,
            "Measured values against the targets.",
            |o, _| Value::String(targets(o)),
        ),
        Column::computed(
            "MinPods",
            ColumnType::String,
            0,
            "The fewest replicas.",
            |o, _| match get(o, &["spec", "minReplicas"]).and_then(Value::as_i64) {
                Some(min) => Value::String(min.to_string()),
                None => Value::String("<unset>".to_owned()),
            },
        ),
        Column::computed(
            "MaxPods",
            ColumnType::Integer,
            0,
            "The most replicas.",
            |o, _| Value::from(int(o, &["spec", "maxReplicas"])),
        ),
        Column::computed(
            "Replicas",
            ColumnType::Integer,
            0,
            "The replicas running now.",
            |o, _| Value::from(int(o, &["status", "currentReplicas"])),
        ),
        age_column(),
    ]
}

/// `cpu: 40%/80%` per target (`<unknown>` where nothing was measured yet), `<none>` without targets.
fn targets(o: &Value) -> String {
    if let Some(percent) =
        get(o, &["spec", "targetCPUUtilizationPercentage"]).and_then(Value::as_i64)
    {
        let current = get(o, &["status", "currentCPUUtilizationPercentage"])
            .and_then(Value::as_i64)
            .map_or("<unknown>".to_owned(), |c| format!("{c}%"));
        return format!("cpu: {current}/{percent}%");
    }
    let metrics = array(o, &["spec", "metrics"]);
    if metrics.is_empty() {
        return "<none>".to_owned();
    }
    let current = array(o, &["status", "currentMetrics"]);
    let mut shown: Vec<String> = metrics
        .iter()
        .take(SHOWN_TARGETS)
        .map(|m| target(m, current))
        .collect();
    if metrics.len() > SHOWN_TARGETS {
        shown.push(format!("+ {} more...", metrics.len() - SHOWN_TARGETS));
    }
    shown.join(", ")
}

/// One v2 metric against its measurement among `current`.
fn target(metric: &Value, current: &[Value]) -> String {
    let kind = text(metric, &["type"]);
    let field = match kind {
        "ContainerResource" => "containerResource",
        "External" => "external",
        "Object" => "object",
        "Pods" => "pods",
        _ => "resource",
    };
    let source = get(metric, &[field]).unwrap_or(&Value::Null);
    let name = match text(source, &["name"]) {
        "" => text(source, &["metric", "name"]),
        name => name,
    };
    let measured = current
        .iter()
        .find(|c| {
            text(c, &["type"]) == kind && {
                let s = get(c, &[field]).unwrap_or(&Value::Null);
                text(s, &["name"]) == name || text(s, &["metric", "name"]) == name
            }
        })
        .and_then(|c| get(c, &[field, "current"]));
    let target = get(source, &["target"]).unwrap_or(&Value::Null);
    let (wanted, now) = match text(target, &["type"]) {
        "Utilization" => (
            format!(
                "{}%",
                get(target, &["averageUtilization"])
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            ),
            measured
                .and_then(|m| get(m, &["averageUtilization"]))
                .and_then(Value::as_i64)
                .map(|c| format!("{c}%")),
        ),
        "AverageValue" => (
            text(target, &["averageValue"]).to_owned(),
            measured.map(|m| text(m, &["averageValue"]).to_owned()),
        ),
        _ => (
            text(target, &["value"]).to_owned(),
            measured.map(|m| text(m, &["value"]).to_owned()),
        ),
    };
    let now = now
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "<unknown>".to_owned());
    format!("{name}: {now}/{wanted}")
}
