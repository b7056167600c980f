//! The engine's Events through the embedded API server: a reason repeated with a different note is a new Event, so
//! an object's Events read as its history (a batch, a day-0 stage, a cache pull each keep their own record); only an
//! exact repeat counts up the series of the first.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use crate::common::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reason_with_new_content_is_a_new_event_and_a_repeat_joins_its_series() {
    let harness = Harness::start("shims.yaml").await;
    let client = harness.client();
    let object: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "history", "namespace": "default"},
    }))
    .expect("a ConfigMap");
    let object = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &object)
        .await
        .expect("the ConfigMap is created");
    let context = harness.context();
    for note in [
        "stage 1 of 3 done",
        "stage 2 of 3 done",
        "stage 2 of 3 done",
        "stage 3 of 3 done",
    ] {
        context
            .event(&object, false, "StageDone", note.to_owned())
            .await;
    }
    let mut recorded: Vec<(String, i32)> = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("history"))
        .map(|e| (e.note.unwrap_or_default(), e.series.map_or(1, |s| s.count)))
        .collect();
    recorded.sort();
    assert_eq!(
        recorded,
        [
            ("stage 1 of 3 done".to_owned(), 1),
            ("stage 2 of 3 done".to_owned(), 2),
            ("stage 3 of 3 done".to_owned(), 1),
        ]
    );
    harness.shutdown().await;
}
