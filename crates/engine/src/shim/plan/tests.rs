use super::*;
use crate::shim::pod_names::pod_name;
use serde_json::json;

fn shim(rolling: serde_json::Value) -> Shim {
    serde_json::from_value(json!({
        "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
        "metadata": {"name": "spin", "uid": "u"},
        "spec": {
            "fetchStrategy": {"anonHttp": {"location": "https://x/spin.tgz"}},
            "runtimeClass": {"name": "spin", "handler": "spin"},
            "rolloutStrategy": {"type": "rolling", "rolling": rolling},
        },
    }))
    .expect("a Shim")
}

fn node(name: &str, label: Option<&str>, hash: Option<&str>) -> Arc<Node> {
    let mut labels = serde_json::Map::new();
    if let Some(label) = label {
        labels.insert("spin".into(), json!(label));
    }
    let mut annotations = serde_json::Map::new();
    if let Some(hash) = hash {
        annotations.insert(names::node_hash_annotation("spin"), json!(hash));
    }
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .expect("a node"),
    )
}

fn pod(node: &str, hash: &str, phase: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": pod_name(node, "spin", Operation::Install),
            "labels": {names::SHIM_NAME: "spin", names::OPERATION: "install"},
            "annotations": {names::NODE_NAME: node, names::POD_SPEC_HASH: hash},
        },
        "status": {"phase": phase},
    }))
    .expect("a pod")
}

fn run(shim: &Shim, nodes: &[Arc<Node>], pods: &[Pod]) -> Plan {
    plan(&Inputs {
        shim,
        hash: "h",
        nodes,
        pods,
    })
}

fn five(provisioned: usize) -> Vec<Arc<Node>> {
    (0..5)
        .map(|i| {
            let done = i < provisioned;
            node(
                &format!("n{i}"),
                done.then_some(names::PROVISIONED),
                done.then_some("h"),
            )
        })
        .collect()
}

fn created(plan: &Plan) -> Vec<(&str, Option<i32>)> {
    plan.create
        .iter()
        .map(|p| (p.node.as_str(), p.batch))
        .collect()
}

#[test]
fn max_update_sizes_the_batches_by_the_api_rule() {
    let percent = run(&shim(json!({"maxUpdate": "40%"})), &five(0), &[]);
    assert_eq!(created(&percent), [("n0", Some(1)), ("n1", Some(1))]);
    let few = run(&shim(json!({"maxUpdate": "10%"})), &five(0), &[]);
    assert_eq!(created(&few), [("n0", Some(1))]);
    assert!(few.invalid_spec.is_none());
}

#[test]
fn an_invalid_max_update_starts_nothing_and_says_why() {
    for invalid in [
        json!("3"),
        json!(0),
        json!("0%"),
        json!("150%"),
        json!(" 25%"),
    ] {
        let plan = run(&shim(json!({"maxUpdate": invalid})), &five(0), &[]);
        assert!(plan.create.is_empty(), "maxUpdate {invalid} started pods");
        let why = plan
            .invalid_spec
            .as_deref()
            .expect("the refusal is reported");
        assert!(why.contains("maxUpdate"), "{why}");
        let warning = plan
            .notices
            .iter()
            .find(|n| n.reason == kmm_api::shim::reasons::INVALID_SPEC)
            .expect("a warning event");
        assert!(warning.warning);
        assert_eq!(plan.views.len(), 5, "every node says why it waits");
    }
}

#[test]
fn manual_batches_start_only_once_approved() {
    let held = run(
        &shim(json!({"maxUpdate": 2, "approval": "Manual"})),
        &five(0),
        &[],
    );
    assert!(held.create.is_empty());
    let rollout = held.rollout.clone().expect("a rollout");
    assert_eq!(
        (rollout.batch, rollout.batches, rollout.awaiting_approval),
        (1, 3, true)
    );

    let first = shim(json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 1}));
    assert_eq!(
        created(&run(&first, &five(0), &[])),
        [("n0", Some(1)), ("n1", Some(1))]
    );
    let after_first = run(&first, &five(2), &[]);
    assert!(after_first.create.is_empty());
    assert_eq!(
        after_first.rollout.map(|r| (r.batch, r.awaiting_approval)),
        Some((2, true))
    );

    let second = shim(json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 2}));
    assert_eq!(
        created(&run(&second, &five(2), &[])),
        [("n2", Some(2)), ("n3", Some(2))]
    );
}

