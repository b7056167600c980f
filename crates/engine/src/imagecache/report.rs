//! The status a pass writes: upstream's fields (the operation in `reason`, the outcome in `status`, `failures` per
//! image) for tools that read kube-fledged's caches, and the coverage and conditions that say which node lacks
//! which image and why.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::plan::{Mode, PairState, Plan, RemovalState};
use crate::runtime::status::set_condition;
use kmm_api::conditions::{AVAILABLE, DEGRADED, PROGRESSING};
use kmm_api::imagecache::PURGE_REASON;
use kmm_api::imagecache::{
    ImageCache, ImageCacheActionStatus, ImageCacheStatus, ImageFailure, MAX_FAILURES_PER_IMAGE,
    MAX_LISTED_NODES, NodeImageCoverage, NodeReasonMessage, PURGE_ANNOTATION, REFRESH_ANNOTATION,
    REPULL_ANNOTATION,
};
use kmm_api::plural;

/// Longest runtime message kept in the status, so thousands of failures cannot outgrow the object.
const MAX_MESSAGE: usize = 300;

/// A failure in a few words a person can act on: `not found in registry`, `registry refused the credentials
/// (check imagePullSecrets)`, ...
pub(super) fn summarise(reason: &str, message: &str) -> String {
    let lower = message.to_ascii_lowercase();
    if reason == "DeadlineExceeded" {
        message.to_owned()
    } else if lower.contains("not found") || lower.contains("manifest unknown") {
        "not found in registry".to_owned()
    } else if lower.contains("401") || lower.contains("unauthorized") || lower.contains("authorize")
    {
        "refused by the registry (check imagePullSecrets)".to_owned()
    } else if lower.contains("connection refused") || lower.contains("dial tcp") {
        "registry unreachable".to_owned()
    } else if lower.contains("in use") {
        "in use by a running container".to_owned()
    } else if message.is_empty() {
        reason.to_owned()
    } else {
        clip(message.lines().next().unwrap_or_default(), 160)
    }
}

fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The operation the status names in `reason`, as upstream records it.
fn operation(cache: &ImageCache, plan: &Plan, processing: bool) -> String {
    let annotations = &cache.metadata.annotations;
    let has = |key: &str| annotations.as_ref().is_some_and(|a| a.contains_key(key));
    let previous = cache.status.as_ref();
    if has(PURGE_ANNOTATION) {
        return PURGE_REASON.to_owned();
    }
    if plan.mode == Mode::Caching && (has(REFRESH_ANNOTATION) || has(REPULL_ANNOTATION)) {
        return "ImageCacheRefresh".to_owned();
    }
    match previous {
        None => "ImageCacheCreate".to_owned(),
        Some(p) if p.observed_generation != cache.metadata.generation => {
            "ImageCacheUpdate".to_owned()
        }
        Some(p) if processing && p.status != ImageCacheActionStatus::Processing => {
            "ImageCacheRefresh".to_owned()
        }
        Some(p) if p.reason == PURGE_REASON && plan.mode == Mode::Caching => {
            "ImageCacheRefresh".to_owned()
        }
        Some(p) => p.reason.clone(),
    }
}

/// Per-node coverage of the pairs.
fn coverage(plan: &Plan) -> Vec<NodeImageCoverage> {
    plan.pairs
        .iter()
        .map(|(node, images)| {
            let mut entry = NodeImageCoverage {
                node: node.clone(),
                wanted: count(images.len()),
                cached: 0,
                missing: Vec::new(),
                pulling: Vec::new(),
                failed: Vec::new(),
            };
            for (image, state) in images {
                match state {
                    PairState::Cached => entry.cached += 1,
                    PairState::Pulling => {
                        entry.missing.push(image.clone());
                        entry.pulling.push(image.clone());
                    }
                    PairState::Missing => entry.missing.push(image.clone()),
                    PairState::Failed { reason, message } => {
                        entry.missing.push(image.clone());
                        entry.failed.push(ImageFailure {
                            image: image.clone(),
                            reason: reason.clone(),
                            message: summarise(reason, message),
                        });
                    }
                }
            }
            entry
        })
        .collect()
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// One failure: node, image, reason, message.
struct Failure<'a> {
    node: &'a str,
    image: &'a str,
    reason: &'a str,
    message: &'a str,
    delete: bool,
}

