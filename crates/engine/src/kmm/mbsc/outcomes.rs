//! What finished build and sign pods prove, as the MBSC status keeps it: one outcome per (image, action), stamped
//! with the image generation it answers, so an outcome of earlier work never answers a newer request.

use k8s_openapi::api::core::v1::Pod;

use kmm_api::kmm::labels::IMAGE_GENERATION;
use kmm_api::kmm::{BuildSignAction, BuildSignImageStatus, BuildSignOutcome};

/// The pod's phase; a pod without one is pending.
pub(crate) fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// The image generation a pod was made for: its annotation, 1 for pods made without one (as upstream makes them),
/// `None` when the annotation is not a number.
pub(crate) fn pod_generation(pod: &Pod) -> Option<i64> {
    match pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(IMAGE_GENERATION))
    {
        Some(value) => value.trim().parse().ok(),
        None => Some(1),
    }
}

/// What the pod proves about work of `generation`: Success when it succeeded, Failure when it failed, nothing
/// while it runs or when it was made for another generation.
pub(crate) fn proven(pod: &Pod, generation: i64) -> Option<BuildSignOutcome> {
    if pod_generation(pod) != Some(generation) {
        return None;
    }
    match phase(pod) {
        "Succeeded" => Some(BuildSignOutcome::Success),
        "Failed" => Some(BuildSignOutcome::Failure),
        _ => None,
    }
}

/// The outcome recorded for (image, action).
pub(crate) fn recorded<'o>(
    outcomes: &'o [BuildSignImageStatus],
    image: &str,
    action: BuildSignAction,
) -> Option<&'o BuildSignImageStatus> {
    outcomes
        .iter()
        .find(|o| o.image == image && o.action == action)
}

/// Whether (image, action) succeeded for `generation`.
pub(crate) fn succeeded_at(
    outcomes: &[BuildSignImageStatus],
    image: &str,
    action: BuildSignAction,
    generation: i64,
) -> bool {
    recorded(outcomes, image, action).is_some_and(|o| {
        o.status == BuildSignOutcome::Success && o.generation.unwrap_or(1) == generation
    })
}

/// Record an outcome of (image, action), replacing an older one; true when it was not recorded yet.
pub(crate) fn record(
    outcomes: &mut Vec<BuildSignImageStatus>,
    image: &str,
    action: BuildSignAction,
    status: BuildSignOutcome,
    generation: i64,
) -> bool {
    let outcome = BuildSignImageStatus {
        image: image.to_owned(),
        action,
        status,
        generation: Some(generation),
    };
    match outcomes
        .iter_mut()
        .find(|o| o.image == image && o.action == action)
    {
        Some(existing) if *existing == outcome => false,
        Some(existing) => {
            *existing = outcome;
            true
        }
        None => {
            outcomes.push(outcome);
            true
        }
    }
}

/// Forget the outcome of (image, action): new work for it is starting.
pub(crate) fn forget(
    outcomes: &mut Vec<BuildSignImageStatus>,
    image: &str,
    action: BuildSignAction,
) {
    outcomes.retain(|o| !(o.image == image && o.action == action));
}

/// What a failed pod's container said last (its termination message), if anything.
pub(crate) fn termination_message(pod: &Pod) -> Option<&str> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
        .find(|t| t.exit_code != 0)
        .and_then(|t| t.message.as_deref())
        .map(str::trim)
        .filter(|m| !m.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(phase: &str, generation: Option<&str>) -> Pod {
        let mut value = serde_json::json!({"metadata": {"name": "p"}, "status": {"phase": phase}});
        if let Some(generation) = generation {
            value["metadata"]["annotations"] = serde_json::json!({IMAGE_GENERATION: generation});
        }
        serde_json::from_value(value).expect("pod")
    }

    #[test]
    fn only_finished_pods_of_the_same_generation_prove_anything() {
        assert_eq!(
            proven(&pod("Succeeded", Some("2")), 2),
            Some(BuildSignOutcome::Success)
        );
        assert_eq!(
            proven(&pod("Failed", Some("2")), 2),
            Some(BuildSignOutcome::Failure)
        );
        assert_eq!(proven(&pod("Running", Some("2")), 2), None);
        assert_eq!(proven(&pod("Failed", Some("1")), 2), None);
        assert_eq!(proven(&pod("Failed", Some("x")), 1), None);
        assert_eq!(
            proven(&pod("Succeeded", None), 1),
            Some(BuildSignOutcome::Success)
        );
    }

    #[test]
    fn recording_replaces_and_reports_news_once() {
        let mut outcomes = Vec::new();
        let build = BuildSignAction::BuildImage;
        assert!(record(
            &mut outcomes,
            "i",
            build,
            BuildSignOutcome::Failure,
            1
        ));
        assert!(!record(
            &mut outcomes,
            "i",
            build,
            BuildSignOutcome::Failure,
            1
        ));
        assert!(!succeeded_at(&outcomes, "i", build, 2));
        assert!(record(
            &mut outcomes,
            "i",
            build,
            BuildSignOutcome::Success,
            2
        ));
        assert!(succeeded_at(&outcomes, "i", build, 2));
        assert!(!succeeded_at(&outcomes, "i", BuildSignAction::SignImage, 2));
        assert_eq!(outcomes.len(), 1);
        forget(&mut outcomes, "i", build);
        assert!(outcomes.is_empty());
    }
}
