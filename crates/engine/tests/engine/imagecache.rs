//! The ImageCache reconciler on its own: images reach the nodes their lists select and come back when a node loses
//! them, failures are per node with the registry's words, refresh, purge and re-pull annotations do their work once,
//! and a killed engine converges after a restart.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kmm_api::imagecache::{
    ImageCache, ImageCacheActionStatus, PURGE_ANNOTATION, REFRESH_ANNOTATION, REPULL_ANNOTATION,
};
use kmm_engine::{Family, Settings, imagecache};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::common::{Harness, PodRecorder, eventually};

const NS: &str = "caches";
const NGINX: &str = "docker.io/library/nginx:1.27";
const INFERENCE: &str = "ghcr.io/acme/inference:2.1";
const ABSENT: &str = "ghcr.io/acme/inference:2.2";
const BACKEND: [&str; 2] = ["backend-0", "backend-1"];
const EVERY_NODE: [&str; 3] = ["backend-0", "backend-1", "front-0"];

/// The cluster of `imagecache.yaml` with only the cache family running.
async fn start() -> Harness {
    let mut harness = Harness::start("imagecache.yaml").await;
    start_caches(&mut harness);
    harness
}

fn start_caches(harness: &mut Harness) {
    start_caches_refreshing(harness, None);
}

fn start_caches_refreshing(harness: &mut Harness, cache_refresh: Option<Duration>) {
    start_caches_with(
        harness,
        Settings {
            cache_refresh,
            ..Settings::default()
        },
    );
}

/// The cache family alone, with `settings` otherwise.
fn start_caches_with(harness: &mut Harness, settings: Settings) {
    let settings = Settings {
        families: BTreeSet::from([Family::Caches]),
        ..settings
    };
    harness.start_with(move |context, stop| {
        kmm_engine::run_reconcilers(Arc::new((*context).clone().with_settings(settings)), stop)
    });
}

async fn create(client: &Client, name: &str, lists: serde_json::Value) {
    let cache: ImageCache = serde_json::from_value(json!({
        "apiVersion": "kubefledged.io/v1alpha2",
        "kind": "ImageCache",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"cacheSpec": lists},
    }))
    .expect("a cache");
    Api::<ImageCache>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &cache)
        .await
        .expect("the cache is created");
}

async fn cache(client: &Client, name: &str) -> ImageCache {
    Api::<ImageCache>::namespaced(client.clone(), NS)
        .get(name)
        .await
        .expect("the cache")
}

async fn annotate(client: &Client, name: &str, key: &str, value: &str) {
    let patch = json!({"metadata": {"annotations": {key: value}}});
    Api::<ImageCache>::namespaced(client.clone(), NS)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the annotation is written");
}

fn condition<'a>(
    cache: &'a ImageCache,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    cache
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

async fn available(client: &Client, name: &str) -> bool {
    let cache = cache(client, name).await;
    condition(&cache, "Available").is_some_and(|c| c.status == "True")
        && cache
            .status
            .as_ref()
            .is_some_and(|s| s.status == ImageCacheActionStatus::Succeeded)
}

/// Whether `node` reports `image` (exactly) in its `status.images`.
async fn node_holds(client: &Client, node: &str, image: &str) -> bool {
    let node: Node = Api::all(client.clone()).get(node).await.expect("the node");
    node.status
        .and_then(|s| s.images)
        .unwrap_or_default()
        .iter()
        .flat_map(|i| i.names.clone().unwrap_or_default())
        .any(|name| imagecache::canonical(&name) == imagecache::canonical(image))
}

/// Pods of the engine, keyed by node, image and operation.
fn recorder(client: &Client) -> PodRecorder {
    PodRecorder::start(
        client.clone(),
        kmm_api::imagecache::names::SELECTOR,
        |pod: &Pod| {
            let labels = pod.labels();
            format!(
                "{}/{}/{}",
                labels
                    .get(kmm_api::imagecache::names::NODE_LABEL)
                    .cloned()
                    .unwrap_or_default(),
                labels
                    .get(kmm_api::imagecache::names::IMAGE_HASH_LABEL)
                    .cloned()
                    .unwrap_or_default(),
                labels
                    .get(kmm_api::imagecache::names::OPERATION_LABEL)
                    .cloned()
                    .unwrap_or_default(),
            )
        },
    )
}

