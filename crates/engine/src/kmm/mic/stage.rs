//! Where an image a ModuleImagesConfig lists stands, read from the MIC alone: the day-0 reconciler and preflight
//! both follow images through the pipeline this way.

use kmm_api::conditions::READY;
use kmm_api::day0::reasons;
use kmm_api::kmm::{ImageState, ModuleImagesConfig};

/// Where an image stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageStage {
    /// It is in the registry.
    Exists,
    /// A pull pod is checking the registry.
    Checking(String),
    /// It is not in the registry, nothing builds it, and the pull pod waits for it to appear.
    WaitingForImage(String),
    /// It is being built.
    Building(String),
    /// It is being signed.
    Signing(String),
    /// The build failed, or the sign.
    Failed {
        /// `BuildFailed` or `SignFailed`.
        reason: &'static str,
        /// Which pod failed and its last words.
        message: String,
    },
}

/// The generation the MIC asks for `image`, when it lists it: the ModuleDay0's, or a higher one a rebuild set.
pub fn requested_generation(mic: &ModuleImagesConfig, image: &str) -> Option<i64> {
    mic.spec
        .images
        .iter()
        .find(|entry| entry.spec.image == image)
        .map(|entry| entry.generation.unwrap_or(1))
}

/// Where `image` at `generation` stands according to the MIC's status; `sign_failed` tells a failed sign from a
/// failed build (from the ModuleBuildSignConfig's outcomes).
pub fn stage(
    mic: &ModuleImagesConfig,
    image: &str,
    generation: i64,
    sign_failed: bool,
) -> ImageStage {
    let status = mic.status.as_ref();
    let state = status
        .into_iter()
        .flat_map(|s| &s.images_states)
        .find(|s| s.image == image && s.observed_generation.unwrap_or(1) == generation)
        .map(|s| s.status);
    let current = status.is_some_and(|s| s.observed_generation == mic.metadata.generation);
    let ready = status
        .filter(|_| current)
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == READY));
    let message = ready
        .map(|c| c.message.clone())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| format!("{image}: checking the registry"));
    match state {
        Some(ImageState::Exists) => ImageStage::Exists,
        Some(ImageState::NeedsBuilding) => ImageStage::Building(message),
        Some(ImageState::NeedsSigning) => ImageStage::Signing(message),
        Some(ImageState::DoesNotExist) => ImageStage::Failed {
            reason: if sign_failed {
                reasons::SIGN_FAILED
            } else {
                reasons::BUILD_FAILED
            },
            message,
        },
        None if ready.is_some_and(|c| c.reason == super::IMAGE_MISSING) => {
            ImageStage::WaitingForImage(message)
        }
        None => ImageStage::Checking(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mic(states: serde_json::Value, reason: &str, message: &str) -> ModuleImagesConfig {
        serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleImagesConfig",
            "metadata": {"name": "os-day0", "namespace": "ns", "generation": 2},
            "spec": {"images": []},
            "status": {"imagesStates": states, "observedGeneration": 2, "conditions": [{
                "type": "Ready", "status": "False", "reason": reason, "message": message,
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }))
        .expect("mic")
    }

    #[test]
    fn the_stage_answers_only_the_current_generation() {
        let building = mic(
            json!([{"image": "os:1", "status": "NeedsBuilding", "observedGeneration": 3}]),
            "Building",
            "os:1: building (pod os-day0-build: running)",
        );
        assert_eq!(
            stage(&building, "os:1", 3, false),
            ImageStage::Building("os:1: building (pod os-day0-build: running)".into())
        );
        assert!(matches!(
            stage(&building, "os:1", 4, false),
            ImageStage::Checking(_)
        ));
        let failed = mic(
            json!([{"image": "os:1", "status": "DoesNotExist", "observedGeneration": 3}]),
            "BuildFailed",
            "os:1: sign pod os-day0-sign failed: exit status 1",
        );
        assert!(matches!(
            stage(&failed, "os:1", 3, true),
            ImageStage::Failed {
                reason: reasons::SIGN_FAILED,
                ..
            }
        ));
        let waiting = mic(json!([]), "ImageMissing", "os:1: not in the registry");
        assert!(matches!(
            stage(&waiting, "os:1", 3, false),
            ImageStage::WaitingForImage(_)
        ));
    }
}
