//! The DaemonSet controller: one pod per node its template fits, pinned and owned; pods follow node labels, a new
//! template rolls out within `maxUnavailable`, the status counts it all, and deleting the DaemonSet takes its pods.
//! Its pods can be device plugins, whose devices the nodes then offer and the scheduler hands out.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kmm_cluster::sim::workloads::daemons::CONTROLLER_REVISION_HASH;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::workloads::{eventually, running_pods_of};

const SCENARIO: &str = r#"
seed: 5
timeScale: 10
nodes:
  - {namePrefix: gpu-, count: 3, labels: {gpu: "yes"}, kernelVersion: 5.14.0-284.30.1.el9_2.x86_64, osImage: RHCOS}
  - namePrefix: tainted-
    count: 1
    labels: {gpu: "yes"}
    taints: [{key: dedicated, value: infra, effect: NoSchedule}]
    kernelVersion: 5.14.0-284.30.1.el9_2.x86_64
    osImage: RHCOS
registry:
  images:
    - {name: "quay.io/acme/gpu-plugin:1", sizeMiB: 10}
    - {name: "quay.io/acme/gpu-plugin:2", sizeMiB: 10}
"#;

async fn daemon_set_status(api: &Api<DaemonSet>) -> Option<(i32, i32, i32, i32, i32, i64)> {
    let ds = api.get("plugin").await.ok()?;
    let status = ds.status?;
    Some((
        status.desired_number_scheduled,
        status.current_number_scheduled,
        status.number_ready,
        status.number_available?,
        status.updated_number_scheduled?,
        status.observed_generation?,
    ))
}

fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

async fn nodes_running(client: &kube::Client) -> BTreeSet<String> {
    running_pods_of(client, "plugin")
        .await
        .iter()
        .map(node_of)
        .collect()
}

