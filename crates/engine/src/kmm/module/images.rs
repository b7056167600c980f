//! The Module's one ModuleImagesConfig: the images its targeted nodes need, replaced as a whole each pass but
//! keeping each image's `generation`, which users bump to ask for a re-check.

use std::collections::BTreeMap;

use kube::api::Api;
use kube::{Resource, ResourceExt};

use super::plan::Plan;
use crate::kmm::mic::{put_mic, read_mic};
use crate::runtime::context::Context;
use crate::runtime::context::Error;
use kmm_api::kmm::{
    ImagePullPolicy, Module, ModuleImagesConfig, ModuleImagesConfigImage, ModuleImagesConfigSpec,
    ModuleLoaderContainerSpec,
};

/// The MIC of `module` as stored, unchanged: what a pass reads image states from while the spec cannot be acted on.
pub(super) async fn current_mic(
    context: &Context,
    module: &Module,
) -> Result<Option<ModuleImagesConfig>, Error> {
    let namespace = module.namespace().unwrap_or_default();
    let api: Api<ModuleImagesConfig> = Api::namespaced(context.client.clone(), &namespace);
    read_mic(&api, &namespace, &module.name_any()).await
}

/// Create or update the MIC of `module` so that it lists the plan's images; returns it as stored.
pub(super) async fn ensure_mic(
    context: &Context,
    module: &Module,
    container: &ModuleLoaderContainerSpec,
    plan: &Plan,
) -> Result<ModuleImagesConfig, Error> {
    let namespace = module.namespace().unwrap_or_default();
    let name = module.name_any();
    let api: Api<ModuleImagesConfig> = Api::namespaced(context.client.clone(), &namespace);
    let current = read_mic(&api, &namespace, &name).await?;
    let generations: BTreeMap<&str, i64> = current
        .iter()
        .flat_map(|mic| &mic.spec.images)
        .filter_map(|i| Some((i.spec.image.as_str(), i.generation?)))
        .collect();
    let spec = ModuleImagesConfigSpec {
        images: plan
            .images
            .iter()
            .map(|image| ModuleImagesConfigImage {
                spec: image.clone(),
                generation: generations.get(image.image.as_str()).copied(),
            })
            .collect(),
        image_repo_secret: module.spec.image_repo_secret.clone(),
        image_pull_policy: container
            .image_pull_policy
            .unwrap_or(ImagePullPolicy::IfNotPresent),
        push_built_image: true,
        image_rebuild_trigger_generation: module.spec.image_rebuild_trigger_generation,
        tolerations: module.spec.tolerations.clone(),
    };
    let owner = module.controller_owner_ref(&());
    put_mic(&api, &namespace, &name, owner, current, spec).await
}
