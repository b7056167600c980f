//! The API calls of the cache reconciler, each failure naming the cache and what was being done.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch};
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::runtime::context::{Context, Error, KubeResultExt};
use crate::runtime::writes::patch_params;
use crate::runtime::writes::post_params;
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::imagecache::{ImageCache, ImageCacheStatus, PURGE_REASON, REFRESH_ANNOTATION};

/// The calls about one cache.
pub(super) struct CacheApi {
    name: String,
    namespace: String,
    caches: Api<ImageCache>,
    pods: Api<Pod>,
    every_pod: Api<Pod>,
}

impl CacheApi {
    /// The calls about `cache`.
    pub(super) fn new(client: &Client, cache: &ImageCache) -> Result<Self, Error> {
        let name = cache.name_any();
        let namespace = cache
            .namespace()
            .ok_or_else(|| Error::Invalid(format!("ImageCache {name} has no namespace")))?;
        Ok(Self {
            caches: Api::namespaced(client.clone(), &namespace),
            pods: Api::namespaced(client.clone(), &namespace),
            every_pod: Api::all(client.clone()),
            name,
            namespace,
        })
    }

    fn cache(&self) -> String {
        format!("ImageCache {}/{}", self.namespace, self.name)
    }

    /// The cache as the API has it now.
    pub(super) async fn get(&self) -> Result<Option<ImageCache>, Error> {
        self.caches
            .get_opt(&self.name)
            .await
            .doing(|| format!("reading {}", self.cache()))
    }

    /// Every image cache pod in the cluster (this engine's and kube-fledged's), for the in-flight bounds.
    pub(super) async fn every_cache_pod(&self) -> Result<Vec<Pod>, Error> {
        Ok(self
            .every_pod
            .list(&ListParams::default().labels(kmm_api::imagecache::names::SELECTOR))
            .await
            .doing(|| format!("listing image cache pods for {}", self.cache()))?
            .items)
    }

    /// Create a pod; one that already exists under its name is fine (its name says what it does).
    pub(super) async fn create_pod(&self, pod: &Pod) -> Result<(), Error> {
        match self.pods.create(&post_params(), pod).await {
            Ok(_) => Ok(()),
            Err(error) if is_conflict(&error) => Ok(()),
            Err(source) => Err(Error::Kube {
                action: format!("creating pod {} of {}", pod.name_any(), self.cache()),
                source,
            }),
        }
    }

    /// Delete a pod at once (no grace period: a pull or `crictl rmi` has nothing to finish that a retry would not
    /// redo); one already gone is fine. Returns whether it has left the API (a finalizer can keep it).
    pub(super) async fn delete_pod(&self, name: &str) -> Result<bool, Error> {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::background()
        };
        match self.pods.delete(name, &params).await {
            // With no grace period only a finalizer keeps a pod: the API answers with its last state or a Status.
            Ok(outcome) => Ok(outcome.left_or_default().finalizers().is_empty()),
            Err(error) if is_not_found(&error) => Ok(true),
            Err(source) => Err(Error::Kube {
                action: format!("deleting pod {name} of {}", self.cache()),
                source,
            }),
        }
    }

    /// Delete, in one request, the succeeded pods that `selector` picks (see [`super::sweep`]).
    pub(super) async fn delete_succeeded(&self, selector: &str) -> Result<(), Error> {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::background()
        };
        let pods = ListParams::default()
            .labels(selector)
            .fields(super::sweep::SUCCEEDED);
        self.pods
            .delete_collection(&params, &pods)
            .await
            .map(drop)
            .doing(|| format!("deleting finished pods of {}", self.cache()))
    }

    /// Replace the status of the cache as read at the start of the pass: a concurrent change makes it a 409 and
    /// the pass is retried from fresh state. Returns the cache as written.
    pub(super) async fn write_status(
        &self,
        read: &ImageCache,
        status: ImageCacheStatus,
    ) -> Result<ImageCache, Error> {
        let mut object = read.clone();
        object.status = Some(status);
        object.metadata.managed_fields = None;
        let written = self
            .caches
            .replace_status(&self.name, &post_params(), &object)
            .await
            .doing(|| format!("writing the status of {}", self.cache()))?;
        tracing::debug!(cache = %self.cache(), "status written");
        Ok(written)
    }

    /// Remove annotations whose work is done, only if the cache is still as `read` (a new request written
    /// meanwhile must not be lost).
    pub(super) async fn remove_annotations(
        &self,
        read: &ImageCache,
        keys: &[&str],
    ) -> Result<(), Error> {
        let removed: serde_json::Map<String, serde_json::Value> = keys
            .iter()
            .map(|k| ((*k).to_owned(), serde_json::Value::Null))
            .collect();
        let patch = json!({
            "metadata": {"resourceVersion": read.resource_version(), "annotations": removed},
        });
        self.caches
            .patch(&self.name, &patch_params(), &Patch::Merge(&patch))
            .await
            .doing(|| format!("removing {} from {}", keys.join(", "), self.cache()))?;
        Ok(())
    }
}

/// Every `period`, annotate each cache that is not purged for a refresh, so moved tags are pulled again.
pub(super) async fn refresh_periodically(
    context: std::sync::Arc<Context>,
    period: Duration,
    stop: CancellationToken,
) {
    let caches: Api<ImageCache> = Api::all(context.client.clone());
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let list = match caches.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(error) => {
                tracing::warn!(%error, "listing image caches for the periodic refresh");
                continue;
            }
        };
        for cache in list
            .iter()
            .filter(|c| c.status.as_ref().is_none_or(|s| s.reason != PURGE_REASON))
        {
            let patch = json!({"metadata": {"annotations": {REFRESH_ANNOTATION: "periodic"}}});
            let api: Api<ImageCache> = Api::namespaced(
                context.client.clone(),
                &cache.namespace().unwrap_or_default(),
            );
            if let Err(error) = api
                .patch(&cache.name_any(), &patch_params(), &Patch::Merge(&patch))
                .await
            {
                tracing::warn!(%error, cache = %cache.name_any(), "asking for a periodic refresh");
            }
        }
    }
}
