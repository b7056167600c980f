//! What finished build and sign pods prove, as the MBSC status keeps it: one outcome per (image, action), stamped
//! with the image generation it answers, so an outcome of earlier work never answers a newer request.

use k8s_openapi::api::core::v1::{ContainerStateTerminated, Pod};

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

/// Record an outcome of (image, action) with the digest it pushed, replacing an older one; true when it was not
/// recorded yet.
pub(crate) fn record(
    outcomes: &mut Vec<BuildSignImageStatus>,
    image: &str,
    action: BuildSignAction,
    status: BuildSignOutcome,
    generation: i64,
    digest: Option<&str>,
) -> bool {
    let outcome = BuildSignImageStatus {
        image: image.to_owned(),
        action,
        status,
        generation: Some(generation),
        digest: digest.map(str::to_owned),
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

/// The digest a succeeded pod pushed: kaniko writes it to the termination log (`--digest-file`), so the kubelet
/// reports it as the container's termination message. Anything else there is no digest.
pub(crate) fn pushed_digest(pod: &Pod) -> Option<&str> {
    terminated(pod)
        .filter(|t| t.exit_code == 0)
        .filter_map(|t| t.message.as_deref())
        .map(str::trim)
        .find(|message| is_sha256_digest(message))
}

/// The terminated states of the pod's containers.
fn terminated(pod: &Pod) -> impl Iterator<Item = &ContainerStateTerminated> {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
}

/// Whether `text` is a `sha256:` digest: 64 lowercase hex digits after the algorithm.
pub(crate) fn is_sha256_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// What a failed pod's container said last (its termination message), if anything.
pub(crate) fn termination_message(pod: &Pod) -> Option<&str> {
    terminated(pod)
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
    fn a_digest_is_read_only_from_a_container_that_succeeded_and_wrote_one() {
        let digest = format!("sha256:{}", "0a".repeat(32));
        let finished = |exit_code: i32, message: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p"},
                "status": {"containerStatuses": [{
                    "name": "kaniko", "image": "k", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": exit_code, "message": message}},
                }]},
            }))
            .expect("pod")
        };
        assert_eq!(
            pushed_digest(&finished(0, &format!("{digest}\n"))),
            Some(digest.as_str())
        );
        assert_eq!(pushed_digest(&finished(1, &digest)), None);
        assert_eq!(pushed_digest(&finished(0, "sha256:short")), None);
        assert_eq!(pushed_digest(&finished(0, "pushed")), None);
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
            1,
            None
        ));
        assert!(!record(
            &mut outcomes,
            "i",
            build,
            BuildSignOutcome::Failure,
            1,
            None
        ));
        assert!(!succeeded_at(&outcomes, "i", build, 2));
        assert!(record(
            &mut outcomes,
            "i",
            build,
            BuildSignOutcome::Success,
            2,
            None
        ));
        assert!(succeeded_at(&outcomes, "i", build, 2));
        assert!(!succeeded_at(&outcomes, "i", BuildSignAction::SignImage, 2));
        assert_eq!(outcomes.len(), 1);
        forget(&mut outcomes, "i", build);
        assert!(outcomes.is_empty());
    }
}
