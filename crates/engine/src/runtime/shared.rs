//! Watches that several reconcilers share: one watch per kind for the whole engine instead of one per controller,
//! so a cluster of 5,000 nodes is listed and followed once however many families act on its nodes.
//!
//! A family takes what it needs while the engine is being assembled ([`SharedWatches::nodes`],
//! [`SharedWatches::node_changes`]...), before [`SharedWatches::run`] starts the watches: a subscription taken
//! later would miss the initial list. Every subscription must then be polled, because a shared watch waits for its
//! slowest subscriber once [`BUFFER`] changes are queued; a controller polls its trigger streams from its first
//! poll, so handing the stream to a `Controller` is enough.
//!
//! Objects are slimmed to what the reconcilers read before they enter a store, and each subscriber receives the
//! very object the watch saw (kube's own shared-store subscriptions look the object up in the store instead, and
//! stall on one deleted in between, which short-lived worker pods always are).
//!
//! Passes wait for a cache's first list with [`SharedStore::listed`], never with kube's `Store::wait_until_ready`:
//! that one keeps a single waker for all of its waiters, so of several passes waiting at once (Modules, Shims and
//! caches all read the node cache) only the last to ask is woken. The others wait forever, each holding its
//! object's place in its controller, and that object is never reconciled again while the engine goes on renewing
//! its Lease.

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::channel::mpsc;
use futures::{SinkExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::{Node, NodeStatus, Pod, PodSpec};
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::runtime::metrics::EngineMetrics;
use kmm_api::kmm::NodeModulesConfig;
use kmm_api::kmm::labels;

/// Changes queued per subscriber before the shared reflector waits for it: a whole initial list of a large cluster
/// fits, so start-up never stalls on a subscriber that is still setting up.
pub const BUFFER: usize = 8192;

/// The engine's shared watches. Cheap to hand around by reference while the engine is assembled; consumed by
/// [`SharedWatches::run`].
pub struct SharedWatches {
    nodes: SharedKind<Node>,
    /// Whether a reconciler reads the images nodes report (`status.images`, a long list per node that nothing else
    /// reads): the shared node cache drops them unless one does.
    node_images: AtomicBool,
    nmcs: SharedKind<NodeModulesConfig>,
    workers: SharedKind<Pod>,
    /// Where watch restarts are counted.
    metrics: Arc<EngineMetrics>,
}

impl Default for SharedWatches {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedWatches {
    /// Shared stores with no watch running yet.
    pub fn new() -> Self {
        Self {
            nodes: SharedKind::new(),
            node_images: AtomicBool::new(false),
            nmcs: SharedKind::new(),
            workers: SharedKind::new(),
            metrics: Arc::default(),
        }
    }

    /// The same watches, counting their restarts in `metrics`.
    pub fn reporting_to(mut self, metrics: Arc<EngineMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Every node, as the shared watch last saw it, without what no reconciler reads (see [`slim_node`]). Empty
    /// until the first list arrives: wait on [`SharedStore::listed`] before judging a node absent.
    pub fn nodes(&self) -> SharedStore<Node> {
        self.nodes.store()
    }

    /// [`SharedWatches::nodes`], keeping the images each node reports (`status.images`) for the reconcilers that
    /// read them.
    pub fn nodes_with_images(&self) -> SharedStore<Node> {
        self.node_images.store(true, Ordering::Relaxed);
        self.nodes()
    }

    /// Nodes that appeared, left, or whose `fingerprint` changed, once the shared store reflects the change. A
    /// node's heartbeat changes its status every few seconds; a fingerprint of the fields a reconciler reads keeps
    /// those from starting passes. The first sighting of every node passes, so the initial list triggers once.
    pub fn node_changes(
        &self,
        fingerprint: fn(&Node) -> u64,
    ) -> impl Stream<Item = Arc<Node>> + Send + 'static {
        changed_only(self.nodes.changes(), fingerprint)
    }

    /// Every NodeModulesConfig, as the shared watch last saw it (without `managedFields`).
    pub fn nmcs(&self) -> SharedStore<NodeModulesConfig> {
        self.nmcs.store()
    }

    /// Every NodeModulesConfig listed, added, modified or deleted, once the shared store reflects it.
    pub fn nmc_changes(&self) -> impl Stream<Item = Arc<NodeModulesConfig>> + Send + 'static {
        self.nmcs.changes().map(Change::into_object)
    }

    /// Every worker pod (labelled with a worker action), as the shared watch last saw it, slimmed to what the
    /// reconcilers read of a cached worker (see [`slim_worker`]): decisions about workers read them afresh.
    pub fn workers(&self) -> SharedStore<Pod> {
        self.workers.store()
    }

    /// Every worker pod listed, added, modified or deleted, once the shared store reflects it.
    pub fn worker_changes(&self) -> impl Stream<Item = Arc<Pod>> + Send + 'static {
        self.workers.changes().map(Change::into_object)
    }

    /// Run every shared watch a reconciler subscribed to until `stop`. Watch errors are logged and retried with
    /// back-off; the stores keep their last content meanwhile.
    pub fn run(
        self,
        client: kube::Client,
        stop: CancellationToken,
    ) -> impl Future<Output = ()> + Send + 'static {
        let keep_images = self.node_images.load(Ordering::Relaxed);
        let nodes = Box::pin(self.nodes.run(
            self.metrics.clone(),
            Api::all(client.clone()),
            watcher::Config::default(),
            move |node| slim_node(node, keep_images),
        ));
        let nmcs = Box::pin(self.nmcs.run(
            self.metrics.clone(),
            Api::all(client.clone()),
            watcher::Config::default(),
            slim_nmc,
        ));
        let workers = Box::pin(self.workers.run(
            self.metrics,
            Api::all(client),
            watcher::Config::default().labels(labels::WORKER_ACTION),
            slim_worker,
        ));
        async move {
            tokio::select! {
                () = stop.cancelled() => {}
                _ = futures::future::join3(nodes, nmcs, workers) => {}
            }
        }
    }
}