#[test]
fn waiting_nodes_name_the_batch_they_are_planned_in() {
    let held = run(
        &shim(json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 1})),
        &five(2),
        &[],
    );
    let mut planned: Vec<(&str, Option<i32>)> = held
        .views
        .iter()
        .map(|v| (v.node.as_str(), v.batch))
        .collect();
    planned.sort();
    assert_eq!(planned, [("n2", Some(2)), ("n3", Some(2)), ("n4", Some(3))]);
}

#[test]
fn a_batch_with_more_failures_than_allowed_is_recorded_as_failed() {
    let rolling = shim(json!({"maxUpdate": 2}));
    let plan = run(
        &rolling,
        &five(0),
        &[pod("n0", "h", "Succeeded"), pod("n1", "h", "Failed")],
    );
    let reasons: Vec<&str> = plan.notices.iter().map(|n| n.reason).collect();
    assert!(reasons.contains(&"BatchFailed"), "{reasons:?}");
    assert!(!reasons.contains(&"BatchFinished"), "{reasons:?}");
}

#[test]
fn unfinished_pods_of_any_spec_use_up_the_batch_and_a_batch_waits_for_the_last() {
    let rolling = shim(json!({"maxUpdate": 2}));
    let nodes = five(0);
    // A pod of an older spec still runs on n4: one slot left, and batch 1 starts on one node.
    let plan = run(&rolling, &nodes, &[pod("n4", "old", "Running")]);
    assert_eq!(created(&plan), [("n0", Some(1))]);
    // Batch 1 half done, half running: batch 2 waits for it.
    let plan = run(&rolling, &five(1), &[pod("n1", "h", "Running")]);
    assert!(plan.create.is_empty());
    // A batch cut short (one of two started) is filled up first.
    let plan = run(&rolling, &five(1), &[]);
    assert_eq!(created(&plan), [("n1", Some(1))]);
}

#[test]
fn a_finished_install_labels_its_node_before_its_pod_goes() {
    let rolling = shim(json!({"maxUpdate": 2}));
    let plan = run(&rolling, &five(0), &[pod("n0", "h", "Succeeded")]);
    assert_eq!(
        plan.node_writes,
        [NodeWrite {
            node: "n0".into(),
            label: Some(Some(names::PROVISIONED.into())),
            hash: Some(Some("h".into())),
            batch: None,
            failed_batch: None,
        }]
    );
    assert!(plan.delete.is_empty());
    let nodes = five(1);
    let plan = run(&rolling, &nodes, &[pod("n0", "h", "Succeeded")]);
    assert!(plan.node_writes.is_empty());
    assert_eq!(plan.delete, [pod_name("n0", "spin", Operation::Install)]);
}

#[test]
fn a_failure_stops_the_rollout_unless_tolerated() {
    let nodes = vec![
        node("n0", Some(names::FAILED), None),
        node("n1", Some(names::PROVISIONED), Some("h")),
        node("n2", None, None),
    ];
    let failed = [pod("n0", "h", "Failed")];
    let plan = run(&shim(json!({"maxUpdate": 2})), &nodes, &failed);
    assert!(plan.create.is_empty());
    assert!(plan.rollout.is_some_and(|r| r.stopped));
    assert_eq!(plan.install_failures.len(), 1);
    let tolerant = run(
        &shim(json!({"maxUpdate": 2, "maxFailures": 1})),
        &nodes,
        &failed,
    );
    assert_eq!(created(&tolerant), [("n2", Some(2))]);
}

#[test]
fn a_spec_change_rolls_every_node_again() {
    let plan = run(&shim(json!({"maxUpdate": 2})), &five(5), &[]);
    assert!(plan.create.is_empty());
    assert_eq!(plan.provisioned, 5);
    let changed = plan_with_hash(&shim(json!({"maxUpdate": 2})), &five(5), "h2");
    assert_eq!(created(&changed), [("n0", Some(1)), ("n1", Some(1))]);
}

#[test]
fn a_paused_rollout_starts_nothing() {
    let plan = run(
        &shim(json!({"maxUpdate": 2, "paused": true})),
        &five(0),
        &[],
    );
    assert!(plan.create.is_empty());
    assert!(plan.paused);
    assert_eq!(plan.waiting, 5);
}

