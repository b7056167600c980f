//! One task per cluster of the fleet, each with its own client, timeouts and backoff, so a slow or unreachable
//! cluster never holds up the others. A task asks `/version` first; while the cluster answers it runs the few
//! watches the fleet needs ([`feed::start_counted`], a count of ready nodes, a look for upstream operators every
//! [`UPSTREAM_EVERY`]) and asks `/version` again every [`PROBE_EVERY`] and whenever a watch fails. When the cluster
//! stops answering, the watches stop and it is asked again after 1 s, 2 s, 4 s … up to [`RETRY_MAX`]; when it
//! answers again, the watches start over. Everything found goes to the UI task as [`Action::Fleet`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio_util::sync::CancellationToken;

use crate::agent::Program;
use crate::tui::action::{Action, EngineEvent};
use crate::tui::data::{FeedState, Kind};
use crate::tui::feed;
use crate::tui::fleet::reach::{Reach, Why};
use crate::tui::fleet::state::FleetChange;
use crate::tui::lean;
use crate::tui::worded;
use kmm_engine::runtime::operators::{self, Upstream};
use kmm_engine::{Family, runtime::nodes};

/// How long a new connection may take before the cluster counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long `/version` may take to answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a reachable cluster is asked `/version` again, so one that hangs without closing its connections is
/// noticed.
pub const PROBE_EVERY: Duration = Duration::from_secs(15);

/// The first wait before an unreachable cluster is asked again; it doubles up to [`RETRY_MAX`].
pub const RETRY_FIRST: Duration = Duration::from_secs(1);

/// The longest wait between two attempts on an unreachable cluster.
pub const RETRY_MAX: Duration = Duration::from_secs(60);

/// How often a reachable cluster is looked at for upstream operators: a list of their Leases by name and of the
/// Deployments, instead of a watch of every Lease (node heartbeats renew thousands).
pub const UPSTREAM_EVERY: Duration = Duration::from_secs(120);

/// Node changes within this window are counted together.
const NODES_COALESCE: Duration = Duration::from_secs(1);

/// One cluster of the fleet.
#[derive(Clone)]
pub struct Member {
    /// The context name the row shows.
    pub context: String,
    /// How to reach it.
    pub source: Source,
}

/// How a member is reached.
#[derive(Clone)]
pub enum Source {
    /// A context of the kubeconfig at this path (`$KUBECONFIG` or `~/.kube/config` when None), read again on every
    /// attempt so that renewed credentials and a corrected entry are picked up without a restart.
    Kubeconfig(Option<PathBuf>),
    /// A client already made (the embedded cluster).
    Client(Client),
}

/// How often members are asked and retried.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// See [`PROBE_TIMEOUT`].
    pub probe_timeout: Duration,
    /// See [`PROBE_EVERY`].
    pub probe_every: Duration,
    /// See [`RETRY_FIRST`].
    pub retry_first: Duration,
    /// See [`RETRY_MAX`].
    pub retry_max: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            probe_timeout: PROBE_TIMEOUT,
            probe_every: PROBE_EVERY,
            retry_first: RETRY_FIRST,
            retry_max: RETRY_MAX,
        }
    }
}

/// Start following every member until `cancel`.
pub fn start(members: Vec<Member>, sender: &UnboundedSender<Action>, cancel: &CancellationToken) {
    start_with(members, Timing::default(), sender, cancel);
}

/// [`start`] with other timing: tests follow clusters that stop and come back within seconds.
pub fn start_with(
    members: Vec<Member>,
    timing: Timing,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
    for member in members {
        tokio::spawn(follow(member, timing, sender.clone(), cancel.clone()));
    }
}

/// Follow one member until `cancel` or until the UI task is gone.
async fn follow(
    member: Member,
    timing: Timing,
    sender: UnboundedSender<Action>,
    cancel: CancellationToken,
) {
    let context = member.context.clone();
    let report = |change: FleetChange| sender.send(Action::Fleet(context.clone(), change)).is_ok();
    let mut retry = timing.retry_first;
    loop {
        let answered = match connect(&member).await {
            Ok(connected) => probe(&connected, timing.probe_timeout)
                .await
                .map(|version| (connected, version)),
            Err(why) => Err(why),
        };
        match answered {
            Ok((connected, version)) => {
                if !report(FleetChange::Reach(Reach::Reachable { version })) {
                    return;
                }
                retry = timing.retry_first;
                let watched = watch_while_reachable(&connected, &context, timing, &sender, &cancel);
                let Some(why) = watched.await else {
                    return;
                };
                if !report(FleetChange::Reach(Reach::Unreachable(why))) {
                    return;
                }
            }
            Err(why) => {
                if !report(FleetChange::Reach(Reach::Unreachable(why))) {
                    return;
                }
            }
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(retry) => {}
        }
        retry = (retry * 2).min(timing.retry_max);
    }
}

