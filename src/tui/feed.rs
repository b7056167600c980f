//! Watches that keep the console's lists current: one kube-rs watcher per kind (five for pods: KMM's pull,
//! build/sign and worker pods selected by KMM's labels, Shim installer pods, and image puller pods selected by
//! kube-fledged's labels), each sending its whole list to the UI task when it changed, at most every [`COALESCE`],
//! so a burst of 5,000 node updates costs a handful of redraws. A first list is sent as its pages arrive, so a
//! cluster of 5,000 nodes is on screen with its first 500 rather than once all are read. Two single objects are
//! followed apart: the engine Lease and the engine's record of the kernels of the cluster's OS images. DRA's
//! ResourceSlices and ResourceClaims are watched only once discovery says the cluster serves them. Events are taken
//! in by field selector, only those about what the console shows ([`event_sources`]), so their cost does not grow
//! with a busy cluster's churn. Watch errors are reported and retried with backoff; the last lists stay on screen
//! meanwhile.

mod event_sources;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use kube::runtime::reflector;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::action::{Action, EngineEvent};
use super::data::{DraServing, FeedState, Kind, KindSnapshot, event_time};
use super::kept::Kept;
use super::lean;
use super::worded::Why;
use event_sources::PodNamespaces;
use kmm_api::day0::{KMM_MANAGED_LABEL, MachineConfig, MachineConfigPool, ModuleDay0};
use kmm_api::hub::ManagedClusterModule;
use kmm_api::imagecache::ImageCache;
use kmm_api::kmm::labels;
use kmm_api::kmm::os_image_kernels;
use kmm_api::kmm::{Module, ModuleImagesConfig, NodeModulesConfig, PreflightValidation};
use kmm_api::lease::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_api::shim::{Shim, names};

/// The longest a change waits before its list is sent: changes within this window go out together.
pub const COALESCE: Duration = Duration::from_millis(100);

/// The label selector of kube-fledged's puller pods, which the coverage matrix shows pulling.
pub const PULLER_SELECTOR: &str = "app=kubefledged";

/// How many events the console keeps: the newest ones.
pub const EVENT_LIMIT: usize = 1000;

/// The API group and version DRA objects are served at, from Kubernetes 1.34.
pub const DRA_API_VERSION: &str = "resource.k8s.io/v1";

/// The API group and version of ManagedClusterModules, served by a hub.
const HUB_API_VERSION: &str = "hub.kmm.sigs.x-k8s.io/v1beta1";

/// The longest the console waits between two tries of asking a cluster that does not answer whether it serves a
/// group (DRA, a hub's ManagedClusterModules).
const DISCOVERY_BACKOFF_LIMIT: Duration = Duration::from_secs(30);

