//! Scale benchmark of the KMM engine on 5,000 simulated nodes, cluster, simulation and engine in one process.
//!
//! Three phases, each measured from the write that starts it until the cluster has converged:
//!
//! 1. one Module onto every node (its image in the registry): time until every node has an NMC entry and until
//!    `availableNumber == 5000`;
//! 2. a second Module onto every node, on top;
//! 3. a kernel upgrade of 10 % of the nodes (a MachineConfig moves their pool to a new OS image; the Machine Config
//!    Operator drains and reboots them, 100 % at once): time until both Modules run on every node again, loaded
//!    for the new kernel where it changed.
//!
//! For each phase: wall time, CPU (share of one core), the writes the store committed per node and by resource
//! ([`Store::write_counts`]), and the engine's own writes per node, counted by the API server's request metrics
//! under the engine client's name (the rest are the simulated kubelets, scheduler and Machine Config Operator, and
//! the Events everyone records). Then the process's peak resident memory and its CPU while idle. Linux only
//! (figures from /proc). The scenario runs at the `large` scenario's time scale (10).
//!
//! Run with `cargo bench --bench engine_rollout`; `BENCH_NODES=500` runs the same phases on fewer nodes.
//!
//! Where time and memory go (release build, 2-core machine):
//!
//! - When the scale work started (`serve --with-engine` on `large`, the same rollout over HTTPS): about 9 nodes per
//!   second, 3,376 of 5,000 available after 374 s, resident memory growing to 5.4 GiB. The store kept 100,000 events
//!   whatever their size and committed under the lock readers take; each controller ran its own node watch.
//! - With the history bounded to 32 MiB, commits outside the readers' lock and one shared node watch: every node had
//!   its entry after 5.6 s, then 7 to 10 nodes per second became available (3,858 after 584 s) at 181 % CPU and
//!   3.1 GiB resident. A `perf` profile with DWARF call graphs: 40 % of all CPU in the embedded garbage collector,
//!   which scanned every stored object (twice) for each deleted worker pod to find its dependents and its owner;
//!   17 % in pod lists by `spec.nodeName`, each testing every pod's labels and fields; 9 % in the simulated
//!   scheduler sorting all 5,000 nodes on every pod change although nothing was pending; 5 % in the simulated
//!   Machine Config Operator's pass over every node on every machine change.
//! - Memory in that run grew to 5.1 GiB: the store's live watch feed (a broadcast channel of 65,536 events) keeps
//!   its last 65,536 events alive whoever has read them, each with its object and the one it replaced.
//! - After the collector kept an ownership graph, pod lists by node read a `spec.nodeName` index, the scheduler
//!   skipped passes with nothing pending, the live feed shrank to 1,024 events (a watcher behind it catches up
//!   from the byte-bounded history), the simulation stopped caching `managedFields`, and Module passes were paced
//!   (a pause of twice the pass after each): phase 1 took 132 s at 184 % CPU with peak RSS 1.71 GiB, the engine
//!   writing 6.07 times per node plus 1.01 Event, beside a test suite using the other core. The profile taken
//!   just before the pacing: Module passes over every node 33 % (hence the pacing), the API server's write path
//!   (merge patch, typed round trip for defaulting, managed fields, admission) 22 %, malloc about 25 %.
//! - A profile after the pacing (beside three builds): the API server's patch handler 36 % of CPU, a quarter of
//!   it copying whole JSON trees (eight copies per update); the simulated kubelet's pod status patches 23 %; its
//!   Events 7 %; Module passes 7.5 %; malloc and free a quarter of everything.
//! - After writes decoded only the top-level fields that changed and stopped copying objects to compare them, the
//!   simulated kubelet wrote a pod's status once per instant (pods 10 to 7 writes per node), the simulated MCO
//!   passed only on changes that matter to it, workers lost their finalizer and loads their per-node Event
//!   (engine 7.08 to 5.07 writes per node), and stored objects kept `managedFields` only serialised: phase 1 used
//!   the same CPU for the rollout's work (244 s) but took 166 s at 147 % CPU with peak RSS 1.25 GiB, phase 2 245 s,
//!   phase 3 92 s, 1.82 GiB at the end, on an otherwise idle machine. The cores were no longer busy: 16 NMC
//!   passes at once, each a few round trips, held the rollout to about 35 nodes a second; they now run 64 at
//!   once. Phase 1 with 64, beside a CI build (about one core for the bench): 148 s on 141 s of CPU, about 47
//!   nodes a second once under way, peak RSS 1.97 GiB.
//! - With 64 passes on an idle machine, phase 1 took 62 s on 111 s of CPU, peak RSS 1.49 GiB (phase 2 85 s on 149 s,
//!   2.18 GiB). Its profile (`perf`, DWARF call graphs at 39 Hz) showed where the cores went: glibc's malloc and
//!   free 41 % of all samples (`_int_malloc` 15 %, `free` 7 %, `unlink_chunk` 5 %, `malloc_consolidate` 4 %); the
//!   API server's patch handler 27 %, of which managed-field tracking 12.5 % (it copied both objects whole to leave
//!   `managedFields` out, then walked every field of both, building a path for each, to find the few that
//!   changed); the simulated kubelet's status writes 17 % (mostly that patch handler); NMC passes 11 %; Module
//!   passes 6 %; decoding Pods 7 %.
//! - mimalloc as the allocator (`src/allocator.rs`) and a comparison that skips equal subtrees and
//!   `managedFields` in place: phase 1 36 s on 70 s of CPU, phase 2 43 s, phase 3 33 s; memory became the open
//!   goal (1.80 GiB after phase 1, 2.06 GiB at the end, 222 MiB before the rollout). What held it: the engine
//!   cached every NodeModulesConfig and worker pod twice (the Module and NMC reconcilers each watched them) and
//!   every object whole, `managedFields` and a Node's images, addresses and capacity included; the store kept a
//!   parsed tree of every Event (about 3.6 KB each, three times its JSON: ~350 MB for the 97,000 Events of the
//!   three phases) and the watch history kept parsed trees of both the object and the one it replaced (70 to
//!   150 MB, whatever the cluster's size). Phase 3 created 1,619 worker pods for 1,000 reloads: a node rebooted
//!   into a new kernel was loaded from its entry for the old kernel, then again once the entry was rewritten.
//! - Now the engine shares one NMC and one worker-pod watch between both reconcilers and caches only the fields it
//!   reads; Events and history entries are stored serialised only (parsed when a selector needs them); a rebooted
//!   node waits for its entry for the new kernel. Phase 1 34 s on 65 s of CPU, phase 2 36 s on 70 s, phase 3
//!   22 s on 30 s; worker pods 5,000 / 5,000 / 1,015; peak RSS 1.11 GiB after phase 1 and 1.19 GiB at the end;
//!   idle afterwards 0.03 % of a core (a second run: 36 s, 41 s, 26 s, 1.18 GiB). The extra writes of phase 3
//!   (5.1 to 6.2 engine writes per reloaded node and Module over three runs) come from the Module reconciler
//!   removing a node's entry while the image for its new kernel is being checked, then adding it back.
//! - The simulation then watched pods and nodes once for all its components (three cached copies of each before),
//!   and the store kept Nodes and NodeModulesConfigs serialised only: phase 1 23.1 s on 44 s of CPU, phase 2
//!   26.7 s on 51 s, phase 3 17.7 s on 20 s, peak RSS 788 MiB after phase 1 and 900 MiB at the end (1.21 GiB
//!   before, on mimalloc, 28.8 / 30.9 / 19.7 s). On the way, phase 3 took 55 s on 90 s of CPU: each of the
//!   simulated Machine Config Operator's waits for one node (a watch by `metadata.name`, hundreds open during the
//!   upgrade) parsed every changed Node to match its name, until selection by name and namespace read the store's
//!   key instead. This benchmark's count of worker pods stopped at the first watch error then (1,856 of 5,000): it
//!   now goes on through the watcher's resume.
//! - With the simulation's components reading what they need of each shared change as it arrives (their queues
//!   no longer hold whole old objects): 22.3, 25.8 and 17.7 s, peak 865 MiB (732 MiB in phase 1); a run just
//!   before peaked at 949 MiB, so the peak varies by tens of MiB between runs.
//! - With lists kept at their length (the engine's NMC and node caches, the simulation's pods) and freed memory
//!   handed back to the system at once: 25.3, 28.5 and 19.9 s, peak 849 MiB (647 MiB in phase 1, was 732). The
//!   phases are 10 to 13 % slower in-process: pages handed back are faulted in again by the next allocation.
//! - A heap profile of the console with its engine during the rollout (heaptrack, the C library's malloc; 494 MB
//!   of heap at the peak) put the simulation's shared pod and node caches at 79 MB, 23 MB of it node statuses
//!   nobody there reads but for allocatable resources and the Ready condition, and its kubelets' record of what
//!   they last wrote at 28 MB (each node's whole status, image list included, and its machine's ConfigMap data,
//!   kept only to tell whether anything changed). The kubelets now keep fingerprints (with the conditions, whose
//!   times carry over, and the names of the resources offered), and the node cache the fields placement reads:
//!   28.1, 28.7 and 18.2 s, peak 808 MiB (682 MiB in phase 1), on a machine where code this change left alone
//!   (the API server's request path, the console's drawing) ran 10 to 30 % slower than in the runs before.
//!
//! [`Store::write_counts`]: kmm_cluster::store::Store::write_counts

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kmm_api::day0::MachineConfigPool;
use kmm_api::kmm::labels;
use kmm_api::kmm::{Module, NodeModulesConfig};
use kmm_cluster::apiserver::ApiServer;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::{self, Context, PodImages};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const IDLE_WINDOW: Duration = Duration::from_secs(30);
/// The engine client's User-Agent product, which the server's request metrics count its writes under.
const ENGINE_AGENT: &str = "kmm-tui-engine";
const OLD_KERNEL: &str = "5.14.0-284.el9.x86_64";
const NEW_KERNEL: &str = "5.14.0-362.el9.x86_64";

