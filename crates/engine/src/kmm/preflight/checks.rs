//! One Module's preflight check: the ModuleImagesConfig `<module>-preflight` in the Module's namespace, listing
//! the one image its mapping names for the target kernel, controlled by the PreflightValidation (so deleting that
//! takes the check, its pull pods and its builds with it).
//!
//! The image's `generation` is `2 × the Module's generation + pushBuiltImage` (never lowered): editing the Module
//! checks again, and turning `pushBuiltImage` on builds again an image that was built without being pushed, while
//! a restarted engine computes the same generation and finds the same pods.

use kube::api::{Api, DeleteParams, ListParams};
use kube::{Resource, ResourceExt};

use super::verdict::Verdict;
use crate::kmm::kernel::ResolvedMapping;
use crate::kmm::mic::stage::{ImageStage, requested_generation, stage};
use crate::kmm::mic::{put_mic, read_mic};
use crate::runtime::context::Context;
use crate::runtime::context::{Error, KubeResultExt};
use kmm_api::errors::is_not_found;
use kmm_api::kmm::{
    BuildSignOutcome, ImagePullPolicy, Module, ModuleBuildSignConfig, ModuleImageSpec,
    ModuleImagesConfig, ModuleImagesConfigImage, ModuleImagesConfigSpec, ModuleLoaderContainerSpec,
    PreflightValidation,
};

/// Suffix of a Module's preflight ModuleImagesConfig, as upstream names it.
pub const MIC_SUFFIX: &str = "-preflight";

/// Name of the preflight ModuleImagesConfig of the Module `module`.
pub fn mic_name(module: &str) -> String {
    format!("{module}{MIC_SUFFIX}")
}

/// The image generation a check asks for (see the module documentation).
pub fn image_generation(module: &Module, push_built_image: bool) -> i64 {
    module.metadata.generation.unwrap_or(1) * 2 + i64::from(push_built_image)
}

/// Check `module`'s image for the kernel of `resolved`: create or update its preflight ModuleImagesConfig, then
/// read the verdict its status gives.
pub async fn verify(
    context: &Context,
    preflight: &PreflightValidation,
    module: &Module,
    container: &ModuleLoaderContainerSpec,
    resolved: &ResolvedMapping,
) -> Result<Verdict, Error> {
    let namespace = module.namespace().unwrap_or_default();
    let name = mic_name(&module.name_any());
    let api: Api<ModuleImagesConfig> = Api::namespaced(context.client.clone(), &namespace);
    let current = read_mic(&api, &namespace, &name).await?;
    if let Some(other) = current
        .as_ref()
        .and_then(|mic| foreign_controller(mic, preflight))
    {
        return Ok(Verdict::busy(&format!("{namespace}/{name}"), &other));
    }
    let push = preflight.spec.push_built_image;
    let generation = current
        .as_ref()
        .and_then(|mic| requested_generation(mic, &resolved.image))
        .unwrap_or_default()
        .max(image_generation(module, push));
    let spec = ModuleImagesConfigSpec {
        images: vec![ModuleImagesConfigImage {
            spec: ModuleImageSpec {
                image: resolved.image.clone(),
                kernel_version: resolved.kernel.clone(),
                build: resolved.build.clone(),
                sign: resolved.sign.clone(),
                // A missing image nothing builds is a failed check, not a wait for someone to push it.
                skip_wait_missing_image: true,
                registry_tls: resolved.registry_tls.clone(),
                dir_name: container.modprobe.dir_name.clone(),
            },
            generation: Some(generation),
        }],
        image_repo_secret: module.spec.image_repo_secret.clone(),
        image_pull_policy: container
            .image_pull_policy
            .unwrap_or(ImagePullPolicy::IfNotPresent),
        push_built_image: push,
        image_rebuild_trigger_generation: None,
        tolerations: module.spec.tolerations.clone(),
    };
    let owner = preflight.controller_owner_ref(&());
    let mic = put_mic(&api, &namespace, &name, owner, current, spec).await?;
    let builds = resolved.build.is_some() || resolved.sign.is_some();
    let stage = mic
        .status
        .is_some()
        .then(|| stage(&mic, &resolved.image, generation, false));
    let built_unpushed = !push
        && builds
        && stage == Some(ImageStage::Exists)
        && built(context, &namespace, &name, &resolved.image, generation).await?;
    Ok(Verdict::of_image(
        stage.as_ref(),
        &resolved.image,
        builds,
        built_unpushed,
    ))
}

/// The PreflightValidation (or other owner) controlling `mic`, when it is not `preflight`.
fn foreign_controller(mic: &ModuleImagesConfig, preflight: &PreflightValidation) -> Option<String> {
    let controller = mic
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true))?;
    (Some(&controller.uid) != preflight.metadata.uid.as_ref())
        .then(|| format!("{} {}", controller.kind, controller.name))
}

/// Whether the ModuleBuildSignConfig of the check `name` built or signed `image` at `generation`.
async fn built(
    context: &Context,
    namespace: &str,
    name: &str,
    image: &str,
    generation: i64,
) -> Result<bool, Error> {
    let mbsc = Api::<ModuleBuildSignConfig>::namespaced(context.client.clone(), namespace)
        .get_opt(name)
        .await
        .doing(|| format!("reading ModuleBuildSignConfig {namespace}/{name}"))?;
    Ok(mbsc.and_then(|m| m.status).is_some_and(|status| {
        status.images.iter().any(|o| {
            o.image == image
                && o.status == BuildSignOutcome::Success
                && o.generation.unwrap_or(1) == generation
        })
    }))
}

/// Delete the checks `preflight` controls that no Module needs any more (the Module is gone, or has no mapping
/// for the kernel); `kept` holds the `(namespace, name)` of those still needed.
pub async fn remove_unneeded(
    context: &Context,
    preflight: &PreflightValidation,
    kept: &std::collections::BTreeSet<(String, String)>,
) -> Result<(), Error> {
    let Some(uid) = preflight.metadata.uid.as_deref() else {
        return Ok(());
    };
    let all: Api<ModuleImagesConfig> = Api::all(context.client.clone());
    let mics = all
        .list(&ListParams::default())
        .await
        .doing(|| "listing ModuleImagesConfigs".to_owned())?;
    for mic in mics.items.iter().filter(|mic| {
        mic.owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.uid == uid)
    }) {
        let namespace = mic.namespace().unwrap_or_default();
        let name = mic.name_any();
        if kept.contains(&(namespace.clone(), name.clone())) {
            continue;
        }
        let api: Api<ModuleImagesConfig> = Api::namespaced(context.client.clone(), &namespace);
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(error) if is_not_found(&error) => {}
            Err(error) => {
                return Err(error)
                    .doing(|| format!("deleting ModuleImagesConfig {namespace}/{name}"));
            }
        }
    }
    Ok(())
}
