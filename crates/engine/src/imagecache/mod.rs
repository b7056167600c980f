//! The ImageCache reconciler: keeps every image of a cache on every node its lists select, the way kube-fledged
//! does (its pod shapes, labels, annotations and status fields), but level-triggered: what is cached is read from
//! the nodes' `status.images` (exact references, see [`reference`]) and from the cache's pods, never remembered,
//! so a restarted engine picks up where the last one was and nothing stays `Processing`.
//!
//! A pass ([`plan`]) pulls what is missing with one pod per (node, image), a bounded number in flight per node and
//! in the cluster, each with a deadline; retries failed pulls with back-off read from the failed pod (its attempt
//! annotation and age); pulls again an image that left a node (kubelet garbage collection, `crictl rmi`) as soon as
//! the node reports it gone; deletes with `crictl rmi` pods the images that left the spec (from the nodes recorded
//! in `status.appliedCacheSpec`). Deleting a cache leaves its images on the nodes; its pods go with it.
//!
//! Asked for with annotations, each removed once its work is done:
//! - `kubefledged.io/refresh-imagecache` (any value): pull every image on every node again (`Always`).
//! - `kubefledged.io/purge-imagecache` (any value): delete every image of the cache from its nodes; the cache then
//!   stays purged until its spec changes or a refresh is asked for.
//! - `kmm-tui.io/repull: "<image>@<node>,<image>"`: pull again one image on one node, or one image on every node the
//!   cache puts it on (a JSON merge patch of the annotation is all it takes:
//!   `kubectl annotate imagecache NAME kmm-tui.io/repull=nginx:1.27@worker-3`).
//!
//! A failed pull is retried [`Settings::cache_retry`](crate::runtime::settings::Settings) after it failed (30 s by default), doubling
//! per attempt. With [`Settings::cache_refresh`](crate::runtime::settings::Settings) set, every cache that is not purged is annotated for a refresh
//! at that period.

mod cluster;
mod plan;
mod pods;
mod reference;
mod report;
mod sweep;
mod wanted;

use std::collections::{BTreeSet, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, predicates, watcher};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::cluster::CacheApi;
use self::plan::{Busy, Limits, Observed};
use self::pods::PodView;
use self::reference::NodeImagesMemo;
use crate::runtime::attention;
use crate::runtime::context::{Context, Error, retry_on_error};
use crate::runtime::family::Family;
use crate::runtime::shared::{SharedStore, SharedWatches};
use crate::runtime::wiring::{Metered, Wiring};
use kmm_api::imagecache::{ImageCache, ImageCacheActionStatus, PURGE_REASON};

pub use self::plan::backoff;
pub use self::pods::image_hash;
pub use self::reference::canonical;
pub use crate::runtime::settings::{DEFAULT_CLUSTER_PULLS, DEFAULT_FIRST_RETRY};

/// What the cache reconciler reads besides the cache.
struct CacheContext {
    engine: Arc<Context>,
    /// Every node, from the engine's shared node watch.
    nodes: SharedStore<Node>,
    /// What every node holds, read again only from nodes that changed since the last pass.
    images: std::sync::Mutex<NodeImagesMemo>,
    limits: Limits,
    /// When each cache's last pass ended (see [`PACE`]).
    last_pass: std::sync::Mutex<HashMap<ObjectRef<ImageCache>, Instant>>,
}

/// The least time between the end of one pass over a cache and the start of the next (on 5,000 nodes, 750 ms
/// took a 5-image rollout from 175 s to 146 s in-process; 250 ms left it at 189 s). During a rollout every
/// node's image report and every pod's progress asks for a pass; back to back, passes over thousands of pairs
/// would take the CPU the pulls need. Changes that arrive meanwhile are taken in by the next pass.
const PACE: Duration = Duration::from_millis(750);

