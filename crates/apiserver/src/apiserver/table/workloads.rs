//! The workload printers: deployments, daemon sets and jobs, with their shared wide columns.

use jiff::Timestamp;
use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::age_column;
use super::read::{array, condition_true, format_labels, get, int, or_none, text, timestamp};
use crate::apiserver::selector::LabelSelector;
use kmm_api::age::human_duration;

pub(super) fn deployment_columns() -> Vec<Column> {
    let mut columns = vec![
        Column::computed(
            "Ready",
            ColumnType::String,
            0,
            "Ready replicas out of desired replicas.",
            |o, _| {
                let desired = get(o, &["spec", "replicas"])
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                Value::String(format!(
                    "{}/{desired}",
                    int(o, &["status", "readyReplicas"])
                ))
            },
        ),
        Column::computed(
            "Up-to-date",
            ColumnType::Integer,
            0,
            "Replicas running the current template.",
            |o, _| Value::from(int(o, &["status", "updatedReplicas"])),
        ),
        Column::computed(
            "Available",
            ColumnType::Integer,
            0,
            "Replicas available to serve.",
            |o, _| Value::from(int(o, &["status", "availableReplicas"])),
        ),
        age_column(),
    ];
    columns.extend(workload_wide_columns());
    columns
}

/// `kubectl get sts`: ready pods out of desired ones.
pub(super) fn statefulset_columns() -> Vec<Column> {
    let mut columns = vec![
        Column::computed(
            "Ready",
            ColumnType::String,
            0,
            "Ready replicas out of desired replicas.",
            |o, _| {
                let desired = get(o, &["spec", "replicas"])
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                Value::String(format!(
                    "{}/{desired}",
                    int(o, &["status", "readyReplicas"])
                ))
            },
        ),
        age_column(),
    ];
    // Wide output adds the containers and images only, without a selector column.
    columns.extend(workload_wide_columns().into_iter().take(2));
    columns
}

/// `kubectl get rs`: desired, current and ready pods.
pub(super) fn replicaset_columns() -> Vec<Column> {
    let count = |name: &str, description: &str, printer: fn(&Value, Timestamp) -> Value| {
        Column::computed(name, ColumnType::Integer, 0, description, printer)
    };
    let mut columns = vec![
        count("Desired", "Pods the ReplicaSet should run.", |o, _| {
            Value::from(
                get(o, &["spec", "replicas"])
                    .and_then(Value::as_i64)
                    .unwrap_or(1),
            )
        }),
        count("Current", "Pods the ReplicaSet runs.", |o, _| {
            Value::from(int(o, &["status", "replicas"]))
        }),
        count("Ready", "Pods of the ReplicaSet that are ready.", |o, _| {
            Value::from(int(o, &["status", "readyReplicas"]))
        }),
        age_column(),
    ];
    columns.extend(workload_wide_columns());
    columns
}

pub(super) fn daemonset_columns() -> Vec<Column> {
    let count = |name: &str, description: &str, printer: fn(&Value, Timestamp) -> Value| {
        Column::computed(name, ColumnType::Integer, 0, description, printer)
    };
    let mut columns = vec![
        count(
            "Desired",
            "Nodes that should run the daemon pod.",
            |o, _| Value::from(int(o, &["status", "desiredNumberScheduled"])),
        ),
        count("Current", "Nodes running the daemon pod.", |o, _| {
            Value::from(int(o, &["status", "currentNumberScheduled"]))
        }),
        count("Ready", "Nodes whose daemon pod is ready.", |o, _| {
            Value::from(int(o, &["status", "numberReady"]))
        }),
        count(
            "Up-to-date",
            "Nodes running the current template.",
            |o, _| Value::from(int(o, &["status", "updatedNumberScheduled"])),
        ),
        count(
            "Available",
            "Nodes whose daemon pod is available.",
            |o, _| Value::from(int(o, &["status", "numberAvailable"])),
        ),
        Column::computed(
            "Node Selector",
            ColumnType::String,
            0,
            "The node selector of the pod template.",
            |o, _| {
                let selector = get(o, &["spec", "template", "spec", "nodeSelector"])
                    .and_then(Value::as_object);
                or_none(&format_labels(selector))
            },
        ),
        age_column(),
    ];
    columns.extend(workload_wide_columns());
    columns
}

pub(super) fn job_columns() -> Vec<Column> {
    let mut columns = vec![
        Column::computed(
            "Status",
            ColumnType::String,
            0,
            "The state of the job.",
            |o, _| Value::String(job_status(o).to_owned()),
        ),
        Column::computed(
            "Completions",
            ColumnType::String,
            0,
            "Succeeded pods out of the completions wanted.",
            |o, _| {
                let succeeded = int(o, &["status", "succeeded"]);
                let parallelism = int(o, &["spec", "parallelism"]);
                Value::String(
                    match get(o, &["spec", "completions"]).and_then(Value::as_i64) {
                        Some(completions) => format!("{succeeded}/{completions}"),
                        None if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
                        None => format!("{succeeded}/1"),
                    },
                )
            },
        ),
        Column::computed(
            "Duration",
            ColumnType::String,
            0,
            "How long the job ran, or has been running.",
            |o, now| {
                let Some(start) = timestamp(o, &["status", "startTime"]) else {
                    return Value::String(String::new());
                };
                let end = timestamp(o, &["status", "completionTime"]).unwrap_or(now);
                Value::String(human_duration(end.duration_since(start)))
            },
        ),
        age_column(),
    ];
    columns.extend(workload_wide_columns());
    columns
}

/// The wide columns shared by workloads: their containers, images and selector.
fn workload_wide_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Containers",
            ColumnType::String,
            1,
            "Names of the containers in the pod template.",
            |o, _| {
                Value::String(
                    template_containers(o)
                        .map(|c| text(c, &["name"]))
                        .collect::<Vec<_>>()
                        .join(","),
                )
            },
        ),
        Column::computed(
            "Images",
            ColumnType::String,
            1,
            "Images of the containers in the pod template.",
            |o, _| {
                Value::String(
                    template_containers(o)
                        .map(|c| text(c, &["image"]))
                        .collect::<Vec<_>>()
                        .join(","),
                )
            },
        ),
        Column::computed(
            "Selector",
            ColumnType::String,
            1,
            "The label selector of the pods managed.",
            |o, _| {
                let selector = get(o, &["spec", "selector"]).unwrap_or(&Value::Null);
                Value::String(match LabelSelector::from_label_selector(selector) {
                    Ok(selector) => selector.to_string(),
                    Err(_) => "<invalid>".to_owned(),
                })
            },
        ),
    ]
}

fn template_containers(object: &Value) -> impl Iterator<Item = &Value> {
    array(object, &["spec", "template", "spec", "containers"]).iter()
}

/// The first true condition among the terminal and paused ones decides; a job with none is Running.
fn job_status(job: &Value) -> &'static str {
    let has = |kind: &str| condition_true(job, kind);
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if get(job, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null()) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}