fn failures(plan: &Plan) -> Vec<Failure<'_>> {
    let pulls = plan.pairs.iter().flat_map(|(node, images)| {
        images.iter().filter_map(move |(image, state)| match state {
            PairState::Failed { reason, message } => Some(Failure {
                node,
                image,
                reason,
                message,
                delete: false,
            }),
            _ => None,
        })
    });
    let deletes = plan
        .removals
        .iter()
        .filter_map(|(node, image, state)| match state {
            RemovalState::Failed { reason, message } => Some(Failure {
                node,
                image,
                reason,
                message,
                delete: true,
            }),
            _ => None,
        });
    pulls.chain(deletes).collect()
}

/// The status after the pass planned in `plan`, at `now`.
pub(super) fn status(cache: &ImageCache, plan: &Plan, now: Timestamp) -> ImageCacheStatus {
    let previous = cache.status.as_ref();
    let processing = plan.processing();
    let failed = failures(plan);
    let targeted = plan.pairs.len();
    let complete = plan
        .pairs
        .values()
        .filter(|images| images.iter().all(|(_, s)| *s == PairState::Cached))
        .count();
    let outcome = match plan.mode {
        Mode::Purged => previous.map_or(ImageCacheActionStatus::Succeeded, |p| p.status),
        _ if processing => ImageCacheActionStatus::Processing,
        _ if !failed.is_empty() => ImageCacheActionStatus::Failed,
        Mode::Caching if targeted == 0 && plan.removals.is_empty() => {
            ImageCacheActionStatus::NoImagesPulledOrDeleted
        }
        _ => ImageCacheActionStatus::Succeeded,
    };
    let reason = operation(cache, plan, processing);
    let lists_images = cache
        .spec
        .cache_spec
        .iter()
        .any(|list| !list.images.is_empty());
    let message = message(
        plan.mode,
        outcome,
        &reason,
        Counts {
            lists_images,
            targeted,
            complete,
            failures: failed.len(),
        },
    );
    let start_time = match previous {
        Some(p) if !(processing && p.status != ImageCacheActionStatus::Processing) => {
            p.start_time.clone()
        }
        _ => Time(now),
    };
    let completion_time = match previous {
        _ if processing => None,
        Some(p) if p.status == outcome && p.completion_time.is_some() => p.completion_time.clone(),
        _ => Some(Time(now)),
    };
    let mut failures_map: BTreeMap<String, Vec<NodeReasonMessage>> = BTreeMap::new();
    for f in &failed {
        let entries = failures_map.entry(f.image.to_owned()).or_default();
        if entries.len() < MAX_FAILURES_PER_IMAGE {
            entries.push(NodeReasonMessage {
                node: f.node.to_owned(),
                reason: f.reason.to_owned(),
                message: clip(f.message, MAX_MESSAGE),
            });
        }
    }
    let mut incomplete: Vec<NodeImageCoverage> = if plan.mode == Mode::Caching {
        coverage(plan)
            .into_iter()
            .filter(|c| !c.missing.is_empty())
            .collect()
    } else {
        Vec::new()
    };
    incomplete.sort_by(|a, b| {
        a.failed
            .is_empty()
            .cmp(&b.failed.is_empty())
            .then_with(|| a.node.cmp(&b.node))
    });
    let omitted = incomplete.len().saturating_sub(MAX_LISTED_NODES);
    incomplete.truncate(MAX_LISTED_NODES);
    let applied_cache_spec = match previous {
        Some(p) if !p.applied_cache_spec.is_empty() && !plan.removals_settled => {
            p.applied_cache_spec.clone()
        }
        _ => cache.spec.cache_spec.clone(),
    };
    let mut conditions = previous.map(|p| p.conditions.clone()).unwrap_or_default();
    let generation = cache.metadata.generation;
    let (available, available_reason, available_message) =
        availability(plan, lists_images, targeted, complete);
    set_condition(
        &mut conditions,
        AVAILABLE,
        available,
        available_reason,
        available_message,
        generation,
    );
    let (progress_reason, progress_message) = progress(plan, processing);
    set_condition(
        &mut conditions,
        PROGRESSING,
        processing,
        progress_reason,
        progress_message,
        generation,
    );
    let (degraded_reason, degraded_message) = degradation(&failed);
    set_condition(
        &mut conditions,
        DEGRADED,
        !failed.is_empty(),
        degraded_reason,
        degraded_message,
        generation,
    );
    ImageCacheStatus {
        status: outcome,
        reason,
        message,
        failures: failures_map,
        start_time,
        completion_time,
        nodes_targeted: Some(count(targeted)),
        nodes_cached: Some(count(complete)),
        nodes: incomplete,
        nodes_omitted: (omitted > 0).then(|| count(omitted)),
        observed_generation: generation,
        applied_cache_spec,
        conditions,
    }
}

