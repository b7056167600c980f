//! Which question each pull pod answers, and its answer: a pod answers only the question of its own MIC, image,
//! generation and pull type, and only while that question is open; every other pod is stale.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::pods::{PullAnswer, pull_answer};
use super::pull_pod::{pod_image, pod_type};
use super::ready::ImageProgress;
use super::wanted::{ONE_TIME_PULL, Wanted};
use crate::kmm::mbsc::controlled_by;
use crate::kmm::mbsc::outcomes::{is_sha256_digest, pod_generation};
use kmm_api::kmm::ImageState;

/// What to do with one pull pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// It answers no open question (another MIC, an image or generation no longer asked, another pull type, or a
    /// question already answered): delete it.
    Stale,
    /// It is being deleted: leave it, and start no other check under its name until it is gone.
    Terminating,
    /// It answered: record the state, then delete it. `pull_error` is the kubelet's account when it could not pull.
    Answered {
        /// The image.
        image: String,
        /// Its state.
        state: ImageState,
        /// The kubelet's reason and message, when the pull failed.
        pull_error: Option<String>,
        /// The digest the image was pulled at, when it was.
        digest: Option<String>,
    },
    /// It has not answered yet: leave it.
    Waiting {
        /// The image.
        image: String,
        /// How far it got.
        progress: ImageProgress,
    },
    /// It failed before pulling (rejected, evicted): delete it so that the check starts again.
    Lost {
        /// Why it failed.
        why: String,
    },
}

/// What the pull pods of a MIC said, once their answers are in the states.
#[derive(Debug, Default)]
pub(super) struct Findings {
    /// Images whose pull pod has not answered yet, with how far it got.
    pub waiting: BTreeMap<String, ImageProgress>,
    /// Images the kubelet could not pull, with its reason and message.
    pub pull_errors: BTreeMap<String, String>,
    /// Images pulled, with the digest the runtime pulled them at.
    pub digests: BTreeMap<String, String>,
    /// Pods to delete once the states are recorded: answered, stale or lost.
    pub doomed: Vec<String>,
}

/// Judge every pull pod of the MIC with `mic_uid`, putting their answers into `states`.
pub(super) fn judge_all(
    pods: &[Pod],
    mic_uid: Option<&str>,
    wanted: &[Wanted],
    states: &mut BTreeMap<String, ImageState>,
) -> Findings {
    let mut findings = Findings::default();
    for pod in pods {
        match judge(pod, mic_uid, wanted, states) {
            Verdict::Stale => findings.doomed.push(pod.name_any()),
            Verdict::Terminating => {}
            Verdict::Answered {
                image,
                state,
                pull_error,
                digest,
            } => {
                if let Some(error) = pull_error {
                    findings.pull_errors.insert(image.clone(), error);
                }
                if let Some(digest) = digest {
                    findings.digests.insert(image.clone(), digest);
                }
                states.insert(image, state);
                findings.doomed.push(pod.name_any());
            }
            Verdict::Waiting { image, progress } => {
                findings.waiting.insert(image, progress);
            }
            Verdict::Lost { why } => {
                tracing::info!(pod = %pod.name_any(), %why, "pull pod failed before pulling; checking again");
                findings.doomed.push(pod.name_any());
            }
        }
    }
    findings
}

/// The verdict on one pull pod of the MIC with `mic_uid`, given the images asked about and the states recorded.
pub(super) fn judge(
    pod: &Pod,
    mic_uid: Option<&str>,
    wanted: &[Wanted],
    states: &BTreeMap<String, ImageState>,
) -> Verdict {
    if !controlled_by(pod, mic_uid) {
        return Verdict::Stale;
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Verdict::Terminating;
    }
    let (Some(image), Some(generation)) = (pod_image(pod), pod_generation(pod)) else {
        return Verdict::Stale;
    };
    let Some(wanted) = wanted
        .iter()
        .find(|w| w.image() == image && w.generation == generation)
    else {
        return Verdict::Stale;
    };
    if pod_type(pod) != Some(wanted.pull_pod_type()) || states.contains_key(image) {
        return Verdict::Stale;
    }
    let image = image.to_owned();
    match pull_answer(pod) {
        PullAnswer::Pulled => Verdict::Answered {
            image,
            state: ImageState::Exists,
            pull_error: None,
            digest: pulled_digest(pod),
        },
        PullAnswer::NotPulled(error) if wanted.pull_pod_type() == ONE_TIME_PULL => {
            Verdict::Answered {
                image,
                state: wanted.missing_state(),
                pull_error: Some(error),
                digest: None,
            }
        }
        PullAnswer::NotPulled(error) => Verdict::Waiting {
            image,
            progress: ImageProgress::AwaitingImage(error),
        },
        PullAnswer::Pending(progress) => Verdict::Waiting {
            image,
            progress: ImageProgress::Checking(format!("pull pod {}: {progress}", pod.name_any())),
        },
        PullAnswer::Lost(why) => Verdict::Lost { why },
    }
}

