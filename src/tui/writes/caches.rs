//! Asking the cache engine for work on an ImageCache, by annotating it; the engine removes each annotation once the
//! work is done.
//!
//! - A **re-pull** of the whole cache sets kube-fledged's `kubefledged.io/refresh-imagecache`: every image is
//!   pulled again on every node it is meant for.
//! - A re-pull of one image, on one node or on every node, adds an entry to [`REPULL_ANNOTATION`]: `<image>@<node>`
//!   for one node, `<image>` for every node, entries separated by commas.
//! - A **purge** sets `kubefledged.io/purge-imagecache`: every image of the cache is removed from its nodes.
//!
//! Every write carries the resourceVersion it was computed from, so a concurrent change (the engine removing an
//! annotation it finished) answers 409 and the write is computed again from the fresh object.

use kube::Client;
use kube::api::{DynamicObject, Patch};
use serde_json::json;

use super::WriteError;
use super::params;
use super::resources::dynamic_api;
use super::retry::{Attempt, retrying};
use crate::tui::target::Target;
use kmm_api::errors::is_not_found;
use kmm_api::imagecache::{PURGE_ANNOTATION, REFRESH_ANNOTATION, REPULL_ANNOTATION};

/// The [`REPULL_ANNOTATION`] entry of `image` on `node`, or on every node.
pub fn repull_entry(image: &str, node: Option<&str>) -> String {
    match node {
        Some(node) => format!("{image}@{node}"),
        None => image.to_owned(),
    }
}

/// Ask for `image` to be pulled again on `node` (or every node), or, with no image, for the whole cache.
pub async fn repull(
    client: &Client,
    cache: &Target,
    image: Option<&str>,
    node: Option<&str>,
) -> Result<String, WriteError> {
    let Some(image) = image else {
        return annotate(client, cache, REFRESH_ANNOTATION, |pending| {
            if pending {
                format!("A refresh of {cache} is already pending")
            } else {
                format!("Refresh requested: every image of {cache} is pulled again on every node")
            }
        })
        .await;
    };
    let api = &dynamic_api(client, cache);
    let entry = &repull_entry(image, node);
    let place = &match node {
        Some(node) => format!("on {node}"),
        None => "on every node".to_owned(),
    };
    retrying(cache, move || async move {
        let current = read(api, cache).await?;
        let existing = annotation(&current, REPULL_ANNOTATION).unwrap_or_default();
        let mut entries: Vec<&str> = existing
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        if entries.contains(&entry.as_str()) {
            return Ok(format!(
                "A re-pull of {image} {place} is already pending for {cache}"
            ));
        }
        entries.push(entry);
        let patch = json!({
            "metadata": {
                "resourceVersion": current.metadata.resource_version,
                "annotations": {REPULL_ANNOTATION: entries.join(",")},
            },
        });
        api.patch(&cache.name, &params(), &Patch::Merge(&patch))
            .await
            .map_err(Attempt::from)?;
        Ok(format!("Re-pull requested: {image} {place} ({cache})"))
    })
    .await
}

/// Ask for every image of `cache` to be removed from its nodes.
pub async fn purge(client: &Client, cache: &Target) -> Result<String, WriteError> {
    annotate(client, cache, PURGE_ANNOTATION, |pending| {
        if pending {
            format!("A purge of {cache} is already pending")
        } else {
            format!("Purge requested: the images of {cache} are removed from its nodes")
        }
    })
    .await
}

/// Set the annotation `key` unless it is there already; `message(already_there)` says what happened.
async fn annotate(
    client: &Client,
    cache: &Target,
    key: &'static str,
    message: impl Fn(bool) -> String,
) -> Result<String, WriteError> {
    let api = &dynamic_api(client, cache);
    let message = &message;
    retrying(cache, move || async move {
        let current = read(api, cache).await?;
        if annotation(&current, key).is_some() {
            return Ok(message(true));
        }
        let patch = json!({
            "metadata": {
                "resourceVersion": current.metadata.resource_version,
                "annotations": {key: jiff::Timestamp::now().to_string()},
            },
        });
        api.patch(&cache.name, &params(), &Patch::Merge(&patch))
            .await
            .map_err(Attempt::from)?;
        Ok(message(false))
    })
    .await
}

fn annotation<'a>(object: &'a DynamicObject, key: &str) -> Option<&'a str> {
    object
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

async fn read(api: &kube::Api<DynamicObject>, cache: &Target) -> Result<DynamicObject, Attempt> {
    api.get(&cache.name).await.map_err(|error| {
        if is_not_found(&error) {
            Attempt::Failed(WriteError::local(format!("{cache} no longer exists")))
        } else {
            Attempt::from(error)
        }
    })
}