/// A member's client and the `host:port` it talks to (None in-process), which failures name.
struct Connected {
    client: Client,
    server: Option<String>,
}

/// A client for the member, with [`CONNECT_TIMEOUT`].
async fn connect(member: &Member) -> Result<Connected, Why> {
    match &member.source {
        Source::Client(client) => Ok(Connected {
            client: client.clone(),
            server: None,
        }),
        Source::Kubeconfig(path) => {
            let kubeconfig = match path {
                Some(path) => Kubeconfig::read_from(path),
                None => Kubeconfig::read(),
            }
            .map_err(|error| Why::kubeconfig(&anyhow::Error::new(error)))?;
            let options = KubeConfigOptions {
                context: Some(member.context.clone()),
                ..KubeConfigOptions::default()
            };
            let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|error| Why::kubeconfig(&anyhow::Error::new(error)))?;
            config.connect_timeout = Some(CONNECT_TIMEOUT);
            Program::Console.name_in(&mut config);
            let server = worded::server_of(&config);
            let client =
                Client::try_from(config).map_err(|error| Why::of(&error, server.as_deref()))?;
            Ok(Connected { client, server })
        }
    }
}

/// The cluster's Kubernetes version, or why it did not say within `limit`.
async fn probe(connected: &Connected, limit: Duration) -> Result<String, Why> {
    let server = connected.server.as_deref();
    match tokio::time::timeout(limit, connected.client.apiserver_version()).await {
        Err(_) => Err(Why::timeout(limit, server)),
        Ok(Err(error)) => Err(Why::of(&error, server)),
        Ok(Ok(info)) => Ok(info.git_version),
    }
}

/// Run the member's watches and pass on what they find until the cluster stops answering (then why) or until
/// `cancel` or the UI task is gone (then `None`).
async fn watch_while_reachable(
    connected: &Connected,
    context: &str,
    timing: Timing,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) -> Option<Why> {
    let watches = cancel.child_token();
    let _stop_watches = watches.clone().drop_guard();
    let (inner, mut found) = mpsc::unbounded_channel();
    let client = &connected.client;
    feed::start_counted(client, connected.server.as_deref(), &inner, &watches);
    tokio::spawn(count_nodes(
        client.clone(),
        connected.server.clone(),
        context.to_owned(),
        sender.clone(),
        watches.clone(),
    ));
    tokio::spawn(look_for_upstream(
        client.clone(),
        context.to_owned(),
        sender.clone(),
        watches.clone(),
    ));
    let every = timing.probe_every;
    let mut probes = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    probes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let action = tokio::select! {
            () = cancel.cancelled() => return None,
            _ = probes.tick() => {
                if let Err(why) = probe(connected, timing.probe_timeout).await {
                    return Some(why);
                }
                continue;
            }
            action = found.recv() => action?,
        };
        let failing = matches!(action, Action::Feed(_, FeedState::Failing(_)));
        if let Some(change) = fleet_change(action)
            && sender
                .send(Action::Fleet(context.to_owned(), change))
                .is_err()
        {
            return None;
        }
        // A failing watch is either this cluster going away or a kind it refuses; `/version` tells which.
        if failing && let Err(why) = probe(connected, timing.probe_timeout).await {
            return Some(why);
        }
    }
}

/// The fleet's reading of what a watch of [`feed`] sent; `None` for what the fleet does not show.
fn fleet_change(action: Action) -> Option<FleetChange> {
    match action {
        Action::Data(snapshot) => Some(FleetChange::Data(snapshot)),
        Action::Feed(kind, state) => Some(FleetChange::Feed(kind, state)),
        Action::EngineLease(lease) => Some(FleetChange::EngineLease(lease)),
        Action::Engine(EngineEvent::Upstream(found)) => Some(FleetChange::Upstream(found)),
        _ => None,
    }
}