/// Drop from a node what no reconciler reads before it enters the shared cache: `managedFields` (about half of a
/// stored object), the conditions other than `Ready`, the addresses, capacity, allocatable, daemon endpoints,
/// volumes and runtime handlers, and the reported images unless `keep_images`. Labels, annotations, taints and
/// the rest of the spec, `nodeInfo` (kernel, boot, OS, architecture, runtime) and readiness stay.
fn slim_node(node: &mut Node, keep_images: bool) {
    node.meta_mut().managed_fields = None;
    if let Some(status) = node.status.take() {
        node.status = Some(NodeStatus {
            conditions: status.conditions.map(kmm_api::conditions::node_ready_only),
            images: status.images.filter(|_| keep_images).map(exact),
            node_info: status.node_info,
            ..NodeStatus::default()
        });
    }
}

/// Drop an NMC's `managedFields`, and the spare room of its module lists: read from JSON, a list of one entry holds
/// room for four, which on 5,000 NMCs is most of what the cache holds.
fn slim_nmc(nmc: &mut NodeModulesConfig) {
    nmc.meta_mut().managed_fields = None;
    nmc.spec.modules.shrink_to_fit();
    if let Some(status) = &mut nmc.status {
        status.modules.shrink_to_fit();
    }
}

/// `list` in an allocation of its length (see [`slim_nmc`]).
fn exact<T>(mut list: Vec<T>) -> Vec<T> {
    list.shrink_to_fit();
    list
}

