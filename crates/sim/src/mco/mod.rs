//! The Machine Config Operator of the simulated cluster: MachineConfigPools roll their nodes onto the OS image
//! their MachineConfigs (or the cluster's release) ask for, cordoning, draining and rebooting them one at a
//! time, as OpenShift does — which is what a ModuleDay0 relies on.
//!
//! One task watches nodes, MachineConfigs, MachineConfigPools and the ClusterVersion. On every change that can
//! matter to it (any MachineConfig, pool or ClusterVersion; of a node, only its pool, update annotations,
//! readiness, cordon and running OS image — not the status writes and labels of others) it renders each pool
//! ([`render`]), hands nodes their new configuration within `maxUnavailable` and publishes the pool's status
//! ([`pool`]), keeps the ClusterVersion's history ([`version`]), and runs a node update ([`daemon`]) for every
//! node that has one to do. At start it creates the `master` and `worker` pools when there are none, and
//! `ClusterVersion/version` when it is missing. All progress is kept in the API (node annotations), so a
//! restarted simulation continues a rollout where it stopped.

pub(crate) mod daemon;
pub(crate) mod pool;
pub(crate) mod render;
pub(crate) mod version;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::task::{JoinHandle, JoinSet};

use super::{World, forget_managed_fields};
use kmm_api::day0::{ClusterVersion, MachineConfig, MachineConfigPool};

/// Start the Machine Config Operator; it runs until the world stops.
pub fn spawn(world: Arc<World>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let stop = world.stop.clone();
        tokio::select! {
            () = stop.cancelled() => {}
            () = Operator::default().run(world) => {}
        }
    })
}

/// Timestamps the way API objects carry them (RFC 3339, whole seconds).
fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[derive(Default)]
struct Operator {
    /// Node updates in flight (dropped, and so cancelled, with the operator).
    updates: JoinSet<String>,
    /// Which node each update task works on.
    updating: HashMap<tokio::task::Id, String>,
    /// resourceVersions of the operator's own last writes to nodes (see [`pool::OwnWrites`]).
    own_writes: pool::OwnWrites,
    /// The release and OS image last published in the OS image ConfigMap.
    published_os_image: Option<(String, String)>,
}

/// What a watch event may have changed for the operator: one node, or anything (a MachineConfig, a pool, the
/// ClusterVersion, a node that went, a relist).
enum Changed {
    Node(String),
    Everything,
}

impl Changed {
    fn add_to(self, touched: &mut Vec<String>, due: &mut bool) {
        match self {
            Changed::Node(name) => touched.push(name),
            Changed::Everything => *due = true,
        }
    }
}

/// What the last pass saw of each node: a pass depends on nothing else of a node, so a change of a node that
/// leaves this as it was (its status reporting images, a label of another controller) needs no pass over the
/// thousands of others.
#[derive(Default)]
struct SeenNodes(HashMap<String, (Option<String>, pool::Member)>);

impl SeenNodes {
    /// Look again at the `touched` nodes; returns whether what a pass sees of any of them changed.
    fn update(&mut self, world: &World, stores: &Stores, touched: Vec<String>) -> bool {
        if touched.is_empty() {
            return false;
        }
        let pools = stores.pools.state();
        let mut changed = false;
        for name in touched {
            let Some(node) = stores.nodes.get(&ObjectRef::new(&name)) else {
                changed |= self.0.remove(&name).is_some();
                continue;
            };
            let view = (
                pool::pool_of(&node, &pools),
                pool::Member::read(world, &node),
            );
            let same = self
                .0
                .get(&name)
                .is_some_and(|(pool, member)| *pool == view.0 && member.sees_same(&view.1));
            if !same {
                self.0.insert(name, view);
                changed = true;
            }
        }
        changed
    }
}

struct Stores {
    nodes: Store<Node>,
    configs: Store<MachineConfig>,
    pools: Store<MachineConfigPool>,
    versions: Store<ClusterVersion>,
}

impl Stores {
    fn ready(&self) -> bool {
        [
            self.nodes.wait_until_ready().now_or_never().is_some(),
            self.configs.wait_until_ready().now_or_never().is_some(),
            self.pools.wait_until_ready().now_or_never().is_some(),
            self.versions.wait_until_ready().now_or_never().is_some(),
        ]
        .iter()
        .all(|ready| *ready)
    }
}

