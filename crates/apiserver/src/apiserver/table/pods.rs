//! The pod printer: `kubectl get pods`' Ready, Status, Restarts and Age, condensed from the pod's status.

use jiff::Timestamp;
use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::age_column;
use super::read::{
    age, array, condition_status, condition_true, get, int, or_none, text, timestamp,
};

pub(super) fn pod_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Ready",
            ColumnType::String,
            0,
            "Ready containers out of all containers.",
            |o, _| {
                let summary = PodSummary::of(o);
                Value::String(format!("{}/{}", summary.ready, summary.total))
            },
        ),
        Column::computed(
            "Status",
            ColumnType::String,
            0,
            "The aggregate state of the pod's containers.",
            |o, _| Value::String(PodSummary::of(o).reason),
        ),
        Column::computed(
            "Restarts",
            ColumnType::String,
            0,
            "Container restarts, and how long ago the last one was.",
            |o, now| {
                let summary = PodSummary::of(o);
                Value::String(match summary.last_restart {
                    Some(last) if summary.restarts != 0 => {
                        format!("{} ({} ago)", summary.restarts, age(Some(last), now))
                    }
                    _ => summary.restarts.to_string(),
                })
            },
        ),
        age_column(),
        Column::computed(
            "IP",
            ColumnType::String,
            1,
            "The pod's primary IP address.",
            |o, _| {
                let from_list = array(o, &["status", "podIPs"])
                    .first()
                    .map(|ip| text(ip, &["ip"]))
                    .unwrap_or_default();
                let ip = if from_list.is_empty() {
                    text(o, &["status", "podIP"])
                } else {
                    from_list
                };
                or_none(ip)
            },
        ),
        Column::computed(
            "Node",
            ColumnType::String,
            1,
            "The node the pod is bound to.",
            |o, _| or_none(text(o, &["spec", "nodeName"])),
        ),
        Column::computed(
            "Nominated Node",
            ColumnType::String,
            1,
            "The node the scheduler nominated for preemption.",
            |o, _| or_none(text(o, &["status", "nominatedNodeName"])),
        ),
        Column::computed(
            "Readiness Gates",
            ColumnType::String,
            1,
            "Satisfied readiness gates out of all gates.",
            |o, _| {
                let gates = array(o, &["spec", "readinessGates"]);
                if gates.is_empty() {
                    return or_none("");
                }
                let satisfied = gates
                    .iter()
                    .filter(|gate| {
                        condition_status(o, text(gate, &["conditionType"])) == Some("True")
                    })
                    .count();
                Value::String(format!("{satisfied}/{}", gates.len()))
            },
        ),
    ]
}

/// What `kubectl get pods` condenses a pod into: ready containers, a one-word status and restarts.
#[derive(Debug, PartialEq)]
struct PodSummary {
    ready: usize,
    total: usize,
    reason: String,
    restarts: i64,
    last_restart: Option<Timestamp>,
}

/// Why the pod status shows `Unknown` for pods being deleted from an unreachable node.
const NODE_LOST_REASON: &str = "NodeLost";

