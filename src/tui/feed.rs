//! Watches that keep the console's lists current: one kube-rs reflector per kind (five for pods: KMM's pull,
//! build/sign and worker pods selected by KMM's labels, Shim installer pods, and image puller pods selected by
//! kube-fledged's labels), each sending its whole list to the UI task when it changed, at most every [`COALESCE`],
//! so a burst of 5,000 node updates costs a handful of redraws. Two single objects are followed apart: the engine
//! Lease and the engine's record of the kernels of the cluster's OS images. Watch errors are reported and retried
//! with backoff; the last lists stay on screen meanwhile.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::action::{Action, EngineEvent};
use super::data::{FeedState, Kind, KindSnapshot, event_time};
use kmm_api::day0::{KMM_MANAGED_LABEL, MachineConfig, MachineConfigPool, ModuleDay0};
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

/// Start every watch; they stop when `cancel` fires. `namespace` limits the namespaced kinds.
pub fn start(
    client: &Client,
    namespace: Option<&str>,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
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
    let caches: Api<ImageCache> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let all = watcher::Config::default;
    spawn(
        Kind::ModuleImagesConfig,
        vec![(mics, all())],
        KindSnapshot::ModuleImagesConfigs,
        sender,
        cancel,
    );
    spawn(
        Kind::NodeModulesConfig,
        vec![(Api::<NodeModulesConfig>::all(client.clone()), all())],
        KindSnapshot::NodeModulesConfigs,
        sender,
        cancel,
    );
    spawn(
        Kind::Node,
        vec![(Api::<Node>::all(client.clone()), all())],
        KindSnapshot::Nodes,
        sender,
        cancel,
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
        sender,
        cancel,
    );
    spawn(
        Kind::Event,
        vec![(events, all())],
        newest_events,
        sender,
        cancel,
    );
    spawn_counted_kinds(client, modules, caches, sender, cancel);
    spawn(
        Kind::PreflightValidation,
        vec![(Api::<PreflightValidation>::all(client.clone()), all())],
        KindSnapshot::PreflightValidations,
        sender,
        cancel,
    );
    watch_engine_lease(client, sender, cancel);
    watch_os_image_kernels(client, sender, cancel);
    watch_upstream_operators(client, sender, cancel);
}

/// The few watches the fleet view keeps on each cluster: the custom resources the header counts (Modules, Shims,
/// ImageCaches, ModuleDay0s with their pools and kmm-managed MachineConfigs) and the engine Lease. Never pods,
/// events or NodeModulesConfigs, whose numbers grow with the nodes, so following twenty clusters stays cheap.
pub fn start_counted(
    client: &Client,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
    spawn_counted_kinds(
        client,
        Api::all(client.clone()),
        Api::all(client.clone()),
        sender,
        cancel,
    );
    watch_engine_lease(client, sender, cancel);
}

/// The kinds the header counts and the fleet view follows on every cluster: Modules and ImageCaches (from `modules`
/// and `caches`, which the console scopes to its namespace), Shims, ModuleDay0s with their pools, and the
/// MachineConfigs handed to kmm-tui.
fn spawn_counted_kinds(
    client: &Client,
    modules: Api<Module>,
    caches: Api<ImageCache>,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
    let all = watcher::Config::default;
    spawn(
        Kind::Module,
        vec![(modules, all())],
        KindSnapshot::Modules,
        sender,
        cancel,
    );
    spawn(
        Kind::Shim,
        vec![(Api::<Shim>::all(client.clone()), all())],
        KindSnapshot::Shims,
        sender,
        cancel,
    );
    spawn(
        Kind::ImageCache,
        vec![(caches, all())],
        KindSnapshot::ImageCaches,
        sender,
        cancel,
    );
    spawn(
        Kind::ModuleDay0,
        vec![(Api::<ModuleDay0>::all(client.clone()), all())],
        KindSnapshot::ModuleDay0s,
        sender,
        cancel,
    );
    spawn(
        Kind::MachineConfigPool,
        vec![(Api::<MachineConfigPool>::all(client.clone()), all())],
        KindSnapshot::MachineConfigPools,
        sender,
        cancel,
    );
    // Only those handed to kmm-tui: a cluster's other MachineConfigs are many and large.
    spawn(
        Kind::MachineConfig,
        vec![(
            Api::<MachineConfig>::all(client.clone()),
            all().labels(&format!("{KMM_MANAGED_LABEL}=true")),
        )],
        KindSnapshot::MachineConfigs,
        sender,
        cancel,
    );
}