/// Start every watch; they stop when `cancel` fires. `namespace` limits the namespaced kinds; `server` is the
/// `host:port` the client talks to (None in-process), named in the failures the header shows.
pub fn start(
    client: &Client,
    server: Option<&str>,
    namespace: Option<&str>,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
    let (pod_namespaces, pod_namespaces_changes) = watch::channel(PodNamespaces::default());
    let sink = &Sink::new(server, sender, cancel, pod_namespaces);
    let scoped = |client: &Client| -> (Api<Module>, Api<ModuleImagesConfig>, Api<Pod>, Api<Event>) {
        match namespace {
            Some(ns) => (
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
            ),
            None => (
                Api::all(client.clone()),
                Api::all(client.clone()),
                Api::all(client.clone()),
                Api::all(client.clone()),
            ),
        }
    };
    let (modules, mics, pods, events) = scoped(client);
    let claims: Api<ResourceClaim> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let caches: Api<ImageCache> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let all = watcher::Config::default;
    spawn(
        Kind::ModuleImagesConfig,
        vec![(mics, all())],
        KindSnapshot::ModuleImagesConfigs,
        sink,
    );
    spawn(
        Kind::NodeModulesConfig,
        vec![(Api::<NodeModulesConfig>::all(client.clone()), all())],
        KindSnapshot::NodeModulesConfigs,
        sink,
    );
    spawn(
        Kind::Node,
        vec![(Api::<Node>::all(client.clone()), all())],
        KindSnapshot::Nodes,
        sink,
    );
    spawn(
        Kind::Pod,
        [
            labels::IMAGE_OWNER,
            labels::RESOURCE_TYPE,
            labels::WORKER_ACTION,
            names::SHIM_NAME,
        ]
        .into_iter()
        .chain([PULLER_SELECTOR])
        .map(|label| (pods.clone(), all().labels(label)))
        .collect(),
        KindSnapshot::Pods,
        sink,
    );
    let fixed: Vec<_> = event_sources::fixed_selectors()
        .iter()
        .map(|selector| (events.clone(), all().fields(selector)))
        .collect();
    // A console kept to one namespace takes in the Events about pods there; else those of every namespace where the
    // console's objects make pods, as they come and go.
    let (fixed, follow) = match namespace {
        Some(_) => {
            let pods = (events.clone(), all().fields(&event_sources::pod_selector()));
            (fixed.into_iter().chain([pods]).collect(), None)
        }
        None => {
            let client = client.clone();
            let follow = Follow {
                keys: pod_namespaces_changes,
                source: Box::new(move |ns: &str| {
                    let api = Api::namespaced(client.clone(), ns);
                    (api, all().fields(&event_sources::pod_selector()))
                }),
            };
            (fixed, Some(follow))
        }
    };
    spawn_kept(
        Kind::Event,
        Sources { fixed, follow },
        Some(Newest {
            limit: EVENT_LIMIT,
            time: event_time,
        }),
        newest_events,
        sink,
    );
    spawn_counted_kinds(client, modules, caches, sink);
    spawn(
        Kind::PreflightValidation,
        vec![(Api::<PreflightValidation>::all(client.clone()), all())],
        KindSnapshot::PreflightValidations,
        sink,
    );
    watch_dra(client, claims, sink);
    watch_engine_lease(client, sink);
    watch_os_image_kernels(client, sink);
    watch_upstream_operators(client, sink);
}

/// The few watches the fleet view keeps on each cluster: the custom resources the header counts (Modules, Shims,
/// ImageCaches, ModuleDay0s with their pools and kmm-managed MachineConfigs), a hub's ManagedClusterModules and the
/// engine Lease. Never pods, events or NodeModulesConfigs, whose numbers grow with the nodes, so following twenty
/// clusters stays cheap.
pub fn start_counted(
    client: &Client,
    server: Option<&str>,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
    let sink = &Sink::new(server, sender, cancel, watch::Sender::default());
    spawn_counted_kinds(
        client,
        Api::all(client.clone()),
        Api::all(client.clone()),
        sink,
    );
    watch_hub_modules(client, sink);
    watch_engine_lease(client, sink);
}

/// Watch the ManagedClusterModules of a cluster whose discovery says it is a hub. Any other cluster is never asked
/// for them: a user without a wildcard role would be refused (403 comes before 404), and the fleet would show a
/// failing watch for a kind the cluster does not have.
fn watch_hub_modules(client: &Client, sink: &Sink) {
    let client = client.clone();
    let sink = sink.clone();
    tokio::spawn(async move {
        let asked = answered(&sink, || {
            serves(&client, HUB_API_VERSION, &["managedclustermodules"])
        });
        if asked.await != Some(true) {
            return;
        }
        spawn(
            Kind::ManagedClusterModule,
            vec![(
                Api::<ManagedClusterModule>::all(client.clone()),
                watcher::Config::default(),
            )],
            KindSnapshot::ManagedClusterModules,
            &sink,
        );
    });
}