/// Count the nodes and the ready ones, keeping a name and a flag per node rather than the objects. A failing watch
/// is reported like the other kinds' (a user who may not list nodes sees why the count never comes).
async fn count_nodes(
    client: Client,
    server: Option<String>,
    context: String,
    sender: UnboundedSender<Action>,
    stop: CancellationToken,
) {
    let nodes = lean::lean(Api::<Node>::all(client));
    let mut stream = watcher(nodes, watcher::Config::default())
        .default_backoff()
        .map(|event| event.map(lean::unwrapped))
        .boxed();
    let mut ready: HashMap<String, bool> = HashMap::new();
    let mut listing: Option<HashMap<String, bool>> = None;
    let mut pending = false;
    let mut failing = false;
    let mut deadline = tokio::time::Instant::now();
    let report = |change: FleetChange| sender.send(Action::Fleet(context.clone(), change)).is_ok();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep_until(deadline), if pending => {
                pending = false;
                let change = FleetChange::Nodes {
                    ready: ready.values().filter(|ready| **ready).count(),
                    total: ready.len(),
                };
                if !report(change) {
                    return;
                }
            }
            event = stream.next() => {
                if failing && matches!(event, Some(Ok(_))) {
                    failing = false;
                    if !report(FleetChange::Feed(Kind::Node, FeedState::Live)) {
                        return;
                    }
                }
                let changed = match event {
                    None => return,
                    // The watch retries with backoff; whether the cluster answers is the probe's to judge.
                    Some(Err(error)) => {
                        failing = true;
                        let state = FeedState::Failing(Why::of_watch(&error, server.as_deref()));
                        if !report(FleetChange::Feed(Kind::Node, state)) {
                            return;
                        }
                        false
                    }
                    Some(Ok(watcher::Event::Init)) => {
                        listing = Some(HashMap::new());
                        false
                    }
                    Some(Ok(watcher::Event::InitApply(node))) => {
                        listing
                            .get_or_insert_with(HashMap::new)
                            .insert(node.metadata.name.clone().unwrap_or_default(), nodes::is_ready(&node));
                        false
                    }
                    Some(Ok(watcher::Event::InitDone)) => {
                        ready = listing.take().unwrap_or_default();
                        true
                    }
                    Some(Ok(watcher::Event::Apply(node))) => {
                        let name = node.metadata.name.clone().unwrap_or_default();
                        ready.insert(name, nodes::is_ready(&node)) != Some(nodes::is_ready(&node))
                    }
                    Some(Ok(watcher::Event::Delete(node))) => {
                        ready.remove(node.metadata.name.as_deref().unwrap_or_default()).is_some()
                    }
                };
                if changed && !pending {
                    pending = true;
                    deadline = tokio::time::Instant::now() + NODES_COALESCE;
                }
            }
        }
    }
}

/// Every [`UPSTREAM_EVERY`], see which families an upstream operator acts on, and say so when it changed.
async fn look_for_upstream(
    client: Client,
    context: String,
    sender: UnboundedSender<Action>,
    stop: CancellationToken,
) {
    let mut looks = tokio::time::interval(UPSTREAM_EVERY);
    looks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = looks.tick() => {}
        }
        let found = tokio::select! {
            () = stop.cancelled() => return,
            found = upstream_now(&client) => found,
        };
        if last.as_ref() != Some(&found) {
            last = Some(found.clone());
            if sender
                .send(Action::Fleet(context.clone(), FleetChange::Upstream(found)))
                .is_err()
            {
                return;
            }
        }
    }
}

/// The families upstream operators act on now, judged by [`operators::detect`] from their Leases (asked for by
/// name), the Deployments and the ClusterRoleBindings. What cannot be listed counts as absent.
async fn upstream_now(client: &Client) -> BTreeMap<Family, Upstream> {
    let mut leases = Vec::new();
    for name in operators::lease_names() {
        let params = ListParams::default().fields(&format!("metadata.name={name}"));
        if let Ok(list) = Api::<Lease>::all(client.clone()).list(&params).await {
            leases.extend(list.items.into_iter().map(Arc::new));
        }
    }
    let deployments = every::<Deployment>(client).await;
    let bindings = every::<ClusterRoleBinding>(client).await;
    operators::detect(&leases, &deployments, &bindings, jiff::Timestamp::now())
}

/// Every object of a cluster-wide kind; none when they cannot be listed.
async fn every<K>(client: &Client) -> Vec<Arc<K>>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    Api::<K>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map(|list| list.items.into_iter().map(Arc::new).collect())
        .unwrap_or_default()
}
