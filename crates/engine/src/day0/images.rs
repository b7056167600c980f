//! The ModuleDay0's image, proved and produced by the KMM image pipeline: the ModuleDay0 owns one
//! ModuleImagesConfig listing its target image, whose reconciler checks the registry with a pull pod on the
//! container runtime and hands a missing image to the build and sign pods of its ModuleBuildSignConfig. The
//! image's generation is the ModuleDay0's `metadata.generation`, so editing the ModuleDay0 checks (and, after a
//! failure, builds) again, while a restarted engine finds the same pods and never builds twice. A generation
//! raised on the ModuleImagesConfig itself (the console's rebuild) is kept, never lowered back.

use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};

use super::target::Target;
pub use crate::kmm::mic::stage::{ImageStage, requested_generation, stage};
use crate::kmm::mic::{put_mic, read_mic};
use crate::runtime::context::Context;
use crate::runtime::context::{Error, KubeResultExt};
use kmm_api::day0::ModuleDay0;
use kmm_api::errors::is_not_found;
use kmm_api::kmm::{
    BuildSignAction, BuildSignOutcome, ImagePullPolicy, ModuleBuildSignConfig, ModuleImageSpec,
    ModuleImagesConfig, ModuleImagesConfigImage, ModuleImagesConfigSpec,
};

/// Name of the ModuleImagesConfig of the ModuleDay0 `day0`: its own name space next to the Modules' MICs, which
/// are named after their Module.
pub fn mic_name(day0: &str) -> String {
    format!("{day0}-day0")
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
