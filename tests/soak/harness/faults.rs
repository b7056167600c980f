//! The faults and changes, drawn from the seed one after another, and undone when their time is up.
//!
//! Faults of the simulation (registry outages, nodes NotReady, reboots, failing pulls and containerd restarts,
//! closed watches) are entries of the ConfigMap `kmm-tui-sim/faults`, which the simulation takes in at once (see
//! `kmm_cluster::sim::inject`); engines and the API server are killed, stopped and started here; the
//! changes a user makes (kernel upgrades, a new day-0 image, a new shim version, a cache's images) are written as a
//! user writes them. A kind that cannot happen now (the API server is down, the pool is still rolling, the node is
//! busy with another fault) is drawn again, and counted as skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kmm_api::day0::{MachineConfigPool, ModuleDay0};
use kmm_api::lease::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_cluster::sim::SIM_NAMESPACE;
use kmm_cluster::sim::inject::FAULTS_CONFIG_MAP;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

use super::engines::Engine;
use super::invariants::Violations;
use super::server::{self, Link, Server};
use super::workload::{self, Asked, CACHED, DAY0, DAY0_NAMESPACE, DAY0_POOL, UPGRADE_POOL};

/// Everything the soak does to the cluster, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    EngineKill,
    EngineStop,
    ServerKill,
    CloseWatches,
    RegistryOutage,
    NodeNotReady,
    Reboot,
    WorkerFailure,
    InstallerFailure,
    PullerFailure,
    ConflictBurst,
    KernelUpgrade,
    Day0Upgrade,
    ShimUpdate,
    CacheChange,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::EngineKill => "engine kill -9",
            Kind::EngineStop => "engine clean stop",
            Kind::ServerKill => "API server kill -9",
            Kind::CloseWatches => "watches closed by the server",
            Kind::RegistryOutage => "registry outage",
            Kind::NodeNotReady => "node NotReady",
            Kind::Reboot => "node reboot",
            Kind::WorkerFailure => "failing worker pod",
            Kind::InstallerFailure => "failing installer pod",
            Kind::PullerFailure => "failing cache puller pod",
            Kind::ConflictBurst => "conflicting writes (burst)",
            Kind::KernelUpgrade => "kernel upgrade (pool upgrade)",
            Kind::Day0Upgrade => "kernel upgrade (day-0 image)",
            Kind::ShimUpdate => "new shim version",
            Kind::CacheChange => "cache images changed",
        }
    }

    /// Whether it needs the API server up.
    fn needs_api(self) -> bool {
        !matches!(self, Kind::EngineKill | Kind::EngineStop)
    }
}

/// How often each kind is drawn, relative to the others.
pub(super) type Weights = Vec<(Kind, u32)>;

/// The mix for a run: every kind, engines and the API server disturbed often (`server_kills` weighs the latter).
pub(super) fn weights(server_kills: u32) -> Weights {
    vec![
        (Kind::EngineKill, 4),
        (Kind::EngineStop, 2),
        (Kind::ServerKill, server_kills),
        (Kind::CloseWatches, 2),
        (Kind::RegistryOutage, 2),
        (Kind::NodeNotReady, 2),
        (Kind::Reboot, 2),
        (Kind::WorkerFailure, 2),
        (Kind::InstallerFailure, 1),
        (Kind::PullerFailure, 2),
        (Kind::ConflictBurst, 1),
        (Kind::KernelUpgrade, 1),
        (Kind::Day0Upgrade, 1),
        (Kind::ShimUpdate, 1),
        (Kind::CacheChange, 1),
    ]
}

/// Something to undo later.
#[derive(Debug)]
enum Undo {
    StartEngine(usize),
    StartServer,
    RemoveEntries(Vec<String>),
    EndBurst,
    FreeNode(String),
}

/// What was done, for the report.
#[derive(Default)]
pub(super) struct Tally {
    pub injected: BTreeMap<&'static str, u64>,
    pub skipped: BTreeMap<&'static str, u64>,
    /// How long clean stops took, the longest.
    pub longest_stop: Duration,
    /// 409s the API server answered to the engines, by verb and resource, summed over its runs.
    pub engine_conflicts: BTreeMap<String, u64>,
}