#[test]
fn a_node_no_platform_fits_fails_without_falling_back_to_anon_http() {
    let mut platformed = shim(json!({"maxUpdate": 2}));
    platformed.spec.fetch_strategy = serde_json::from_value(json!({
        "anonHttp": {"location": "https://x/any"},
        "platforms": [{"os": "linux", "arch": "arm64", "location": "https://x/arm"}],
    }))
    .expect("a fetch strategy");
    let plan = run(&platformed, &five(0), &[]);
    assert!(plan.create.is_empty());
    assert_eq!(plan.no_artifact.len(), 5);
    assert!(
        plan.node_writes
            .iter()
            .all(|w| w.label == Some(Some(names::FAILED.to_owned())))
    );
}

#[test]
fn a_deleting_shim_uninstalls_every_node_that_carries_it_at_once() {
    let mut deleting = shim(json!({"maxUpdate": 1}));
    deleting.metadata.deletion_timestamp =
        Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).expect("a time"));
    let plan = run(&deleting, &five(3), &[]);
    let uninstalls: Vec<&str> = plan
        .create
        .iter()
        .filter(|p| p.operation == Operation::Uninstall)
        .map(|p| p.node.as_str())
        .collect();
    assert_eq!(uninstalls, ["n0", "n1", "n2"]);
    assert_eq!(plan.uninstalling, 3);
}

fn plan_with_hash(shim: &Shim, nodes: &[Arc<Node>], hash: &str) -> Plan {
    plan(&Inputs {
        shim,
        hash,
        nodes,
        pods: &[],
    })
}

fn uninstall_pod(node: &str, phase: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": pod_name(node, "spin", Operation::Uninstall),
            "labels": {names::SHIM_NAME: "spin", names::OPERATION: "uninstall"},
            "annotations": {names::NODE_NAME: node},
        },
        "status": {"phase": phase},
    }))
    .expect("a pod")
}

fn reasons(plan: &Plan) -> Vec<&'static str> {
    plan.notices.iter().map(|n| n.reason).collect()
}

#[test]
fn a_batch_is_told_over_before_the_next_starts_and_a_batch_cut_short_continues() {
    let rolling = shim(json!({"maxUpdate": 2}));
    let done = [pod("n0", "h", "Succeeded"), pod("n1", "h", "Succeeded")];
    let next = run(&rolling, &five(0), &done);
    assert_eq!(reasons(&next), ["BatchFinished", "BatchStarted"]);
    assert!(next.notices[0].note.starts_with("batch 1 of 3 finished"));
    assert_eq!(created(&next), [("n2", Some(2)), ("n3", Some(2))]);

    // One of batch 1's two nodes ended: the batch is not over, it fills up rather than finishing.
    let cut_short = run(&rolling, &five(0), &[pod("n0", "h", "Succeeded")]);
    assert_eq!(reasons(&cut_short), ["BatchStarted"]);
    assert!(
        cut_short.notices[0]
            .note
            .contains("batch 1 of 3 continued on n1"),
        "{:?}",
        cut_short.notices
    );
    assert_eq!(created(&cut_short), [("n1", Some(1))]);
}

#[test]
fn a_node_selected_again_is_cleared_after_its_uninstall_before_it_installs_afresh() {
    let rolling = shim(json!({"maxUpdate": 5}));
    let carried = vec![node("n0", Some(names::PROVISIONED), Some("h"))];
    let uninstalled = [uninstall_pod("n0", "Succeeded")];

    let first = run(&rolling, &carried, &uninstalled);
    assert_eq!(
        first.node_writes,
        [NodeWrite {
            node: "n0".into(),
            label: Some(None),
            hash: Some(None),
            batch: None,
            failed_batch: None,
        }]
    );
    assert!(first.create.is_empty() && first.delete.is_empty());
    assert_eq!((first.waiting, first.provisioned), (1, 0));

    let cleared = vec![node("n0", None, None)];
    let second = run(&rolling, &cleared, &uninstalled);
    assert_eq!(
        second.delete,
        [pod_name("n0", "spin", Operation::Uninstall)]
    );
    assert!(second.create.is_empty());

    assert_eq!(created(&run(&rolling, &cleared, &[])), [("n0", Some(1))]);
}

