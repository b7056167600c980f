//! Rebuilding a ManagedClusterModule's images on its hub, from the fleet view: the generations of the chosen images
//! move up in the hub's ModuleImagesConfig (`<name>-fleet`, found in whichever namespace the hub's engine keeps
//! it, by the ManagedClusterModule controlling it), as a Module's rebuild does on one cluster. The hub builds and
//! signs them again, and each selected cluster gets a new image once it exists. On a hub run by upstream KMM's
//! operator there is no such ModuleImagesConfig: the module's `imageRebuildTriggerGeneration` moves instead.

use kube::Client;
use kube::api::{Api, ListParams, Patch};
use serde_json::json;

use super::images::bump_image_generations;
use super::retry::{Attempt, retrying};
use super::{WriteError, params};
use crate::tui::data::Kind;
use crate::tui::target::Target;
use kmm_api::hub::{ManagedClusterModule, images_config_name};
use kmm_api::kmm::ModuleImagesConfig;

/// Ask the hub for new builds of `images` of the ManagedClusterModule `module` (every image when empty).
pub async fn rebuild(
    client: &Client,
    module: &Target,
    images: &[String],
) -> Result<String, WriteError> {
    let modules: Api<ManagedClusterModule> = Api::all(client.clone());
    let current = modules
        .get(&module.name)
        .await
        .map_err(|error| super::errors::from_kube(&error, module))?;
    let Some(mic) = images_config(client, &current).await? else {
        let ours = current
            .status
            .as_ref()
            .is_some_and(|s| !s.clusters.is_empty());
        if ours {
            return Err(WriteError::local(format!(
                "{module} has no ModuleImagesConfig {} on the hub yet: the hub's engine writes it once a \
                 selected cluster states its kernels",
                images_config_name(&module.name)
            )));
        }
        return bump_rebuild_trigger(client, module).await;
    };
    if images.is_empty() {
        return bump_image_generations(client, &mic, module, None)
            .await?
            .ok_or_else(|| pruned(&mic));
    }
    let mut said = Vec::new();
    for image in images {
        let message = bump_image_generations(client, &mic, module, Some(image))
            .await?
            .ok_or_else(|| pruned(&mic))?;
        said.push(message);
    }
    Ok(said.join("; "))
}

/// The hub's ModuleImagesConfig of `module`: the one of its name that `module` controls, in any namespace.
async fn images_config(
    client: &Client,
    module: &ManagedClusterModule,
) -> Result<Option<Target>, WriteError> {
    let name = images_config_name(module.metadata.name.as_deref().unwrap_or_default());
    let wanted = Target::cluster(Kind::ModuleImagesConfig, &name);
    let params = ListParams::default().fields(&format!("metadata.name={name}"));
    let found = Api::<ModuleImagesConfig>::all(client.clone())
        .list(&params)
        .await
        .map_err(|error| super::errors::from_kube(&error, &wanted))?;
    let uid = module.metadata.uid.as_deref();
    Ok(found
        .items
        .into_iter()
        .find(|mic| {
            mic.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| Some(owner.uid.as_str()) == uid && owner.controller == Some(true))
        })
        .and_then(|mic| mic.metadata.namespace)
        .map(|namespace| Target::namespaced(Kind::ModuleImagesConfig, &namespace, &name)))
}

/// The server dropped the per-image generation: its ModuleImagesConfig CRD is upstream's.
fn pruned(mic: &Target) -> WriteError {
    WriteError::local(format!(
        "{mic} has no per-image generation on this hub (upstream CRDs): edit the module to build again"
    ))
}

/// Raise the module's `spec.moduleSpec.imageRebuildTriggerGeneration`, which upstream's hub operator passes on.
async fn bump_rebuild_trigger(client: &Client, module: &Target) -> Result<String, WriteError> {
    let modules: &Api<ManagedClusterModule> = &Api::all(client.clone());
    retrying(module, move || async move {
        let current = modules.get(&module.name).await.map_err(Attempt::from)?;
        let old = current
            .spec
            .module_spec
            .image_rebuild_trigger_generation
            .unwrap_or(0);
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": {"moduleSpec": {"imageRebuildTriggerGeneration": old + 1}},
        });
        modules
            .patch(&module.name, &params(), &Patch::Merge(&patch))
            .await
            .map_err(Attempt::from)?;
        Ok(format!(
            "Rebuild requested: imageRebuildTriggerGeneration {old}→{} of {module} (the hub's operator checks \
             every image again)",
            old + 1
        ))
    })
    .await
}
