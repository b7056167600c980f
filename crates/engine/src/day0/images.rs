//! The ModuleDay0's image, proved and produced by the KMM image pipeline: the ModuleDay0 owns one
//! ModuleImagesConfig listing its target image, whose reconciler checks the registry with a pull pod on the
//! container runtime and hands a missing image to the build and sign pods of its ModuleBuildSignConfig. The
//! image's generation is the ModuleDay0's `metadata.generation`, so editing the ModuleDay0 checks (and, after a
//! failure, builds) again, while a restarted engine finds the same pods and never builds twice. A generation
//! raised on the ModuleImagesConfig itself (the console's rebuild) is kept, never lowered back.

use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};

use super::target::Target;
use crate::Context;
use crate::context::{Error, KubeResultExt};
use crate::mic::{put_mic, read_mic};
use kmm_api::conditions::READY;
use kmm_api::day0::{ModuleDay0, reasons};
use kmm_api::errors::is_not_found;
use kmm_api::kmm::{
    BuildSignAction, BuildSignOutcome, ImagePullPolicy, ImageState, ModuleBuildSignConfig,
    ModuleImageSpec, ModuleImagesConfig, ModuleImagesConfigImage, ModuleImagesConfigSpec,
};

/// Name of the ModuleImagesConfig of the ModuleDay0 `day0`: its own name space next to the Modules' MICs, which
/// are named after their Module.
pub fn mic_name(day0: &str) -> String {
    format!("{day0}-day0")
}

/// Where the target image stands.
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

/// Create or update the ModuleImagesConfig asking for `target`'s image (for nodes running `kernel`); returns it as
/// stored.
pub async fn ensure_mic(
    context: &Context,
    day0: &ModuleDay0,
    target: &Target,
    kernel: &str,
) -> Result<ModuleImagesConfig, Error> {
    let namespace = day0.namespace().unwrap_or_default();
    let name = mic_name(&day0.name_any());
    let api: Api<ModuleImagesConfig> = Api::namespaced(context.client.clone(), &namespace);
    let current = read_mic(&api, &namespace, &name).await?;
    let asked = current
        .as_ref()
        .and_then(|mic| requested_generation(mic, &target.image))
        .unwrap_or_default()
        .max(generation(day0));
    let spec = ModuleImagesConfigSpec {
        images: vec![ModuleImagesConfigImage {
            spec: ModuleImageSpec {
                image: target.image.clone(),
                kernel_version: kernel.to_owned(),
                build: target.build.clone(),
                sign: target.sign.clone(),
                skip_wait_missing_image: false,
                registry_tls: None,
                dir_name: kmm_api::kmm::DEFAULT_DIR_NAME.to_owned(),
            },
            generation: Some(asked),
        }],
        image_repo_secret: None,
        image_pull_policy: ImagePullPolicy::Always,
        push_built_image: true,
        image_rebuild_trigger_generation: None,
        tolerations: Vec::new(),
    };
    let owner = day0.controller_owner_ref(&());
    put_mic(&api, &namespace, &name, owner, current, spec).await
}

/// Delete the ModuleDay0's ModuleImagesConfig (and with it its pull, build and sign pods) once no image work is
/// needed: a pull pod waiting for an image nobody wants any more would wait forever.
pub async fn remove_mic(context: &Context, day0: &ModuleDay0) -> Result<(), Error> {
    let namespace = day0.namespace().unwrap_or_default();
    let name = mic_name(&day0.name_any());
    let api: Api<ModuleImagesConfig> = Api::namespaced(context.client.clone(), &namespace);
    match api.delete(&name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(error) => {
            Err(error).doing(|| format!("deleting ModuleImagesConfig {namespace}/{name}"))
        }
    }
}

/// The image generation a ModuleDay0 asks for.
pub fn generation(day0: &ModuleDay0) -> i64 {
    day0.metadata.generation.unwrap_or(1)
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
/// failed build (see [`sign_failed`]).
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
        None if ready.is_some_and(|c| c.reason == crate::mic::IMAGE_MISSING) => {
            ImageStage::WaitingForImage(message)
        }
        None => ImageStage::Checking(message),
    }
}

/// Whether the ModuleBuildSignConfig of the ModuleDay0's MIC records a failed sign of `image` at `generation`.
pub async fn sign_failed(
    context: &Context,
    day0: &ModuleDay0,
    image: &str,
    generation: i64,
) -> Result<bool, Error> {
    let namespace = day0.namespace().unwrap_or_default();
    let name = mic_name(&day0.name_any());
    let mbsc = Api::<ModuleBuildSignConfig>::namespaced(context.client.clone(), &namespace)
        .get_opt(&name)
        .await
        .doing(|| format!("reading ModuleBuildSignConfig {namespace}/{name}"))?;
    Ok(mbsc.and_then(|m| m.status).is_some_and(|status| {
        status.images.iter().any(|o| {
            o.image == image
                && o.action == BuildSignAction::SignImage
                && o.status == BuildSignOutcome::Failure
                && o.generation.unwrap_or(1) == generation
        })
    }))
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