/// Ask `question` of the cluster until it answers, with backoff; `None` once `sink` is cancelled.
async fn answered<F, Fut>(sink: &Sink, mut question: F) -> Option<bool>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, kube::Error>>,
{
    let mut delay = Duration::from_millis(500);
    loop {
        tokio::select! {
            () = sink.cancel.cancelled() => return None,
            answer = question() => match answer {
                Ok(served) => return Some(served),
                Err(error) => {
                    tracing::debug!(%error, "cannot tell whether the cluster serves a group; asking again");
                    tokio::select! {
                        () = sink.cancel.cancelled() => return None,
                        () = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(DISCOVERY_BACKOFF_LIMIT);
                }
            },
        }
    }
}

/// Where the watches report, when they stop, and the server their failures name.
#[derive(Clone)]
struct Sink {
    sender: UnboundedSender<Action>,
    cancel: CancellationToken,
    /// `host:port` of the API server, when it is reached over the network.
    server: Option<Arc<str>>,
    /// Where the lists of pod-making kinds say which namespaces they make pods in, for the Events watch.
    pod_namespaces: watch::Sender<PodNamespaces>,
}

impl Sink {
    fn new(
        server: Option<&str>,
        sender: &UnboundedSender<Action>,
        cancel: &CancellationToken,
        pod_namespaces: watch::Sender<PodNamespaces>,
    ) -> Sink {
        Sink {
            sender: sender.clone(),
            cancel: cancel.clone(),
            server: server.map(Arc::from),
            pod_namespaces,
        }
    }

    /// Record the namespaces the objects of a pod-making `kind` in `lists` make pods in.
    fn publish_pod_namespaces<K: Kept + Resource>(&self, kind: Kind, lists: &[Option<Objects<K>>]) {
        if !event_sources::POD_MAKERS.contains(&kind) {
            return;
        }
        let namespaces: BTreeSet<String> = lists
            .iter()
            .flatten()
            .flat_map(Objects::shown)
            .filter_map(|object| event_sources::pods_namespace(kind, object.meta()))
            .collect();
        self.pod_namespaces
            .send_if_modified(|known| known.set(kind, namespaces));
    }
}

/// The kinds the header counts and the fleet view follows on every cluster: Modules and ImageCaches (from `modules`
/// and `caches`, which the console scopes to its namespace), Shims, ModuleDay0s with their pools, and the
/// MachineConfigs handed to kmm-tui.
fn spawn_counted_kinds(
    client: &Client,
    modules: Api<Module>,
    caches: Api<ImageCache>,
    sink: &Sink,
) {
    let all = watcher::Config::default;
    spawn(
        Kind::Module,
        vec![(modules, all())],
        KindSnapshot::Modules,
        sink,
    );
    spawn(
        Kind::Shim,
        vec![(Api::<Shim>::all(client.clone()), all())],
        KindSnapshot::Shims,
        sink,
    );
    spawn(
        Kind::ImageCache,
        vec![(caches, all())],
        KindSnapshot::ImageCaches,
        sink,
    );
    spawn(
        Kind::ModuleDay0,
        vec![(Api::<ModuleDay0>::all(client.clone()), all())],
        KindSnapshot::ModuleDay0s,
        sink,
    );
    spawn(
        Kind::MachineConfigPool,
        vec![(Api::<MachineConfigPool>::all(client.clone()), all())],
        KindSnapshot::MachineConfigPools,
        sink,
    );
    // Only those handed to kmm-tui: a cluster's other MachineConfigs are many and large.
    spawn(
        Kind::MachineConfig,
        vec![(
            Api::<MachineConfig>::all(client.clone()),
            all().labels(&format!("{KMM_MANAGED_LABEL}=true")),
        )],
        KindSnapshot::MachineConfigs,
        sink,
    );
}

/// Ask the cluster whether it serves DRA and, if it does, watch its ResourceSlices (every one: a slice per node and
/// driver, far fewer than pods) and the ResourceClaims of `claims`. A cluster that does not answer is asked again
/// with backoff; one that answers no is told to the UI task once and never watched, so it costs nothing and shows
/// no failing watch.
fn watch_dra(client: &Client, claims: Api<ResourceClaim>, sink: &Sink) {
    let client = client.clone();
    let sink = sink.clone();
    tokio::spawn(async move {
        let Some(served) = answered(&sink, || dra_served(&client)).await else {
            return;
        };
        let serving = if served {
            DraServing::Served
        } else {
            DraServing::NotServed
        };
        if sink.sender.send(Action::Dra(serving)).is_err() || !served {
            return;
        }
        let all = watcher::Config::default;
        spawn(
            Kind::ResourceSlice,
            vec![(Api::<ResourceSlice>::all(client.clone()), all())],
            KindSnapshot::ResourceSlices,
            &sink,
        );
        spawn(
            Kind::ResourceClaim,
            vec![(claims, all())],
            KindSnapshot::ResourceClaims,
            &sink,
        );
    });
}

/// Whether the cluster serves ResourceSlices and ResourceClaims at [`DRA_API_VERSION`], from its discovery: a 404
/// says no; a failure to ask is an error, to ask again.
pub async fn dra_served(client: &Client) -> Result<bool, kube::Error> {
    serves(
        client,
        DRA_API_VERSION,
        &["resourceslices", "resourceclaims"],
    )
    .await
}

/// Whether the cluster serves every one of `plurals` at `api_version`, from its discovery: a 404 says no; a failure
/// to ask is an error, to ask again.
async fn serves(client: &Client, api_version: &str, plurals: &[&str]) -> Result<bool, kube::Error> {
    match client.list_api_group_resources(api_version).await {
        Ok(list) => Ok(plurals
            .iter()
            .all(|plural| list.resources.iter().any(|r| r.name == *plural))),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(error) => Err(error),
    }
}

/// Follow the Leases and Deployments that show an upstream operator acting on a family, the same way the engine
/// does, so the header and `:engine` say who acts.
fn watch_upstream_operators(client: &Client, sink: &Sink) {
    let mut upstream = kmm_engine::runtime::operators::follow(client.clone(), sink.cancel.clone());
    let sender = sink.sender.clone();
    tokio::spawn(async move {
        while upstream.changed().await.is_ok() {
            let found = upstream.borrow_and_update().clone();
            if let Some(found) = found {
                let event = EngineEvent::Upstream(found);
                if sender.send(Action::Engine(event)).is_err() {
                    return;
                }
            }
        }
    });
}

/// Follow the Lease that elects the acting engine, so the header says whether this console's engine, a cluster
/// controller, or nobody acts. A cluster without the Lease (or without leave to read it) shows no acting engine.
fn watch_engine_lease(client: &Client, sink: &Sink) {
    let api: Api<Lease> = Api::namespaced(client.clone(), DEFAULT_LEASE_NAMESPACE);
    follow_one(api, DEFAULT_LEASE_NAME, sink, Action::EngineLease);
}

/// Follow the engine's record of the kernels of the cluster's OS images, which the Preflight pane offers. Without
/// the record (not OpenShift, or no leave to read it) the pane offers the other kernels.
fn watch_os_image_kernels(client: &Client, sink: &Sink) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), os_image_kernels::NAMESPACE);
    let name = os_image_kernels::CONFIG_MAP;
    follow_one(api, name, sink, Action::OsImageKernels);
}