/// Run the reconciler until `stop` is cancelled. Subscribes to the shared node watch at once, so call it before
/// [`SharedWatches::run`] starts the watch.
pub fn run(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let nodes = shared.nodes_with_images();
    let node_changes = shared.node_changes(node_fingerprint);
    let refresh = context.settings.cache_refresh;
    async move {
        let client = context.client.clone();
        let wiring = Wiring::filtered(
            &context,
            // One pass at a time: the in-flight bounds are counted across caches from the pods a pass lists.
            Metered::new("imagecache", Family::Caches).at_most(1),
            watcher(
                Api::<ImageCache>::all(client.clone()),
                watcher::Config::default(),
            )
            .default_backoff(),
            cache_fingerprint,
        );
        let store = wiring.store();
        let cache_context = Arc::new(CacheContext {
            engine: context.clone(),
            nodes,
            images: Default::default(),
            limits: Limits {
                first_retry: context.settings.cache_retry,
                cluster: context.settings.cache_pulls.max(1),
                ..Limits::default()
            },
            last_pass: Default::default(),
        });
        let reconciler = wiring
            .with(|controller| {
                controller
                    .owns(
                        Api::<Pod>::all(client),
                        watcher::Config::default().labels(kmm_api::imagecache::names::SELECTOR),
                    )
                    .watches_shared_stream(node_changes, move |_node: Arc<Node>| {
                        store
                            .state()
                            .iter()
                            .map(|c| ObjectRef::from_obj(c.as_ref()))
                            .collect::<Vec<_>>()
                    })
            })
            .drive(reconcile, error_policy, cache_context, &stop, "ImageCache");
        match refresh {
            Some(period) => {
                tokio::join!(
                    reconciler,
                    cluster::refresh_periodically(context, period, stop.clone())
                );
            }
            None => reconciler.await,
        }
    }
}

/// What about a node changes a cache: its labels (selectors) and the images it reports.
fn node_fingerprint(node: &Node) -> u64 {
    let mut hasher = DefaultHasher::new();
    node.metadata.labels.hash(&mut hasher);
    node.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    for image in node
        .status
        .as_ref()
        .and_then(|s| s.images.as_ref())
        .into_iter()
        .flatten()
    {
        image.names.hash(&mut hasher);
    }
    hasher.finish()
}

/// What about a cache starts a pass: its spec (generation) and annotations, not the status this reconciler writes.
fn cache_fingerprint(cache: &ImageCache) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    predicates::generation(cache).hash(&mut hasher);
    cache.metadata.annotations.hash(&mut hasher);
    cache
        .metadata
        .deletion_timestamp
        .is_some()
        .hash(&mut hasher);
    // Another writer's status (an upstream engine's, a restore) is looked at once.
    cache
        .status
        .as_ref()
        .map(|s| s.observed_generation)
        .hash(&mut hasher);
    Some(hasher.finish())
}

