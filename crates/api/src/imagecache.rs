//! `ImageCache` (group `kubefledged.io`): images to pre-pull onto the nodes selectors match, so
//! pods start without a registry round trip.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod names;

/// API group of the ImageCache kind.
pub const GROUP: &str = "kubefledged.io";

/// Annotation (any value) that asks for an immediate refresh: re-pull every image of the cache on every node it
/// targets (with `imagePullPolicy: Always`, so moved tags are fetched again); removed once done.
pub const REFRESH_ANNOTATION: &str = "kubefledged.io/refresh-imagecache";

/// Annotation (any value) that asks to delete the cached images from every node; removed once done. The cache then
/// stays purged until its spec changes or a refresh is asked for.
pub const PURGE_ANNOTATION: &str = "kubefledged.io/purge-imagecache";

/// Annotation asking for a re-pull of some images on some nodes: a comma-separated list of `<image>@<node>` (that
/// image on that node) or `<image>` (that image on every node the cache puts it on). Removed once done. A digest
/// reference (`repo@sha256:…`) is told from `image@node` by the colon after its last `@`.
pub const REPULL_ANNOTATION: &str = "kmm-tui.io/repull";

/// The operation recorded in `status.reason` once a purge has run (as kube-fledged records it); the cache then
/// stays purged, and the console shows it so.
pub const PURGE_REASON: &str = "ImageCachePurge";

/// Lists of images and the nodes to cache each list on.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "kubefledged.io",
    version = "v1alpha2",
    kind = "ImageCache",
    namespaced,
    status = "ImageCacheStatus",
    derive = "PartialEq",
    shortname = "ic",
    category = "kmm",
    printcolumn = r#"{"name": "Status", "type": "string", "jsonPath": ".status.status"}"#,
    printcolumn = r#"{"name": "Cached", "type": "integer", "jsonPath": ".status.nodesCached"}"#,
    printcolumn = r#"{"name": "Nodes", "type": "integer", "jsonPath": ".status.nodesTargeted"}"#,
    printcolumn = r#"{"name": "Message", "type": "string", "jsonPath": ".status.message", "priority": 1}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ImageCacheSpec {
    /// Image lists, each with the nodes it goes to.
    pub cache_spec: Vec<CacheSpecImages>,
    /// Pull secrets in the cache's namespace, given to every pull.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::local_object_reference_list")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
}

/// One list of images and where to cache it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CacheSpecImages {
    /// Images to cache; not empty, no duplicates.
    pub images: Vec<String>,
    /// Node labels that select the nodes; every node when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
}

/// Outcome of the last operation on the cache, and per-node coverage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageCacheStatus {
    /// Outcome of the last operation.
    pub status: ImageCacheActionStatus,
    /// The operation (`ImageCacheCreate`, `ImageCacheRefresh`, ...), as upstream records it.
    pub reason: String,
    /// What happened, for a person.
    pub message: String,
    /// Failed pulls and deletions per image, one entry per node, at most [`MAX_FAILURES_PER_IMAGE`] per image (the
    /// conditions give the total).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<String, Vec<NodeReasonMessage>>,
    /// When the operation started.
    pub start_time: Time,
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Nodes some list targets (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes_targeted: Option<i32>,
    /// Of those, nodes holding every image meant for them (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes_cached: Option<i32>,
    /// Nodes missing some of their images, those with failures first then by name, at most
    /// [`MAX_LISTED_NODES`] of them so the object stays small on any cluster; complete nodes are only counted
    /// (`nodesCached`). A kmm-tui addition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["node"]
    ))]
    pub nodes: Vec<NodeImageCoverage>,
    /// Incomplete nodes left out of `nodes` by its bound (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes_omitted: Option<i32>,
    /// The `metadata.generation` this status answers (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The cacheSpec the nodes were last brought to: images that leave the spec are deleted from the nodes this
    /// records them on, and it moves to the new spec once they are (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied_cache_spec: Vec<CacheSpecImages>,
    /// Available, Progressing and Degraded, whose reasons name the node and image concerned (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// Outcomes of a cache operation, with upstream's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ImageCacheActionStatus {
    /// Pulls or deletes are running.
    Processing,
    /// Every pull or delete succeeded.
    Succeeded,
    /// Some failed; see `failures`.
    Failed,
    /// Interrupted, e.g. by a restart.
    Aborted,
    /// Not known.
    Unknown,
    /// No node matched, so nothing was done.
    NoImagesPulledOrDeleted,
}

/// Why an image failed on a node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NodeReasonMessage {
    /// Node name.
    pub node: String,
    /// Short machine-readable reason, e.g. `ErrImagePull`.
    pub reason: String,
    /// Details.
    pub message: String,
}

/// Most nodes `status.failures` lists per image.
pub const MAX_FAILURES_PER_IMAGE: usize = 20;

/// Most incomplete nodes `status.nodes` lists: 64 nodes with 5 failing images each stay near 100 KiB.
pub const MAX_LISTED_NODES: usize = 64;

/// Which of its images one node holds, so a coverage matrix needs no other read than the cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeImageCoverage {
    /// Node name.
    pub node: String,
    /// Images meant for the node.
    pub wanted: i32,
    /// Of those, images present on the node.
    pub cached: i32,
    /// Images meant for the node that it lacks (whatever is being done about them); an image not listed here is
    /// cached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Of the missing images, those a pull pod is fetching now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pulling: Vec<String>,
    /// Of the missing images, those whose last pull failed, with why; they are retried with back-off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<ImageFailure>,
}

/// Why an image's last pull on a node failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImageFailure {
    /// The image as the cache lists it.
    pub image: String,
    /// Short machine-readable reason: the runtime's (`ErrImagePull`, `ImagePullBackOff`) or `DeadlineExceeded`.
    pub reason: String,
    /// What the runtime or registry said, in a few words (`not found in registry`); `failures` keeps the full
    /// text for some nodes.
    pub message: String,
}