/// Send `action` of the object `name` of `api` (or of its absence) on every change, until `cancel`; watch errors
/// (the object's kind missing, reading it forbidden) leave the last word standing.
fn follow_one<K>(api: Api<K>, name: &str, sink: &Sink, action: fn(Option<Arc<K>>) -> Action)
where
    K: Watched,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let sender = sink.sender.clone();
    let cancel = sink.cancel.clone();
    tokio::spawn(async move {
        let (store, writer) = reflector::store::<K>();
        let mut stream = reflector(writer, watcher(api, config).default_backoff()).boxed();
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                event = stream.next() => match event {
                    None => return,
                    Some(Ok(_)) => {
                        if sender.send(action(store.state().into_iter().next())).is_err() {
                            return;
                        }
                    }
                    Some(Err(_)) => {}
                },
            }
        }
    });
}

/// The newest [`EVENT_LIMIT`] events.
fn newest_events(mut events: Vec<Arc<Event>>) -> KindSnapshot {
    if events.len() > EVENT_LIMIT {
        events.sort_by_key(|event| std::cmp::Reverse(event_time(event)));
        events.truncate(EVENT_LIMIT);
    }
    KindSnapshot::Events(events)
}

/// What the console can watch: a kind of the API with a static type, shared between the watch task and the UI task.
trait Watched:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static
{
}

