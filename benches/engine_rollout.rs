//! Scale benchmark of the KMM engine: one Module rolled out to 5,000 simulated nodes on the embedded cluster,
//! in-process.
//!
//! Measures, in one run: the time from the Module's creation until every node has an NMC entry and until every node
//! has the module loaded (`availableNumber == 5000`); the writes the store committed meanwhile, per node and by
//! resource (counted by the store, [`Store::write_counts`]); the number of worker pods created (exactly one loader
//! per node when nothing is redone); the process's peak resident memory and CPU during the rollout; and its CPU use
//! while idle afterwards, from /proc. The scenario runs at the `large` scenario's time scale (10). Linux only.
//!
//! Run with `cargo bench --bench engine_rollout`.
//!
//! Where time and memory go (release build, 2-core machine shared with other builds, load average 5 to 6):
//!
//! - Before these changes (figures taken from `serve --with-engine` on `large`, the same rollout over HTTPS): about
//!   9 nodes per second, 3,376 of 5,000 available after 374 s, resident memory growing to 5.4 GiB. The store kept
//!   100,000 events whatever their size, serialised writes under the lock readers take, and the Module and
//!   NodeModulesConfig reconcilers each ran their own watch of all nodes.
//! - After (history bounded to 32 MiB of serialised objects, writes serialised and committed outside the readers'
//!   lock, one shared node watch for every family): every node has its entry after 14 s; then about 2 nodes per
//!   second become available (565 after 273 s, 1,063 after 567 s, when the run was stopped), with the process at
//!   52 % of one core and 1.93 GiB peak resident, still growing. A `perf` profile of that phase spends about 30 %
//!   in `IndexMap::get`, `Value::pointer` and `memcmp`, and about 20 % in malloc/free (no call graphs: the build
//!   has no frame pointers): the server matching selectors against stored JSON values, most likely for the
//!   `spec.nodeName` pod list each NodeModulesConfig pass makes over every pod. Reading a node's worker pods from
//!   the reconciler's watch instead of listing them is the next step. Where the memory beyond the bounded history
//!   goes was not measured.
//!
//! [`Store::write_counts`]: kmm_tui::cluster::store::Store::write_counts

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kmm_tui::api::kmm::Module;
use kmm_tui::cluster::sim::scenario::Scenario;
use kmm_tui::cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_tui::engine::{self, Context, PodImages, labels};
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

const NODES: usize = 5000;
const IDLE_WINDOW: Duration = Duration::from_secs(30);

const SCENARIO: &str = r#"
seed: 1
timeScale: 10
nodes:
  - namePrefix: worker-
    count: 5000
    labels: {node-role.kubernetes.io/worker: ""}
    kernelVersion: 5.14.0-284.el9.x86_64
    osImage: RHCOS 414
registry:
  images:
    - {name: quay.io/bench/kmod:5.14.0-284.el9.x86_64, sizeMiB: 20}
objects:
  - {apiVersion: v1, kind: Namespace, metadata: {name: bench}}
"#;

/// User plus system CPU time of this process, from /proc/self/stat (fields 14 and 15, in clock ticks).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("reading /proc/self/stat");
    let after_name = &stat[stat.rfind(')').expect("stat has a command name") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_secs_f64(ticks as f64 / 100.0)
}

/// The peak resident set size of this process, from /proc/self/status (`VmHWM`).
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().to_owned()))
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

async fn wait_until(
    what: &str,
    started: Instant,
    mut check: impl AsyncFnMut() -> bool,
) -> Duration {
    loop {
        if check().await {
            let took = started.elapsed();
            println!("{what}: {:.1} s", took.as_secs_f64());
            return took;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::main]
async fn main() {
    let scenario = Scenario::parse(SCENARIO, "engine_rollout", None).expect("the scenario parses");
    let begin = Instant::now();
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts");
    println!(
        "{NODES} nodes ready: {:.1} s",
        begin.elapsed().as_secs_f64()
    );
    let client = cluster.client();

    let workers_created = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = workers_created.clone();
    let pods: Api<Pod> = Api::all(client.clone());
    tokio::spawn(async move {
        let mut uids = std::collections::HashSet::new();
        let mut stream = std::pin::pin!(watcher(
            pods,
            watcher::Config::default().labels(labels::WORKER_ACTION)
        ));
        while let Some(Ok(event)) = stream.next().await {
            if let watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) = event
                && uids.insert(pod.metadata.uid.clone().unwrap_or_default())
            {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });

    let stop = CancellationToken::new();
    let context = std::sync::Arc::new(Context::new(client.clone(), PodImages::default(), None));
    let engine = tokio::spawn(engine::run_reconcilers(context, stop.clone()));
    let module: Module = serde_json::from_value(serde_json::json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": "kmod", "namespace": "bench"},
        "spec": {
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "bench_kmod"},
                "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/bench/kmod:${KERNEL_FULL_VERSION}"}]
            }}
        }
    }))
    .expect("a Module");
    let modules: Api<Module> = Api::namespaced(client.clone(), "bench");
    let store = cluster.server().store().clone();
    let writes_before: BTreeMap<String, u64> = store
        .write_counts()
        .into_iter()
        .map(|(resource, counts)| (resource.0.to_string(), counts.total()))
        .collect();
    let cpu_at_start = cpu_time();
    let started = Instant::now();
    modules
        .create(&PostParams::default(), &module)
        .await
        .expect("the Module is created");
    let counts = async || {
        modules
            .get("kmod")
            .await
            .ok()
            .and_then(|m| m.status?.module_loader)
            .map(|c| (c.desired_number as usize, c.available_number as usize))
            .unwrap_or_default()
    };
    wait_until(
        "every node has an entry (desired = 5000)",
        started,
        async || counts().await.0 == NODES,
    )
    .await;
    // Progress every 15 s, so a run cut short still tells the rate.
    let mut reported = Instant::now();
    let rollout = wait_until(
        "loaded on every node (available = 5000)",
        started,
        async || {
            let (desired, available) = counts().await;
            if reported.elapsed() >= Duration::from_secs(15) {
                reported = Instant::now();
                println!(
                    "  {:.0} s: desired {desired}, available {available}",
                    started.elapsed().as_secs_f64()
                );
            }
            available == NODES
        },
    )
    .await;
    let rollout_cpu = cpu_time() - cpu_at_start;
    println!(
        "CPU during the rollout: {:.1} s ({:.0} % of one core); peak RSS: {}",
        rollout_cpu.as_secs_f64(),
        rollout_cpu.as_secs_f64() / rollout.as_secs_f64() * 100.0,
        peak_rss(),
    );
    let mut total = 0;
    let mut by_resource = Vec::new();
    for (resource, counts) in store.write_counts() {
        let resource = resource.0.to_string();
        let delta = counts.total() - writes_before.get(&resource).copied().unwrap_or(0);
        if delta > 0 {
            total += delta;
            by_resource.push(format!("{resource} {:.2}", delta as f64 / NODES as f64));
        }
    }
    println!(
        "writes committed by the store during the rollout: {total}, {:.2} per node ({})",
        total as f64 / NODES as f64,
        by_resource.join(", ")
    );
    let created = workers_created.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "worker pods created: {created} (one per node: {})",
        created == NODES
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
    stop.cancel();
    let _ = engine.await;
    cluster.shutdown().await;
}
