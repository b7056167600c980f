use super::*;
use crate::imagecache::reference::NodeImagesMemo;

fn cache(annotations: serde_json::Value, status: Option<serde_json::Value>) -> ImageCache {
    let mut value = serde_json::json!({
        "apiVersion": "kubefledged.io/v1alpha2",
        "kind": "ImageCache",
        "metadata": {"name": "warm", "namespace": "ns", "uid": "u", "generation": 1,
                     "annotations": annotations},
        "spec": {"cacheSpec": [{"images": ["nginx:1.27"]}]},
    });
    if let Some(status) = status {
        value["status"] = status;
    }
    serde_json::from_value(value).expect("cache")
}

fn node(name: &str, images: &[&str]) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "status": {"images": images.iter().map(|i| serde_json::json!({"names": [i]})).collect::<Vec<_>>()},
        }))
        .expect("node"),
    )
}

fn pod(node: &str, operation: Operation, attempt: u32, age: u64, verdict: Verdict) -> PodView {
    let now = Timestamp::now();
    PodView {
        name: format!("{node}-{}{attempt}", operation.as_str()),
        node: node.to_owned(),
        image: "nginx:1.27".to_owned(),
        operation,
        attempt,
        last_failure: None,
        created: now - Duration::from_secs(age),
        verdict,
    }
}

fn run(cache: &ImageCache, nodes: &[Arc<Node>], pods: Vec<PodView>, busy: Busy) -> Plan {
    let mut memo = NodeImagesMemo::default();
    plan(Observed {
        cache,
        nodes,
        images: memo.refresh(nodes),
        pods,
        leaving: Default::default(),
        busy,
        now: Timestamp::now(),
        limits: Limits::default(),
    })
}

fn failed() -> Verdict {
    Verdict::Failed {
        reason: "ErrImagePull".to_owned(),
        message: "nginx:1.27: not found".to_owned(),
    }
}

#[test]
fn a_failed_pull_is_retried_after_the_back_off_of_its_attempt() {
    let cache = cache(serde_json::json!({}), None);
    let nodes = [node("a", &[])];
    // Attempt 3 waits 2 minutes: at 60 s it is not due.
    let early = run(
        &cache,
        &nodes,
        vec![pod("a", Operation::Pull, 3, 60, failed())],
        Busy::default(),
    );
    assert!(early.create.is_empty() && early.delete.is_empty());
    assert!(matches!(early.pairs["a"][0].1, PairState::Failed { .. }));
    assert!(
        !early.processing(),
        "a failure waiting for its retry is not work in flight"
    );
    let due = run(
        &cache,
        &nodes,
        vec![pod("a", Operation::Pull, 3, 121, failed())],
        Busy::default(),
    );
    assert_eq!(due.create.len(), 1);
    assert_eq!(due.create[0].attempt, 4);
    assert_eq!(
        due.create[0].last_failure.as_deref(),
        Some("ErrImagePull: nginx:1.27: not found")
    );
    assert!(due.delete.contains("a-pull3"));
    assert_eq!(
        due.create[0].replaces.as_deref(),
        Some("a-pull3"),
        "the retry waits for the failed pod to leave"
    );
}

#[test]
fn nothing_starts_for_an_image_whose_pod_is_still_leaving() {
    let cache = cache(serde_json::json!({}), None);
    let nodes = [node("a", &[])];
    let mut memo = NodeImagesMemo::default();
    let plan = plan(Observed {
        cache: &cache,
        nodes: &nodes,
        images: memo.refresh(&nodes),
        pods: Vec::new(),
        leaving: [("a".to_owned(), "nginx:1.27".to_owned())].into(),
        busy: Busy::default(),
        now: Timestamp::now(),
        limits: Limits::default(),
    });
    assert!(plan.create.is_empty(), "{:?}", plan.create);
    assert_eq!(plan.pairs["a"][0].1, PairState::Pulling);
}

#[test]
fn the_bounds_hold_across_caches() {
    let cache = cache(serde_json::json!({}), None);
    let nodes = [node("a", &[]), node("b", &[]), node("c", &[])];
    let busy = Busy {
        total: Limits::default().cluster - 1,
        per_node: HashMap::new(),
    };
    let plan = run(&cache, &nodes, Vec::new(), busy);
    assert_eq!(plan.create.len(), 1);
    let full_node = Busy {
        total: 2,
        per_node: HashMap::from([("a".to_owned(), 2)]),
    };
    let plan = run(&cache, &nodes[..1], Vec::new(), full_node);
    assert!(plan.create.is_empty());
    assert_eq!(plan.pairs["a"][0].1, PairState::Missing);
    assert!(plan.processing() && plan.wake_after.is_some());
}

#[test]
fn a_pulled_image_the_node_lost_is_pulled_again_once_the_report_is_due() {
    let cache = cache(serde_json::json!({}), None);
    let nodes = [node("a", &[])];
    let finished = Timestamp::now() - Duration::from_secs(5);
    let fresh = run(
        &cache,
        &nodes,
        vec![pod(
            "a",
            Operation::Pull,
            1,
            10,
            Verdict::Succeeded(Some(finished)),
        )],
        Busy::default(),
    );
    assert!(
        fresh.create.is_empty(),
        "the node may not have reported it yet"
    );
    let old = Timestamp::now() - Duration::from_secs(60);
    let lost = run(
        &cache,
        &nodes,
        vec![pod(
            "a",
            Operation::Pull,
            1,
            70,
            Verdict::Succeeded(Some(old)),
        )],
        Busy::default(),
    );
    assert_eq!(lost.create.len(), 1);
    assert!(lost.delete.contains("a-pull1"));
    let held = run(
        &cache,
        &[node("a", &["docker.io/library/nginx:1.27"])],
        vec![pod(
            "a",
            Operation::Pull,
            1,
            70,
            Verdict::Succeeded(Some(old)),
        )],
        Busy::default(),
    );
    assert!(held.create.is_empty() && held.delete.is_empty());
    let swept: Vec<_> = held.sweep.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(swept, ["a-pull1"], "a finished pull leaves with the sweep");
    assert_eq!(held.pairs["a"][0].1, PairState::Cached);
}

#[test]
fn a_purge_deletes_what_the_nodes_hold_then_the_cache_stays_purged() {
    let purging = cache(serde_json::json!({PURGE_ANNOTATION: ""}), None);
    let nodes = [node("a", &["nginx:1.27"]), node("b", &[])];
    let plan = run(&purging, &nodes, Vec::new(), Busy::default());
    assert_eq!(plan.mode, Mode::Purging);
    assert_eq!(plan.create.len(), 1);
    assert_eq!(plan.create[0].operation, Operation::Delete);
    assert!(plan.done_annotations.is_empty() && plan.processing());
    let done = run(
        &purging,
        &[node("a", &[]), node("b", &[])],
        vec![pod("a", Operation::Delete, 1, 3, Verdict::Succeeded(None))],
        Busy::default(),
    );
    assert_eq!(done.done_annotations, [PURGE_ANNOTATION]);
    assert!(!done.processing());
    let purged = cache(
        serde_json::json!({}),
        Some(
            serde_json::json!({"status": "Succeeded", "reason": PURGE_REASON, "message": "",
                                "startTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}),
        ),
    );
    let idle = run(&purged, &[node("a", &[])], Vec::new(), Busy::default());
    assert_eq!(idle.mode, Mode::Purged);
    assert!(idle.create.is_empty() && !idle.processing());
}
