//! The sample's ImageCaches, one per story the Caches pane and the coverage matrix tell:
//!
//! - `acme/warm-web`: two short Docker Hub names on every node; complete but for the nodes that are not ready,
//!   whose puller pods wait.
//! - `acme/warm-ml`: five images, two of them only on GPU nodes; `inference:2.2` is not in the registry (failed
//!   everywhere), `tokenizer:1.4` is being pulled on some nodes, and image GC removed `weights-base:7` from others.
//! - `acme/warm-net`: one image on one pool, complete.
//!
//! Node `status.images`, puller pods, failures and counts are derived from the same per-node rules, so the status
//! agrees with what the nodes report.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use serde_json::{Value, json};

use super::{SampleNode, ago, event, object, pool};
use kmm_api::imagecache::ImageCache;

/// The node label the GPU-only list of `warm-ml` selects.
pub(super) const GPU_LABEL: &str = "kmm.sample/gpu";

/// Namespace of every sample cache.
const NAMESPACE: &str = "acme";

/// The image `warm-ml` wants that the registry does not have.
const ABSENT: &str = "ghcr.io/acme/inference:2.2";

/// What a node does with one image of one cache.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// The node holds it.
    Held,
    /// A puller pod is at work (`Running`, or `Pending` on a node that is not ready).
    Pulling,
    /// The registry lacks it: the pull failed.
    Failed,
    /// Image GC removed it; nothing pulls it yet.
    Removed,
}

/// A sample list: its images as spelled, and the one label it selects nodes by (every node without one).
type SampleList = (Vec<&'static str>, Option<(&'static str, String)>);

/// One sample cache: its lists, and each image's fate on a node.
struct SampleCache {
    name: &'static str,
    lists: Vec<SampleList>,
    fate: fn(&SampleNode, &str) -> Fate,
}

/// What [`caches`] adds to the sample.
pub(super) struct CacheSample {
    /// The ImageCaches.
    pub caches: Vec<Arc<ImageCache>>,
    /// Their puller pods.
    pub pods: Vec<Arc<Pod>>,
    /// Events about the pods.
    pub events: Vec<Arc<Event>>,
}

/// Whether a sample node carries the GPU label.
pub(super) fn gpu(node: &SampleNode) -> bool {
    node.index.is_multiple_of(4)
}

fn sample_caches() -> Vec<SampleCache> {
    vec![
        SampleCache {
            name: "warm-web",
            lists: vec![(vec!["nginx:1.27", "redis:7.4"], None)],
            fate: |node, _| {
                if node.ready {
                    Fate::Held
                } else {
                    Fate::Pulling
                }
            },
        },
        SampleCache {
            name: "warm-ml",
            lists: vec![
                (
                    vec![
                        "ghcr.io/acme/inference:2.1",
                        ABSENT,
                        "ghcr.io/acme/tokenizer:1.4",
                    ],
                    None,
                ),
                (
                    vec![
                        "ghcr.io/acme/weights-base:7",
                        "quay.io/acme/cuda-runtime:12.4",
                    ],
                    Some((GPU_LABEL, "true".to_owned())),
                ),
            ],
            fate: |node, image| match image {
                ABSENT => Fate::Failed,
                "ghcr.io/acme/tokenizer:1.4" if node.index % 6 == 3 => Fate::Pulling,
                "ghcr.io/acme/weights-base:7" if node.index % 12 == 8 => Fate::Removed,
                _ => Fate::Held,
            },
        },
        SampleCache {
            name: "warm-net",
            lists: vec![(
                vec!["quay.io/acme/net-tools:3.2"],
                Some((super::POOL_LABEL, pool(0))),
            )],
            fate: |_, _| Fate::Held,
        },
    ]
}

/// Whether a list's selector picks the node.
fn selects(selector: Option<&(&str, String)>, node: &SampleNode) -> bool {
    match selector {
        None => true,
        Some((key, value)) if *key == GPU_LABEL => (value == "true") == gpu(node),
        Some((_, value)) => *value == node.pool,
    }
}

/// The images a cache wants on a node, as the cache spells them.
fn wanted<'a>(cache: &'a SampleCache, node: &SampleNode) -> Vec<&'a str> {
    let mut images = Vec::new();
    for (list, selector) in &cache.lists {
        if selects(selector.as_ref(), node) {
            for image in list {
                if !images.contains(image) {
                    images.push(*image);
                }
            }
        }
    }
    images
}

/// How a node reports an image in `status.images`: Docker Hub short names written out, as the kubelet does.
fn reported(image: &str) -> String {
    if image.contains('/') {
        image.to_owned()
    } else {
        format!("docker.io/library/{image}")
    }
}

/// Every image a sample node holds, for its `status.images`.
pub(super) fn node_images(node: &SampleNode) -> Vec<String> {
    let mut images = Vec::new();
    for cache in sample_caches() {
        for image in wanted(&cache, node) {
            if (cache.fate)(node, image) == Fate::Held {
                images.push(reported(image));
            }
        }
    }
    images
}