/// 90 % of the nodes stay on their kernel; 10 % sit in a pool of their own that the upgrade phase moves.
fn scenario(nodes: usize) -> String {
    let upgraded = nodes / 10;
    format!(
        r#"
seed: 1
timeScale: 10
nodes:
  - namePrefix: worker-
    count: {stay}
    labels: {{node-role.kubernetes.io/worker: ""}}
    kernelVersion: {OLD_KERNEL}
    osImage: RHCOS 414
  - namePrefix: upgrade-
    count: {upgraded}
    labels: {{node-role.kubernetes.io/worker: "", node-role.kubernetes.io/upgrade: ""}}
    kernelVersion: {OLD_KERNEL}
    osImage: RHCOS 414
registry:
  images:
    - {{name: quay.io/bench/kmod-a:{OLD_KERNEL}, sizeMiB: 20}}
    - {{name: quay.io/bench/kmod-a:{NEW_KERNEL}, sizeMiB: 20}}
    - {{name: quay.io/bench/kmod-b:{OLD_KERNEL}, sizeMiB: 20}}
    - {{name: quay.io/bench/kmod-b:{NEW_KERNEL}, sizeMiB: 20}}
osImages:
  - {{url: quay.io/os/rhcos@sha256:414, kernelVersion: {OLD_KERNEL}, osImage: RHCOS 414, release: 4.14.0}}
  - {{url: quay.io/os/rhcos@sha256:415, kernelVersion: {NEW_KERNEL}, osImage: RHCOS 415, release: 4.15.0}}
objects:
  - {{apiVersion: v1, kind: Namespace, metadata: {{name: bench}}}}
  - apiVersion: machineconfiguration.openshift.io/v1
    kind: MachineConfigPool
    metadata: {{name: upgrade}}
    spec:
      machineConfigSelector:
        matchExpressions: [{{key: machineconfiguration.openshift.io/role, operator: In, values: [worker, upgrade]}}]
      nodeSelector: {{matchLabels: {{node-role.kubernetes.io/upgrade: ""}}}}
      maxUnavailable: 100%
"#,
        stay = nodes - upgraded,
    )
}

