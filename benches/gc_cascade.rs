//! Garbage-collector benchmark: one owner with 5,000 dependents deleted in a store holding ~50,000 objects, the
//! shape of a large rollout's worker pods and NMC entries going away at once.
//!
//! The store is filled directly (no HTTP), the cluster-side controllers are started on a two-worker runtime like
//! the server's, and three times are taken:
//! - start: from starting the controllers until a first small cascade (one owner, one dependent) completes, which
//!   includes the start-up sweep over every object;
//! - cascade: from deleting the big owner until its last dependent is gone;
//! - settled: from the same moment until the collector has also handled every dependent's own deletion event
//!   (shown by a last small cascade, since events are handled in order).
//!
//! Measured on the 2-core machine, shared with other builds, 50,005 objects:
//! - before (every deletion event listed every object of every resource to find the deleted object's dependents
//!   and owners; `perf` put the time in `Value::pointer` and `IndexMap::get` under those walks), release build:
//!   start 0.28–0.80 s, cascade 0.17–1.7 s, settled 31–32 s in most runs (2.4 s in the fastest); for those
//!   seconds the collector held a runtime worker;
//! - after (the collector keeps a uid → object and owner → dependents graph from the events it receives), even
//!   in an unoptimised debug build: start 0.55–0.65 s (the one full walk), cascade 0.30–0.32 s, settled
//!   0.35–0.37 s.
//!
//! Run with `cargo bench --bench gc_cascade`.

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kmm_cluster::apiserver::ApiServer;
use kmm_cluster::store::ResourceKey;
use kmm_cluster::store::{DEFAULT_HISTORY, Store};
use serde_json::{Value, json};

const UNRELATED: usize = 45_000;
const UNRELATED_NAMESPACES: usize = 50;
const DEPENDENTS: usize = 5_000;

fn configmap(namespace: &str, name: &str, uid: &str, owner: Option<(&str, &str)>) -> Value {
    let mut value = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "data": {"payload": "x".repeat(128)},
    });
    if let Some((owner_name, owner_uid)) = owner {
        value["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner_name, "uid": owner_uid,
            "controller": true, "blockOwnerDeletion": true,
        }]);
    }
    value
}

async fn wait_until_empty(store: &Store, key: &ResourceKey, namespace: &str) {
    while store.count(key, Some(namespace)) > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn run() {
    let store = Arc::new(Store::in_memory(DEFAULT_HISTORY));
    let key = ResourceKey::new("", "configmaps");
    for i in 0..UNRELATED {
        let ns = format!("ns-{}", i % UNRELATED_NAMESPACES);
        store
            .put(
                &key,
                None,
                configmap(&ns, &format!("cm-{i}"), &format!("u-{i}"), None),
            )
            .expect("filled");
    }
    let owner = store
        .put(&key, None, configmap("owned", "owner", "owner-uid", None))
        .expect("owner");
    for i in 0..DEPENDENTS {
        store
            .put(
                &key,
                None,
                configmap(
                    "owned",
                    &format!("dep-{i}"),
                    &format!("dep-uid-{i}"),
                    Some(("owner", "owner-uid")),
                ),
            )
            .expect("dependent");
    }
    let settled = store
        .put(
            &key,
            None,
            configmap("settled", "settled-owner", "settled-uid", None),
        )
        .expect("settle owner");
    store
        .put(
            &key,
            None,
            configmap(
                "settled",
                "settled-dep",
                "settled-dep-uid",
                Some(("settled-owner", "settled-uid")),
            ),
        )
        .expect("settle dependent");
    let probe = store
        .put(
            &key,
            None,
            configmap("probe", "probe-owner", "probe-uid", None),
        )
        .expect("probe owner");
    store
        .put(
            &key,
            None,
            configmap(
                "probe",
                "probe-dep",
                "probe-dep-uid",
                Some(("probe-owner", "probe-uid")),
            ),
        )
        .expect("probe dependent");
    let objects = store.count(&key, None);

    let server = ApiServer::new(store.clone());
    let started = Instant::now();
    server.start_controllers();
    store
        .delete(&key, "probe", "probe-owner", probe.rv)
        .expect("probe deleted");
    wait_until_empty(&store, &key, "probe").await;
    let start = started.elapsed();

    let deleting = Instant::now();
    store
        .delete(&key, "owned", "owner", owner.rv)
        .expect("owner deleted");
    wait_until_empty(&store, &key, "owned").await;
    let cascade = deleting.elapsed();
    // The collector handles events in order: once it acts on this deletion, it has handled every dependent's.
    store
        .delete(&key, "settled", "settled-owner", settled.rv)
        .expect("settle owner deleted");
    wait_until_empty(&store, &key, "settled").await;
    let settled = deleting.elapsed();
    server.shutdown();

    println!("objects in the store             {objects:>10}");
    println!("start (sweep + first cascade)    {:>10.3?}", start);
    println!("cascade of {DEPENDENTS} dependents      {:>10.3?}", cascade);
    println!("... and every event handled      {:>10.3?}", settled);
}

fn main() {
    kmm_tui::allocator::return_freed_memory_promptly();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(run());
}