fn created_with(record: &super::common::PodRecord, operation: &str) -> usize {
    record
        .most_alive
        .keys()
        .filter(|k| k.ends_with(&format!("/{operation}")))
        .count()
}

/// A `crictl rmi` pod of the test's own, as an administrator would run it.
async fn remove_from_node(client: &Client, node: &str, image: &str) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("rmi-{node}"), "namespace": NS},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [{"name": "rmi", "image": "senthilrch/kubefledged-cri-client:v0.10.0",
                            "command": ["crictl", "rmi", image]}],
        },
    }))
    .expect("a pod");
    Api::<Pod>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &pod)
        .await
        .expect("the rmi pod is created");
}

#[tokio::test(start_paused = true)]
async fn images_follow_new_nodes_and_come_back_when_a_node_loses_them() {
    let harness = start().await;
    let client = harness.client();
    create(
        &client,
        "warm",
        json!([{"images": [NGINX, INFERENCE], "nodeSelector": {"tier": "backend"}}]),
    )
    .await;
    eventually(120, "warm is available on the backend nodes", || {
        available(&client, "warm")
    })
    .await;
    let status = cache(&client, "warm").await.status.expect("status");
    assert_eq!(
        (status.nodes_targeted, status.nodes_cached),
        (Some(2), Some(2))
    );
    assert!(status.nodes.is_empty(), "complete nodes are only counted");
    for node in BACKEND {
        assert!(
            node_holds(&client, node, NGINX).await && node_holds(&client, node, INFERENCE).await
        );
    }
    assert!(!node_holds(&client, "front-0", INFERENCE).await);

    // A node that starts matching gets the images, without any refresh.
    let patch = json!({"metadata": {"labels": {"tier": "backend"}}});
    Api::<Node>::all(client.clone())
        .patch("front-0", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("front-0 is relabelled");
    eventually(120, "front-0 holds the images", || async {
        node_holds(&client, "front-0", NGINX).await
            && node_holds(&client, "front-0", INFERENCE).await
    })
    .await;
    eventually(60, "three nodes are cached", || async {
        cache(&client, "warm")
            .await
            .status
            .and_then(|s| s.nodes_cached)
            == Some(3)
    })
    .await;

    // An image removed from a node's store is pulled again.
    remove_from_node(&client, "backend-1", NGINX).await;
    eventually(60, "backend-1 reports nginx gone", || async {
        !node_holds(&client, "backend-1", NGINX).await
    })
    .await;
    eventually(120, "backend-1 holds nginx again", || {
        node_holds(&client, "backend-1", NGINX)
    })
    .await;
    eventually(60, "warm is available again", || available(&client, "warm")).await;
    let annotations = cache(&client, "warm")
        .await
        .metadata
        .annotations
        .unwrap_or_default();
    assert!(!annotations.contains_key(REFRESH_ANNOTATION));
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_image_the_node_store_loses_is_pulled_back() {
    let mut harness = Harness::start("imagecache-gc.yaml").await;
    start_caches(&mut harness);
    let client = harness.client();
    let record = recorder(&client);
    create(&client, "warm", json!([{"images": [NGINX]}])).await;
    eventually(60, "warm is available", || available(&client, "warm")).await;
    assert_eq!(record.record().created.len(), 1);
    eventually(120, "the lost image is pulled again", || async {
        record.record().created.len() == 2
    })
    .await;
    eventually(60, "node-0 holds nginx again", || {
        node_holds(&client, "node-0", NGINX)
    })
    .await;
    eventually(60, "warm is available again", || available(&client, "warm")).await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_image_the_registry_lacks_fails_per_node_with_the_registry_reason() {
    let harness = start().await;
    let client = harness.client();
    create(&client, "warm-ml", json!([{"images": [INFERENCE, ABSENT]}])).await;
    let status = super::common::wait_for(120, "warm-ml settles as Failed", || async {
        let status = cache(&client, "warm-ml").await.status?;
        (status.status == ImageCacheActionStatus::Failed
            && status.failures.get(ABSENT).is_some_and(|f| f.len() == 3))
        .then_some(status)
    })
    .await;
    let failed_nodes: BTreeSet<&str> = status.failures[ABSENT]
        .iter()
        .map(|f| f.node.as_str())
        .collect();
    assert_eq!(failed_nodes, EVERY_NODE.into_iter().collect());
    for failure in &status.failures[ABSENT] {
        assert!(failure.message.contains("not found"), "{failure:?}");
        assert!(["ErrImagePull", "ImagePullBackOff"].contains(&failure.reason.as_str()));
    }
    assert!(!status.failures.contains_key(INFERENCE));
    assert_eq!(status.nodes_cached, Some(0));
    assert_eq!(status.nodes.len(), 3);
    for node in &status.nodes {
        assert_eq!((node.wanted, node.cached), (2, 1));
        assert_eq!(node.missing, [ABSENT]);
        assert_eq!(node.failed.len(), 1);
        assert_eq!(node.failed[0].image, ABSENT);
    }
    let cache = cache(&client, "warm-ml").await;
    let degraded = condition(&cache, "Degraded").expect("Degraded");
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "PullFailed")
    );
    assert!(
        degraded
            .message
            .starts_with("backend-0: ghcr.io/acme/inference:2.2 not found in registry"),
        "{}",
        degraded.message
    );
    let available = condition(&cache, "Available").expect("Available");
    assert_eq!(
        (available.status.as_str(), available.reason.as_str()),
        ("False", "ImagesMissing")
    );
    harness.shutdown().await;
}

/// A failed pull is tried again by a new pod only once the failed one has left: the kubelet keeps pulling for a pod
/// in `ImagePullBackOff`, so a new attempt beside it would pull one image twice on one node. The attempts still
/// count up, each carrying the failure before it, so the back-off grows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_pull_is_retried_by_one_pod_at_a_time() {
    let mut harness = Harness::start("imagecache.yaml").await;
    start_caches_with(
        &mut harness,
        Settings {
            cache_retry: Duration::from_millis(500),
            ..Settings::default()
        },
    );
    let client = harness.client();
    let pods = recorder(&client);
    create(&client, "warm-ml", json!([{"images": [ABSENT]}])).await;
    let third = super::common::wait_for(60, "a third attempt on every node", || async {
        let list = Api::<Pod>::namespaced(client.clone(), NS)
            .list(&Default::default())
            .await
            .ok()?;
        let third: Vec<Pod> = list
            .items
            .into_iter()
            .filter(|p| {
                p.annotations()
                    .get(kmm_api::imagecache::names::ATTEMPT_ANNOTATION)
                    .map(String::as_str)
                    == Some("3")
            })
            .collect();
        (third.len() == EVERY_NODE.len()).then_some(third)
    })
    .await;
    for pod in &third {
        let failure = pod
            .annotations()
            .get(kmm_api::imagecache::names::LAST_FAILURE_ANNOTATION)
            .expect("the failure before it");
        assert!(failure.contains("not found"), "{failure}");
    }
    // The recorder follows a watch of its own, which may still be a few events behind the list above.
    let record =
        super::common::wait_for(60, "the recorder sees three attempts per node", || async {
            let record = pods.record();
            (record.created.len() >= 3 * EVERY_NODE.len()).then_some(record)
        })
        .await;
    assert_eq!(
        record.most_alive.values().copied().max(),
        Some(1),
        "pods alive at once per node and image: {:?}",
        record.most_alive
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_cached_image_counts_for_its_exact_reference_only() {
    let harness = start().await;
    let client = harness.client();
    let record = recorder(&client);
    create(&client, "web-127", json!([{"images": [NGINX]}])).await;
    eventually(120, "nginx:1.27 is cached", || {
        available(&client, "web-127")
    })
    .await;
    // The short name is the same image: cached already, nothing to pull.
    create(&client, "web-short", json!([{"images": ["nginx:1.27"]}])).await;
    eventually(60, "nginx:1.27 (short name) is cached", || {
        available(&client, "web-short")
    })
    .await;
    let short_pulls = record
        .record()
        .most_alive
        .keys()
        .filter(|k| k.contains(&imagecache::image_hash("nginx:1.27")))
        .count();
    assert_eq!(
        short_pulls, 0,
        "the short name resolves to the cached image"
    );
    // nginx:1.2 is another image, however much its name looks like nginx:1.27.
    let nginx_12 = "docker.io/library/nginx:1.2";
    create(&client, "web-12", json!([{"images": [nginx_12]}])).await;
    eventually(120, "nginx:1.2 is cached", || available(&client, "web-12")).await;
    let pulled = record
        .record()
        .most_alive
        .keys()
        .filter(|k| k.contains(&imagecache::image_hash(nginx_12)))
        .count();
    assert_eq!(
        pulled, 3,
        "nginx:1.2 was pulled on every node despite nginx:1.27 there"
    );
    for node in EVERY_NODE {
        assert!(node_holds(&client, node, nginx_12).await);
    }
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn refresh_repull_and_purge_do_their_work_once() {
    let harness = start().await;
    let client = harness.client();
    let record = recorder(&client);
    create(&client, "warm", json!([{"images": [NGINX]}])).await;
    eventually(120, "warm is available", || available(&client, "warm")).await;
    assert_eq!(created_with(&record.record(), "refresh"), 0);

    annotate(&client, "warm", REFRESH_ANNOTATION, "").await;
    eventually(120, "the refresh annotation is removed", || async {
        !cache(&client, "warm")
            .await
            .annotations()
            .contains_key(REFRESH_ANNOTATION)
    })
    .await;
    assert_eq!(
        created_with(&record.record(), "refresh"),
        3,
        "one refresh pull per node"
    );
    assert_eq!(record.record().created.len(), 3 + 3);
    assert_eq!(
        cache(&client, "warm").await.status.expect("status").reason,
        "ImageCacheRefresh"
    );

    annotate(
        &client,
        "warm",
        REPULL_ANNOTATION,
        &format!("{NGINX}@front-0"),
    )
    .await;
    eventually(120, "the re-pull annotation is removed", || async {
        !cache(&client, "warm")
            .await
            .annotations()
            .contains_key(REPULL_ANNOTATION)
    })
    .await;
    assert_eq!(
        record.record().created.len(),
        3 + 3 + 1,
        "one re-pull on front-0 only"
    );

    annotate(&client, "warm", PURGE_ANNOTATION, "true").await;
    eventually(120, "the purge annotation is removed", || async {
        !cache(&client, "warm")
            .await
            .annotations()
            .contains_key(PURGE_ANNOTATION)
    })
    .await;
    for node in EVERY_NODE {
        eventually(60, "the node reports nginx gone", || async {
            !node_holds(&client, node, NGINX).await
        })
        .await;
    }
    let purged = cache(&client, "warm").await;
    let status = purged.status.as_ref().expect("status");
    assert_eq!(
        (status.status, status.reason.as_str()),
        (ImageCacheActionStatus::Succeeded, "ImageCachePurge")
    );
    assert_eq!(created_with(&record.record(), "delete"), 3);
    let before = record.record().created.len();
    // Purged stays purged: later passes pull nothing back.
    tokio::time::sleep(Duration::from_secs(30)).await;
    annotate(&client, "warm", "unrelated", "x").await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(record.record().created.len(), before);
    assert!(!node_holds(&client, "backend-0", NGINX).await);
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_periodic_refresh_pulls_everything_again_when_asked_to() {
    let mut harness = Harness::start("imagecache.yaml").await;
    start_caches_refreshing(&mut harness, Some(Duration::from_secs(600)));
    let client = harness.client();
    let record = recorder(&client);
    create(&client, "warm", json!([{"images": [NGINX]}])).await;
    eventually(120, "warm is available", || available(&client, "warm")).await;
    assert_eq!(
        created_with(&record.record(), "refresh"),
        0,
        "no refresh before the period"
    );
    eventually(900, "the period refreshes every node", || async {
        created_with(&record.record(), "refresh") == 3
    })
    .await;
    eventually(120, "the refresh is done", || async {
        !cache(&client, "warm")
            .await
            .annotations()
            .contains_key(REFRESH_ANNOTATION)
    })
    .await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn spec_edits_pull_added_images_and_delete_removed_ones_and_deletion_leaves_images() {
    let harness = start().await;
    let client = harness.client();
    let record = recorder(&client);
    create(
        &client,
        "warm",
        json!([{"images": [NGINX, INFERENCE], "nodeSelector": {"tier": "backend"}}]),
    )
    .await;
    eventually(120, "warm is available", || available(&client, "warm")).await;
    let etcd = "us.gcr.io/k8s-artifacts-prod/etcd:3.5.4-0";
    let patch = json!({"spec": {"cacheSpec": [{"images": [NGINX, etcd], "nodeSelector": {"tier": "backend"}}]}});
    Api::<ImageCache>::namespaced(client.clone(), NS)
        .patch("warm", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the spec is edited");
    for node in BACKEND {
        eventually(120, "the added image arrives", || {
            node_holds(&client, node, etcd)
        })
        .await;
        eventually(120, "the removed image leaves", || async {
            !node_holds(&client, node, INFERENCE).await
        })
        .await;
    }
    eventually(60, "warm is available with its new spec", || async {
        let cache = cache(&client, "warm").await;
        available(&client, "warm").await
            && cache.status.is_some_and(|s| {
                s.applied_cache_spec == cache.spec.cache_spec && s.reason == "ImageCacheUpdate"
            })
    })
    .await;
    assert_eq!(
        created_with(&record.record(), "delete"),
        2,
        "one delete per backend node"
    );
    assert!(!node_holds(&client, "front-0", NGINX).await);

    // Deleting a cache leaves its images on the nodes; its pods go with it.
    create(
        &client,
        "absent",
        json!([{"images": [ABSENT], "nodeSelector": {"tier": "backend"}}]),
    )
    .await;
    let pods_of = |name: &'static str| {
        let client = client.clone();
        async move {
            Api::<Pod>::namespaced(client, NS)
                .list(&kube::api::ListParams::default().labels(&format!("imagecache={name}")))
                .await
                .map(|l| l.items.len())
                .unwrap_or_default()
        }
    };
    eventually(60, "the failing cache has its pods", || async {
        pods_of("absent").await == 2
    })
    .await;
    for name in ["absent", "warm"] {
        Api::<ImageCache>::namespaced(client.clone(), NS)
            .delete(name, &Default::default())
            .await
            .expect("the cache is deleted");
    }
    eventually(60, "the deleted cache's pods are gone", || async {
        pods_of("absent").await == 0
    })
    .await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    for node in BACKEND {
        assert!(node_holds(&client, node, NGINX).await && node_holds(&client, node, etcd).await);
    }
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_killed_engine_leaves_nothing_processing_and_converges() {
    let mut harness = start().await;
    let client = harness.client();
    let record = recorder(&client);
    create(
        &client,
        "many",
        json!([{"images": [NGINX, INFERENCE, "ghcr.io/jitesoft/nginx:1.23.1", "docker.io/library/nginx:1.2"]}]),
    )
    .await;
    eventually(60, "pulls are under way", || async {
        !record.record().created.is_empty()
    })
    .await;
    harness.kill_engine().await;
    assert_ne!(
        cache(&client, "many").await.status.map(|s| s.status),
        Some(ImageCacheActionStatus::Succeeded),
        "the engine was killed mid-work"
    );
    start_caches(&mut harness);
    eventually(180, "many is available after the restart", || {
        available(&client, "many")
    })
    .await;
    let record = record.record();
    assert!(
        record.most_alive.values().all(|n| *n == 1),
        "never two pods for one node and image: {:?}",
        record.most_alive
    );
    assert_eq!(
        record.created.len(),
        3 * 4,
        "each pair pulled once: {:?}",
        record.created
    );
    harness.shutdown().await;
}

fn upstream_sample() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/imagecache/deploy/kubefledged-imagecache.yaml");
    if path.is_file() {
        Some(path)
    } else {
        println!(
            "skipped: {} is absent (upstream reference data)",
            path.display()
        );
        None
    }
}

#[tokio::test(start_paused = true)]
async fn the_upstream_sample_reaches_full_coverage_unchanged() {
    let Some(path) = upstream_sample() else {
        return;
    };
    let text = std::fs::read_to_string(&path).expect("reading the sample");
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&text).expect("the sample parses");
    let sample: ImageCache = docs
        .into_iter()
        .find(|d| !d.is_null())
        .map(|d| serde_json::from_value(d).expect("an ImageCache"))
        .expect("one document");
    let harness = start().await;
    let client = harness.client();
    let api = Api::<ImageCache>::namespaced(client.clone(), "kube-fledged");
    api.create(&PostParams::default(), &sample)
        .await
        .expect("the sample is created");
    eventually(
        120,
        "the sample is cached everywhere it targets",
        || async {
            let cache = api.get("imagecache1").await.expect("the sample");
            let Some(status) = cache.status.as_ref() else {
                return false;
            };
            status.status == ImageCacheActionStatus::Succeeded
                && status.nodes_targeted == Some(3)
                && status.nodes_cached == Some(3)
                && condition(&cache, "Available").is_some_and(|c| c.status == "True")
        },
    )
    .await;
    for node in BACKEND {
        assert!(node_holds(&client, node, "us.gcr.io/k8s-artifacts-prod/etcd:3.5.4-0").await);
    }
    assert!(node_holds(&client, "front-0", "ghcr.io/jitesoft/nginx:1.23.1").await);
    assert!(
        !node_holds(
            &client,
            "front-0",
            "us.gcr.io/k8s-artifacts-prod/cassandra:v7"
        )
        .await
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_demo_shows_a_complete_cache_a_failing_one_and_a_lost_image_pulled_back() {
    let mut harness = Harness::start("demo").await;
    start_caches(&mut harness);
    let client = harness.client();
    let record = recorder(&client);
    let caches = Api::<ImageCache>::namespaced(client.clone(), "acme");
    eventually(60, "warm-web is available", || async {
        caches
            .get("warm-web")
            .await
            .ok()
            .is_some_and(|c| condition(&c, "Available").is_some_and(|a| a.status == "True"))
    })
    .await;
    eventually(60, "warm-ml is degraded by inference:2.2", || async {
        caches.get("warm-ml").await.ok().is_some_and(|c| {
            condition(&c, "Degraded").is_some_and(|d| {
                d.status == "True"
                    && d.message
                        .contains("ghcr.io/acme/inference:2.2 not found in registry")
            })
        })
    })
    .await;
    let warm_web_pulls = |record: &super::common::PodRecord| {
        record
            .created
            .iter()
            .filter(|name| name.starts_with("warm-web-"))
            .count()
    };
    let first = warm_web_pulls(&record.record());
    // At 150 simulated seconds worker-b-1 loses nginx; the engine pulls it back.
    eventually(60, "nginx is pulled again on worker-b-1", || async {
        warm_web_pulls(&record.record()) == first + 1
    })
    .await;
    eventually(60, "worker-b-1 holds nginx again", || {
        node_holds(&client, "worker-b-1", NGINX)
    })
    .await;
    harness.shutdown().await;
}

/// Pod deletions the engine asked for: one pod by name, or finished pods by selector.
#[derive(Default)]
struct PodDeletes {
    by_name: AtomicUsize,
    by_selector: AtomicUsize,
}

/// `client`, counting in `deletes` the pod deletions sent through it.
fn counting_pod_deletes(client: Client, deletes: Arc<PodDeletes>) -> Client {
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let path = request.uri().path();
        if request.method() == http::Method::DELETE && path.contains("/pods") {
            let counter = if path.ends_with("/pods") {
                &deletes.by_selector
            } else {
                &deletes.by_name
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        let client = client.clone();
        async move { client.send(request).await }
    });
    Client::new(service, NS)
}

/// The pull pods of a rollout leave by a few requests that select the succeeded ones, never by one DELETE each:
/// what the engine writes per (node, image) is the pod's creation and a share of a sweep.
#[tokio::test(start_paused = true)]
async fn finished_pull_pods_leave_by_selector_not_one_delete_each() {
    let mut harness = Harness::start("imagecache.yaml").await;
    let client = harness.client();
    let deletes = Arc::new(PodDeletes::default());
    let counted = counting_pod_deletes(client.clone(), deletes.clone());
    harness.start_with(move |context, stop| {
        let mut context = (*context).clone().with_settings(Settings {
            families: BTreeSet::from([Family::Caches]),
            ..Settings::default()
        });
        context.client = counted;
        kmm_engine::run_reconcilers(Arc::new(context), stop)
    });
    let record = recorder(&client);
    create(&client, "warm", json!([{"images": [NGINX, INFERENCE]}])).await;
    eventually(120, "the cache is available", || available(&client, "warm")).await;
    let pods = Api::<Pod>::namespaced(client.clone(), NS);
    eventually(60, "every pull pod has left", || async {
        pods.list(&Default::default())
            .await
            .expect("pods are listed")
            .items
            .is_empty()
    })
    .await;
    let pulls = created_with(&record.record(), "pull");
    assert_eq!(pulls, EVERY_NODE.len() * 2, "one pull per (node, image)");
    assert_eq!(
        deletes.by_name.load(Ordering::Relaxed),
        0,
        "no pod deleted by name"
    );
    let sweeps = deletes.by_selector.load(Ordering::Relaxed);
    assert!(
        (1..=pulls).contains(&sweeps),
        "{sweeps} sweeps for {pulls} pulls"
    );
    harness.shutdown().await;
}

/// The most pull pods working at once (created and not yet finished), as a watch of the engine's pods sees them.
fn most_working(client: &Client) -> (Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let most = Arc::new(AtomicUsize::new(0));
    let seen = most.clone();
    let pods: Api<Pod> = Api::all(client.clone());
    let config = watcher::Config::default().labels(kmm_api::imagecache::names::SELECTOR);
    let stream = watcher(pods, config).default_backoff().applied_objects();
    let task = tokio::spawn(async move {
        let mut working = BTreeSet::new();
        let mut stream = std::pin::pin!(stream);
        while let Some(pod) = stream.next().await {
            let Ok(pod) = pod else { continue };
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            if matches!(phase, Some("Succeeded" | "Failed")) {
                working.remove(&pod.name_any());
            } else {
                working.insert(pod.name_any());
            }
            seen.fetch_max(working.len(), Ordering::Relaxed);
        }
    });
    (most, task)
}

#[tokio::test(start_paused = true)]
async fn no_more_pull_pods_work_at_once_than_the_cluster_bound() {
    let mut harness = Harness::start("imagecache.yaml").await;
    start_caches_with(
        &mut harness,
        Settings {
            cache_pulls: 2,
            ..Settings::default()
        },
    );
    let client = harness.client();
    let (most, watch) = most_working(&client);
    create(&client, "warm", json!([{"images": [NGINX, INFERENCE]}])).await;
    eventually(120, "the cache is available", || available(&client, "warm")).await;
    for node in EVERY_NODE {
        assert!(
            node_holds(&client, node, NGINX).await && node_holds(&client, node, INFERENCE).await
        );
    }
    // Three nodes of two pods each could pull six images at once: the bound keeps it to two.
    let most = most.load(Ordering::Relaxed);
    assert!((1..=2).contains(&most), "{most} pull pods worked at once");
    watch.abort();
    harness.shutdown().await;
}
