//! Whole scenarios: the built-in demo starts complete, and a scenario with a bad object starts nothing.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kmm_tui::cluster::sim::run::Simulation;
use kmm_tui::cluster::sim::scenario::Scenario;
use kmm_tui::cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, ListParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use serde_json::json;

fn ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[tokio::test(start_paused = true)]
async fn demo_starts_with_every_node_ready_and_its_objects_applied() {
    let scenario = Scenario::load("demo").unwrap();
    let expected_nodes = scenario.node_names().len();
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .unwrap();
    let nodes: Api<Node> = Api::all(cluster.client());
    let list = nodes.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), expected_nodes);
    assert!(list.items.iter().all(ready), "every node is Ready");
    let kernels: std::collections::BTreeSet<String> = list
        .items
        .iter()
        .filter_map(|n| {
            n.status
                .as_ref()?
                .node_info
                .as_ref()
                .map(|i| i.kernel_version.clone())
        })
        .collect();
    assert_eq!(kernels.len(), 2, "two kernels: {kernels:?}");

    let modules = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kmm.sigs.x-k8s.io", "v1beta1", "Module"),
        "modules",
    );
    let modules: Api<DynamicObject> = Api::namespaced_with(cluster.client(), "acme", &modules);
    assert_eq!(
        modules
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );

    // A plain pod is scheduled, pulled and run by the simulated nodes.
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "web", "image": "docker.io/library/nginx:1.27"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let mut phase = String::new();
    for _ in 0..600 {
        let pod = pods.get("web").await.unwrap();
        phase = pod.status.and_then(|s| s.phase).unwrap_or_default();
        if phase == "Running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(phase, "Running");
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_scenario_with_a_bad_object_starts_nothing() {
    let cluster = EmbeddedCluster::start(EmbeddedOptions::default())
        .await
        .unwrap();
    let text = r#"
nodes:
  - {namePrefix: worker-, count: 3, kernelVersion: 5.14.0-284.el9.x86_64, osImage: RHCOS}
objects:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: fine, namespace: default}}
  - apiVersion: kmm.sigs.x-k8s.io/v1beta1
    kind: Module
    metadata: {name: broken, namespace: default}
    spec:
      selector: {a: b}
      moduleLoader:
        container:
          modprobe: {moduleName: broken}
          kernelMappings: []
"#;
    let scenario = Scenario::parse(text, "bad.yaml", None).unwrap();
    let err = Simulation::start(cluster.server().clone(), cluster.client(), scenario)
        .await
        .err()
        .expect("the scenario is refused");
    let message = err.to_string();
    assert!(
        message.contains("bad.yaml")
            && message.contains("objects[1]")
            && message.contains("kernelMappings"),
        "{message}"
    );
    let nodes: Api<Node> = Api::all(cluster.client());
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "no node was registered"
    );
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(cluster.client(), "default");
    assert!(
        configmaps.get_opt("fine").await.unwrap().is_none(),
        "no object was applied"
    );
}

#[tokio::test(start_paused = true)]
async fn the_chaos_scenario_starts() {
    let scenario = Scenario::load("chaos").unwrap();
    let expected_nodes = scenario.node_names().len();
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .unwrap();
    let nodes: Api<Node> = Api::all(cluster.client());
    assert_eq!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        expected_nodes
    );
    cluster.shutdown().await;
}