/// The sample's ImageCaches over `nodes`, with their puller pods and events; nothing without nodes.
pub(super) fn caches(nodes: &[SampleNode]) -> CacheSample {
    let mut sample = CacheSample {
        caches: Vec::new(),
        pods: Vec::new(),
        events: Vec::new(),
    };
    if nodes.is_empty() {
        return sample;
    }
    for cache in sample_caches() {
        let mut targeted = 0;
        let mut complete = 0;
        let mut coverage = Vec::new();
        let mut failures: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
        let mut pulling = 0;
        for node in nodes {
            let images = wanted(&cache, node);
            if images.is_empty() {
                continue;
            }
            targeted += 1;
            let mut missing = Vec::new();
            for image in &images {
                let fate = (cache.fate)(node, image);
                match fate {
                    Fate::Held => continue,
                    Fate::Failed => failures.entry(image).or_default().push(json!({
                        "node": node.name, "reason": "ErrImagePull",
                        "message": format!("{image}: not found in registry"),
                    })),
                    Fate::Pulling => pulling += 1,
                    Fate::Removed => {}
                }
                missing.push(*image);
                let failed_with_pod = fate == Fate::Failed && node.index < 2;
                if fate == Fate::Pulling || failed_with_pod {
                    let pod = puller_pod(cache.name, node, image, fate, &mut sample.events);
                    sample.pods.push(pod);
                }
            }
            if missing.is_empty() {
                complete += 1;
            } else {
                coverage.push(json!({
                    "node": node.name, "wanted": images.len(), "cached": images.len() - missing.len(),
                    "missing": missing,
                }));
            }
        }
        let status = status(targeted, complete, pulling, &failures, coverage);
        sample.caches.push(object(json!({
            "apiVersion": "kubefledged.io/v1alpha2", "kind": "ImageCache",
            "metadata": {"name": cache.name, "namespace": NAMESPACE, "creationTimestamp": ago(7200),
                "generation": 1, "uid": format!("uid-cache-{}", cache.name)},
            "spec": {"cacheSpec": cache.lists.iter().map(|(images, selector)| match selector {
                Some((key, value)) => json!({"images": images, "nodeSelector": {*key: value}}),
                None => json!({"images": images}),
            }).collect::<Vec<_>>()},
            "status": status,
        })));
    }
    sample
}

/// Status with upstream's fields and the per-node coverage, counts and conditions the console reads.
fn status(
    targeted: usize,
    complete: usize,
    pulling: usize,
    failures: &BTreeMap<&str, Vec<Value>>,
    coverage: Vec<Value>,
) -> Value {
    let time = ago(900);
    let condition = |type_: &str, status: bool, reason: &str, message: String| {
        json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
            "message": message, "lastTransitionTime": time, "observedGeneration": 1})
    };
    let summary = format!("{complete} of {targeted} nodes hold every image");
    let (outcome, message, conditions) = if let Some((image, entries)) = failures.iter().next() {
        let first = entries
            .first()
            .and_then(|e| e.get("node"))
            .and_then(Value::as_str);
        let why = format!(
            "{}: {image} not found in registry (and {} more nodes)",
            first.unwrap_or_default(),
            entries.len().saturating_sub(1)
        );
        (
            "Failed",
            "Image pull failed for some images. Please see \"failures\" section",
            json!([
                condition("Available", false, "PullFailed", summary),
                condition(
                    "Progressing",
                    pulling > 0,
                    if pulling > 0 { "Pulling" } else { "Idle" },
                    if pulling > 0 {
                        format!("{pulling} pulls under way")
                    } else {
                        String::new()
                    }
                ),
                condition("Degraded", true, "PullFailed", why),
            ]),
        )
    } else if complete < targeted {
        (
            "Processing",
            "Image cache is being updated. Please view the status after some time",
            json!([
                condition("Available", false, "Pulling", summary.clone()),
                condition(
                    "Progressing",
                    true,
                    "Pulling",
                    format!("{pulling} pulls under way; {summary}")
                ),
                condition("Degraded", false, "AsExpected", String::new()),
            ]),
        )
    } else {
        (
            "Succeeded",
            "All requested images pulled succesfully to respective nodes",
            json!([
                condition("Available", true, "Cached", summary),
                condition("Progressing", false, "Idle", String::new()),
                condition("Degraded", false, "AsExpected", String::new()),
            ]),
        )
    };
    json!({
        "status": outcome, "reason": "ImageCacheRefresh", "message": message,
        "failures": failures, "startTime": ago(1200), "completionTime": ago(900),
        "nodesTargeted": targeted, "nodesCached": complete, "nodes": coverage, "conditions": conditions,
    })
}

/// A puller pod in kube-fledged's shape, pulling (`Running`, or `Pending` on a node not ready) or failed, with the
/// kubelet's events about it.
fn puller_pod(
    cache: &str,
    node: &SampleNode,
    image: &str,
    fate: Fate,
    events: &mut Vec<Arc<Event>>,
) -> Arc<Pod> {
    let short = image
        .rsplit('/')
        .next()
        .unwrap_or(image)
        .replace([':', '.'], "-");
    let name = format!("{cache}-{}-{short}", node.name);
    let (phase, waiting) = match fate {
        Fate::Failed => {
            let message = format!("Failed to pull image \"{image}\": {image}: not found");
            events.push(event(
                "Pod",
                Some(NAMESPACE),
                &name,
                true,
                "Failed",
                &message,
                25,
            ));
            (
                "Pending",
                json!({"reason": "ErrImagePull", "message": message}),
            )
        }
        _ if !node.ready => ("Pending", json!({"reason": "ContainerCreating"})),
        _ => {
            let message = format!("Pulling image \"{image}\"");
            events.push(event(
                "Pod",
                Some(NAMESPACE),
                &name,
                false,
                "Pulling",
                &message,
                12,
            ));
            ("Running", json!({"reason": "ContainerCreating"}))
        }
    };
    object(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "creationTimestamp": ago(40),
            "labels": {"app": "kubefledged", "kubefledged": "kubefledged-image-manager", "imagecache": cache}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node.name},
            "initContainers": [{"name": "busybox", "image": "busybox:1.36"}],
            "containers": [{"name": "imagepuller", "image": image, "command": ["/tmp/bin/echo", "Image pulled successfully!"]}],
            "restartPolicy": "Never",
        },
        "status": {"phase": phase, "containerStatuses": [{
            "name": "imagepuller", "image": image, "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": waiting},
        }]},
    }))
}