fn module(name: &str) -> Module {
    serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": format!("bench_{}", name.replace('-', "_"))},
                "kernelMappings": [{"regexp": "^.+$", "containerImage": format!("quay.io/bench/{name}:${{KERNEL_FULL_VERSION}}")}]
            }}
        }
    }))
    .expect("a Module")
}

/// User plus system CPU time of this process, from /proc/self/stat (fields 14 and 15, in clock ticks).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("reading /proc/self/stat");
    let after_name = &stat[stat.rfind(')').expect("stat has a command name") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_secs_f64(ticks as f64 / 100.0)
}

/// The resident set size of this process now, from /proc/self/status (`VmRSS`).
fn rss() -> String {
    status_field("VmRSS:")
}

/// The peak resident set size of this process, from /proc/self/status (`VmHWM`).
fn peak_rss() -> String {
    status_field("VmHWM:")
}

/// A field of /proc/self/status, as it reads there (`1234 kB`).
fn status_field(name: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Successful writes the server answered to the engine's client, by resource, read from its request metrics.
fn engine_writes(server: &ApiServer) -> BTreeMap<String, u64> {
    let text = server.metrics().encode(server.store());
    let mut writes = BTreeMap::new();
    for sample in kmm_testing::metrics::samples(&text, "apiserver_request_total") {
        let is_write = matches!(
            sample.label("verb"),
            Some("POST" | "PUT" | "PATCH" | "APPLY" | "DELETE")
        );
        let succeeded = sample
            .label("code")
            .is_some_and(|code| code.starts_with('2'));
        if is_write && succeeded && sample.label("client") == Some(ENGINE_AGENT) {
            *writes
                .entry(sample.label("resource").unwrap_or_default().to_owned())
                .or_default() += sample.value as u64;
        }
    }
    writes
}

/// Store writes by resource.
fn store_writes(server: &ApiServer) -> BTreeMap<String, u64> {
    server
        .store()
        .write_counts()
        .into_iter()
        .map(|(resource, counts)| (resource.0.to_string(), counts.total()))
        .collect()
}

/// What the store holds, per resource with more than a hundred objects: how many, and their serialised size.
fn stored_objects(server: &ApiServer) -> String {
    let usage = server.store().usage();
    let mut parts: Vec<String> = usage
        .resources
        .iter()
        .filter(|r| r.objects > 100)
        .map(|r| {
            format!(
                "{} {} ({:.0} MiB)",
                r.resource.0,
                r.objects,
                r.bytes as f64 / 1048576.0
            )
        })
        .collect();
    parts.push(format!("watch history {} events", usage.history));
    parts.join(", ")
}

/// `after - before` per key, as "key n.nn" per node, with the total per node.
fn per_node(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, nodes: usize) -> String {
    let mut total = 0;
    let mut parts = Vec::new();
    for (key, count) in after {
        let delta = count - before.get(key).copied().unwrap_or(0);
        if delta > 0 {
            total += delta;
            parts.push(format!("{key} {:.2}", delta as f64 / nodes as f64));
        }
    }
    format!(
        "{:.2} per node ({total} in all: {})",
        total as f64 / nodes as f64,
        parts.join(", ")
    )
}

/// One measured phase: from its start until `done` holds.
struct Phase<'a> {
    name: &'a str,
    server: &'a ApiServer,
    nodes: usize,
    started: Instant,
    cpu: Duration,
    stored: BTreeMap<String, u64>,
    engine: BTreeMap<String, u64>,
    workers: usize,
}