#[test]
fn a_node_left_while_installing_waits_for_its_installer_before_uninstalling() {
    let mut elsewhere = shim(json!({"maxUpdate": 5}));
    elsewhere.spec.node_selector = Some([("zone".to_owned(), "b".to_owned())].into());
    let plan = run(
        &elsewhere,
        &[node("n0", None, None)],
        &[pod("n0", "h", "Running")],
    );
    assert!(plan.create.is_empty() && plan.delete.is_empty());
    assert_eq!((plan.installing, plan.uninstalling), (1, 1));
    assert_eq!(plan.views[0].state, ShimNodeState::Uninstall);

    let finished = run(
        &elsewhere,
        &[node("n0", Some(names::PROVISIONED), Some("h"))],
        &[pod("n0", "h", "Succeeded")],
    );
    assert_eq!(
        finished.delete,
        [pod_name("n0", "spin", Operation::Install)]
    );
    let uninstalls: Vec<(&str, Operation)> = finished
        .create
        .iter()
        .map(|p| (p.node.as_str(), p.operation))
        .collect();
    assert_eq!(uninstalls, [("n0", Operation::Uninstall)]);
}

#[test]
fn a_paused_rollout_keeps_the_batch_it_waits_to_approve() {
    // Batches 1 and 2 of 3 are done, batch 3 is not approved, and the rollout is paused.
    let paused =
        shim(json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 2, "paused": true}));
    let plan = run(&paused, &five(4), &[]);
    assert!(plan.create.is_empty());
    assert_eq!(
        plan.rollout
            .map(|r| (r.batch, r.batches, r.awaiting_approval)),
        Some((3, 3, true))
    );
    assert_eq!(
        plan.views[0].message.as_deref(),
        Some("the rollout is paused; batch 3 waits for approval")
    );

    // Approved while paused: batch 3 is still the one the rollout holds before, and it starts once resumed.
    let approved =
        shim(json!({"maxUpdate": 2, "approval": "Manual", "approvedBatch": 3, "paused": true}));
    let plan = run(&approved, &five(4), &[]);
    assert!(plan.create.is_empty());
    assert_eq!(
        plan.rollout.map(|r| (r.batch, r.awaiting_approval)),
        Some((3, false))
    );
}

/// `node` with the failed-batch annotation `value`.
fn failed_node(name: &str, value: &str) -> Arc<Node> {
    let mut node = Arc::unwrap_or_clone(node(name, Some(names::FAILED), None));
    node.metadata.annotations.get_or_insert_default().insert(
        names::node_failed_batch_annotation("spin"),
        value.to_owned(),
    );
    Arc::new(node)
}

#[test]
fn a_failed_install_records_its_batch_and_a_retry_installs_again_in_it() {
    let tolerant = shim(json!({"maxUpdate": 1, "maxFailures": 1}));
    let mut failed = pod("n0", "h", "Failed");
    failed
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(names::POD_BATCH.to_owned(), "1".to_owned());
    let plan = run(&tolerant, &five(0), &[failed]);
    assert_eq!(
        plan.node_writes[0].failed_batch,
        Some(Some("h/1".to_owned()))
    );

    // n0 failed in batch 1, batches 2 and 3 provisioned n1 and n2, and n0's failed pod was deleted to retry it.
    let provisioned = |name: &str| node(name, Some(names::PROVISIONED), Some("h"));
    let nodes = vec![
        failed_node("n0", "h/1"),
        provisioned("n1"),
        provisioned("n2"),
        node("n3", None, None),
        node("n4", None, None),
    ];
    let plan = run(&tolerant, &nodes, &[]);
    assert_eq!(created(&plan), [("n0", Some(1))]);
    assert_eq!(reasons(&plan), ["Retrying"]);
    assert_eq!(plan.notices[0].note, "batch 1 of 5: installing again on n0");
    assert_eq!(plan.rollout.map(|r| (r.batch, r.batches)), Some((3, 5)));

    // Its retry ending is not a batch ending; batch 4 starts on n3 afterwards, numbered as before.
    let mut retried = pod("n0", "h", "Succeeded");
    retried
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(names::POD_BATCH.to_owned(), "1".to_owned());
    let plan = run(&tolerant, &nodes, &[retried]);
    assert!(
        !reasons(&plan).contains(&"BatchFinished"),
        "{:?}",
        plan.notices
    );
    assert_eq!(created(&plan), [("n3", Some(4))]);

    // A failure recorded under another spec is no retry: the node waits for its batch like any other.
    let plan = run(
        &tolerant,
        &[failed_node("n0", "old/1"), provisioned("n1")],
        &[],
    );
    assert_eq!(reasons(&plan), ["BatchStarted"]);
}
