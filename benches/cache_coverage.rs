//! Scale benchmark of the ImageCache engine: one cache of 5 images on the 5,000-node `large` scenario (with the 5
//! images added to its registry), in-process.
//!
//! Measures the time until every node holds every image, the API writes the engine made per (node, image) pair
//! (counted by a layer around the engine's client: every request that is not a GET), the store's resourceVersion
//! delta over the same time (every write in the cluster, the simulated kubelets' included), the size of the cache
//! object, and peak resident memory. Linux only.
//!
//! Run with `cargo bench --bench cache_coverage`.
//!
//! Where time and memory went (measured through the front door, `serve --with-engine`, see the README): the
//! simulated scheduler checked all 5,000 nodes for every pull pod although each names its node by hostname, and
//! every cache pass read the image lists of all 5,000 nodes anew and put each image reference into canonical form
//! once per (node, image); the two took about half of the CPU. The scheduler now checks the named node alone and a
//! pass rereads only nodes that changed: 224 s of CPU became 140 s for the same coverage. What remains is mostly the
//! simulated kubelets' work per pull (about 8 Events and 4 pod status patches), and the Events are most of the
//! memory. In-process, finished pull pods swept by one delete-collection per image (writes per pair 2.01 → 1.03)
//! and passes over a cache at least 750 ms apart took the rollout from 172–175 s to 146 s: back-to-back passes
//! had taken the CPU the pulls needed. Memory (1.04 GiB) is unchanged.
//!
//! Memory through the front door (`serve --with-engine` on `large` with images of 20, 50, 100, 150 and 200 MiB, one
//! cache of all five, on a 2-core machine shared with other work; load averages given): 129 s at load 2.7–3.7, peak
//! RSS 1,197 MiB, growing with the Events the pulls record (8.3 per pull, 208,000 in all, 254 MB of JSON kept for
//! the Event TTL). With `--event-ttl 2s` the same rollout stayed at 570–594 MiB, so each Event cost about 3 KB
//! resident: its JSON (1.2 KB, 470 bytes of it `managedFields`) sat in the 2 KiB block the serialiser's vector had
//! grown to, because mimalloc keeps a block that a reallocation shrinks by at most half, so `into_boxed_slice` (and
//! `shrink_to_fit` for the strings of parsed trees) freed nothing. The store now copies the JSON and such strings
//! into allocations of their own size: 98 s at load 1.6–1.9 and 118 s at 2.2–3.7 (the load of the 129 s before),
//! peak RSS 1,049 and 1,055 MiB, about 2.3 KB per Event. Engine writes (pods created, delete-collections, cache
//! status, Lease) 1.03 per pair; a node whose image is removed holds it again 0.60–0.95 s later and the cache counts
//! it complete again within 1.24–1.42 s. What is left of the peak: the Events' JSON (about 270 MB), their keys
//! (kept by the store's map, the object and the expiry queue) and about 570 MiB of cluster, simulation and engine
//! state and pulls under way.
//!
//! A heap profile of the Module rollout (heaptrack on a build with the C library's malloc) then showed the
//! simulation holding three cached copies of every pod and every node (its scheduler, workload and EndpointSlice
//! controllers and Machine Config Operator each watched for itself), about 150 MB, and the store's parsed trees of
//! Nodes, NodeModulesConfigs and ConfigMaps about 130 MB. The simulation now watches pods and nodes once, and the
//! store keeps Nodes and NodeModulesConfigs serialised only: in-process 96.6 s and 862 MiB, front door 97.7 s and
//! 875 MiB (1.02 engine writes per pair, re-pull 0.61–1.02 s). The time is where it was: most of the CPU is the
//! simulated kubelets' pod status patches (about 4 per pull, a quarter of the samples of a `perf` profile, an
//! eighth in computing their managedFields) and Events.
//! But the rollout used one core of two: at most 256 pull pods worked at once in the cluster, a slot was freed
//! when a pass saw its pod finished, and passes over a cache are at least 750 ms apart, so about 256 pairs were
//! done a second. The bound is now a setting (`--cache-pulls`) of 512 by default: in-process 71.4 s and 892 MiB
//! (1,024: 57.0 s, 926 MiB). The simulation's components then read what they need of each shared pod and node
//! change (a name, a fingerprint) as it arrives, where their queues had held whole objects while they were busy:
//! in-process 68.1 s and 877 MiB; front door 75.2 and 75.3 s, 889 and 895 MiB, 1.02 engine writes per pair,
//! re-pull 0.39–0.58 s. With lists kept at their length and freed memory handed back at once (mimalloc's purge
//! delay at zero): in-process 72.4 s and 855 MiB; front door 84.5 and 76.9 s, 861 and 867 MiB (the same binary
//! with the default delay: 76.8 s, 888 MiB), 1.02 engine writes per pair, re-pull 0.40–0.50 s. The memory goes
//! down by about 25 MiB, the time within the spread between runs. With the simulated kubelets keeping fingerprints
//! of what they last wrote (a pull changes a node's image list, and each kubelet had kept its whole last status and
//! machine record) and the simulation's node cache only what placement reads: in-process 74.0 s and 797 MiB; front
//! door 76.4 and 71.6 s, 816 and 806 MiB, 1.02 engine writes per pair, re-pull 0.58–0.68 s (the status read over
//! one HTTPS connection; read by a `kubectl get` every 250 ms, which took CPU from the server: 89.3 and 86.9 s).

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kmm_api::imagecache::ImageCache;
use kmm_cluster::sim::scenario::{ImageSpec, Scenario};
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::{Context, Family, PodImages, Settings};
use kube::api::{Api, ListParams, PostParams};
use tokio_util::sync::CancellationToken;