impl<K> Watched for K where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// Watch `sources` (their union is the kind's list) until `cancel`, sending the list on every change: the first
/// list as its pages arrive (the first page at once, then at most every [`COALESCE`]) and once it is whole at once,
/// later changes gathered over [`COALESCE`].
fn spawn<K>(
    kind: Kind,
    sources: Vec<Source<K>>,
    snapshot: fn(Vec<Arc<K>>) -> KindSnapshot,
    sink: &Sink,
) where
    K: Watched + Kept,
{
    let sources = Sources {
        fixed: sources,
        follow: None,
    };
    spawn_kept(kind, sources, None, snapshot, sink);
}

/// Where a kind's list comes from: the union of watches, some fixed and some that follow a set of keys.
struct Sources<K> {
    /// Watches held for as long as the console watches the cluster.
    fixed: Vec<Source<K>>,
    /// Watches started and stopped as a set of keys changes, if any.
    follow: Option<Follow<K>>,
}

/// One watch per key of a set that changes: the Events about pods of each namespace where the console's objects
/// make pods.
struct Follow<K> {
    /// The set, as the lists of pod-making kinds publish it.
    keys: watch::Receiver<PodNamespaces>,
    /// Where one key's watch looks, and with which selectors.
    source: SourceOf<K>,
}

/// How the watch of one key of a followed set is made.
type SourceOf<K> = Box<dyn Fn(&str) -> Source<K> + Send>;

/// One watch of a kind: where, and with which selectors.
type Source<K> = (Api<K>, watcher::Config);

/// The changes one watch brings, tagged with its slot.
type Changes<K> =
    futures::stream::BoxStream<'static, (usize, Result<watcher::Event<K>, watcher::Error>)>;

/// The watches of a kind's list that run now: each one's objects by slot (None once stopped), and how to stop
/// those that follow a key.
struct Running<K> {
    lists: Vec<Option<Objects<K>>>,
    streams: futures::stream::SelectAll<Changes<K>>,
    followed: BTreeMap<String, (usize, CancellationToken)>,
    newest: Option<Newest<K>>,
}

impl<K: Watched + Kept> Running<K> {
    /// Start watching `api` with `config`, until `stop` fires if given.
    fn open(
        &mut self,
        api: Api<K>,
        config: watcher::Config,
        stop: Option<CancellationToken>,
    ) -> usize {
        let slot = self.lists.len();
        // A watch that lists in one go (no page size) has one page, ended by its last object.
        self.lists.push(Some(Objects::new(
            config.page_size.unwrap_or(u32::MAX),
            self.newest,
        )));
        let events = watcher(lean::lean(api), config)
            .default_backoff()
            .map(move |event| (slot, event.map(lean::unwrapped)));
        match stop {
            Some(stop) => self
                .streams
                .push(events.take_until(stop.cancelled_owned()).boxed()),
            None => self.streams.push(events.boxed()),
        }
        slot
    }

    /// Hold one watch per key of `follow`'s set now: start those of new keys and stop those of keys gone. Returns
    /// whether a stopped watch took objects off the list.
    fn follow(&mut self, follow: &mut Follow<K>) -> bool {
        let wanted = follow.keys.borrow_and_update().all();
        let gone: Vec<String> = self
            .followed
            .keys()
            .filter(|key| !wanted.contains(*key))
            .cloned()
            .collect();
        let mut removed = false;
        for key in gone {
            if let Some((slot, stop)) = self.followed.remove(&key) {
                stop.cancel();
                removed |= self.lists[slot]
                    .take()
                    .is_some_and(|list| list.shown().next().is_some());
            }
        }
        for key in wanted {
            if !self.followed.contains_key(&key) {
                let (api, config) = (follow.source)(&key);
                let stop = CancellationToken::new();
                let slot = self.open(api, config, Some(stop.clone()));
                self.followed.insert(key, (slot, stop));
            }
        }
        removed
    }
}