/// The soak's hands on the cluster.
pub(super) struct Chaos {
    pub server: Server,
    pub engines: Vec<Engine>,
    pub link: Link,
    client: kube::Client,
    pub asked: Asked,
    /// The run's seed, from which each fault's own random choices are drawn.
    seed: u64,
    /// The random choices of the fault being drawn.
    rng: ChaCha8Rng,
    /// Faults drawn so far.
    drawn: u64,
    weights: Weights,
    nodes: Vec<String>,
    busy: BTreeSet<String>,
    undo: Vec<(Instant, Undo)>,
    /// Numbers the fault entries.
    sequence: u64,
    pub burst: Arc<AtomicBool>,
    pub runs: watch::Sender<usize>,
    lease: Duration,
    max_update: i64,
    time_scale: f64,
    /// How often an outage is a long one.
    long_outages: f64,
    pub tally: Tally,
    /// Promises broken by the engines as the soak drives them.
    pub violations: Violations,
    /// When an engine last started, stopped or died.
    pub engines_changed: Instant,
    started: Instant,
}

/// A seconds count for a simulated duration of `wall` real time.
fn simulated(wall: Duration, time_scale: f64) -> String {
    format!("{:.0}s", wall.as_secs_f64() * time_scale)
}

impl Chaos {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        server: Server,
        engines: Vec<Engine>,
        client: kube::Client,
        seed: u64,
        weights: Weights,
        nodes: Vec<String>,
        lease: Duration,
        max_update: i64,
        time_scale: f64,
        long_outages: f64,
    ) -> Self {
        let runs = watch::channel(server.runs).0;
        Self {
            link: server.link(),
            server,
            engines,
            client,
            asked: Asked::default(),
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            drawn: 0,
            weights,
            nodes,
            busy: BTreeSet::new(),
            undo: Vec::new(),
            sequence: 0,
            burst: Arc::new(AtomicBool::new(false)),
            runs,
            lease,
            max_update,
            time_scale,
            long_outages,
            tally: Tally::default(),
            violations: Violations::default(),
            engines_changed: Instant::now(),
            started: Instant::now(),
        }
    }

    fn log(&self, line: &str) {
        println!("  {:7.1} s  {line}", self.started.elapsed().as_secs_f64());
    }

    /// Create the faults ConfigMap (empty) so later entries are merge patches.
    pub(super) async fn prepare(&self) -> Result<(), kube::Error> {
        let config_map: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": FAULTS_CONFIG_MAP, "namespace": SIM_NAMESPACE},
        }))
        .expect("a ConfigMap");
        match self
            .faults()
            .create(&PostParams::default(), &config_map)
            .await
        {
            Err(kube::Error::Api(status)) if status.code != 409 => Err(kube::Error::Api(status)),
            _ => Ok(()),
        }
    }

    fn faults(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), SIM_NAMESPACE)
    }

    /// Write fault entries; their keys are returned.
    async fn inject(&mut self, entries: Vec<String>) -> Result<Vec<String>, kube::Error> {
        let mut data = serde_json::Map::new();
        let mut keys = Vec::new();
        for text in entries {
            self.sequence += 1;
            let key = format!("soak-{}", self.sequence);
            data.insert(key.clone(), json!(text));
            keys.push(key);
        }
        self.faults()
            .patch(
                FAULTS_CONFIG_MAP,
                &PatchParams::default(),
                &Patch::Merge(json!({ "data": data })),
            )
            .await?;
        Ok(keys)
    }

    fn later(&mut self, after: Duration, undo: Undo) {
        self.undo.push((Instant::now() + after, undo));
    }

    /// A window of `least..most` seconds of real time.
    fn window(&mut self, least: f64, most: f64) -> Duration {
        Duration::from_secs_f64(self.rng.random_range(least..most))
    }

    /// How long an outage lasts: `least..most` seconds of real time, or, as often as the run asks for long
    /// outages, 30 to 50 s: past the cache engine's first retry (30 s after a failed pull), so that retries of pulls
    /// still failing are part of the run.
    fn outage(&mut self, least: f64, most: f64) -> Duration {
        if self.rng.random_bool(self.long_outages) {
            self.window(30.0, 50.0)
        } else {
            self.window(least, most)
        }
    }

    /// Do what is due to be undone by now; with `everything`, all of it, now (the API server first), and start
    /// every engine that is down.
    pub(super) async fn undo_due(&mut self, everything: bool) {
        if everything && !self.server.is_running() {
            self.start_server().await;
        }
        loop {
            let now = Instant::now();
            let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.undo)
                .into_iter()
                .partition(|(at, _)| everything || *at <= now);
            self.undo = rest;
            if due.is_empty() {
                break;
            }
            for (_, undo) in due {
                self.do_undo(undo).await;
            }
            if !everything {
                break;
            }
            // Entries that could not be removed yet are back in the list: try again in a moment.
            if !self.undo.is_empty() {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
        if everything {
            for index in 0..self.engines.len() {
                self.start_engine(index);
            }
        }
    }

    fn start_engine(&mut self, index: usize) {
        if !self.engines[index].is_running() {
            self.engines_changed = Instant::now();
            self.engines[index].start(&self.link);
            self.log(&format!("engine {} started", self.engines[index].identity));
        }
    }

    async fn do_undo(&mut self, undo: Undo) {
        match undo {
            Undo::StartEngine(index) => self.start_engine(index),
            Undo::StartServer => self.start_server().await,
            Undo::RemoveEntries(keys) => {
                let data: serde_json::Map<String, serde_json::Value> = keys
                    .iter()
                    .map(|k| (k.clone(), serde_json::Value::Null))
                    .collect();
                let removed = self
                    .faults()
                    .patch(
                        FAULTS_CONFIG_MAP,
                        &PatchParams::default(),
                        &Patch::Merge(json!({ "data": data })),
                    )
                    .await;
                if removed.is_err() {
                    // The API server is down: try again shortly.
                    self.later(Duration::from_millis(300), Undo::RemoveEntries(keys));
                }
            }
            Undo::EndBurst => self.burst.store(false, Ordering::Relaxed),
            Undo::FreeNode(node) => {
                self.busy.remove(&node);
            }
        }
    }

    async fn start_server(&mut self) {
        if self.server.is_running() {
            return;
        }
        self.server.restart().await;
        self.runs.send_replace(self.server.runs);
        self.log(&format!("API server started (run {})", self.server.runs));
    }

    /// Draw one fault or change and do it. Each draw has random choices of its own, derived from the seed and its
    /// number, so that what one fault could not do (a node busy, an engine down) does not shift the faults after
    /// it: a seed gives the same faults at the same times in every run, and what they hit differs only where it
    /// depends on the cluster at that moment.
    pub(super) async fn strike(&mut self) {
        self.drawn += 1;
        self.rng =
            ChaCha8Rng::seed_from_u64(self.seed ^ self.drawn.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for _ in 0..8 {
            let kind = self
                .weights
                .choose_weighted(&mut self.rng, |(_, weight)| *weight)
                .map(|(kind, _)| *kind)
                .expect("some kind has a weight");
            if kind.needs_api() && !self.server.is_running() {
                *self.tally.skipped.entry(kind.name()).or_default() += 1;
                continue;
            }
            match self.perform(kind).await {
                Ok(what) => {
                    *self.tally.injected.entry(kind.name()).or_default() += 1;
                    self.log(&format!("{}: {what}", kind.name()));
                    return;
                }
                Err(why) => {
                    *self.tally.skipped.entry(kind.name()).or_default() += 1;
                    self.log(&format!("({} skipped: {why})", kind.name()));
                }
            }
        }
    }

    /// A node no other fault holds, not in the middle of an update by the Machine Config Operator.
    async fn free_node(&mut self) -> Result<String, String> {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| !self.busy.contains(*n))
            .cloned()
            .collect();
        let node = nodes
            .choose(&mut self.rng)
            .cloned()
            .ok_or("every node is busy")?;
        let current = Api::<Node>::all(self.client.clone())
            .get(&node)
            .await
            .map_err(|e| e.to_string())?;
        let state = current
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(kmm_api::day0::node_update::STATE))
            .cloned();
        if state.as_deref().is_some_and(|s| s != "Done") {
            return Err(format!("{node} is being updated"));
        }
        Ok(node)
    }

    /// The kernel `node` runs.
    async fn kernel_of(&self, node: &str) -> Result<String, String> {
        Api::<Node>::all(self.client.clone())
            .get(node)
            .await
            .map_err(|e| e.to_string())?
            .status
            .and_then(|s| s.node_info)
            .map(|i| i.kernel_version)
            .ok_or_else(|| format!("{node} reports no kernel"))
    }

    /// Whether `pool` has every machine updated.
    async fn pool_idle(&self, pool: &str) -> Result<bool, String> {
        let status = Api::<MachineConfigPool>::all(self.client.clone())
            .get(pool)
            .await
            .map_err(|e| e.to_string())?
            .status
            .unwrap_or_default();
        Ok(status.machine_count.is_some()
            && status.updated_machine_count == status.machine_count
            && status.degraded_machine_count.unwrap_or(0) == 0)
    }

    async fn perform(&mut self, kind: Kind) -> Result<String, String> {
        let api = |e: kube::Error| e.to_string();
        match kind {
            Kind::EngineKill | Kind::EngineStop => {
                let holder = match self.server.is_running() {
                    true => Api::<Lease>::namespaced(self.client.clone(), DEFAULT_LEASE_NAMESPACE)
                        .get_opt(DEFAULT_LEASE_NAME)
                        .await
                        .ok()
                        .flatten()
                        .and_then(|l| l.spec?.holder_identity),
                    false => None,
                };
                let running: Vec<usize> = (0..self.engines.len())
                    .filter(|i| self.engines[*i].is_running())
                    .collect();
                let leader = running
                    .iter()
                    .copied()
                    .find(|i| Some(&self.engines[*i].identity) == holder.as_ref());
                // The leader most of the time: that is what makes a standby take over.
                let index = match leader {
                    Some(leader) if self.rng.random_bool(0.7) => leader,
                    _ => *running.choose(&mut self.rng).ok_or("no engine runs")?,
                };
                let identity = self.engines[index].identity.clone();
                let role = match (&holder, Some(index) == leader) {
                    (None, _) => "leader unknown",
                    (Some(_), true) => "leader",
                    (Some(_), false) => "standby",
                };
                let down = self.window(0.1, 2.0 * self.lease.as_secs_f64());
                if kind == Kind::EngineKill {
                    self.engines_changed = Instant::now();
                    self.engines[index].kill().await;
                } else {
                    self.stop_engine(index).await;
                }
                self.later(down, Undo::StartEngine(index));
                Ok(format!(
                    "{identity} ({role}), down for {:.1} s",
                    down.as_secs_f64()
                ))
            }
            Kind::ServerKill => {
                let down = self.window(0.2, 3.0);
                self.count_conflicts().await;
                self.server.kill_9();
                self.later(down, Undo::StartServer);
                Ok(format!("down for {:.1} s", down.as_secs_f64()))
            }
            Kind::CloseWatches => {
                self.inject(vec!["{kind: closeWatches}".to_owned()])
                    .await
                    .map_err(api)?;
                Ok("every open watch".to_owned())
            }
            Kind::RegistryOutage => {
                let window = self.outage(0.5, 4.0);
                let keys = self
                    .inject(vec!["{kind: registryOutage}".to_owned()])
                    .await
                    .map_err(api)?;
                self.later(window, Undo::RemoveEntries(keys));
                Ok(format!(
                    "{:.1} s ({} simulated)",
                    window.as_secs_f64(),
                    simulated(window, self.time_scale)
                ))
            }
            Kind::NodeNotReady => {
                let node = self.free_node().await?;
                let window = self.window(0.5, 5.0);
                let keys = self
                    .inject(vec![format!("{{kind: nodeNotReady, node: {node}}}")])
                    .await
                    .map_err(api)?;
                self.busy.insert(node.clone());
                self.later(window, Undo::RemoveEntries(keys));
                self.later(window, Undo::FreeNode(node.clone()));
                Ok(format!("{node} for {:.1} s", window.as_secs_f64()))
            }
            Kind::Reboot => {
                let node = self.free_node().await?;
                self.inject(vec![format!("{{kind: reboot, node: {node}}}")])
                    .await
                    .map_err(api)?;
                self.hold(&node, 2.0);
                Ok(node)
            }
            Kind::WorkerFailure => {
                // The node crashes and comes back without the module's image, which it cannot pull for a while:
                // its worker fails until the fault ends.
                let node = self.free_node().await?;
                let image = workload::module_image(&self.kernel_of(&node).await?);
                let window = self.window(1.0, 5.0);
                let lasting = self
                    .inject(vec![format!(
                        "{{kind: pullFailure, image: \"{image}\", nodes: [{node}]}}"
                    )])
                    .await
                    .map_err(api)?;
                self.inject(vec![
                    format!("{{kind: removeImage, image: \"{image}\", nodes: [{node}]}}"),
                    format!("{{kind: reboot, node: {node}}}"),
                ])
                .await
                .map_err(api)?;
                self.later(window, Undo::RemoveEntries(lasting));
                self.hold(&node, window.as_secs_f64() + 2.0);
                Ok(format!(
                    "{node}, {image} unpullable for {:.1} s",
                    window.as_secs_f64()
                ))
            }
            Kind::PullerFailure => {
                // The node loses a cached image, which it cannot pull for a while: the cache's puller fails.
                let node = self.free_node().await?;
                let image = *CACHED.choose(&mut self.rng).expect("cached images");
                let window = self.outage(1.0, 5.0);
                let lasting = self
                    .inject(vec![format!(
                        "{{kind: pullFailure, image: \"{image}\", nodes: [{node}]}}"
                    )])
                    .await
                    .map_err(api)?;
                self.inject(vec![format!(
                    "{{kind: removeImage, image: \"{image}\", nodes: [{node}]}}"
                )])
                .await
                .map_err(api)?;
                self.later(window, Undo::RemoveEntries(lasting));
                self.hold(&node, window.as_secs_f64());
                Ok(format!(
                    "{node}, {image} unpullable for {:.1} s",
                    window.as_secs_f64()
                ))
            }
            Kind::InstallerFailure => {
                let mut picked = Vec::new();
                for _ in 0..2 {
                    if let Ok(node) = self.free_node().await
                        && !picked.contains(&node)
                    {
                        picked.push(node);
                    }
                }
                if picked.is_empty() {
                    return Err("no free node".to_owned());
                }
                let window = self.window(2.0, 8.0);
                let keys = self
                    .inject(vec![format!(
                        "{{kind: containerdRestartFailure, nodes: [{}], times: 1}}",
                        picked.join(", ")
                    )])
                    .await
                    .map_err(api)?;
                self.later(window, Undo::RemoveEntries(keys));
                Ok(format!(
                    "next containerd restart fails on {} (for {:.1} s)",
                    picked.join(", "),
                    window.as_secs_f64()
                ))
            }
            Kind::ConflictBurst => {
                let window = self.window(1.0, 4.0);
                self.burst.store(true, Ordering::Relaxed);
                self.later(window, Undo::EndBurst);
                Ok(format!("{:.1} s", window.as_secs_f64()))
            }
            Kind::KernelUpgrade => {
                if !self.pool_idle(UPGRADE_POOL).await? {
                    return Err(format!("pool {UPGRADE_POOL} is still rolling"));
                }
                workload::upgrade_kernel(&self.client, &mut self.asked).await
            }
            Kind::Day0Upgrade => {
                if !self.pool_idle(DAY0_POOL).await? {
                    return Err(format!("pool {DAY0_POOL} is still rolling"));
                }
                let day0 = Api::<ModuleDay0>::namespaced(self.client.clone(), DAY0_NAMESPACE)
                    .get(DAY0)
                    .await
                    .map_err(api)?;
                let available = day0
                    .status
                    .iter()
                    .flat_map(|s| &s.conditions)
                    .any(|c| c.type_ == "Available" && c.status == "True");
                if !available {
                    return Err(format!("ModuleDay0 {DAY0} is still at work"));
                }
                workload::move_day0(&self.client, &mut self.asked).await
            }
            Kind::ShimUpdate => {
                workload::update_shim(&self.client, &mut self.asked, self.max_update).await
            }
            Kind::CacheChange => workload::change_cache(&self.client, &mut self.asked).await,
        }
    }

    /// Stop an engine cleanly; one that does not stop within three lease durations breaks the engine's promise
    /// to stop on request (SIGTERM) and is recorded as a violation.
    pub(super) async fn stop_engine(&mut self, index: usize) {
        self.engines_changed = Instant::now();
        match self.engines[index].stop(self.lease * 3).await {
            Ok(took) => self.tally.longest_stop = self.tally.longest_stop.max(took),
            Err(why) => {
                self.log(&why);
                self.violations.record("clean stop did not finish", why);
            }
        }
    }

    /// Add the 409s the running API server answered to the engines to the tally (its counts die with it).
    pub(super) async fn count_conflicts(&mut self) {
        if let Some(conflicts) = server::conflicts_answered_to_engines(&self.client).await {
            for (request, count) in conflicts {
                *self.tally.engine_conflicts.entry(request).or_default() += count;
            }
        }
    }

    /// Keep other node faults off `node` for `seconds`.
    fn hold(&mut self, node: &str, seconds: f64) {
        self.busy.insert(node.to_owned());
        self.later(
            Duration::from_secs_f64(seconds),
            Undo::FreeNode(node.to_owned()),
        );
    }
}