/// What the status message counts.
struct Counts {
    /// The spec lists at least one image: a cache with none has nothing to match nodes for.
    lists_images: bool,
    /// Nodes some image list selects.
    targeted: usize,
    /// Of those, nodes that hold every image.
    complete: usize,
    /// Failed node and image pairs.
    failures: usize,
}

fn message(mode: Mode, outcome: ImageCacheActionStatus, operation: &str, counts: Counts) -> String {
    use ImageCacheActionStatus as S;
    let Counts {
        lists_images,
        targeted,
        complete,
        failures,
    } = counts;
    match (mode, outcome) {
        (Mode::Purging, S::Processing) => "Deleting the cached images from their nodes".to_owned(),
        (Mode::Purging | Mode::Purged, S::Failed) => {
            format!("Image deletion failed on {failures} node(s). Please see \"failures\" section")
        }
        (Mode::Purging | Mode::Purged, _) => {
            "All cached images successfully deleted from respective nodes".to_owned()
        }
        (_, S::Processing) => {
            let verb = match operation {
                "ImageCacheCreate" => "being created",
                "ImageCacheUpdate" => "being updated",
                _ => "being refreshed",
            };
            format!(
                "Image cache is {verb}: {complete} of {} hold every image",
                plural::count(targeted, "node")
            )
        }
        (_, S::Failed) => format!(
            "Image pull failed for some images ({}). Please see \"failures\" section",
            plural::count(failures, "node and image pair")
        ),
        (_, S::NoImagesPulledOrDeleted) if !lists_images => {
            "The cache lists no images: spec.cacheSpec has no image to pull".to_owned()
        }
        (_, S::NoImagesPulledOrDeleted) => {
            "No nodes matched the nodeSelector of any image list".to_owned()
        }
        _ => "All requested images pulled successfully to respective nodes".to_owned(),
    }
}

fn availability(
    plan: &Plan,
    lists_images: bool,
    targeted: usize,
    complete: usize,
) -> (bool, &'static str, String) {
    match plan.mode {
        Mode::Purging => (
            false,
            "Purging",
            "the images are being deleted from the nodes (purge asked)".to_owned(),
        ),
        Mode::Purged => (
            false,
            "Purged",
            "the images were deleted from the nodes; annotate kubefledged.io/refresh-imagecache to cache them again"
                .to_owned(),
        ),
        Mode::Caching if !lists_images => (
            false,
            "NoImages",
            "the cache lists no images: add images to spec.cacheSpec".to_owned(),
        ),
        Mode::Caching if targeted == 0 => (
            false,
            "NoMatchingNodes",
            "no node matches the nodeSelector of any image list".to_owned(),
        ),
        Mode::Caching if complete == targeted => (
            true,
            "ImagesCached",
            format!(
                "every image is on all targeted nodes ({})",
                plural::count(targeted, "node")
            ),
        ),
        Mode::Caching => {
            let example = plan.pairs.iter().find_map(|(node, images)| {
                images
                    .iter()
                    .find(|(_, s)| *s != PairState::Cached)
                    .map(|(image, _)| format!("; {node} lacks {image}"))
            });
            (
                false,
                "ImagesMissing",
                format!(
                    "{complete} of {} hold every image{}",
                    plural::count(targeted, "node"),
                    example.unwrap_or_default()
                ),
            )
        }
    }
}

