//! Pods and nodes watched once for the whole simulation.
//!
//! The kubelets, the scheduler, the workload controllers and the EndpointSlice controller all follow every pod,
//! and the scheduler, the workload controllers and the Machine Config Operator every node. Each used to run a watch
//! and a cache of its own: on 5,000 nodes in the middle of a rollout that was three cached copies of every pod and
//! of every node, and four decodings of every pod change. Here each kind is watched, decoded and cached once; the
//! components read the one cache ([`SharedWatch::store`]) and receive each change with the object shared with it
//! ([`SharedWatch::subscribe`]), or only what they read of it, taken as the change arrives
//! ([`SharedWatch::subscribe_with`]): a busy component's queue then holds no old versions of the objects.
//!
//! The watch starts with its first subscription. A component that subscribes later first receives the cache as a
//! list of its own (`Init`, an `InitApply` per object, `InitDone`), at once when the cache holds a whole list, or
//! when the list under way is whole: every subscriber sees every object, whenever it joins.

use std::fmt::Debug;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use futures::channel::mpsc::{self, UnboundedReceiver};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::background::NOT_BACKGROUND;
use super::{node_for_placement, pod_as_cached};

/// A change as subscribers receive it: kube's watch event, with the object shared with the cache.
pub type Change<K> = watcher::Event<Arc<K>>;

/// The simulation's shared watches.
pub struct SharedWatches {
    /// Every pod, without managed fields ([`pod_as_cached`]).
    pub pods: SharedWatch<Pod>,
    /// Every node, as placement reads it ([`node_for_placement`]: no managed fields, no image list).
    pub nodes: SharedWatch<Node>,
}

impl SharedWatches {
    /// Watches through `client`, none started yet; they stop with `stop`.
    pub fn new(client: &kube::Client, stop: &CancellationToken) -> Self {
        Self {
            pods: SharedWatch::new(client, stop, pod_as_cached),
            nodes: SharedWatch::new(client, stop, node_for_placement),
        }
    }
}

/// One kind watched for every component of the simulation.
pub struct SharedWatch<K: Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    client: kube::Client,
    stop: CancellationToken,
    /// What is cut from each object before it is cached: what no component reads.
    slim: fn(&mut K),
    /// The cache's writer until the watch starts.
    writer: Mutex<Option<Writer<K>>>,
    subscribers: Arc<Mutex<Subscribers<K>>>,
}

/// One subscriber: takes a change, false once it has gone.
type Subscriber<K> = Box<dyn FnMut(&Change<K>) -> bool + Send>;

/// Who receives the changes.
struct Subscribers<K> {
    /// Subscribers that have seen a whole list.
    following: Vec<Subscriber<K>>,
    /// Subscribers that joined while a list was under way: they receive the cache once it is whole.
    waiting: Vec<Subscriber<K>>,
    /// Whether a list is under way (from `Init` to `InitDone`), or none has been whole yet.
    listing: bool,
}

impl<K> SharedWatch<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn new(client: &kube::Client, stop: &CancellationToken, slim: fn(&mut K)) -> Self {
        let (store, writer) = reflector::store();
        Self {
            store,
            client: client.clone(),
            stop: stop.clone(),
            slim,
            writer: Mutex::new(Some(writer)),
            subscribers: Arc::new(Mutex::new(Subscribers {
                following: Vec::new(),
                waiting: Vec::new(),
                listing: true,
            })),
        }
    }

    /// The shared cache (ready once the first list is whole).
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// Every change from now on, after the cache as a list of the subscriber's own; starts the watch on the first
    /// call. Poll the stream: its changes queue until they are read.
    pub fn subscribe(&self) -> UnboundedReceiver<Change<K>> {
        self.subscribe_with(Change::clone)
    }

    /// [`subscribe`](Self::subscribe), receiving `read(change)` for each change, taken as the change arrives. A
    /// component that needs a name or a fingerprint of each object reads it here, so that what waits in its queue
    /// while it is busy (binding pods, writing to the API) holds no old versions of whole objects.
    pub fn subscribe_with<T: Send + 'static>(
        &self,
        mut read: impl FnMut(&Change<K>) -> T + Send + 'static,
    ) -> UnboundedReceiver<T> {
        let (sender, receiver) = mpsc::unbounded();
        let mut subscriber: Subscriber<K> =
            Box::new(move |change| sender.unbounded_send(read(change)).is_ok());
        {
            let mut subscribers = locked(&self.subscribers);
            if subscribers.listing {
                subscribers.waiting.push(subscriber);
            } else if replay(&self.store, &mut subscriber) {
                subscribers.following.push(subscriber);
            }
        }
        if let Some(writer) = locked(&self.writer).take() {
            tokio::spawn(follow(
                Api::all(self.client.clone()),
                self.slim,
                writer,
                self.store.clone(),
                self.subscribers.clone(),
                self.stop.clone(),
            ));
        }
        receiver
    }
}

/// The watch: each event into the cache, then to every subscriber.
async fn follow<K>(
    api: Api<K>,
    slim: fn(&mut K),
    mut writer: Writer<K>,
    store: Store<K>,
    subscribers: Arc<Mutex<Subscribers<K>>>,
    stop: CancellationToken,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    // The background workloads are not the simulation's to run.
    let events = watcher(api, watcher::Config::default().labels(NOT_BACKGROUND))
        .modify(slim)
        .default_backoff();
    futures::pin_mut!(events);
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            event = events.next() => event,
        };
        match event {
            Some(Ok(event)) => {
                writer.apply_watcher_event(&event);
                let change = shared(event, &store);
                let mut subscribers = locked(&subscribers);
                subscribers
                    .following
                    .retain_mut(|subscriber| subscriber(&change));
                match change {
                    watcher::Event::Init => subscribers.listing = true,
                    watcher::Event::InitDone => {
                        subscribers.listing = false;
                        let waiting = std::mem::take(&mut subscribers.waiting);
                        let joined = waiting.into_iter().filter_map(|mut subscriber| {
                            replay(&store, &mut subscriber).then_some(subscriber)
                        });
                        subscribers.following.extend(joined.collect::<Vec<_>>());
                    }
                    _ => {}
                }
            }
            Some(Err(error)) => tracing::debug!(%error, kind = %K::kind(&()), "shared watch"),
            None => return,
        }
    }
}

/// The event with its object shared: the cached one for an applied object (the same allocation the cache holds),
/// a new pointer for the others (a deleted object has left the cache; a relisted one waits in the writer's buffer).
fn shared<K>(event: watcher::Event<K>, store: &Store<K>) -> Change<K>
where
    K: Resource<DynamicType = ()> + Clone,
{
    match event {
        watcher::Event::Apply(object) => {
            let cached = store.get(&ObjectRef::from_obj(&object));
            watcher::Event::Apply(cached.unwrap_or_else(|| Arc::new(object)))
        }
        watcher::Event::Delete(object) => watcher::Event::Delete(Arc::new(object)),
        watcher::Event::InitApply(object) => watcher::Event::InitApply(Arc::new(object)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// The whole cache to one subscriber as a list; false when it has gone.
fn replay<K>(store: &Store<K>, subscriber: &mut Subscriber<K>) -> bool
where
    K: Resource<DynamicType = ()> + Clone,
{
    std::iter::once(watcher::Event::Init)
        .chain(store.state().into_iter().map(watcher::Event::InitApply))
        .chain(std::iter::once(watcher::Event::InitDone))
        .all(|change| subscriber(&change))
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