impl<'a> Phase<'a> {
    fn start(name: &'a str, server: &'a ApiServer, nodes: usize) -> Self {
        println!("\n{name}");
        Self {
            name,
            server,
            nodes,
            started: Instant::now(),
            cpu: cpu_time(),
            stored: store_writes(server),
            engine: engine_writes(server),
            workers: WORKERS_CREATED.load(Ordering::Relaxed),
        }
    }

    /// Wait until `check` holds, printing `progress` every 15 s; prints the time it took.
    async fn until(
        &self,
        what: &str,
        mut check: impl AsyncFnMut() -> bool,
        mut progress: impl AsyncFnMut() -> String,
    ) {
        let mut reported = Instant::now();
        loop {
            if check().await {
                println!("  {what}: {:.1} s", self.started.elapsed().as_secs_f64());
                return;
            }
            if reported.elapsed() >= Duration::from_secs(15) {
                reported = Instant::now();
                println!(
                    "    {:.0} s: {}",
                    self.started.elapsed().as_secs_f64(),
                    progress().await
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    fn report(self) {
        let took = self.started.elapsed();
        let cpu = cpu_time() - self.cpu;
        println!(
            "  {}: {:.1} s wall, {:.1} s CPU ({:.0} % of one core), peak RSS so far {}",
            self.name,
            took.as_secs_f64(),
            cpu.as_secs_f64(),
            cpu.as_secs_f64() / took.as_secs_f64() * 100.0,
            peak_rss(),
        );
        println!(
            "  writes committed by the store: {}",
            per_node(&self.stored, &store_writes(self.server), self.nodes)
        );
        println!(
            "  of which the engine's: {}",
            per_node(&self.engine, &engine_writes(self.server), self.nodes)
        );
        println!(
            "  worker pods created: {}",
            WORKERS_CREATED.load(Ordering::Relaxed) - self.workers
        );
        println!("  stored: {}", stored_objects(self.server));
    }
}

/// `(desired, available)` of a Module's loader.
async fn counts(modules: &Api<Module>, name: &str) -> (usize, usize) {
    modules
        .get(name)
        .await
        .ok()
        .and_then(|m| m.status?.module_loader)
        .map(|c| (c.desired_number as usize, c.available_number as usize))
        .unwrap_or_default()
}

/// Worker pods ever created (one per node and module when nothing is redone), counted by [`count_workers`].
static WORKERS_CREATED: AtomicUsize = AtomicUsize::new(0);

/// Count the worker pods created from now on into [`WORKERS_CREATED`].
fn count_workers(client: kube::Client) {
    tokio::spawn(async move {
        let mut uids = std::collections::HashSet::new();
        let pods: Api<Pod> = Api::all(client);
        let config = watcher::Config::default().labels(labels::WORKER_ACTION);
        let mut stream = std::pin::pin!(watcher(pods, config).default_backoff());
        // A watch error (the server closed a watch that fell behind) is followed by the watcher's own resume or
        // relist: counting goes on with it.
        while let Some(event) = stream.next().await {
            if let Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) = event
                && uids.insert(pod.metadata.uid.clone().unwrap_or_default())
            {
                WORKERS_CREATED.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
}

/// Roll `name` out to every node and report the phase.
async fn roll_out(
    phase: &str,
    server: &ApiServer,
    modules: &Api<Module>,
    name: &str,
    nodes: usize,
) {
    let phase = Phase::start(phase, server, nodes);
    modules
        .create(&PostParams::default(), &module(name))
        .await
        .expect("the Module is created");
    let progress = async || {
        let (desired, available) = counts(modules, name).await;
        format!("desired {desired}, available {available}")
    };
    phase
        .until(
            &format!("every node has an entry (desired = {nodes})"),
            async || counts(modules, name).await.0 == nodes,
            progress,
        )
        .await;
    phase
        .until(
            &format!("loaded on every node (available = {nodes})"),
            async || counts(modules, name).await.1 == nodes,
            progress,
        )
        .await;
    phase.report();
}

/// NMCs whose status shows every module loaded for the new kernel.
async fn upgraded_nodes(client: &kube::Client, modules: usize) -> usize {
    let nmcs: Api<NodeModulesConfig> = Api::all(client.clone());
    let Ok(list) = nmcs.list(&ListParams::default()).await else {
        return 0;
    };
    list.items
        .iter()
        .filter(|nmc| {
            nmc.status.as_ref().is_some_and(|status| {
                status.modules.len() == modules
                    && status.modules.iter().all(|m| {
                        m.config
                            .as_ref()
                            .is_some_and(|c| c.kernel_version == NEW_KERNEL)
                    })
            })
        })
        .count()
}

/// Move the `upgrade` pool to the new kernel and wait until both Modules run everywhere again.
async fn upgrade_kernels(
    server: &ApiServer,
    client: &kube::Client,
    modules: &Api<Module>,
    nodes: usize,
) {
    let upgraded = nodes / 10;
    let phase = Phase::start(
        "3. kernel upgrade of 10 % of the nodes (drain, reboot, reload both Modules)",
        server,
        nodes,
    );
    let configs = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("machineconfiguration.openshift.io", "v1", "MachineConfig"),
        "machineconfigs",
    );
    let config: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": "99-upgrade-os", "labels": {"machineconfiguration.openshift.io/role": "upgrade"}},
        "spec": {"osImageURL": "quay.io/os/rhcos@sha256:415"}
    }))
    .expect("a MachineConfig");
    Api::<DynamicObject>::all_with(client.clone(), &configs)
        .create(&PostParams::default(), &config)
        .await
        .expect("the MachineConfig is created");
    let pools: Api<MachineConfigPool> = Api::all(client.clone());
    let pool_updated = async || {
        pools
            .get("upgrade")
            .await
            .ok()
            .and_then(|p| p.status)
            .and_then(|s| s.updated_machine_count)
            .unwrap_or(0) as usize
    };
    let progress = async || {
        format!(
            "pool updated {}, nodes loaded for the new kernel {}, available {:?} {:?}",
            pool_updated().await,
            upgraded_nodes(client, 2).await,
            counts(modules, "kmod-a").await,
            counts(modules, "kmod-b").await,
        )
    };
    phase
        .until(
            &format!("{upgraded} nodes run both Modules on the new kernel"),
            async || upgraded_nodes(client, 2).await == upgraded,
            progress,
        )
        .await;
    phase
        .until(
            "both Modules available everywhere",
            async || {
                counts(modules, "kmod-a").await.1 == nodes
                    && counts(modules, "kmod-b").await.1 == nodes
            },
            progress,
        )
        .await;
    phase.report();
}

fn main() {
    kmm_tui::allocator::block_on_as_the_binary(bench());
}

/// The benchmark, on a runtime started once the allocator is set.
async fn bench() {
    let nodes: usize = std::env::var("BENCH_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5000);
    let scenario =
        Scenario::parse(&scenario(nodes), "engine_rollout", None).expect("the scenario parses");
    let begin = Instant::now();
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts");
    println!(
        "{nodes} nodes ready: {:.1} s, RSS {}",
        begin.elapsed().as_secs_f64(),
        rss()
    );
    let server = cluster.server().clone();
    let client = cluster.client();
    count_workers(client.clone());

    let engine_client = cluster.client_named(ENGINE_AGENT);
    let stop = CancellationToken::new();
    let context = Arc::new(Context::new(engine_client, PodImages::default(), None));
    let engine = tokio::spawn(kmm_engine::run_reconcilers(context, stop.clone()));
    let modules: Api<Module> = Api::namespaced(client.clone(), "bench");

    roll_out(
        "1. one Module onto every node",
        &server,
        &modules,
        "kmod-a",
        nodes,
    )
    .await;
    roll_out(
        "2. a second Module on top",
        &server,
        &modules,
        "kmod-b",
        nodes,
    )
    .await;
    upgrade_kernels(&server, &client, &modules, nodes).await;

    let created = WORKERS_CREATED.load(Ordering::Relaxed);
    let expected = 2 * nodes + 2 * (nodes / 10);
    println!(
        "\nworker pods created: {created} (one per node, Module and kernel would be {expected})"
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let cpu_before = cpu_time();
    tokio::time::sleep(IDLE_WINDOW).await;
    let idle = cpu_time() - cpu_before;
    println!(
        "idle afterwards (cluster, simulation and engine in one process): {} ms of CPU over {} s ({:.2} % of one core)",
        idle.as_millis(),
        IDLE_WINDOW.as_secs(),
        idle.as_secs_f64() / IDLE_WINDOW.as_secs_f64() * 100.0
    );
    println!("peak RSS: {}", peak_rss());
    stop.cancel();
    let _ = engine.await;
    cluster.shutdown().await;
}