fn progress(plan: &Plan, processing: bool) -> (&'static str, String) {
    if !processing {
        return ("Idle", "nothing to pull or delete".to_owned());
    }
    let states = plan.pairs.values().flatten();
    let (mut pulling, mut waiting) = (0, 0);
    for (_, state) in states {
        match state {
            PairState::Pulling => pulling += 1,
            PairState::Missing => waiting += 1,
            _ => {}
        }
    }
    let deleting = plan
        .removals
        .iter()
        .filter(|r| r.2 == RemovalState::Deleting)
        .count();
    match plan.mode {
        Mode::Purging => (
            "Purging",
            format!("{} being deleted", plural::count(deleting, "image")),
        ),
        _ if deleting > 0 && pulling + waiting == 0 => (
            "Deleting",
            format!(
                "{} that left the spec being deleted from their nodes",
                plural::count(deleting, "image")
            ),
        ),
        _ => {
            let example = plan.pairs.iter().find_map(|(node, images)| {
                images
                    .iter()
                    .find(|(_, s)| *s == PairState::Pulling)
                    .map(|(image, _)| format!("; e.g. {node}: {image}"))
            });
            (
                "Pulling",
                format!(
                    "{pulling} pulls under way, {waiting} waiting for a slot, {deleting} deletes{}",
                    example.unwrap_or_default()
                ),
            )
        }
    }
}

