//! A Module's device plugin: once the module is loaded the engine runs its DaemonSet there, labels the nodes, counts
//! the plugin in the Module's status, and the nodes offer the plugin's devices to pods; a changed plugin rolls out,
//! an engine restart changes nothing, and deleting the Module takes it all away before the module is unloaded.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kmm_api::kmm::Module;
use kmm_api::kmm::labels;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::common::{Harness, eventually};
use super::kmm::{create_module, loaded_modules, module, node};

const GPU_NODES: [&str; 2] = ["gpu-0", "gpu-1"];

fn spec(plugin_image: &str) -> serde_json::Value {
    json!({
        "selector": {"gpu": "yes"},
        "moduleLoader": {"container": {
            "modprobe": {"moduleName": "gpu_drv"},
            "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/acme/gpu-kmod:${KERNEL_FULL_VERSION}"}]
        }},
        "devicePlugin": {"container": {
            "image": plugin_image,
            "args": ["--pass-device-specs"],
            "env": [{"name": "DEVICE_PLUGIN_RESOURCE", "value": "example.com/gpu=2"}]
        }}
    })
}

async fn plugin_daemon_sets(harness: &Harness) -> Vec<DaemonSet> {
    Api::<DaemonSet>::namespaced(harness.client(), "acme")
        .list(&ListParams::default().labels("kmm.node.kubernetes.io/role=device-plugin"))
        .await
        .expect("listing DaemonSets")
        .items
}

async fn plugin_pods(harness: &Harness) -> Vec<Pod> {
    Api::<Pod>::namespaced(harness.client(), "acme")
        .list(&ListParams::default().labels("kmm.node.kubernetes.io/role=device-plugin"))
        .await
        .expect("listing pods")
        .items
}

/// The nodes carrying `label`.
async fn labelled(harness: &Harness, label: &str) -> BTreeSet<String> {
    Api::<Node>::all(harness.client())
        .list(&ListParams::default().labels(label))
        .await
        .expect("listing nodes")
        .items
        .iter()
        .map(|n| n.name_any())
        .collect()
}

async fn plugin_counts(harness: &Harness) -> Option<(i32, i32, i32)> {
    let counts = module(harness, "gpu").await?.status?.device_plugin?;
    Some((
        counts.nodes_matching_selector_number,
        counts.desired_number,
        counts.available_number,
    ))
}

async fn allocatable_gpus(harness: &Harness, name: &str) -> Option<String> {
    node(harness, name)
        .await
        .status?
        .allocatable?
        .get("example.com/gpu")
        .map(|q| q.0.clone())
}

fn gpu_nodes() -> BTreeSet<String> {
    GPU_NODES.iter().map(|n| n.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_device_plugin_follows_its_module_to_ready_nodes_and_leaves_with_it() {
    let mut harness = Harness::start("device-plugin.yaml").await;
    harness.start_engine();
    create_module(&harness, "gpu", spec("quay.io/acme/gpu-device-plugin:1.0")).await;
    let target = labels::device_plugin_target_label("acme", "gpu");
    let ready = labels::device_plugin_ready_label("acme", "gpu");

    // Module ready → plugin DaemonSet → plugin pods ready → labels and counts.
    eventually(600, "the plugin is ready on both gpu nodes", || async {
        labelled(&harness, &ready).await == gpu_nodes()
    })
    .await;
    assert_eq!(labelled(&harness, &target).await, gpu_nodes());
    assert_eq!(
        labelled(&harness, &labels::node_ready("acme", "gpu")).await,
        gpu_nodes()
    );
    let daemon_sets = plugin_daemon_sets(&harness).await;
    assert_eq!(daemon_sets.len(), 1, "one DaemonSet per Module");
    let daemon_set = &daemon_sets[0];
    assert!(daemon_set.name_any().starts_with("gpu-device-plugin-"));
    assert_eq!(daemon_set.labels()[labels::MODULE_NAME], "gpu");
    assert_eq!(daemon_set.owner_references()[0].kind, "Module");
    let selector = daemon_set
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.node_selector.clone())
        .unwrap_or_default();
    assert!(
        selector.contains_key(&target) && selector.contains_key(&labels::node_ready("acme", "gpu"))
    );
    eventually(120, "the Module counts its plugin", || async {
        plugin_counts(&harness).await == Some((2, 2, 2))
    })
    .await;

    // The nodes offer the devices, and a pod asking for them is scheduled onto one.
    for name in GPU_NODES {
        eventually(60, "the node offers the plugin's devices", || async {
            allocatable_gpus(&harness, name).await.as_deref() == Some("2")
        })
        .await;
    }
    assert_eq!(allocatable_gpus(&harness, "other-0").await, None);
    let consumer: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "training", "namespace": "acme"},
        "spec": {"containers": [{
            "name": "train", "image": "quay.io/acme/cuda-job:1",
            "resources": {"limits": {"example.com/gpu": "2"}}
        }]}
    }))
    .expect("a pod");
    let pods = Api::<Pod>::namespaced(harness.client(), "acme");
    pods.create(&PostParams::default(), &consumer)
        .await
        .expect("the consumer pod is created");
    eventually(120, "the consumer runs on a gpu node", || async {
        pods.get("training").await.is_ok_and(|p| {
            let node = p.spec.and_then(|s| s.node_name).unwrap_or_default();
            let phase = p.status.and_then(|s| s.phase).unwrap_or_default();
            gpu_nodes().contains(&node) && phase == "Running"
        })
    })
    .await;

    // A restarted engine finds its DaemonSet and makes no second one.
    harness.kill_engine().await;
    harness.start_engine();
    let modules = Api::<Module>::namespaced(harness.client(), "acme");
    modules
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"devicePlugin": {"container": {"image": "quay.io/acme/gpu-device-plugin:1.1"}}}})),
        )
        .await
        .expect("a new plugin image");
    eventually(600, "the new plugin image rolls out", || async {
        let pods = plugin_pods(&harness).await;
        let running_new = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| {
                p.spec.as_ref().is_some_and(|s| {
                    s.containers[0].image.as_deref() == Some("quay.io/acme/gpu-device-plugin:1.1")
                })
            })
            .count();
        running_new == 2 && plugin_counts(&harness).await == Some((2, 2, 2))
    })
    .await;
    assert_eq!(plugin_daemon_sets(&harness).await.len(), 1);

    // Deleting the Module takes the plugin, its labels and its devices away, then unloads the module.
    pods.delete("training", &DeleteParams::default())
        .await
        .expect("deleting the consumer");
    modules
        .delete("gpu", &DeleteParams::default())
        .await
        .expect("deleting the Module");
    eventually(600, "the Module is gone", || async {
        module(&harness, "gpu").await.is_none()
    })
    .await;
    assert!(plugin_daemon_sets(&harness).await.is_empty());
    assert!(plugin_pods(&harness).await.is_empty());
    assert!(labelled(&harness, &target).await.is_empty());
    assert!(labelled(&harness, &ready).await.is_empty());
    for name in GPU_NODES {
        assert!(loaded_modules(&harness, name).is_empty(), "{name} unloaded");
        eventually(60, "the devices are gone", || async {
            allocatable_gpus(&harness, name).await.is_none()
        })
        .await;
    }
    harness.shutdown().await;
}

