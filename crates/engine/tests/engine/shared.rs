//! The engine's shared watches: every subscriber sees each change, short-lived objects included, and the caches
//! hold objects slimmed to what the reconcilers read.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kmm_api::kmm::labels;
use kmm_engine::runtime::shared::SharedWatches;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use tokio_util::sync::CancellationToken;

use crate::common::Harness;

fn worker(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("acme".to_owned()),
            labels: Some(BTreeMap::from([
                (labels::WORKER_ACTION.to_owned(), "Load".to_owned()),
                (labels::MODULE_NAME.to_owned(), "kmod-a".to_owned()),
            ])),
            annotations: Some(BTreeMap::from([("note".to_owned(), "x".repeat(64))])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some("worker-0".to_owned()),
            containers: vec![Container {
                name: "worker".to_owned(),
                image: Some("quay.io/acme/kmod-a:v1".to_owned()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

/// A pod deleted right after it was created is seen created and deleted, and the pod after it is seen too (a
/// subscription that looked the deleted pod up in the store would stall there).
#[tokio::test(start_paused = true)]
async fn every_subscriber_sees_short_lived_workers_and_the_caches_are_slimmed() {
    let harness = Harness::start("nmc.yaml").await;
    let client = harness.client();
    let shared = SharedWatches::new();
    let nodes = shared.nodes();
    let workers = shared.workers();
    let mut first = Box::pin(shared.worker_changes());
    let mut second = Box::pin(shared.worker_changes());
    let stop = CancellationToken::new();
    let watches = tokio::spawn(shared.run(client.clone(), stop.clone()));

    let pods: Api<Pod> = Api::namespaced(client.clone(), "acme");
    pods.create(&PostParams::default(), &worker("brief"))
        .await
        .expect("created");
    pods.delete("brief", &DeleteParams::default().grace_period(0))
        .await
        .expect("deleted");
    pods.create(&PostParams::default(), &worker("next"))
        .await
        .expect("created");

    for subscriber in [&mut first, &mut second] {
        let mut seen = Vec::new();
        while !seen.iter().any(|name| name == "next") {
            let pod = tokio::time::timeout(Duration::from_secs(30), subscriber.next())
                .await
                .expect("the subscriber keeps receiving changes")
                .expect("the watch runs");
            seen.push(pod.name_any());
        }
        assert!(
            seen.iter().any(|name| name == "brief"),
            "the short-lived pod was seen: {seen:?}"
        );
    }

    let cached = workers
        .state()
        .into_iter()
        .find(|p| p.name_any() == "next")
        .expect("the worker is cached");
    assert!(cached.metadata.managed_fields.is_none());
    assert!(cached.metadata.annotations.is_none());
    let spec = cached.spec.as_ref().expect("the spec is kept");
    assert_eq!(spec.node_name.as_deref(), Some("worker-0"));
    assert!(spec.containers.is_empty());
    assert_eq!(
        cached.labels().get(labels::MODULE_NAME).map(String::as_str),
        Some("kmod-a")
    );

    nodes.listed().await.expect("the nodes are listed");
    for node in nodes.state() {
        assert!(node.metadata.managed_fields.is_none());
        let status = node.status.as_ref().expect("a status");
        let info = status.node_info.as_ref().expect("nodeInfo is kept");
        assert!(!info.kernel_version.is_empty() && !info.boot_id.is_empty());
        assert!(status.images.is_none() && status.addresses.is_none());
        let conditions = status.conditions.as_deref().unwrap_or_default();
        assert!(
            !conditions.is_empty() && conditions.iter().all(|c| c.type_ == "Ready"),
            "only readiness is kept: {conditions:?}"
        );
    }

    stop.cancel();
    watches.await.expect("the watches end");
    harness.shutdown().await;
}

/// Passes of several reconcilers wait for the shared node cache's first list at the same time (a Module pass, a
/// Shim pass, a cache pass...), and every one of them goes on once it lands. A readiness that woke only the last of
/// its waiters left the others waiting forever, each holding its object's place in its controller: after a Lease
/// takeover that Module was never reconciled again while its engine went on renewing the Lease.
#[tokio::test(start_paused = true)]
async fn every_pass_waiting_for_the_first_list_goes_on_when_it_lands() {
    let harness = Harness::start("nmc.yaml").await;
    let shared = SharedWatches::new();
    let nodes = shared.nodes();
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let nodes = nodes.clone();
            tokio::spawn(async move { nodes.listed().await.is_ok() })
        })
        .collect();
    // Every waiter is waiting before the watch lists.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let stop = CancellationToken::new();
    let watches = tokio::spawn(shared.run(harness.client(), stop.clone()));
    for (i, waiter) in waiters.into_iter().enumerate() {
        let listed = tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .unwrap_or_else(|_| panic!("waiter {i} was never woken by the first list"))
            .expect("the waiter ran");
        assert!(listed, "waiter {i} saw the watch stop instead of listing");
    }
    stop.cancel();
    watches.await.expect("the watches end");
    harness.shutdown().await;
}