fn degradation(failed: &[Failure]) -> (&'static str, String) {
    let Some(first) = failed.first() else {
        return ("AsExpected", "no pull or delete failed".to_owned());
    };
    let reason = if failed.iter().all(|f| f.delete) {
        "DeleteFailed"
    } else {
        "PullFailed"
    };
    let mut message = format!(
        "{}: {} {}",
        first.node,
        first.image,
        summarise(first.reason, first.message)
    );
    if failed.len() > 1 {
        let nodes: std::collections::BTreeSet<&str> = failed.iter().map(|f| f.node).collect();
        message.push_str(&format!(
            " (and {} more {}; {} affected)",
            failed.len() - 1,
            plural::plural(failed.len() - 1, "failure"),
            plural::count(nodes.len(), "node")
        ));
    }
    (reason, message)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    fn cache() -> ImageCache {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubefledged.io/v1alpha2",
            "kind": "ImageCache",
            "metadata": {"name": "warm-ml", "namespace": "acme", "generation": 1},
            "spec": {"cacheSpec": [{"images": ["ghcr.io/acme/inference:2.2"]}]},
        }))
        .expect("cache")
    }

    fn plan(pairs: BTreeMap<String, Vec<(String, PairState)>>) -> Plan {
        Plan {
            mode: Mode::Caching,
            pairs,
            removals: Vec::new(),
            create: Vec::new(),
            delete: BTreeSet::new(),
            sweep: BTreeSet::new(),
            done_annotations: Vec::new(),
            removals_settled: true,
            asked_undone: false,
            wake_after: None,
        }
    }

    fn not_found(image: &str) -> PairState {
        PairState::Failed {
            reason: "ErrImagePull".to_owned(),
            message: format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": failed to resolve \
                 reference \"{image}\": {image}: not found"
            ),
        }
    }

    #[test]
    fn a_cache_that_lists_no_images_says_so() {
        let mut empty = cache();
        empty.spec.cache_spec.clear();
        let status = status(&empty, &plan(BTreeMap::new()), Timestamp::UNIX_EPOCH);
        assert_eq!(
            status.message,
            "The cache lists no images: spec.cacheSpec has no image to pull"
        );
        let available = status.conditions.iter().find(|c| c.type_ == AVAILABLE);
        assert_eq!(
            available.map(|c| (c.reason.as_str(), c.message.as_str())),
            Some((
                "NoImages",
                "the cache lists no images: add images to spec.cacheSpec"
            ))
        );
    }

    #[test]
    fn five_thousand_failing_nodes_stay_well_under_the_object_limit() {
        let images: Vec<String> = (0..5)
            .map(|i| {
                format!("ghcr.io/acme/some-rather-long-repository-name/inference-server:2.{i}")
            })
            .collect();
        let pairs = (0..5000)
            .map(|n| {
                let states = images.iter().map(|i| (i.clone(), not_found(i))).collect();
                (format!("worker-pool-a-{n:05}"), states)
            })
            .collect();
        let plan = plan(pairs);
        let status = status(&cache(), &plan, Timestamp::now());
        let size = serde_json::to_vec(&status).expect("json").len();
        assert!(size < 128 * 1024, "status is {size} bytes");
        assert_eq!(status.nodes.len(), MAX_LISTED_NODES);
        assert_eq!(status.nodes_omitted, Some(5000 - MAX_LISTED_NODES as i32));
        assert!(
            status
                .failures
                .values()
                .all(|f| f.len() == MAX_FAILURES_PER_IMAGE)
        );
        assert_eq!(status.status, ImageCacheActionStatus::Failed);
    }

    #[test]
    fn conditions_name_the_node_and_image() {
        let image = "ghcr.io/acme/inference:2.2";
        let pairs = BTreeMap::from([
            (
                "worker-a-3".to_owned(),
                vec![
                    ("ghcr.io/acme/inference:2.1".to_owned(), PairState::Cached),
                    (image.to_owned(), not_found(image)),
                ],
            ),
            (
                "worker-a-4".to_owned(),
                vec![
                    ("ghcr.io/acme/inference:2.1".to_owned(), PairState::Pulling),
                    (image.to_owned(), not_found(image)),
                ],
            ),
        ]);
        let status = status(&cache(), &plan(pairs), Timestamp::now());
        let find = |t: &str| {
            status
                .conditions
                .iter()
                .find(|c| c.type_ == t)
                .expect("condition")
                .clone()
        };
        let degraded = find(DEGRADED);
        assert_eq!(
            (degraded.status.as_str(), degraded.reason.as_str()),
            ("True", "PullFailed")
        );
        assert_eq!(
            degraded.message,
            "worker-a-3: ghcr.io/acme/inference:2.2 not found in registry (and 1 more failure; 2 nodes affected)"
        );
        assert_eq!(find(PROGRESSING).status, "True");
        assert_eq!(find(AVAILABLE).reason, "ImagesMissing");
        assert_eq!(status.status, ImageCacheActionStatus::Processing);
        assert_eq!(status.reason, "ImageCacheCreate");
        assert_eq!(status.nodes[1].pulling, ["ghcr.io/acme/inference:2.1"]);
        assert!(status.completion_time.is_none());
    }

    #[test]
    fn failures_are_summarised_in_words_a_person_acts_on() {
        assert_eq!(
            summarise("ErrImagePull", "x: not found"),
            "not found in registry"
        );
        assert_eq!(
            summarise("ErrImagePull", "failed to authorize: 401 Unauthorized"),
            "refused by the registry (check imagePullSecrets)"
        );
        assert_eq!(
            summarise("ErrImagePull", "dial tcp: connect: connection refused"),
            "registry unreachable"
        );
        assert_eq!(
            summarise("DeadlineExceeded", "not done within 5m (pod still Pending)"),
            "not done within 5m (pod still Pending)"
        );
    }
}
