//! What pods tell the MIC reconciler: the answer a pull pod gives about its image, and a short account of a pod's
//! progress (scheduling, pulling, running) for the Ready condition.

use k8s_openapi::api::core::v1::Pod;

use crate::kmm::mbsc::outcomes::phase;

/// Waiting reasons with which the kubelet says it could not pull an image.
const PULL_ERRORS: [&str; 2] = ["ErrImagePull", "ImagePullBackOff"];

/// What a pull pod says about its image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullAnswer {
    /// The kubelet pulled the image: the pod succeeded, or its container ran and failed (an image without
    /// `/bin/sh`, say), which proves the pull as well.
    Pulled,
    /// The kubelet cannot pull the image: its waiting reason and message.
    NotPulled(String),
    /// No answer yet: scheduling, pulling or starting, as [`progress`] tells.
    Pending(String),
    /// The pod failed before its container ran (rejected, evicted): no answer, the check must be repeated.
    Lost(String),
}

/// The answer a pull pod gives now.
pub fn pull_answer(pod: &Pod) -> PullAnswer {
    match phase(pod) {
        "Succeeded" => PullAnswer::Pulled,
        "Failed" if container_ran(pod) => PullAnswer::Pulled,
        "Failed" => PullAnswer::Lost(failure(pod)),
        _ => match pull_error(pod) {
            Some(error) => PullAnswer::NotPulled(error),
            None => PullAnswer::Pending(progress(pod)),
        },
    }
}

/// How far a pod got, in a few words: why it is not scheduled, what its container waits for, or its phase.
pub fn progress(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let unschedulable = status.and_then(|s| s.conditions.as_ref()).and_then(|c| {
        c.iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
    });
    if let Some(condition) = unschedulable {
        let why = condition.message.as_deref().or(condition.reason.as_deref());
        return format!("cannot be scheduled: {}", why.unwrap_or("no reason given"));
    }
    if let Some(waiting) = waiting(pod) {
        return waiting;
    }
    phase(pod).to_lowercase()
}

/// The first container's waiting reason, with the kubelet's message when it gave one.
fn waiting(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find_map(|c| c.state.as_ref()?.waiting.as_ref())
        .and_then(|w| {
            let reason = w.reason.as_deref()?;
            Some(match w.message.as_deref().filter(|m| !m.is_empty()) {
                Some(message) => format!("{reason}: {message}"),
                None => reason.to_owned(),
            })
        })
}

/// The waiting reason and message when the kubelet could not pull the image.
fn pull_error(pod: &Pod) -> Option<String> {
    waiting(pod).filter(|w| PULL_ERRORS.iter().any(|reason| w.starts_with(reason)))
}

/// Whether a container of the pod started and terminated: the image was pulled.
fn container_ran(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|statuses| {
            statuses.iter().any(|c| {
                c.state.as_ref().is_some_and(|s| s.terminated.is_some())
                    || c.last_state
                        .as_ref()
                        .is_some_and(|s| s.terminated.is_some())
            })
        })
}

/// Why a pod failed before its container ran.
fn failure(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let reason = status.and_then(|s| s.reason.as_deref());
    let message = status.and_then(|s| s.message.as_deref());
    match (reason, message) {
        (Some(reason), Some(message)) => format!("{reason}: {message}"),
        (Some(text), None) | (None, Some(text)) => text.to_owned(),
        (None, None) => "failed before its container ran".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "p"}, "status": status}))
            .expect("pod")
    }

    fn container(state: serde_json::Value) -> serde_json::Value {
        serde_json::json!([{"name": "puller", "image": "i", "imageID": "", "ready": false,
                            "restartCount": 0, "state": state}])
    }

    #[test]
    fn a_pod_whose_container_ran_proves_the_image_even_when_it_failed() {
        assert_eq!(
            pull_answer(&pod(serde_json::json!({"phase": "Succeeded"}))),
            PullAnswer::Pulled
        );
        let no_shell = pod(serde_json::json!({
            "phase": "Failed",
            "containerStatuses": container(serde_json::json!({"terminated": {
                "exitCode": 127, "reason": "Error", "message": "exec: /bin/sh: not found"}})),
        }));
        assert_eq!(pull_answer(&no_shell), PullAnswer::Pulled);
        let evicted = pod(serde_json::json!({"phase": "Failed", "reason": "Evicted",
                                             "message": "low on disk"}));
        assert_eq!(
            pull_answer(&evicted),
            PullAnswer::Lost("Evicted: low on disk".into())
        );
    }

    #[test]
    fn pull_errors_are_answers_and_other_waits_are_progress() {
        let missing = pod(serde_json::json!({
            "phase": "Pending",
            "containerStatuses": container(serde_json::json!({"waiting": {
                "reason": "ImagePullBackOff", "message": "Back-off pulling image \"i\""}})),
        }));
        assert_eq!(
            pull_answer(&missing),
            PullAnswer::NotPulled("ImagePullBackOff: Back-off pulling image \"i\"".into())
        );
        let creating = pod(serde_json::json!({
            "phase": "Pending",
            "containerStatuses": container(serde_json::json!({"waiting": {"reason": "ContainerCreating"}})),
        }));
        assert_eq!(
            pull_answer(&creating),
            PullAnswer::Pending("ContainerCreating".into())
        );
        let unschedulable = pod(serde_json::json!({
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": "0/2 nodes are available: 2 node(s) had untolerated taint"}],
        }));
        assert_eq!(
            pull_answer(&unschedulable),
            PullAnswer::Pending(
                "cannot be scheduled: 0/2 nodes are available: 2 node(s) had untolerated taint"
                    .into()
            )
        );
        assert_eq!(
            pull_answer(&pod(serde_json::json!({"phase": "Running"}))),
            PullAnswer::Pending("running".into())
        );
    }
}
