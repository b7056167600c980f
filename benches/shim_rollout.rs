//! Scale benchmark of the shim engine: a rolling Shim (`maxUpdate: "10%"`) on the 5,000-node `large` scenario,
//! in-process.
//!
//! Measures the time until every node is provisioned; the engine's API writes per node, counted by a layer around
//! its client (every request that is not a GET, so watches and lists are left out) next to the store's
//! resourceVersion delta (every write of anyone, the simulated kubelets' included); the installer pods created
//! (one per node when nothing is redone); the most installers unfinished at once; and the process's peak resident
//! memory. Linux only.
//!
//! Run with `cargo bench --bench shim_rollout`.
//!
//! Where time and memory went: the first run (release, on the 2-core machine at a load of about 10, so the process had
//! about 5 minutes of CPU) took 748 s to provision 5,000 nodes and peaked at 5.07 GiB, with 5.8 engine writes and 22.3
//! store writes per node and never more than the 500 installers `maxUpdate: "10%"` allows. Since then the cluster lost
//! the costs the Module rollout's profiles found (see `engine_rollout`): the embedded garbage collector's scan of every
//! object on each deletion, per-node pod lists that tested every pod, a live watch feed of 65,536 events, the simulated
//! scheduler's sort of every node for each pod, `managedFields` kept parsed. With those gone, the engine's node,
//! NodeModulesConfig and worker pod watches shared between its reconcilers and slimmed to the fields they read, and
//! mimalloc as the binary's allocator (which this benchmark had lost for a while when the crates were split, running on
//! the C library's malloc), the same rollout took 19.1 s on a quiet machine, peaking at 751 MiB, with 3.39 engine
//! writes and 20.3 store writes per node; through the front door 20.7 s and 699 MiB. Then the simulation's
//! components (kubelets, scheduler, workload and EndpointSlice controllers, Machine Config Operator) shared one pod
//! and one node watch instead of three cached copies of each, and the store kept Nodes and NodeModulesConfigs
//! serialised only: 18.0 s and 543 MiB in-process, 20.7 s and 520 MiB through the front door. With the
//! simulation's components reading what they need of each shared change as it arrives: 17.2 s and 531 MiB
//! in-process, 19.8 s and 519 MiB through the front door. With the simulation's pods and the engine's caches kept
//! in lists of their length, and freed memory handed back to the system at once (mimalloc's purge delay at zero):
//! 20.3 s and 513 MiB in-process, 19.5 s and 502 MiB through the front door. The in-process run is slower: its
//! one process churns through the pages it hands back, where the front door splits that work from the client's.
//! With the simulated kubelets keeping fingerprints of what they last wrote (not whole node statuses and machine
//! records) and the simulation's node cache only what placement reads: 21.0 s and 465 MiB in-process, 19.4 s and 452 MiB
//! through the front door.

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kmm_api::shim::Shim;
use kmm_api::shim::names::INSTALLER_NAMESPACE;
use kmm_cluster::apiserver::ApiServer;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::{self, Context, Family, PodImages, Settings};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

const NODES: usize = 5000;
const ARCHIVE: &str = "https://shims.example.com/spin-v2.tar.gz";

/// The built-in `large` scenario, with the Shim's archive in its registry.
fn scenario() -> Scenario {
    let text = format!(
        "{}\nregistry:\n  shims:\n    - {{url: \"{ARCHIVE}\", binary: containerd-shim-spin-v2}}\n",
        include_str!("../crates/sim/src/scenarios/large.yaml")
    );
    Scenario::parse(&text, "large", None).expect("the scenario parses")
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

/// The resident set size of this process now, from /proc/self/status (`VmRSS`).
fn current_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().to_owned()))
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The store's current resourceVersion: it grows by one per write.
async fn resource_version(client: &kube::Client) -> u64 {
    Api::<Namespace>::all(client.clone())
        .list_metadata(&ListParams::default().limit(1))
        .await
        .ok()
        .and_then(|l| l.metadata.resource_version)
        .and_then(|v| v.parse().ok())
        .unwrap_or_default()
}

/// A client of the in-process API server counting every request that is not a GET into `writes`.
fn counting(server: ApiServer, writes: Arc<AtomicUsize>) -> kube::Client {
    let service = tower::ServiceBuilder::new()
        .map_request(move |request: http::Request<kube::client::Body>| {
            if request.method() != http::Method::GET {
                writes.fetch_add(1, Ordering::Relaxed);
            }
            request
        })
        .service(server);
    kube::Client::new(service, "default")
}

