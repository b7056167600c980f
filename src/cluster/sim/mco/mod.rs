//! The Machine Config Operator of the simulated cluster: MachineConfigPools roll their nodes onto the OS image
//! their MachineConfigs (or the cluster's release) ask for, cordoning, draining and rebooting them one at a
//! time, as OpenShift does — which is what a ModuleDay0 relies on.
//!
//! One task watches nodes, MachineConfigs, MachineConfigPools and the ClusterVersion. On every change it renders
//! each pool ([`render`]), hands nodes their new configuration within `maxUnavailable` and publishes the pool's
//! status ([`pool`]), keeps the ClusterVersion's history ([`version`]), and runs a node update ([`daemon`]) for
//! every node that has one to do. At start it creates the `master` and `worker` pools when there are none, and
//! `ClusterVersion/version` when it is missing. All progress is kept in the API (node annotations), so a
//! restarted simulation continues a rollout where it stopped.

pub mod daemon;
pub mod pool;
pub mod render;
pub mod version;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::{JoinHandle, JoinSet};

use super::{World, forget_managed_fields};
use crate::api::day0::{ClusterVersion, MachineConfig, MachineConfigPool};

/// Node annotation: the configuration the node runs.
pub const CURRENT_CONFIG: &str = "machineconfiguration.openshift.io/currentConfig";
/// Node annotation: the configuration the node must move to.
pub const DESIRED_CONFIG: &str = "machineconfiguration.openshift.io/desiredConfig";
/// Node annotation: `Done`, `Working` or `Degraded`.
pub const STATE: &str = "machineconfiguration.openshift.io/state";
/// Node annotation: why the node is degraded.
pub const REASON: &str = "machineconfiguration.openshift.io/reason";
/// The node runs its desired configuration.
pub const DONE: &str = "Done";
/// The node is being updated.
pub const WORKING: &str = "Working";
/// The node's update failed; its pool stops rolling.
pub const DEGRADED: &str = "Degraded";

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
        let (nodes, node_writer) = reflector::store();
        let (configs, config_writer) = reflector::store();
        let (pools, pool_writer) = reflector::store();
        let (versions, version_writer) = reflector::store();
        let config = watcher::Config::default;
        let mut changes = futures::stream::select_all([
            reflector::reflector(
                node_writer,
                watcher(Api::<Node>::all(client.clone()), config()).modify(forget_managed_fields),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            reflector::reflector(
                config_writer,
                watcher(Api::<MachineConfig>::all(client.clone()), config())
                    .modify(forget_managed_fields),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            reflector::reflector(
                pool_writer,
                watcher(Api::<MachineConfigPool>::all(client.clone()), config())
                    .modify(forget_managed_fields),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            reflector::reflector(
                version_writer,
                watcher(Api::<ClusterVersion>::all(client), config()).modify(forget_managed_fields),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
        ]);
        let stores = Stores {
            nodes,
            configs,
            pools,
            versions,
        };
        let mut machine_changed = world.machine_changed.subscribe();
        loop {
            tokio::select! {
                next = changes.next() => if next.is_none() { return },
                received = machine_changed.recv() => if matches!(received, Err(RecvError::Closed)) { return },
                Some(done) = self.updates.join_next_with_id() => {
                    let id = match &done { Ok((id, _)) => *id, Err(error) => error.id() };
                    self.updating.remove(&id);
                }
            }
            while let Some(Some(())) = changes.next().now_or_never() {}
            while machine_changed.try_recv().is_ok() {}
            if stores.ready() {
                self.pass(&world, &stores).await;
            }
        }
    }

    /// Reconcile every pool and the ClusterVersion once, and start the node updates that are due.
    async fn pass(&mut self, world: &Arc<World>, stores: &Stores) {
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
                    Err(error) => tracing::debug!(%error, "OS image ConfigMap not published"),
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
                    tracing::debug!(pool = %pool.name_any(), %error, "pool not reconciled");
                }
            }
        }
        if let Some(cluster_version) = cluster_version
            && let Err(error) = version::reconcile(world, cluster_version, all_updated).await
        {
            tracing::debug!(%error, "ClusterVersion not reconciled");
        }
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
