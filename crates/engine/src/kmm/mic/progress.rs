//! Where each image stands, for the Ready condition and the events: its state, with the pull pod checking it or
//! the build or sign pod working on it.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::pods;
use super::pull_pod::pull_pod_name;
use super::ready::ImageProgress;
use super::wanted::Wanted;
use crate::kmm::mbsc::outcomes::termination_message;
use crate::kmm::mbsc::{action_verb, pod_name};
use kmm_api::kmm::{BuildSignAction, BuildSignImageStatus, BuildSignOutcome, ImageState};

/// What the reconciler knows about the images of one MIC.
pub(super) struct Known<'k> {
    /// The MIC's name (its MBSC's and its build pods' module name).
    pub mic: &'k str,
    /// The MBSC's recorded outcomes.
    pub outcomes: &'k [BuildSignImageStatus],
    /// The MIC's build and sign pods.
    pub build_pods: &'k [Pod],
}

impl Known<'_> {
    /// Where `wanted` stands, given its state and, while it has none, what its pull pod is doing.
    pub(super) fn progress(
        &self,
        wanted: &Wanted,
        state: Option<ImageState>,
        waiting: Option<&ImageProgress>,
    ) -> ImageProgress {
        match state {
            None => waiting.cloned().unwrap_or_else(|| {
                let pod = pull_pod_name(self.mic, wanted.image(), wanted.generation);
                ImageProgress::Checking(format!("pull pod {pod} starting"))
            }),
            Some(ImageState::Exists) => ImageProgress::Exists,
            Some(ImageState::DoesNotExist) if !(wanted.builds() || wanted.signs()) => {
                ImageProgress::Missing
            }
            Some(ImageState::DoesNotExist) => ImageProgress::Failed(self.failure(wanted)),
            Some(ImageState::NeedsBuilding) => {
                ImageProgress::Building(self.work(wanted, BuildSignAction::BuildImage))
            }
            Some(ImageState::NeedsSigning) => {
                ImageProgress::Signing(self.work(wanted, BuildSignAction::SignImage))
            }
        }
    }

    /// The pod doing `action` for the image, if it exists.
    fn pod(&self, wanted: &Wanted, action: BuildSignAction) -> (String, Option<&Pod>) {
        let name = pod_name(self.mic, action, &wanted.spec.spec.kernel_version);
        let pod = self.build_pods.iter().find(|p| p.name_any() == name);
        (name, pod)
    }

    /// How far the build or sign pod got.
    fn work(&self, wanted: &Wanted, action: BuildSignAction) -> String {
        match self.pod(wanted, action) {
            (name, Some(pod)) => format!("pod {name}: {}", pods::progress(pod)),
            (name, None) => format!("pod {name} not started yet"),
        }
    }

    /// Which pod failed the image, and its last words.
    fn failure(&self, wanted: &Wanted) -> String {
        let sign_failed = self.outcomes.iter().any(|o| {
            o.image == wanted.image()
                && o.action == BuildSignAction::SignImage
                && o.status == BuildSignOutcome::Failure
                && o.generation.unwrap_or(1) == wanted.generation
        });
        let action = if sign_failed {
            BuildSignAction::SignImage
        } else {
            BuildSignAction::BuildImage
        };
        let verb = action_verb(action);
        match self.pod(wanted, action) {
            (name, Some(pod)) => match termination_message(pod) {
                Some(message) => format!("{verb} pod {name} failed: {message}"),
                None => format!("{verb} pod {name} failed"),
            },
            (name, None) => format!("{verb} pod {name} failed (the pod is gone)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmm::mic::wanted::wanted;
    use kmm_api::kmm::ModuleImagesConfigSpec;

    #[test]
    fn a_failed_build_names_its_pod_and_its_last_words() {
        let spec: ModuleImagesConfigSpec = serde_json::from_value(serde_json::json!({"images": [
            {"image": "q/k:5.14", "kernelVersion": "5.14.0", "build": {"dockerfileConfigMap": {"name": "d"}}},
        ]}))
        .expect("spec");
        let wanted = wanted(&spec);
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "acme-build-5-14-0"},
            "status": {"phase": "Failed", "containerStatuses": [{
                "name": "kaniko", "image": "k", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 1, "message": "exit status 2"}}}]},
        }))
        .expect("pod");
        let outcomes = [BuildSignImageStatus {
            image: "q/k:5.14".into(),
            action: BuildSignAction::BuildImage,
            status: BuildSignOutcome::Failure,
            generation: Some(1),
            digest: None,
        }];
        let known = Known {
            mic: "acme",
            outcomes: &outcomes,
            build_pods: std::slice::from_ref(&pod),
        };
        assert_eq!(
            known.progress(&wanted[0], Some(ImageState::DoesNotExist), None),
            ImageProgress::Failed("build pod acme-build-5-14-0 failed: exit status 2".into())
        );
        assert_eq!(
            known.progress(&wanted[0], Some(ImageState::NeedsBuilding), None),
            ImageProgress::Building("pod acme-build-5-14-0: failed".into())
        );
        let nothing = Known {
            mic: "acme",
            outcomes: &[],
            build_pods: &[],
        };
        assert_eq!(
            nothing.progress(&wanted[0], Some(ImageState::NeedsSigning), None),
            ImageProgress::Signing("pod acme-sign-5-14-0 not started yet".into())
        );
    }
}