fn main() {
    kmm_tui::allocator::block_on_as_the_binary(bench());
}

/// The benchmark, on a runtime started once the allocator is set.
async fn bench() {
    let begin = Instant::now();
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario()),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts");
    println!(
        "{NODES} nodes ready: {:.1} s",
        begin.elapsed().as_secs_f64()
    );
    let client = cluster.client();

    let created = Arc::new(AtomicUsize::new(0));
    let most_unfinished = Arc::new(AtomicUsize::new(0));
    let (created_count, most) = (created.clone(), most_unfinished.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), INSTALLER_NAMESPACE);
    tokio::spawn(async move {
        let mut seen = HashSet::new();
        let mut unfinished = HashSet::new();
        let stream = watcher(
            pods,
            watcher::Config::default().labels("spinkube.dev/shimName"),
        );
        let mut stream = std::pin::pin!(stream);
        while let Some(Ok(event)) = stream.next().await {
            let (pod, gone) = match event {
                watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => (pod, false),
                watcher::Event::Delete(pod) => (pod, true),
                _ => continue,
            };
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            if seen.insert(uid.clone()) {
                created_count.fetch_add(1, Ordering::Relaxed);
            }
            let phase = pod.status.and_then(|s| s.phase).unwrap_or_default();
            if gone || phase == "Succeeded" || phase == "Failed" {
                unfinished.remove(&uid);
            } else {
                unfinished.insert(uid);
            }
            most.fetch_max(unfinished.len(), Ordering::Relaxed);
        }
    });

    let writes = Arc::new(AtomicUsize::new(0));
    let settings = Settings {
        families: [Family::Shims].into_iter().collect(),
        ..Settings::default()
    };
    let context = Arc::new(
        Context::new(
            counting(cluster.server().clone(), writes.clone()),
            PodImages::default(),
            None,
        )
        .with_settings(settings),
    );
    let stop = CancellationToken::new();
    let engine = tokio::spawn(kmm_engine::run_reconcilers(context, stop.clone()));
    let shim: Shim = serde_json::from_value(serde_json::json!({
        "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
        "metadata": {"name": "spin-v2"},
        "spec": {
            "fetchStrategy": {"anonHttp": {"location": ARCHIVE}},
            "runtimeClass": {"name": "wasmtime-spin-v2", "handler": "spin-v2"},
            "rolloutStrategy": {"type": "rolling", "rolling": {"maxUpdate": "10%"}},
        },
    }))
    .expect("a Shim");
    let shims: Api<Shim> = Api::all(client.clone());
    let version_before = resource_version(&client).await;
    let started = Instant::now();
    shims
        .create(&PostParams::default(), &shim)
        .await
        .expect("the Shim is created");
    let mut reported = Instant::now();
    loop {
        let ready = shims
            .get("spin-v2")
            .await
            .ok()
            .and_then(|s| s.status)
            .map(|s| s.nodes_ready as usize)
            .unwrap_or_default();
        if ready == NODES {
            break;
        }
        // Progress, so that a run cut short on a busy machine still says how far it got.
        if reported.elapsed() >= Duration::from_secs(10) {
            reported = Instant::now();
            println!(
                "  {:.0} s: {ready} nodes provisioned, {} engine writes, RSS {}",
                started.elapsed().as_secs_f64(),
                writes.load(Ordering::Relaxed),
                current_rss()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let took = started.elapsed();
    let engine_writes = writes.load(Ordering::Relaxed);
    let store_writes = resource_version(&client).await - version_before;
    println!(
        "provisioned on every node (nodesReady = {NODES}): {:.1} s",
        took.as_secs_f64()
    );
    println!(
        "engine API writes: {engine_writes} ({:.2} per node); store writes of everyone: {store_writes} ({:.2} per node)",
        engine_writes as f64 / NODES as f64,
        store_writes as f64 / NODES as f64
    );
    let pods = created.load(Ordering::Relaxed);
    println!(
        "installer pods created: {pods} (one per node: {})",
        pods == NODES
    );
    println!(
        "most installers unfinished at once: {} (maxUpdate 10% = {})",
        most_unfinished.load(Ordering::Relaxed),
        NODES / 10
    );
    let object =
        serde_json::to_vec(&shims.get("spin-v2").await.expect("the Shim")).unwrap_or_default();
    println!("Shim object size: {} bytes", object.len());
    println!("peak RSS: {}", peak_rss());
    stop.cancel();
    let _ = engine.await;
    cluster.shutdown().await;
}