/// The digest the runtime pulled the pod's image at: the `sha256:…` of its container's `imageID`
/// (`repository@sha256:…`, or with a `docker-pullable://` scheme on older runtimes).
fn pulled_digest(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .filter_map(|c| c.image_id.rsplit_once('@'))
        .map(|(_, digest)| digest)
        .find(|digest| is_sha256_digest(digest))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmm::mic::wanted::wanted;
    use kmm_api::kmm::ModuleImagesConfigSpec;

    fn spec() -> ModuleImagesConfigSpec {
        serde_json::from_value(serde_json::json!({"images": [
            {"image": "wait", "kernelVersion": "k1"},
            {"image": "build", "kernelVersion": "k2", "generation": 2,
             "build": {"dockerfileConfigMap": {"name": "d"}}},
        ]}))
        .expect("spec")
    }

    fn pod(image: &str, generation: &str, kind: &str, status: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": format!("{image}-pod"),
                "labels": {"kmm.node.kubernetes.io/pull-pod-type": kind},
                "annotations": {"kmm.node.kubernetes.io/image-generation": generation},
                "ownerReferences": [{"apiVersion": "v1", "kind": "ModuleImagesConfig", "name": "m",
                                     "uid": "mic-uid", "controller": true}],
            },
            "spec": {"containers": [{"name": "puller", "image": image}]},
            "status": status,
        }))
        .expect("pod")
    }

    fn pull_failed(reason: &str) -> serde_json::Value {
        serde_json::json!({"phase": "Pending", "containerStatuses": [{
            "name": "puller", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": reason, "message": "not found"}}}]})
    }

    #[test]
    fn a_failed_one_time_pull_is_an_answer_and_an_until_success_pull_waits() {
        let spec = spec();
        let wanted = wanted(&spec);
        let states = BTreeMap::new();
        let uid = Some("mic-uid");
        assert_eq!(
            judge(
                &pod("build", "2", "one-time-pull", pull_failed("ErrImagePull")),
                uid,
                &wanted,
                &states
            ),
            Verdict::Answered {
                image: "build".into(),
                state: ImageState::NeedsBuilding,
                pull_error: Some("ErrImagePull: not found".into()),
                digest: None
            }
        );
        assert_eq!(
            judge(
                &pod(
                    "wait",
                    "1",
                    "until-success",
                    pull_failed("ImagePullBackOff")
                ),
                uid,
                &wanted,
                &states
            ),
            Verdict::Waiting {
                image: "wait".into(),
                progress: ImageProgress::AwaitingImage("ImagePullBackOff: not found".into())
            }
        );
        // The runtime's imageID names the digest the image was pulled at.
        let pulled = format!("sha256:{}", "7".repeat(64));
        assert_eq!(
            judge(
                &pod(
                    "wait",
                    "1",
                    "until-success",
                    serde_json::json!({"phase": "Succeeded", "containerStatuses": [{
                        "name": "puller", "image": "wait", "ready": false, "restartCount": 0,
                        "imageID": format!("docker.io/library/wait@{pulled}"),
                    }]})
                ),
                uid,
                &wanted,
                &states
            ),
            Verdict::Answered {
                image: "wait".into(),
                state: ImageState::Exists,
                pull_error: None,
                digest: Some(pulled)
            }
        );
    }

    #[test]
    fn pods_of_closed_or_other_questions_are_stale() {
        let spec = spec();
        let wanted = wanted(&spec);
        let uid = Some("mic-uid");
        let done = serde_json::json!({"phase": "Succeeded"});
        let none = BTreeMap::new();
        let stale = |pod: &Pod, states: &BTreeMap<String, ImageState>, uid| {
            judge(pod, uid, &wanted, states) == Verdict::Stale
        };
        assert!(stale(
            &pod("build", "1", "one-time-pull", done.clone()),
            &none,
            uid
        ));
        assert!(stale(
            &pod("gone", "1", "one-time-pull", done.clone()),
            &none,
            uid
        ));
        assert!(stale(
            &pod("wait", "1", "one-time-pull", done.clone()),
            &none,
            uid
        ));
        assert!(stale(
            &pod("wait", "1", "until-success", done.clone()),
            &none,
            Some("other")
        ));
        let answered = BTreeMap::from([("wait".to_owned(), ImageState::Exists)]);
        assert!(stale(
            &pod("wait", "1", "until-success", done),
            &answered,
            uid
        ));
    }
}
