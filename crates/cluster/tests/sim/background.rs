//! A scenario's background workloads: written at start, bound and running, within each node's room; left alone by
//! the simulation's own scheduler, kubelets and workload controllers; and churning through the API with the Events
//! a real cluster records.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kmm_cluster::sim::background::LABEL;
use kmm_testing::{eventually, wait_for};
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};

use super::cluster_on;

const NODES: usize = 20;
const NAMESPACES: usize = 10;
const MAX_PODS: usize = 40;

fn scenario() -> String {
    format!(
        "seed: 9\ntimeScale: 10\nnodes:\n  - namePrefix: worker-\n    count: {NODES}\n    \
         kernelVersion: 5.14.0-284.el9.x86_64\n    osImage: Red Hat Enterprise Linux CoreOS\n\
         background:\n  namespaces: {NAMESPACES}\n  podsPerNode: 30\n  maxPodsPerNode: {MAX_PODS}\n  \
         churnPerSecond: 20\n"
    )
}

async fn background_pods(client: &Client) -> Vec<Pod> {
    Api::<Pod>::all(client.clone())
        .list(&ListParams::default().labels(LABEL))
        .await
        .expect("pods are listed")
        .items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_workloads_fill_the_nodes_and_churn_without_the_simulation_running_them() {
    let cluster = cluster_on(&scenario()).await;
    let client = cluster.client();

    let daemon_sets = Api::<DaemonSet>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("listed");
    assert_eq!(daemon_sets.items.len(), 2);
    let jobs = Api::<Job>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("listed");
    assert_eq!(jobs.items.len(), NAMESPACES);
    let deployments = Api::<Deployment>::all(client.clone())
        .list(&ListParams::default().labels(LABEL))
        .await
        .expect("listed");
    assert_eq!(deployments.items.len(), NAMESPACES);
    let replicas: i32 = deployments
        .items
        .iter()
        .map(|d| d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0))
        .sum();
    let written = usize::try_from(replicas).unwrap() + 2 * NODES + NAMESPACES;
    // The Deployments' replicas, a DaemonSet pod of each on every node and a Job pod per namespace. The churn
    // replaces one pod at a time, deleting it before it creates the next: a list may fall in between, one pod short,
    // and the next is listed.
    let pods = wait_for(
        10,
        "a list of every pod written, between two replacements",
        || {
            let client = client.clone();
            async move { Some(background_pods(&client).await).filter(|pods| pods.len() == written) }
        },
    )
    .await;
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for pod in &pods {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        *per_node
            .entry(node.expect("every pod is bound"))
            .or_default() += 1;
    }
    assert_eq!(per_node.len(), NODES, "every node runs background pods");
    assert!(
        per_node
            .values()
            .all(|&count| (3..=MAX_PODS).contains(&count)),
        "each node within its room: {per_node:?}"
    );
    let average = pods.len() / NODES;
    assert!(
        (20..=40).contains(&average),
        "about 30 a node on average: {average}"
    );

    // The simulation's own caches never hold them: its scheduler, kubelets and controllers leave them alone.
    let world = cluster
        .simulation()
        .expect("a simulation runs")
        .world()
        .clone();
    let cached = world.watches.pods.store().state();
    assert!(
        cached.iter().all(|pod| !pod.labels().contains_key(LABEL)),
        "no background pod in the simulation's cache"
    );

    // The churn replaces pods, as many as there were, each with the Events of a replacement.
    let first: Vec<String> = pods.iter().map(|p| p.name_any()).collect();
    eventually(30, "twenty pods were replaced", || async {
        let now = background_pods(&client).await;
        let replaced = first
            .iter()
            .filter(|name| !now.iter().any(|p| &p.name_any() == *name))
            .count();
        replaced >= 20
    })
    .await;
    eventually(30, "the pods keep their number", || async {
        background_pods(&client).await.len() == pods.len()
    })
    .await;
    let events = Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("events are listed");
    let reasons: BTreeMap<String, usize> =
        events
            .items
            .iter()
            .fold(BTreeMap::new(), |mut counts, event| {
                *counts
                    .entry(event.reason.clone().unwrap_or_default())
                    .or_default() += 1;
                counts
            });
    for reason in [
        "Killing",
        "SuccessfulDelete",
        "SuccessfulCreate",
        "Scheduled",
        "Pulled",
        "Created",
        "Started",
    ] {
        assert!(
            reasons.get(reason).is_some_and(|&n| n >= 20),
            "{reason} recorded for each: {reasons:?}"
        );
    }
    let replacement = background_pods(&client)
        .await
        .into_iter()
        .find(|p| !first.contains(&p.name_any()))
        .expect("a replacement");
    let status = replacement.status.expect("a status");
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(
        deployments.items[0].resource_version(),
        Api::<Deployment>::namespaced(client.clone(), &deployments.items[0].namespace().unwrap())
            .get("service")
            .await
            .expect("the Deployment")
            .resource_version(),
        "no controller of the simulation wrote the Deployment"
    );
    cluster.shutdown().await;
}

#[test]
fn the_envelope_scenario_is_at_kubernetes_published_limits() {
    let envelope = kmm_cluster::sim::scenario::Scenario::load("envelope").expect("it loads");
    assert_eq!(envelope.node_names().len(), 5000);
    let background = envelope.background.expect("it has background workloads");
    assert_eq!(background.pods_per_node as usize * 5000, 150_000);
    assert_eq!(background.max_pods_per_node, 110);
    assert_eq!(background.namespaces, 1000);
}