impl CacheContext {
    fn lock_last_pass(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectRef<ImageCache>, Instant>> {
        self.last_pass.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Note that a pass over `cache` ended now.
    fn passed(&self, cache: ObjectRef<ImageCache>) {
        let mut last_pass = self.lock_last_pass();
        // Caches not passed over for a while (deleted ones among them) need no pacing.
        last_pass.retain(|_, end| end.elapsed() < PACE * 4);
        last_pass.insert(cache, Instant::now());
    }
}

fn error_policy(cache: Arc<ImageCache>, error: &Error, context: Arc<CacheContext>) -> Action {
    retry_on_error(cache, error, context.engine.clone())
}

/// One pass over a cache; a failure a person must act on is told on it (see [`attention`]).
async fn reconcile(object: Arc<ImageCache>, context: Arc<CacheContext>) -> Result<Action, Error> {
    let key = ObjectRef::from_obj(object.as_ref());
    let last = context.lock_last_pass().get(&key).copied();
    if let Some(wait) = last.and_then(|end| PACE.checked_sub(end.elapsed())) {
        tokio::time::sleep(wait).await;
    }
    let outcome = reconcile_cache(&object, &context).await;
    context.passed(key);
    attention::conclude_with_condition(&context.engine, object.as_ref(), &outcome).await;
    outcome
}

/// One pass over a cache, read afresh (the controller's copy may predate this reconciler's last status write).
async fn reconcile_cache(object: &ImageCache, context: &CacheContext) -> Result<Action, Error> {
    let api = CacheApi::new(&context.engine.client, object)?;
    let Some(cache) = api.get().await? else {
        return Ok(Action::await_change());
    };
    if cache.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    context
        .nodes
        .listed()
        .await
        .map_err(|stopped| Error::Invalid(format!("node cache: {stopped}")))?;
    let nodes = context.nodes.state();
    let now = Timestamp::now();
    let limits = context.limits;
    let every_pod = api.every_cache_pod().await?;
    let mut busy = Busy::default();
    for pod in every_pod
        .iter()
        .filter(|p| pods::in_flight(p, now, limits.deadline))
    {
        busy.total += 1;
        if let Some(node) = pods::pod_node(pod) {
            *busy.per_node.entry(node.to_owned()).or_default() += 1;
        }
    }
    let uid = cache.uid();
    let mut own = Vec::new();
    let mut leaving = BTreeSet::new();
    for pod in every_pod.iter().filter(|p| {
        p.owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())
    }) {
        let Some(view) = PodView::read(pod, now, limits.deadline) else {
            continue;
        };
        if pod.metadata.deletion_timestamp.is_some() {
            leaving.insert((view.node, view.image));
        } else {
            own.push(view);
        }
    }
    let plan = {
        let mut memo = context.images.lock().unwrap_or_else(|p| p.into_inner());
        plan::plan(Observed {
            cache: &cache,
            nodes: &nodes,
            images: memo.refresh(&nodes),
            pods: own,
            leaving,
            busy,
            now,
            limits,
        })
    };
    // Deletes first: a pod taking over from another is created only once that one has left.
    let mut still_there = BTreeSet::new();
    for name in &plan.delete {
        if !api.delete_pod(name).await? {
            still_there.insert(name.as_str());
        }
    }
    let finished = sweep::sweep(&cache.name_any(), &plan.sweep);
    for name in &finished.by_name {
        api.delete_pod(name).await?;
    }
    for selector in &finished.selectors {
        api.delete_succeeded(selector).await?;
    }
    for new in &plan.create {
        if new
            .replaces
            .as_deref()
            .is_some_and(|old| still_there.contains(old))
        {
            continue;
        }
        let work = pods::Work {
            node: &new.node,
            image: &new.image,
            operation: new.operation,
            attempt: new.attempt,
            last_failure: new.last_failure.clone(),
        };
        api.create_pod(&pods::pod(&cache, &work, &context.engine.images)?)
            .await?;
    }
    let status = report::status(&cache, &plan, now);
    let mut written = cache.clone();
    if cache.status.as_ref() != Some(&status) {
        written = api.write_status(&cache, status.clone()).await?;
        announce(&context.engine, &cache, &status).await;
    }
    if !plan.done_annotations.is_empty() {
        api.remove_annotations(&written, &plan.done_annotations)
            .await?;
    }
    Ok(match plan.wake_after {
        Some(wake) => context.engine.resync_within(wake),
        None => context.engine.resync(),
    })
}

/// An event when the outcome changes: work started, images cached or deleted, pulls failed.
async fn announce(
    context: &Context,
    cache: &ImageCache,
    status: &kmm_api::imagecache::ImageCacheStatus,
) {
    let before = cache.status.as_ref().map(|s| s.status);
    if before == Some(status.status) {
        return;
    }
    let degraded = status
        .conditions
        .iter()
        .find(|c| c.type_ == kmm_api::conditions::DEGRADED);
    let (warning, reason, note) = match status.status {
        ImageCacheActionStatus::Processing => {
            (false, status.reason.as_str(), status.message.clone())
        }
        ImageCacheActionStatus::Failed => {
            context.metrics.pull_failed(Family::Caches);
            (
                true,
                degraded.map_or("PullFailed", |c| c.reason.as_str()),
                degraded.map_or_else(|| status.message.clone(), |c| c.message.clone()),
            )
        }
        ImageCacheActionStatus::Succeeded if status.reason == PURGE_REASON => {
            (false, "ImagesDeleted", status.message.clone())
        }
        ImageCacheActionStatus::Succeeded => (false, "ImagesCached", status.message.clone()),
        _ if cache
            .spec
            .cache_spec
            .iter()
            .all(|list| list.images.is_empty()) =>
        {
            (false, "NoImages", status.message.clone())
        }
        _ => (false, "NoMatchingNodes", status.message.clone()),
    };
    context.event(cache, warning, reason, note).await;
}
