//! The Job controller: pods run to completion within the Job's parallelism, a Job completes after enough successes
//! and fails once its backoff limit is exceeded, and the status and events say so.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use super::workloads::{SCENARIO, eventually};

fn job(name: &str, completions: i32, parallelism: i32, exit_code: i32) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "backoffLimit": 1,
            "template": {
                "metadata": {"annotations": {"sim.kmm-tui.io/exit-code": exit_code.to_string()}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10", "command": ["echo", "done"]}]
                }
            }
        }
    }))
    .expect("a Job")
}

/// `(active, succeeded, failed)` and the type and reason of the Job's true condition, if any.
async fn state(api: &Api<Job>, name: &str) -> Option<(i32, i32, i32, Option<(String, String)>)> {
    let status = api.get(name).await.ok()?.status?;
    let finished = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.status == "True")
        .map(|c| (c.type_.clone(), c.reason.clone().unwrap_or_default()));
    Some((
        status.active.unwrap_or(0),
        status.succeeded.unwrap_or(0),
        status.failed.unwrap_or(0),
        finished,
    ))
}

#[tokio::test(start_paused = true)]
async fn jobs_complete_after_their_completions_and_fail_past_their_backoff_limit() {
    let cluster = super::cluster_on(SCENARIO).await;
    let client = cluster.client();
    let api = Api::<Job>::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &job("batch", 3, 2, 0))
        .await
        .expect("the Job is created");
    api.create(&PostParams::default(), &job("doomed", 1, 1, 1))
        .await
        .expect("the failing Job is created");

    let most_active = std::cell::Cell::new(0);
    eventually(300, "three pods succeed and the Job completes", || async {
        let state = state(&api, "batch").await;
        if let Some((active, ..)) = &state {
            most_active.set(most_active.get().max(*active));
        }
        state
            == Some((
                0,
                3,
                0,
                Some(("Complete".to_owned(), "Completed".to_owned())),
            ))
    })
    .await;
    assert!(
        most_active.get() <= 2,
        "never more pods than its parallelism"
    );
    let pods = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels("batch.kubernetes.io/job-name=batch"))
        .await
        .expect("listing the Job's pods")
        .items;
    assert_eq!(pods.len(), 3, "one pod per completion");
    assert!(pods.iter().all(|p| p.name_any().starts_with("batch-")));

    eventually(
        300,
        "the failing Job fails past its backoff limit",
        || async {
            state(&api, "doomed").await
                == Some((
                    0,
                    0,
                    2,
                    Some(("Failed".to_owned(), "BackoffLimitExceeded".to_owned())),
                ))
        },
    )
    .await;
    let reasons: Vec<String> = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("listing events")
        .items
        .into_iter()
        .filter(|e| e.involved_object.kind.as_deref() == Some("Job"))
        .filter_map(|e| e.reason)
        .collect();
    for reason in ["SuccessfulCreate", "Completed", "BackoffLimitExceeded"] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "{reason} in {reasons:?}"
        );
    }
    cluster.shutdown().await;
}
