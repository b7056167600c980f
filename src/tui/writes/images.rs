//! Asking for new image checks.
//!
//! - A **rebuild** bumps each chosen image's `generation` in the Module's ModuleImagesConfig: the engine checks
//!   the image again under the new generation and builds it if it is missing. Clusters running upstream KMM's CRDs
//!   have no per-image generation (their schema prunes it), so there the Module's `imageRebuildTriggerGeneration`
//!   moves instead, which checks every image of the Module again.
//! - A **recheck** forgets the image's recorded state (`status.imagesStates`): the engine sees an image without
//!   an answer for its current generation and starts a new pull check, with no build request. An engine pass
//!   already under way when the state is forgotten, and that changes the status itself, writes back the state it
//!   read (its status write carries no resourceVersion); a second recheck then asks again.
//!
//! Every write carries the resourceVersion it was computed from, so a concurrent engine write answers 409; the
//! object is then read again and the change recomputed ([`retrying`]).

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch};
use serde_json::{Value, json};

use super::WriteError;
use super::params;
use super::resources::{api_resource, dynamic_api};
use super::retry::{Attempt, retrying};
use crate::tui::data::Kind;
use crate::tui::target::Target;
use kmm_api::errors::is_not_found;

/// The CRD whose schema says whether images carry a `generation`.
const MIC_CRD: &str = "moduleimagesconfigs.kmm.sigs.x-k8s.io";

/// Ask for a rebuild of one image of `module`, or of every image.
pub async fn rebuild(
    client: &Client,
    module: &Target,
    image: Option<&str>,
) -> Result<String, WriteError> {
    if image_generations_served(client).await == Some(false) {
        return bump_rebuild_trigger(client, module, image).await;
    }
    match bump_image_generations(client, &mic_of(module), module, image).await? {
        Some(message) => Ok(message),
        // The server pruned the field: its CRD is upstream's although it could not be read.
        None => bump_rebuild_trigger(client, module, image).await,
    }
}

/// Start a fresh pull check of one image of `module`, or of every image, without asking for a build.
pub async fn recheck(
    client: &Client,
    module: &Target,
    image: Option<&str>,
) -> Result<String, WriteError> {
    let mic = &mic_of(module);
    let api = &dynamic_api(client, mic);
    retrying(mic, move || async move {
        let current = read_mic(api, mic, module).await?;
        let states = array_at(&current, "/status/imagesStates");
        let (forgotten, kept): (Vec<Value>, Vec<Value>) = states
            .into_iter()
            .partition(|state| chosen(state, image));
        if forgotten.is_empty() {
            return Ok(match image {
                Some(image) => format!(
                    "Image {image} of {module} has no recorded state: its check is already under way"
                ),
                None => format!("{module} has no recorded image states: its checks are already under way"),
            });
        }
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "status": {"imagesStates": kept},
        });
        api.patch_status(&module.name, &params(), &Patch::Merge(&patch))
            .await
            .map_err(Attempt::from)?;
        Ok(match image {
            Some(image) => format!("Recheck requested: image {image} of {module} is pulled again"),
            None => format!(
                "Recheck requested: {} of {module} {} pulled again",
                count(forgotten.len(), "image", "images"),
                if forgotten.len() == 1 { "is" } else { "are" }
            ),
        })
    })
    .await
}

/// Bump the chosen images' generations in the ModuleImagesConfig `mic` of `module` (a Module or a ModuleDay0).
/// `None` when the server dropped the field (upstream CRDs).
pub(super) async fn bump_image_generations(
    client: &Client,
    mic: &Target,
    module: &Target,
    image: Option<&str>,
) -> Result<Option<String>, WriteError> {
    let api = &dynamic_api(client, mic);
    retrying(mic, move || async move {
        let current = read_mic(api, mic, module).await?;
        let mut images = array_at(&current, "/spec/images");
        let mut moves = Vec::new();
        for entry in images.iter_mut().filter(|entry| chosen(entry, image)) {
            if let Some(fields) = entry.as_object_mut() {
                let old = fields
                    .get("generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                fields.insert("generation".to_owned(), json!(old + 1));
                moves.push((old, old + 1));
            }
        }
        if moves.is_empty() {
            return Err(Attempt::Failed(WriteError::local(match image {
                Some(image) => format!("{module} has no image {image}"),
                None => format!("{module} has no images to rebuild yet"),
            })));
        }
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": {"images": images},
        });
        let stored = api
            .patch(&mic.name, &params(), &Patch::Merge(&patch))
            .await
            .map_err(Attempt::from)?;
        let kept = array_at(&stored, "/spec/images")
            .iter()
            .filter(|entry| chosen(entry, image))
            .all(|entry| entry.get("generation").is_some());
        Ok(kept.then(|| rebuild_message(&moves, module, image)))
    })
    .await
}