/// [`spawn`] from `sources`, keeping of each watch only the newest objects `newest` allows (all without it).
fn spawn_kept<K>(
    kind: Kind,
    sources: Sources<K>,
    newest: Option<Newest<K>>,
    snapshot: fn(Vec<Arc<K>>) -> KindSnapshot,
    sink: &Sink,
) where
    K: Watched + Kept,
{
    let sink = sink.clone();
    tokio::spawn(async move {
        let Sources { fixed, mut follow } = sources;
        let mut running = Running {
            lists: Vec::new(),
            streams: futures::stream::SelectAll::new(),
            followed: BTreeMap::new(),
            newest,
        };
        for (api, config) in fixed {
            running.open(api, config, None);
        }
        if let Some(follow) = &mut follow {
            running.follow(follow);
        }
        let sender = &sink.sender;
        let _ = sender.send(Action::Feed(kind, FeedState::Loading));
        let mut sent_any = false;
        let mut listed = false;
        let mut pending = false;
        let mut failing = false;
        let mut deadline = tokio::time::Instant::now();
        loop {
            tokio::select! {
                // Changes already there are taken in before a gathered list goes out.
                biased;
                () = sink.cancel.cancelled() => return,
                changed = follow_changes(follow.as_mut()), if follow.is_some() => {
                    match (changed, follow.as_mut()) {
                        (true, Some(follow)) => {
                            if running.follow(follow) && !pending {
                                deadline = tokio::time::Instant::now() + COALESCE;
                                pending = true;
                            }
                        }
                        // Nobody publishes the set any more: the watches held stay.
                        _ => follow = None,
                    }
                }
                next = running.streams.next(), if !running.streams.is_empty() => match next {
                    // Only watches that follow a key end, when it leaves.
                    None => {}
                    Some((slot, Ok(event))) => {
                        if failing {
                            failing = false;
                            let _ = sender.send(Action::Feed(kind, FeedState::Live));
                        }
                        let Some(list) = running.lists[slot].as_mut() else {
                            continue;
                        };
                        // A relist's pages change nothing shown until it is whole.
                        let shown_changes = match &event {
                            watcher::Event::Init => false,
                            watcher::Event::InitApply(_) => !list.listed,
                            _ => true,
                        };
                        list.apply(event);
                        let page_ended = list.page_ended();
                        let whole = running.lists.iter().flatten().all(|list| list.listed);
                        // The first page, and the first whole list, go out at once; the rest is gathered.
                        let first_page = shown_changes && !sent_any && page_ended;
                        let first_whole = whole && !listed;
                        listed |= whole;
                        if first_page || first_whole {
                            pending = false;
                            sent_any = true;
                            if !send(&sink, kind, &running.lists, listed, snapshot) {
                                return;
                            }
                        } else if shown_changes && !pending {
                            deadline = tokio::time::Instant::now() + COALESCE;
                            pending = true;
                        }
                    }
                    // A kind the cluster does not serve (its CRD is not installed) has no objects; the watch
                    // keeps retrying and finds them once it is.
                    Some((_, Err(error))) if not_served(&error) => {
                        let nothing = Action::Data(snapshot(Vec::new()));
                        if sender.send(nothing).is_err() {
                            return;
                        }
                    }
                    Some((_, Err(error))) => {
                        failing = true;
                        let why = Why::of_watch(&error, sink.server.as_deref());
                        let _ = sender.send(Action::Feed(kind, FeedState::Failing(why)));
                    }
                },
                () = tokio::time::sleep_until(deadline), if pending => {
                    pending = false;
                    sent_any = true;
                    if !send(&sink, kind, &running.lists, listed, snapshot) {
                        return;
                    }
                }
            }
        }
    });
}

