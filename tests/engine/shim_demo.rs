//! The demo's manual rollout as a new user walks it: `spin-v2` waits for batch 3, a person approves it, and once its
//! nodes finish the rollout no longer waits for anything, with every batch's start, approval and end on record.

use k8s_openapi::api::events::v1::Event;
use kmm_tui::api::shim::Shim;
use kube::api::{Api, ListParams, Patch, PatchParams};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_the_last_batch_of_the_demo_finishes_the_rollout() {
    let mut harness = Harness::start("demo").await;
    let client = harness.client();
    harness.start_engine();
    wait_shim(&client, "spin-v2 waiting for batch 3", |shim| {
        shim.status
            .as_ref()
            .and_then(|s| s.rollout.as_ref())
            .is_some_and(|r| r.awaiting_approval && r.batch == 3)
    })
    .await;
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
    harness.shutdown().await;
}