async fn gpus(client: &kube::Client, node: &str) -> Option<String> {
    let node = Api::<Node>::all(client.clone()).get(node).await.ok()?;
    let status = node.status?;
    let allocatable = status.allocatable?.get("example.com/gpu")?.0.clone();
    let capacity = status.capacity?.get("example.com/gpu")?.0.clone();
    (allocatable == capacity).then_some(allocatable)
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_daemon_set_runs_one_pod_per_fitting_node_and_rolls_out_within_its_budget() {
    let cluster = super::cluster_on(SCENARIO).await;
    let client = cluster.client();
    let api = Api::<DaemonSet>::namespaced(client.clone(), "default");
    let manifest: DaemonSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "plugin"},
        "spec": {
            "selector": {"matchLabels": {"app": "plugin"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "plugin"}},
                "spec": {
                    "nodeSelector": {"gpu": "yes"},
                    "containers": [{
                        "name": "plugin", "image": "quay.io/acme/gpu-plugin:1", "args": ["--serve"],
                        "env": [{"name": "DEVICE_PLUGIN_RESOURCE", "value": "example.com/gpu=2"}]
                    }]
                }
            }
        }
    }))
    .expect("a DaemonSet");
    let created = api
        .create(&PostParams::default(), &manifest)
        .await
        .expect("the DaemonSet is created");
    let generation = created.metadata.generation.expect("a generation");
    let everywhere = names(&["gpu-0", "gpu-1", "gpu-2"]);

    // One pod per matching node, not on the node whose taint it does not tolerate.
    eventually(120, "a pod runs on each untainted gpu node", || async {
        nodes_running(&client).await == everywhere
            && daemon_set_status(&api).await == Some((3, 3, 3, 3, 3, generation))
    })
    .await;
    let pods = running_pods_of(&client, "plugin").await;
    for pod in &pods {
        assert!(pod.name_any().starts_with("plugin-"), "{}", pod.name_any());
        let owner = &pod.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("DaemonSet", Some(true))
        );
        assert!(pod.labels().contains_key(CONTROLLER_REVISION_HASH));
    }

    // The plugins' devices are on their nodes, and the scheduler hands them out.
    for node in &everywhere {
        eventually(60, "the node offers the plugin's devices", || async {
            gpus(&client, node).await.as_deref() == Some("2")
        })
        .await;
    }
    assert_eq!(gpus(&client, "tainted-0").await, None);
    let pods_api = Api::<Pod>::namespaced(client.clone(), "default");
    let consumer = |name: &str, count: u32| -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [{
                "name": "work", "image": "registry.k8s.io/pause:3.10",
                "resources": {"limits": {"example.com/gpu": count.to_string()}}
            }]}
        }))
        .expect("a pod")
    };
    pods_api
        .create(&PostParams::default(), &consumer("greedy", 3))
        .await
        .expect("the greedy pod is created");
    pods_api
        .create(&PostParams::default(), &consumer("fits", 2))
        .await
        .expect("the fitting pod is created");
    eventually(60, "the fitting pod lands on a gpu node", || async {
        pods_api
            .get("fits")
            .await
            .is_ok_and(|p| everywhere.contains(&node_of(&p)))
    })
    .await;
    eventually(
        60,
        "the greedy pod is unschedulable for want of devices",
        || async {
            pods_api.get("greedy").await.is_ok_and(|p| {
                node_of(&p).is_empty()
                    && p.status
                        .iter()
                        .flat_map(|s| s.conditions.iter().flatten())
                        .any(|c| {
                            c.type_ == "PodScheduled"
                                && c.message
                                    .as_deref()
                                    .is_some_and(|m| m.contains("3 Insufficient example.com/gpu"))
                        })
            })
        },
    )
    .await;

    // A node that stops matching loses its pod and its devices.
    let nodes = Api::<Node>::all(client.clone());
    let patch =
        |value: serde_json::Value| Patch::Merge(json!({"metadata": {"labels": {"gpu": value}}}));
    nodes
        .patch("gpu-0", &PatchParams::default(), &patch(json!(null)))
        .await
        .expect("unlabelling a node");
    eventually(120, "the unlabelled node's pod goes", || async {
        nodes_running(&client).await == names(&["gpu-1", "gpu-2"])
            && daemon_set_status(&api).await.map(|s| s.0) == Some(2)
    })
    .await;
    eventually(60, "the unlabelled node offers no devices", || async {
        gpus(&client, "gpu-0").await.is_none()
    })
    .await;
    nodes
        .patch("gpu-0", &PatchParams::default(), &patch(json!("yes")))
        .await
        .expect("labelling the node again");
    eventually(120, "the node gets a pod again", || async {
        nodes_running(&client).await == everywhere
            && daemon_set_status(&api).await.map(|s| s.3) == Some(3)
    })
    .await;

    // A new template rolls out one node at a time.
    let before: BTreeSet<String> = running_pods_of(&client, "plugin")
        .await
        .iter()
        .map(|p| p.name_any())
        .collect();
    let image = json!({"spec": {"template": {"spec": {"containers": [{
        "name": "plugin", "image": "quay.io/acme/gpu-plugin:2", "args": ["--serve"],
        "env": [{"name": "DEVICE_PLUGIN_RESOURCE", "value": "example.com/gpu=2"}]
    }]}}}});
    let updated = api
        .patch("plugin", &PatchParams::default(), &Patch::Merge(image))
        .await
        .expect("a new template");
    let generation = updated.metadata.generation.expect("a generation");
    let least_available = std::cell::Cell::new(3);
    eventually(300, "every node runs the new template", || async {
        let status = daemon_set_status(&api).await;
        if let Some(s) = status {
            least_available.set(least_available.get().min(s.3));
        }
        status == Some((3, 3, 3, 3, 3, generation))
            && running_pods_of(&client, "plugin")
                .await
                .iter()
                .all(|p| !before.contains(&p.name_any()))
    })
    .await;
    assert!(
        least_available.get() >= 2,
        "at most one node at a time lacked an available pod (saw {} available)",
        least_available.get()
    );

    // Deleting the DaemonSet takes its pods, and their devices, with it.
    api.delete("plugin", &DeleteParams::default())
        .await
        .expect("deleting the DaemonSet");
    eventually(120, "the pods are gone", || async {
        pods_api
            .list(&ListParams::default().labels("app=plugin"))
            .await
            .is_ok_and(|l| l.items.is_empty())
    })
    .await;
    for node in &everywhere {
        eventually(60, "the devices are gone", || async {
            gpus(&client, node).await.is_none()
        })
        .await;
    }
    cluster.shutdown().await;
}
