//! The demo's manual rollout as a new user walks it: `spin-v2` waits for batch 3, a person approves it, and once its
//! nodes finish the rollout no longer waits for anything, with every batch's start, approval and end on record.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kmm_api::shim::Shim;
use kmm_api::shim::names::node_batch_annotation;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::common::{Harness, wait_for};

/// The demo's Shim rolled by hand.
const SHIM: &str = "spin-v2";

/// The Shim once its status satisfies `ready`.
async fn wait_shim(client: &kube::Client, what: &str, ready: impl Fn(&Shim) -> bool) -> Shim {
    let shims = Api::<Shim>::all(client.clone());
    wait_for(240, what, || async {
        let shim = shims.get(SHIM).await.ok()?;
        ready(&shim).then_some(shim)
    })
    .await
}

/// The notes of the Shim's events, oldest first.
async fn notes(client: &kube::Client) -> Vec<String> {
    let mut events: Vec<Event> = Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(SHIM))
        .collect();
    events.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
    events
        .into_iter()
        .map(|e| {
            format!(
                "{} {}",
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default()
            )
        })
        .collect()
}

/// The Shim's event notes once one of them contains `text`.
async fn eventually_notes(client: &kube::Client, text: &str) -> Vec<String> {
    wait_for(30, text, || async {
        let notes = notes(client).await;
        notes.iter().any(|n| n.contains(text)).then_some(notes)
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn approving_the_last_batch_of_the_demo_finishes_the_rollout() {
    let mut harness = Harness::start("demo").await;
    let client = harness.client();
    harness.start_engine();
    let held = wait_shim(&client, "spin-v2 waiting for batch 3", |shim| {
        shim.status
            .as_ref()
            .and_then(|s| s.rollout.as_ref())
            .is_some_and(|r| r.awaiting_approval && r.batch == 3)
    })
    .await;
    // The nodes of the batch waiting for approval say so before it is approved.
    let planned: Vec<(String, Option<i32>)> = held
        .status
        .iter()
        .flat_map(|s| s.node_statuses.iter())
        .filter(|n| n.node == "worker-b-3" || n.node == "worker-b-4")
        .map(|n| (n.node.clone(), n.batch))
        .collect();
    assert_eq!(
        planned,
        [
            ("worker-b-3".to_owned(), Some(3)),
            ("worker-b-4".to_owned(), Some(3))
        ]
    );
    Api::<Shim>::all(client.clone())
        .patch(
            SHIM,
            &PatchParams {
                field_manager: Some("kmm-tui-console".to_owned()),
                ..Default::default()
            },
            &Patch::Merge(&json!({"spec": {"rolloutStrategy": {"rolling": {"approvedBatch": 3}}}})),
        )
        .await
        .expect("batch 3 is approved");
    let done = wait_shim(&client, "spin-v2's batch 3 finished", |shim| {
        shim.status.as_ref().is_some_and(|s| {
            s.node_counts
                .as_ref()
                .is_some_and(|c| c.provisioned + c.failed == 6)
        })
    })
    .await;
    let rollout = done.status.and_then(|s| s.rollout).expect("a rollout");
    assert!(!rollout.awaiting_approval, "{rollout:?}");
    assert_eq!((rollout.batch, rollout.batches), (3, 3));
    let approval = rollout
        .approvals
        .last()
        .expect("batch 3's approval is recorded");
    assert_eq!(
        (approval.batch, approval.approved_by.as_str()),
        (3, "kmm-tui-console")
    );

    // Provisioned nodes keep their batch once their installer pods are gone.
    let node = Api::<Node>::all(client.clone())
        .get("worker-b-4")
        .await
        .expect("worker-b-4");
    assert_eq!(
        node.metadata
            .annotations
            .and_then(|a| a.get(&node_batch_annotation(SHIM)).cloned()),
        Some("3".to_owned())
    );

    // Every batch has its own records: started, approved by whom, finished.
    let history = eventually_notes(&client, "batch 3 of 3 finished").await;
    for expected in [
        "BatchStarted batch 1 of 3 started on maintenance-0, worker-b-0",
        "BatchStarted batch 2 of 3 started on worker-b-1, worker-b-2",
        "BatchStarted batch 3 of 3 started on worker-b-3, worker-b-4",
        "BatchApproved batch 3 of 3 approved by kmm-tui-console (approvedBatch 3)",
        "BatchFinished batch 1 of 3 finished",
        "BatchFinished batch 2 of 3 finished",
        "BatchFinished batch 3 of 3 finished",
    ] {
        assert!(
            history.iter().any(|note| note.starts_with(expected)),
            "{expected} missing from {history:#?}"
        );
    }

    // Retrying worker-b-2 (its failed installer pod deleted) completes the rollout.
    Api::<Pod>::namespaced(client.clone(), "kube-system")
        .delete("worker-b-2-spin-v2-install", &DeleteParams::default())
        .await
        .expect("the failed installer pod is deleted");
    let complete = wait_shim(&client, "spin-v2 complete", |shim| {
        shim.status.as_ref().is_some_and(|s| s.nodes_ready == 6)
    })
    .await;
    assert!(
        !complete
            .status
            .and_then(|s| s.rollout)
            .is_some_and(|r| r.awaiting_approval)
    );
    harness.shutdown().await;
}