/// The module version each of the plugin DaemonSets runs for, with the nodes its pods are on.
async fn plugins_by_version(harness: &Harness) -> Vec<(String, BTreeSet<String>)> {
    let version_label = labels::version_schedule_pod("acme", "gpu");
    let pods = plugin_pods(harness).await;
    let mut versions: Vec<(String, BTreeSet<String>)> = plugin_daemon_sets(harness)
        .await
        .iter()
        .map(|ds| {
            let version = ds.labels().get(&version_label).cloned().unwrap_or_default();
            let uid = ds.uid().unwrap_or_default();
            let nodes = pods
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .filter(|p| p.owner_references().iter().any(|o| o.uid == uid))
                .filter_map(|p| p.spec.as_ref()?.node_name.clone())
                .collect();
            (version, nodes)
        })
        .collect();
    versions.sort();
    versions
}

async fn ask_for_version(harness: &Harness, node: &str, version: &str) {
    Api::<Node>::all(harness.client())
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {labels::version_module("acme", "gpu"): version}}}),
            ),
        )
        .await
        .expect("labelling the node with a module version");
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|n| n.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn an_ordered_upgrade_runs_one_plugin_daemon_set_per_module_version() {
    let mut harness = Harness::start("device-plugin.yaml").await;
    harness.start_engine();
    for node in GPU_NODES {
        ask_for_version(&harness, node, "v1").await;
    }
    let mut spec = spec("quay.io/acme/gpu-device-plugin:1.0");
    spec["moduleLoader"]["container"]["version"] = json!("v1");
    create_module(&harness, "gpu", spec).await;
    eventually(600, "the v1 plugin runs on both nodes", || async {
        plugins_by_version(&harness).await == vec![("v1".to_owned(), gpu_nodes())]
    })
    .await;

    // The Module moves to v2 and one node follows: that node's plugin comes from a second DaemonSet.
    Api::<Module>::namespaced(harness.client(), "acme")
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"moduleLoader": {"container": {"version": "v2"}}}})),
        )
        .await
        .expect("the Module moves to v2");
    ask_for_version(&harness, "gpu-0", "v2").await;
    eventually(600, "gpu-0 runs the v2 plugin, gpu-1 still v1", || async {
        plugins_by_version(&harness).await
            == vec![
                ("v1".to_owned(), names(&["gpu-1"])),
                ("v2".to_owned(), names(&["gpu-0"])),
            ]
            && plugin_counts(&harness).await == Some((2, 2, 2))
    })
    .await;

    // Once the last node has moved, the v1 DaemonSet runs nowhere and is deleted.
    ask_for_version(&harness, "gpu-1", "v2").await;
    eventually(
        600,
        "only the v2 DaemonSet is left, on both nodes",
        || async { plugins_by_version(&harness).await == vec![("v2".to_owned(), gpu_nodes())] },
    )
    .await;
    harness.shutdown().await;
}