/// Bump the Module's `imageRebuildTriggerGeneration`, the upstream CRDs' only way to ask for new checks.
async fn bump_rebuild_trigger(
    client: &Client,
    module: &Target,
    image: Option<&str>,
) -> Result<String, WriteError> {
    let api = &dynamic_api(client, module);
    retrying(module, move || async move {
        let current = api.get(&module.name).await.map_err(Attempt::from)?;
        let old = current
            .data
            .pointer("/spec/imageRebuildTriggerGeneration")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": {"imageRebuildTriggerGeneration": old + 1},
        });
        api.patch(&module.name, &params(), &Patch::Merge(&patch))
            .await
            .map_err(Attempt::from)?;
        let scope = if image.is_some() {
            "upstream KMM CRDs have no per-image generation, so every image of it is checked again"
        } else {
            "upstream KMM CRDs: every image of it is checked again"
        };
        Ok(format!(
            "Rebuild requested: imageRebuildTriggerGeneration {old}→{} of {module} ({scope})",
            old + 1
        ))
    })
    .await
}

/// Whether the cluster's ModuleImagesConfig CRD declares a per-image `generation`; `None` when the CRD cannot be
/// read (not permitted, or not served), in which case the write itself tells.
pub async fn image_generations_served(client: &Client) -> Option<bool> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get(MIC_CRD).await.ok()?;
    let crd = serde_json::to_value(crd).ok()?;
    schema_declares_image_generation(&crd, &api_resource(Kind::ModuleImagesConfig).version)
}

/// Whether `version` of a ModuleImagesConfig CRD declares `spec.images[].generation`; `None` when the CRD does
/// not serve that version with a schema.
pub fn schema_declares_image_generation(crd: &Value, version: &str) -> Option<bool> {
    let schema = crd
        .pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?
        .pointer("/schema/openAPIV3Schema")?;
    let item = schema.pointer("/properties/spec/properties/images/items")?;
    Some(item.pointer("/properties/generation").is_some())
}

/// "Rebuild requested: generation 1→2 for 2 images of Module acme/acme-accel".
fn rebuild_message(moves: &[(i64, i64)], module: &Target, image: Option<&str>) -> String {
    if let (Some(image), [(old, new)]) = (image, moves) {
        return format!("Rebuild requested: generation {old}→{new} for image {image} of {module}");
    }
    let mut groups: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    for step in moves {
        *groups.entry(*step).or_default() += 1;
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|((old, new), n)| format!("{old}→{new} for {}", count(*n, "image", "images")))
        .collect();
    format!(
        "Rebuild requested: generation {} of {module}",
        parts.join(" and ")
    )
}

/// "1 image", "2 images".
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Whether an entry (of `spec.images` or `status.imagesStates`) is one the user chose.
fn chosen(entry: &Value, image: Option<&str>) -> bool {
    let name = entry.get("image").and_then(Value::as_str);
    name.is_some() && image.is_none_or(|wanted| name == Some(wanted))
}

/// A copy of the array at `pointer`, or an empty one.
fn array_at(object: &DynamicObject, pointer: &str) -> Vec<Value> {
    object
        .data
        .pointer(pointer)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The ModuleImagesConfig of a Module: same namespace, same name.
fn mic_of(module: &Target) -> Target {
    Target {
        kind: Kind::ModuleImagesConfig,
        ..module.clone()
    }
}

async fn read_mic(
    api: &Api<DynamicObject>,
    mic: &Target,
    module: &Target,
) -> Result<DynamicObject, Attempt> {
    api.get(&mic.name).await.map_err(|error| {
        if is_not_found(&error) {
            Attempt::Failed(WriteError::local(if module.kind == Kind::ModuleDay0 {
                format!(
                    "{module} has no ModuleImagesConfig {}: the engine keeps one only while the pool is not on the image",
                    mic.name
                )
            } else {
                format!(
                    "{module} has no ModuleImagesConfig yet: the engine writes it once the Module targets nodes"
                )
            }))
        } else {
            Attempt::from(error)
        }
    })
}