/// Drop from a worker pod what no reconciler reads from the cache (they read workers afresh before acting on
/// them): `managedFields`, annotations (the module configuration it carries) and the spec except the node it is
/// bound to. Labels, owners and the status (phase, restarts, why the last run ended) stay.
fn slim_worker(pod: &mut Pod) {
    pod.meta_mut().managed_fields = None;
    pod.metadata.annotations = None;
    if let Some(spec) = pod.spec.take() {
        pod.spec = Some(PodSpec {
            node_name: spec.node_name,
            ..PodSpec::default()
        });
    }
}

/// One kind watched once for the whole engine: a store every reader shares and its changes fanned out to
/// subscribers. Its watch runs only when a reconciler subscribed to it or took its store.
struct SharedKind<K: Resource + Clone + 'static>
where
    K::DynamicType: Eq + Hash + Clone,
{
    store: Store<K>,
    writer: Writer<K>,
    /// Set once the store holds the watch's first list; every clone of the receiver is woken.
    listed: watch::Sender<bool>,
    subscribers: Mutex<Vec<mpsc::Sender<Change<K>>>>,
    used: AtomicBool,
}

impl<K> SharedKind<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    fn new() -> Self {
        let (store, writer) = reflector::store();
        Self {
            store,
            writer,
            listed: watch::Sender::new(false),
            subscribers: Mutex::default(),
            used: AtomicBool::new(false),
        }
    }

    fn store(&self) -> SharedStore<K> {
        self.used.store(true, Ordering::Relaxed);
        SharedStore {
            store: self.store.clone(),
            listed: self.listed.subscribe(),
        }
    }

    /// Applied and deleted objects from the watch's first list on, each once the store reflects it.
    fn changes(&self) -> impl Stream<Item = Change<K>> + Send + 'static {
        self.used.store(true, Ordering::Relaxed);
        let (sender, receiver) = mpsc::channel(BUFFER);
        self.subscribers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(sender);
        receiver
    }

    /// The watch, slimming every object with `slim` before it enters the store; nothing when nobody uses the kind.
    fn run(
        self,
        metrics: Arc<EngineMetrics>,
        api: Api<K>,
        config: watcher::Config,
        slim: impl FnMut(&mut K) + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let used = self.used.load(Ordering::Relaxed);
        let mut subscribers = self
            .subscribers
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let store = self.store;
        let writer = self.writer;
        let listed = self.listed;
        async move {
            if !used {
                return;
            }
            metrics.watch_started(&K::kind(&()));
            // Boxed: a watch's state is large, and the engine's futures nest deeply.
            let mut events = Box::pin(
                watcher(api, config)
                    .modify(slim)
                    .default_backoff()
                    .reflect(writer),
            );
            while let Some(event) = events.next().await {
                let changes = match event {
                    Ok(watcher::Event::Apply(object)) => {
                        vec![Change::Applied(shared_copy(&store, object))]
                    }
                    Ok(watcher::Event::Delete(object)) => vec![Change::Deleted(Arc::new(object))],
                    // A (re)list is passed on once the store holds all of it, as the store's own objects.
                    Ok(watcher::Event::InitDone) => {
                        listed.send_replace(true);
                        store.state().into_iter().map(Change::Applied).collect()
                    }
                    Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => Vec::new(),
                    Err(error) => {
                        tracing::warn!(%error, kind = %K::kind(&()), "shared watch failed; retrying");
                        metrics.watch_restarted(&K::kind(&()));
                        Vec::new()
                    }
                };
                for change in changes {
                    for subscriber in &mut subscribers {
                        // A subscriber that is gone is not an error: its reconciler stopped.
                        let _ = subscriber.send(change.clone()).await;
                    }
                }
            }
        }
    }
}

/// A cache one of the engine's shared watches fills: what passes read nodes, NMCs and worker pods from.
pub struct SharedStore<K: Resource + Clone + 'static>
where
    K::DynamicType: Eq + Hash + Clone,
{
    store: Store<K>,
    listed: watch::Receiver<bool>,
}

impl<K: Resource + Clone + 'static> Clone for SharedStore<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            listed: self.listed.clone(),
        }
    }
}