impl PodSummary {
    /// Derives the summary from the pod's status the way `kubectl` does: init containers first (a failing
    /// or waiting one names the status `Init:...`), then the app containers from last to first, so the
    /// first container's state wins, and finally deletion.
    fn of(pod: &Value) -> Self {
        let init_specs = array(pod, &["spec", "initContainers"]);
        let is_sidecar = |name: &str| {
            init_specs
                .iter()
                .any(|c| text(c, &["name"]) == name && text(c, &["restartPolicy"]) == "Always")
        };
        let sidecars = init_specs
            .iter()
            .filter(|c| text(c, &["restartPolicy"]) == "Always")
            .count();
        let phase = text(pod, &["status", "phase"]);
        let status_reason = text(pod, &["status", "reason"]);
        let mut summary = Self {
            ready: 0,
            total: array(pod, &["spec", "containers"]).len() + sidecars,
            reason: if status_reason.is_empty() {
                phase
            } else {
                status_reason
            }
            .to_owned(),
            restarts: 0,
            last_restart: None,
        };
        let scheduling_gated = array(pod, &["status", "conditions"]).iter().any(|c| {
            text(c, &["type"]) == "PodScheduled" && text(c, &["reason"]) == "SchedulingGated"
        });
        if scheduling_gated {
            summary.reason = "SchedulingGated".to_owned();
        }

        let mut sidecar_restarts = 0;
        let mut last_sidecar_restart = None;
        let mut initializing = false;
        for (index, container) in array(pod, &["status", "initContainerStatuses"])
            .iter()
            .enumerate()
        {
            let restarts = int(container, &["restartCount"]);
            let finished = timestamp(container, &["lastState", "terminated", "finishedAt"]);
            summary.restarts += restarts;
            summary.last_restart = later(summary.last_restart, finished);
            let sidecar = is_sidecar(text(container, &["name"]));
            if sidecar {
                sidecar_restarts += restarts;
                last_sidecar_restart = later(last_sidecar_restart, finished);
            }
            let terminated = get(container, &["state", "terminated"]).filter(|t| t.is_object());
            let waiting_reason = text(container, &["state", "waiting", "reason"]);
            if terminated.is_some_and(|t| int(t, &["exitCode"]) == 0) {
                continue;
            }
            if sidecar && get(container, &["started"]).and_then(Value::as_bool) == Some(true) {
                if is_ready(container) {
                    summary.ready += 1;
                }
                continue;
            }
            summary.reason = match terminated {
                Some(terminated) => format!("Init:{}", termination_reason(terminated)),
                None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                    format!("Init:{waiting_reason}")
                }
                None => format!("Init:{index}/{}", init_specs.len()),
            };
            initializing = true;
            break;
        }

        if !initializing || condition_true(pod, "Initialized") {
            summary.restarts = sidecar_restarts;
            summary.last_restart = last_sidecar_restart;
            let mut has_running = false;
            for container in array(pod, &["status", "containerStatuses"]).iter().rev() {
                summary.restarts += int(container, &["restartCount"]);
                summary.last_restart = later(
                    summary.last_restart,
                    timestamp(container, &["lastState", "terminated", "finishedAt"]),
                );
                let waiting_reason = text(container, &["state", "waiting", "reason"]);
                let terminated = get(container, &["state", "terminated"]).filter(|t| t.is_object());
                if !waiting_reason.is_empty() {
                    summary.reason = waiting_reason.to_owned();
                } else if let Some(terminated) = terminated {
                    summary.reason = termination_reason(terminated);
                } else if is_ready(container)
                    && get(container, &["state", "running"]).is_some_and(Value::is_object)
                {
                    has_running = true;
                    summary.ready += 1;
                }
            }
            if summary.reason == "Completed" && has_running {
                summary.reason = if condition_true(pod, "Ready") {
                    "Running"
                } else {
                    "NotReady"
                }
                .to_owned();
            }
        }

        let deleting = get(pod, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null());
        if deleting && status_reason == NODE_LOST_REASON {
            summary.reason = "Unknown".to_owned();
        } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
            summary.reason = "Terminating".to_owned();
        }
        summary
    }
}

fn is_ready(container_status: &Value) -> bool {
    get(container_status, &["ready"]).and_then(Value::as_bool) == Some(true)
}

/// The reason a terminated container gives, or its signal or exit code when it gives none.
fn termination_reason(terminated: &Value) -> String {
    let reason = text(terminated, &["reason"]);
    let signal = int(terminated, &["signal"]);
    if !reason.is_empty() {
        reason.to_owned()
    } else if signal != 0 {
        format!("Signal:{signal}")
    } else {
        format!("ExitCode:{}", int(terminated, &["exitCode"]))
    }
}

fn later(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    a.max(b)
}