const NODES: usize = 5000;
const IMAGES: [&str; 5] = [
    "registry.bench/cache/web:1.0",
    "registry.bench/cache/api:2.3",
    "registry.bench/cache/worker:0.9",
    "registry.bench/cache/sidecar:5.1",
    "registry.bench/cache/ml-runtime:3.2",
];

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

/// A client that counts the requests that are not GETs (creates, updates, patches, deletes).
fn counting(client: kube::Client, writes: Arc<AtomicUsize>) -> kube::Client {
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        if request.method() != http::Method::GET {
            writes.fetch_add(1, Ordering::Relaxed);
        }
        let client = client.clone();
        async move { client.send(request).await }
    });
    kube::Client::new(service, "default")
}

/// The store's current resourceVersion, from a list's metadata.
async fn resource_version(client: &kube::Client) -> u64 {
    Api::<Namespace>::all(client.clone())
        .list(&ListParams::default().limit(1))
        .await
        .ok()
        .and_then(|l| l.metadata.resource_version)
        .and_then(|v| v.parse().ok())
        .unwrap_or_default()
}

fn main() {
    kmm_tui::allocator::block_on_as_the_binary(bench());
}

/// The benchmark, on a runtime started once the allocator is set.
async fn bench() {
    let mut scenario = Scenario::load("large").expect("the large scenario loads");
    scenario
        .registry
        .images
        .extend(IMAGES.iter().map(|name| ImageSpec {
            name: (*name).to_owned(),
            size_mi_b: 20,
            pull_secret: None,
            entrypoint: None,
            cmd: None,
        }));
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
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "bench"}})).expect("ns");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("the namespace is created");

    let writes = Arc::new(AtomicUsize::new(0));
    let settings = Settings {
        families: BTreeSet::from([Family::Caches]),
        ..Settings::default()
    };
    let context = Arc::new(
        Context::new(
            counting(client.clone(), writes.clone()),
            PodImages::default(),
            None,
        )
        .with_settings(settings),
    );
    let stop = CancellationToken::new();
    let engine = tokio::spawn(kmm_engine::run_reconcilers(context, stop.clone()));

    let cache: ImageCache = serde_json::from_value(serde_json::json!({
        "apiVersion": "kubefledged.io/v1alpha2", "kind": "ImageCache",
        "metadata": {"name": "bench", "namespace": "bench"},
        "spec": {"cacheSpec": [{"images": IMAGES}]},
    }))
    .expect("an ImageCache");
    let caches: Api<ImageCache> = Api::namespaced(client.clone(), "bench");
    let version_before = resource_version(&client).await;
    let started = Instant::now();
    caches
        .create(&PostParams::default(), &cache)
        .await
        .expect("the cache is created");
    let mut largest = 0;
    let mut last_report = Instant::now();
    loop {
        let current = caches.get("bench").await.expect("the cache");
        largest = largest.max(serde_json::to_vec(&current).map_or(0, |b| b.len()));
        let cached = current
            .status
            .as_ref()
            .and_then(|s| s.nodes_cached)
            .unwrap_or_default() as usize;
        if cached == NODES {
            break;
        }
        if last_report.elapsed() > Duration::from_secs(10) {
            let writes = writes.load(Ordering::Relaxed);
            println!(
                "  {:.0} s: {cached} nodes complete; engine API writes so far: {writes} ({:.2} per pair of the complete nodes)",
                started.elapsed().as_secs_f64(),
                writes as f64 / (cached.max(1) * IMAGES.len()) as f64
            );
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let took = started.elapsed();
    let pairs = NODES * IMAGES.len();
    let engine_writes = writes.load(Ordering::Relaxed);
    let version_delta = resource_version(&client).await - version_before;
    println!(
        "full coverage ({NODES} nodes x {} images): {:.1} s ({:.0} pairs/s)",
        IMAGES.len(),
        took.as_secs_f64(),
        pairs as f64 / took.as_secs_f64()
    );
    println!(
        "engine API writes: {engine_writes} ({:.2} per pair)",
        engine_writes as f64 / pairs as f64
    );
    println!(
        "store resourceVersion delta (every writer): {version_delta} ({:.2} per pair)",
        version_delta as f64 / pairs as f64
    );
    println!("largest ImageCache object seen: {} KiB", largest / 1024);
    println!("peak RSS (cluster, simulation and engine): {}", peak_rss());
    stop.cancel();
    let _ = engine.await;
    cluster.shutdown().await;
}
