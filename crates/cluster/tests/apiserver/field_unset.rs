//! Field selectors on fields an object leaves unset: the server compares the value the field would print with its
//! zero value (`false` for a flag, `0` for a count, empty for a string), so `spec.unschedulable=false` selects a
//! Node that never said anything about being schedulable, as a cordon-and-uncordon round trip expects.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::common::cluster;

/// The names of the objects `api` lists with the field selector `fields`, sorted.
async fn selected<K>(api: &Api<K>, fields: &str) -> Vec<String>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut names: Vec<String> = api
        .list(&ListParams::default().fields(fields))
        .await
        .unwrap_or_else(|e| panic!("list with {fields}: {e}"))
        .items
        .into_iter()
        .filter_map(|o| o.meta().name.clone())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn an_unset_flag_selects_as_false() {
    let cluster = cluster().await;
    let nodes: Api<Node> = Api::all(cluster.client());
    for (name, spec) in [
        ("plain", json!({})),
        ("open", json!({"unschedulable": false})),
        ("cordoned", json!({"unschedulable": true})),
    ] {
        let node: Node =
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
        nodes.create(&PostParams::default(), &node).await.unwrap();
    }
    assert_eq!(
        selected(&nodes, "spec.unschedulable==false").await,
        ["open", "plain"]
    );
    assert_eq!(
        selected(&nodes, "spec.unschedulable!=false").await,
        ["cordoned"]
    );
    assert_eq!(
        selected(&nodes, "spec.unschedulable=").await,
        Vec::<String>::new(),
        "an unset flag is false, never empty"
    );

    // kube-rs's cordon and uncordon, counted with the selector its own test uses.
    nodes.cordon("plain").await.unwrap();
    assert_eq!(selected(&nodes, "spec.unschedulable=false").await, ["open"]);
    nodes.uncordon("plain").await.unwrap();
    assert_eq!(
        selected(&nodes, "spec.unschedulable=false").await,
        ["open", "plain"]
    );

    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    for (name, host) in [("app", None), ("host", Some(true))] {
        let mut spec = json!({"containers": [{"name": "c", "image": "busybox:1"}]});
        if let Some(host) = host {
            spec["hostNetwork"] = json!(host);
        }
        let pod: Pod =
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    assert_eq!(selected(&pods, "spec.hostNetwork=false").await, ["app"]);
    assert_eq!(selected(&pods, "spec.hostNetwork=true").await, ["host"]);
}

#[tokio::test]
async fn an_unset_count_selects_as_zero() {
    let cluster = cluster().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "once"},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox:1"}]
        }}}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    assert_eq!(selected(&jobs, "status.successful=0").await, ["once"]);
    assert_eq!(
        selected(&jobs, "status.successful=1").await,
        Vec::<String>::new()
    );
}