impl Operator {
    async fn run(mut self, world: Arc<World>) {
        if let Err(error) = version::ensure(&world).await {
            tracing::warn!(%error, "cannot create the ClusterVersion");
        }
        if let Err(error) = pool::ensure_default_pools(&world.client).await {
            tracing::warn!(%error, "cannot create the default MachineConfigPools");
        }
        let client = world.client.clone();
        let nodes = world.watches.nodes.store();
        let (configs, config_writer) = reflector::store();
        let (pools, pool_writer) = reflector::store();
        let (versions, version_writer) = reflector::store();
        let config = watcher::Config::default;
        let mut changes = futures::stream::select_all([
            world
                .watches
                .nodes
                .subscribe_with(|change| match change {
                    watcher::Event::Apply(node) | watcher::Event::InitApply(node) => {
                        Changed::Node(node.name_any())
                    }
                    _ => Changed::Everything,
                })
                .boxed(),
            reflector::reflector(
                config_writer,
                watcher(Api::<MachineConfig>::all(client.clone()), config())
                    .modify(forget_managed_fields),
            )
            .default_backoff()
            .map(|_| Changed::Everything)
            .boxed(),
            reflector::reflector(
                pool_writer,
                watcher(Api::<MachineConfigPool>::all(client.clone()), config())
                    .modify(forget_managed_fields),
            )
            .default_backoff()
            .map(|_| Changed::Everything)
            .boxed(),
            reflector::reflector(
                version_writer,
                watcher(Api::<ClusterVersion>::all(client), config()).modify(forget_managed_fields),
            )
            .default_backoff()
            .map(|_| Changed::Everything)
            .boxed(),
        ]);
        let stores = Stores {
            nodes,
            configs,
            pools,
            versions,
        };
        let mut machine_changed = world.machine_changed.subscribe();
        let mut seen = SeenNodes::default();
        let mut due = true;
        loop {
            let mut touched = Vec::new();
            tokio::select! {
                next = changes.next() => match next {
                    Some(changed) => changed.add_to(&mut touched, &mut due),
                    None => return,
                },
                received = machine_changed.recv() => match received {
                    Ok(node) => touched.push(node),
                    Err(RecvError::Lagged(_)) => due = true,
                    Err(RecvError::Closed) => return,
                },
                Some(done) = self.updates.join_next_with_id() => {
                    let id = match &done { Ok((id, _)) => *id, Err(error) => error.id() };
                    self.updating.remove(&id);
                    due = true;
                }
            }
            while let Some(Some(changed)) = changes.next().now_or_never() {
                changed.add_to(&mut touched, &mut due);
            }
            loop {
                match machine_changed.try_recv() {
                    Ok(node) => touched.push(node),
                    Err(TryRecvError::Lagged(_)) => due = true,
                    Err(_) => break,
                }
            }
            if !stores.ready() {
                due = true;
                continue;
            }
            due |= seen.update(&world, &stores, touched);
            if due {
                due = !self.pass(&world, &stores).await;
            }
        }
    }

    /// Reconcile every pool and the ClusterVersion once, and start the node updates that are due. Returns whether
    /// every write succeeded (a pass that failed somewhere is tried again at the next change of any kind).
    async fn pass(&mut self, world: &Arc<World>, stores: &Stores) -> bool {
        let mut succeeded = true;
        let versions = stores.versions.state();
        let cluster_version = versions.iter().find(|v| v.name_any() == version::NAME);
        let release = version::desired_release(cluster_version.map(|v| v.as_ref()));
        let release_url = release
            .as_deref()
            .and_then(|release| version::release_os_image_url(world, release));
        if let (Some(release), Some(url)) = (release, release_url.clone()) {
            let wanted = Some((release, url));
            if self.published_os_image != wanted
                && let Some((release, url)) = &wanted
            {
                match version::publish_os_image(world, release, url).await {
                    Ok(()) => self.published_os_image = wanted,
                    Err(error) => {
                        succeeded = false;
                        tracing::debug!(%error, "OS image ConfigMap not published");
                    }
                }
            }
        }
        let configs = stores.configs.state();
        let mut pools = stores.pools.state();
        pools.sort_by_key(|p| p.name_any());
        let mut members: BTreeMap<String, Vec<Arc<Node>>> = BTreeMap::new();
        for node in stores.nodes.state() {
            if let Some(pool) = pool::pool_of(&node, &pools) {
                members.entry(pool).or_default().push(node);
            }
        }
        let mut all_updated = true;
        for pool in &pools {
            let nodes = members.remove(&pool.name_any()).unwrap_or_default();
            let rendered = render::render(pool, &configs, release_url.as_deref());
            match pool::reconcile(world, pool, &nodes, &rendered, &mut self.own_writes).await {
                Ok(outcome) => {
                    all_updated &= outcome.updated;
                    for node in outcome.to_update {
                        self.start_update(world, node);
                    }
                }
                Err(error) => {
                    all_updated = false;
                    succeeded = false;
                    tracing::debug!(pool = %pool.name_any(), %error, "pool not reconciled");
                }
            }
        }
        if let Some(cluster_version) = cluster_version
            && let Err(error) = version::reconcile(world, cluster_version, all_updated).await
        {
            succeeded = false;
            tracing::debug!(%error, "ClusterVersion not reconciled");
        }
        succeeded
    }

    fn start_update(&mut self, world: &Arc<World>, node: String) {
        if self.updating.values().any(|n| *n == node) {
            return;
        }
        let handle = self
            .updates
            .spawn(daemon::update(world.clone(), node.clone()));
        self.updating.insert(handle.id(), node);
    }
}