/// Follow the Leases and Deployments that show an upstream operator acting on a family, the same way the engine
/// does, so the header and `:engine` say who acts.
fn watch_upstream_operators(
    client: &Client,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
    let mut upstream = kmm_engine::operators::follow(client.clone(), cancel.clone());
    let sender = sender.clone();
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
fn watch_engine_lease(
    client: &Client,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
    let api: Api<Lease> = Api::namespaced(client.clone(), DEFAULT_LEASE_NAMESPACE);
    follow_one(api, DEFAULT_LEASE_NAME, sender, cancel, Action::EngineLease);
}

/// Follow the engine's record of the kernels of the cluster's OS images, which the Preflight pane offers. Without
/// the record (not OpenShift, or no leave to read it) the pane offers the other kernels.
fn watch_os_image_kernels(
    client: &Client,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), os_image_kernels::NAMESPACE);
    let name = os_image_kernels::CONFIG_MAP;
    follow_one(api, name, sender, cancel, Action::OsImageKernels);
}

/// Send `action` of the object `name` of `api` (or of its absence) on every change, until `cancel`; watch errors
/// (the object's kind missing, reading it forbidden) leave the last word standing.
fn follow_one<K>(
    api: Api<K>,
    name: &str,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
    action: fn(Option<Arc<K>>) -> Action,
) where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let sender = sender.clone();
    let cancel = cancel.clone();
    tokio::spawn(async move {
        let (store, writer) = reflector::store::<K>();
        let mut stream =
            reflector::reflector(writer, watcher(api, config).default_backoff()).boxed();
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

/// Run reflectors over `sources` (their union is the kind's list) until `cancel`.
fn spawn<K>(
    kind: Kind,
    sources: Vec<(Api<K>, watcher::Config)>,
    snapshot: fn(Vec<Arc<K>>) -> KindSnapshot,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let sender = sender.clone();
    let cancel = cancel.clone();
    tokio::spawn(async move {
        let mut stores: Vec<Store<K>> = Vec::new();
        let mut streams = futures::stream::SelectAll::new();
        for (api, config) in sources {
            let (store, writer) = reflector::store();
            stores.push(store);
            streams.push(
                reflector::reflector(writer, watcher(api, config).default_backoff())
                    .map(|event| event.map(|_| ()))
                    .boxed(),
            );
        }
        let _ = sender.send(Action::Feed(kind, FeedState::Loading));
        let mut pending = false;
        let mut failing = false;
        let mut deadline = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep_until(deadline), if pending => {
                    pending = false;
                    if stores.iter().all(|store| store.wait_until_ready().now_or_never_ready()) {
                        let list = stores.iter().flat_map(Store::state).collect();
                        if sender.send(Action::Data(snapshot(list))).is_err() {
                            return;
                        }
                    }
                }
                event = streams.next() => match event {
                    None => return,
                    Some(Ok(())) => {
                        if failing {
                            failing = false;
                            let _ = sender.send(Action::Feed(kind, FeedState::Live));
                        }
                        if !pending {
                            pending = true;
                            deadline = tokio::time::Instant::now() + COALESCE;
                        }
                    }
                    // A kind the cluster does not serve (its CRD is not installed) has no objects; the watch
                    // keeps retrying and finds them once it is.
                    Some(Err(error)) if not_served(&error) => {
                        if sender.send(Action::Data(snapshot(Vec::new()))).is_err() {
                            return;
                        }
                    }
                    Some(Err(error)) => {
                        failing = true;
                        let _ = sender.send(Action::Feed(kind, FeedState::Failing(describe(&error))));
                    }
                },
            }
        }
    });
}

/// Whether a reflector store has listed at least once, without waiting.
trait ReadyNow {
    fn now_or_never_ready(self) -> bool;
}

impl<F: std::future::Future> ReadyNow for F {
    fn now_or_never_ready(self) -> bool {
        futures::FutureExt::now_or_never(self).is_some()
    }
}

/// Whether the error says the cluster does not serve the kind at all (404 on the list).
fn not_served(error: &watcher::Error) -> bool {
    matches!(
        error,
        watcher::Error::InitialListFailed(kube::Error::Api(status)) if status.code == 404
    )
}

/// A watch error in one line, as the header shows it.
fn describe(error: &watcher::Error) -> String {
    let root: &(dyn std::error::Error + 'static) = match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => e,
        other => other,
    };
    // The causes say what went wrong ("Connection refused"); the outer layers only say where.
    let mut text = String::new();
    let mut cause = Some(root);
    while let Some(error) = cause {
        let message = error.to_string();
        if !text.contains(&message) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&message);
        }
        cause = error.source();
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