/// Wait until the set `follow` follows changes: false once nobody publishes it.
async fn follow_changes<K>(follow: Option<&mut Follow<K>>) -> bool {
    match follow {
        Some(follow) => follow.keys.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// Send the union of `lists` to the UI task: the kind's list once every source has listed (`listed`), what has
/// arrived of it before; a pod-making kind also says where its pods are. Returns whether the UI task still listens.
fn send<K: Kept + Resource>(
    sink: &Sink,
    kind: Kind,
    lists: &[Option<Objects<K>>],
    listed: bool,
    snapshot: fn(Vec<Arc<K>>) -> KindSnapshot,
) -> bool {
    sink.publish_pod_namespaces(kind, lists);
    let list = lists
        .iter()
        .flatten()
        .flat_map(Objects::shown)
        .cloned()
        .collect();
    let action = if listed {
        Action::Data(snapshot(list))
    } else {
        Action::Listing(snapshot(list))
    };
    sink.sender.send(action).is_ok()
}

/// What one watch has seen, by namespace and name. A relist gathers its pages apart and replaces the list once it
/// is whole, so nothing vanishes meanwhile; an object whose resourceVersion the relist finds unchanged keeps its
/// shared pointer, so the panes know not to remake its rows.
struct Objects<K> {
    /// The list as of the last whole listing and the changes since.
    current: Keyed<K>,
    /// The pages of a listing in progress.
    listing: Option<Keyed<K>>,
    /// Whether a listing has ever been whole.
    listed: bool,
    /// How many objects the listing in progress has brought so far.
    received: u32,
    /// How many objects a page of a listing holds.
    page: u32,
    /// How many objects to keep, if not all.
    newest: Option<Newest<K>>,
}

/// Objects by namespace and name.
type Keyed<K> = HashMap<(Option<String>, String), Arc<K>>;

/// Keep only the `limit` newest objects by `time`: the console shows the newest events, and a cluster in a rollout
/// holds tens of thousands. An object let go comes back when a change makes it newer.
struct Newest<K> {
    /// How many to keep; up to twice as many are held between trims.
    limit: usize,
    /// How new an object is.
    time: fn(&K) -> Option<jiff::Timestamp>,
}

impl<K> Clone for Newest<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Newest<K> {}

impl<K> Newest<K> {
    /// Let go of all but the newest `limit`, once twice as many are held.
    fn trim(&self, objects: &mut Keyed<K>) {
        if objects.len() <= self.limit * 2 {
            return;
        }
        let mut times: Vec<Option<jiff::Timestamp>> =
            objects.values().map(|object| (self.time)(object)).collect();
        times.sort_unstable_by(|a, b| b.cmp(a));
        let oldest_kept = times[self.limit - 1];
        objects.retain(|_, object| (self.time)(object) >= oldest_kept);
    }
}

impl<K: Kept> Objects<K> {
    /// Nothing seen yet of a watch listing `page` objects a page.
    fn new(page: u32, newest: Option<Newest<K>>) -> Self {
        Objects {
            current: HashMap::new(),
            listing: None,
            listed: false,
            received: 0,
            page: page.max(1),
            newest,
        }
    }

    /// Whether the last object taken in ended a page of the listing in progress (the next one is being asked for).
    fn page_ended(&self) -> bool {
        self.listing.is_some() && self.received > 0 && self.received.is_multiple_of(self.page)
    }

    /// Take in one watch event, keeping of each object only what the console shows ([`Kept`]).
    fn apply(&mut self, event: watcher::Event<K>) {
        match event {
            watcher::Event::Init => {
                self.listing = Some(HashMap::new());
                self.received = 0;
            }
            watcher::Event::InitApply(object) => {
                self.received += 1;
                let (key, object) = keyed(object);
                let listing = self.listing.get_or_insert_default();
                listing.insert(key, object);
                if let Some(newest) = &self.newest {
                    newest.trim(listing);
                }
            }
            watcher::Event::InitDone => {
                let mut listed = self.listing.take().unwrap_or_default();
                for (key, object) in &mut listed {
                    if let Some(before) = self.current.get(key)
                        && before.meta().resource_version == object.meta().resource_version
                    {
                        *object = before.clone();
                    }
                }
                self.current = listed;
                self.listed = true;
            }
            watcher::Event::Apply(object) => {
                let (key, object) = keyed(object);
                self.current.insert(key, object);
                if let Some(newest) = &self.newest {
                    newest.trim(&mut self.current);
                }
            }
            watcher::Event::Delete(object) => {
                let meta = object.meta();
                self.current.remove(&(
                    meta.namespace.clone(),
                    meta.name.clone().unwrap_or_default(),
                ));
            }
        }
    }

    /// The objects to show: before the first whole listing, the pages that arrived so far.
    fn shown(&self) -> impl Iterator<Item = &Arc<K>> {
        match (&self.listing, self.listed) {
            (Some(pages), false) => pages.values(),
            _ => self.current.values(),
        }
    }
}

/// An object's key in [`Objects`], and the object as it is kept: only what the console shows of it.
fn keyed<K: Kept>(mut object: K) -> ((Option<String>, String), Arc<K>) {
    object.keep_shown();
    let meta = object.meta();
    let key = (
        meta.namespace.clone(),
        meta.name.clone().unwrap_or_default(),
    );
    (key, Arc::new(object))
}

/// Whether the error says the cluster does not serve the kind at all (404 on the list).
fn not_served(error: &watcher::Error) -> bool {
    matches!(
        error,
        watcher::Error::InitialListFailed(kube::Error::Api(status)) if status.code == 404
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn node(name: &str, version: &str) -> Node {
        let mut node = Node::default();
        node.metadata.name = Some(name.to_owned());
        node.metadata.resource_version = Some(version.to_owned());
        node
    }

    fn names<K: Kept>(objects: &Objects<K>) -> Vec<String> {
        let mut names: Vec<String> = objects
            .shown()
            .map(|object| object.meta().name.clone().unwrap_or_default())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_relist_shows_the_old_list_until_it_is_whole_and_keeps_unchanged_objects() {
        let mut objects = Objects::new(500, None);
        objects.apply(watcher::Event::Init);
        objects.apply(watcher::Event::InitApply(node("a", "1")));
        assert_eq!(names(&objects), ["a"], "a first list shows its pages");
        objects.apply(watcher::Event::InitApply(node("b", "1")));
        objects.apply(watcher::Event::InitDone);
        let kept = objects.current[&(None, "a".to_owned())].clone();

        objects.apply(watcher::Event::Init);
        objects.apply(watcher::Event::InitApply(node("a", "1")));
        assert_eq!(
            names(&objects),
            ["a", "b"],
            "a relist replaces nothing early"
        );
        objects.apply(watcher::Event::InitApply(node("c", "2")));
        objects.apply(watcher::Event::InitDone);
        assert_eq!(names(&objects), ["a", "c"]);
        assert!(
            Arc::ptr_eq(&kept, &objects.current[&(None, "a".to_owned())]),
            "an object the relist finds unchanged is the same shared object"
        );
    }

    fn event(name: &str, second: i64) -> Event {
        let mut event = Event::default();
        event.metadata.name = Some(name.to_owned());
        event.metadata.namespace = Some("default".to_owned());
        event.event_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            jiff::Timestamp::from_second(second).expect("a time"),
        ));
        event.metadata.creation_timestamp =
            Some(Time(jiff::Timestamp::from_second(second).expect("a time")));
        event
    }

    #[test]
    fn of_many_events_the_newest_are_kept_and_a_newer_change_brings_one_back() {
        let newest = Newest {
            limit: 10,
            time: event_time,
        };
        let mut objects = Objects::new(500, Some(newest));
        objects.apply(watcher::Event::Init);
        for second in 0..100 {
            objects.apply(watcher::Event::InitApply(event(
                &format!("e{second:03}"),
                second,
            )));
        }
        objects.apply(watcher::Event::InitDone);
        assert!(objects.current.len() <= 20, "{}", objects.current.len());
        let shown = names(&objects);
        for second in 90..100 {
            assert!(shown.contains(&format!("e{second:03}")), "{shown:?}");
        }
        objects.apply(watcher::Event::Apply(event("e000", 1000)));
        assert!(names(&objects).contains(&"e000".to_owned()));
        for second in 1000..1100 {
            objects.apply(watcher::Event::Apply(event(
                &format!("f{second}"),
                second + 1,
            )));
        }
        assert!(objects.current.len() <= 20);
        assert!(!names(&objects).contains(&"e000".to_owned()));
    }
}