/// The shared watch stopped before its first list: its engine is winding down.
#[derive(Debug, thiserror::Error)]
#[error("the shared watch stopped before its first list")]
pub struct NeverListed;

impl<K> SharedStore<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    /// Wait until the cache holds the watch's first list, however many passes wait at once (see the module docs
    /// for why not `Store::wait_until_ready`). Fails when the watch stops first.
    pub async fn listed(&self) -> Result<(), NeverListed> {
        let mut listed = self.listed.clone();
        listed
            .wait_for(|listed| *listed)
            .await
            .map(|_| ())
            .map_err(|_| NeverListed)
    }

    /// Every cached object.
    pub fn state(&self) -> Vec<Arc<K>> {
        self.store.state()
    }

    /// The cached object `key` names.
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        self.store.get(key)
    }

    /// The reflector store behind the cache, for a `Controller` that runs on it: its runner must be the only task
    /// that waits on the store's own readiness.
    pub fn controller_store(&self) -> Store<K> {
        self.store.clone()
    }
}

/// The store's own copy of `object` (just written by the reflector), so subscribers share it instead of holding
/// another.
fn shared_copy<K>(store: &Store<K>, object: K) -> Arc<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store
        .get(&ObjectRef::from_obj(&object))
        .unwrap_or_else(|| Arc::new(object))
}

/// One change a subscriber sees.
#[derive(Clone)]
enum Change<K> {
    /// Listed, added or modified.
    Applied(Arc<K>),
    /// Gone.
    Deleted(Arc<K>),
}

impl<K> Change<K> {
    /// The object, applied or deleted.
    fn into_object(self) -> Arc<K> {
        match self {
            Self::Applied(object) | Self::Deleted(object) => object,
        }
    }
}

/// Applied objects whose fingerprint differs from the last one seen under the same name, and every deleted one.
fn changed_only<K>(
    stream: impl Stream<Item = Change<K>> + Send + 'static,
    fingerprint: fn(&K) -> u64,
) -> impl Stream<Item = Arc<K>> + Send + 'static
where
    K: Resource + Send + Sync + 'static,
{
    let mut seen: HashMap<(Option<String>, String), u64> = HashMap::new();
    let key = |object: &K| {
        (
            object.meta().namespace.clone(),
            object.meta().name.clone().unwrap_or_default(),
        )
    };
    stream.filter_map(move |change| {
        let passed = match change {
            Change::Applied(object) => {
                let print = fingerprint(&object);
                (seen.insert(key(&object), print) != Some(print)).then_some(object)
            }
            Change::Deleted(object) => {
                seen.remove(&key(&object));
                Some(object)
            }
        };
        std::future::ready(passed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    fn node(name: &str, label: &str) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "labels": {"l": label}},
            }))
            .expect("a node"),
        )
    }

    fn label_print(node: &Node) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        node.metadata.labels.hash(&mut hasher);
        hasher.finish()
    }

    #[tokio::test]
    async fn first_sightings_changed_fingerprints_and_deletions_pass() {
        let input = stream::iter(vec![
            Change::Applied(node("a", "1")),
            Change::Applied(node("b", "1")),
            Change::Applied(node("a", "1")),
            Change::Applied(node("a", "2")),
            Change::Applied(node("b", "1")),
            Change::Deleted(node("b", "1")),
            Change::Applied(node("b", "1")),
        ]);
        let passed: Vec<(String, String)> = changed_only(input, label_print)
            .map(|n| {
                (
                    n.metadata.name.clone().unwrap_or_default(),
                    n.metadata.labels.as_ref().unwrap()["l"].clone(),
                )
            })
            .collect()
            .await;
        assert_eq!(
            passed,
            [("a", "1"), ("b", "1"), ("a", "2"), ("b", "1"), ("b", "1")]
                .map(|(n, l)| (n.to_owned(), l.to_owned()))
        );
    }
}
