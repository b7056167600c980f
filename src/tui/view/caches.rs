//! Rows of the Caches pane: one per ImageCache, with how many of the nodes it targets hold every image meant for
//! them, its state (from its conditions, else upstream's `status`) and why it is not complete.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::tui::data::ClusterData;
use kmm_api::conditions::{AVAILABLE, DEGRADED, PROGRESSING, READY};
use kmm_api::imagecache::{ImageCache, ImageCacheActionStatus, PURGE_REASON};

use super::cache_images::CacheImages;
use super::{Health, condition, matches_filter};

/// One ImageCache as the Caches pane shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheRow {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Distinct images the cache lists.
    pub images: usize,
    /// Nodes some list targets, as the engine last counted them.
    pub targeted: i32,
    /// Of those, nodes holding every image meant for them.
    pub cached: i32,
    /// A word for the state: `Complete`, `Pulling`, `Failed`, `Purged`, ...
    pub state: String,
    /// Overall state.
    pub health: Health,
    /// Why the cache is not complete (a condition's `Reason: message`, or upstream's message).
    pub reason: Option<String>,
}

impl CacheRow {
    /// The row of one ImageCache.
    pub fn of(cache: &ImageCache) -> CacheRow {
        let status = cache.status.as_ref();
        let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        let (state, health, reason) = judge(cache, conditions);
        CacheRow {
            namespace: cache.metadata.namespace.clone().unwrap_or_default(),
            name: cache.metadata.name.clone().unwrap_or_default(),
            images: CacheImages::of(cache).images.len(),
            targeted: status.and_then(|s| s.nodes_targeted).unwrap_or(0),
            cached: status.and_then(|s| s.nodes_cached).unwrap_or(0),
            state: state.to_owned(),
            health,
            reason,
        }
    }

    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[
                &self.namespace,
                &self.name,
                &self.state,
                self.reason.as_deref().unwrap_or_default(),
            ],
        )
    }
}

/// State word, health and explanation: a pending purge or refresh first, then Degraded, Available and
/// Progressing conditions, then upstream's `status` for caches an engine without conditions looks after.
fn judge(cache: &ImageCache, conditions: &[Condition]) -> (&'static str, Health, Option<String>) {
    let is_true = |type_| condition(conditions, type_).filter(|c| c.status == "True");
    let annotations = cache.metadata.annotations.as_ref();
    let asked = |key: &str| annotations.is_some_and(|a| a.contains_key(key));
    if asked(kmm_api::imagecache::PURGE_ANNOTATION) {
        return (
            "Purging",
            Health::Progressing,
            Some("Purge requested: removing the images from every node".to_owned()),
        );
    }
    if let Some(degraded) = is_true(DEGRADED) {
        return ("Degraded", Health::Error, explain(degraded));
    }
    if is_true(AVAILABLE).or_else(|| is_true(READY)).is_some() {
        return ("Complete", Health::Ok, None);
    }
    if let Some(progressing) = is_true(PROGRESSING) {
        return ("Pulling", Health::Progressing, explain(progressing));
    }
    let Some(status) = cache.status.as_ref() else {
        return (
            "Pending",
            Health::Unknown,
            Some("Pending: no status reported yet".to_owned()),
        );
    };
    let message = (!status.message.is_empty()).then(|| status.message.clone());
    match status.status {
        ImageCacheActionStatus::Processing => ("Pulling", Health::Progressing, message),
        ImageCacheActionStatus::Succeeded if status.reason == PURGE_REASON => {
            ("Purged", Health::Warning, message)
        }
        ImageCacheActionStatus::Succeeded => ("Complete", Health::Ok, None),
        ImageCacheActionStatus::Failed => ("Failed", Health::Error, message),
        ImageCacheActionStatus::Aborted => ("Aborted", Health::Warning, message),
        ImageCacheActionStatus::NoImagesPulledOrDeleted => ("NoNodes", Health::Warning, message),
        ImageCacheActionStatus::Unknown => ("Unknown", Health::Unknown, message),
    }
}

/// `Reason: message`, without repeating a reason the message starts with.
fn explain(condition: &Condition) -> Option<String> {
    Some(if condition.message.is_empty() {
        condition.reason.clone()
    } else if condition.message.starts_with(&condition.reason) {
        condition.message.clone()
    } else {
        format!("{}: {}", condition.reason, condition.message)
    })
}

/// Every ImageCache's row, in namespace/name order.
pub fn rows(data: &ClusterData) -> Vec<CacheRow> {
    data.caches
        .iter()
        .map(|cache| CacheRow::of(cache))
        .collect()
}
