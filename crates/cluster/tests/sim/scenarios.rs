//! Whole scenarios: the built-in demo starts complete, and a scenario with a bad object starts nothing.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kmm_cluster::sim::run::Simulation;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
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

/// An embedded cluster simulating `scenario`.
async fn start(scenario: Scenario) -> EmbeddedCluster {
    EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn demo_starts_with_every_node_ready_and_its_objects_applied() {
    let scenario = Scenario::load("demo").unwrap();
    let expected_nodes = scenario.node_names().len();
    let cluster = start(scenario).await;
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
        3
    );

    // A plain pod is scheduled, pulled and run by the simulated nodes.
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "web", "image": "docker.io/library/nginx:1.27"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    pod_phase(&pods, "web", "Running").await;
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
    let err = Simulation::start(
        cluster.server().clone(),
        cluster.client(),
        scenario,
        None,
        None,
    )
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
    let cluster = start(scenario).await;
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

/// The machine ConfigMap of a node, read through the API until `ready` holds (or a minute of test time passes).
async fn machine_record(
    cluster: &EmbeddedCluster,
    node: &str,
    ready: impl Fn(&std::collections::BTreeMap<String, String>) -> bool,
) -> std::collections::BTreeMap<String, String> {
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(cluster.client(), "kmm-tui-sim");
    let mut data = Default::default();
    for _ in 0..600 {
        if let Some(cm) = maps.get_opt(&format!("machine-{node}")).await.unwrap() {
            data = cm.data.unwrap_or_default();
            if ready(&data) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    data
}

async fn pod_phase(pods: &Api<Pod>, name: &str, want: &str) -> Pod {
    for _ in 0..600 {
        let pod = pods.get(name).await.unwrap();
        if pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(want) {
            return pod;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "{name} never reached {want}: {:?}",
        pods.get(name).await.unwrap().status
    );
}

const NODES_AND_SHIM: &str = r#"
nodes:
  - {namePrefix: worker-, count: 2, kernelVersion: 5.14.0-284.el9.x86_64, osImage: RHCOS 414}
registry:
  images:
    - {name: quay.io/acme/kmod:5.14.0-284.el9.x86_64, sizeMiB: 50}
  shims:
    - {url: https://example.com/spin.tar.gz, binary: containerd-shim-spin}
faults:
  - {kind: containerdRestartFailure, nodes: [worker-1], times: 1}
"#;

#[tokio::test(start_paused = true)]
async fn a_kmm_worker_pod_run_by_the_kubelet_loads_the_module_on_its_node() {
    let scenario = Scenario::parse(NODES_AND_SHIM, "test", None).unwrap();
    let cluster = start(scenario).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let config = "containerImage: quay.io/acme/kmod:5.14.0-284.el9.x86_64\nkernelVersion: 5.14.0-284.el9.x86_64\ninsecurePull: false\nmodprobe:\n  moduleName: acme_accel\n";
    let worker: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": "kmm-worker-worker-0-acme",
            "labels": {"kmm.node.kubernetes.io/worker-action": "Load", "kmm.node.kubernetes.io/module.name": "acme"},
            "annotations": {"kmm.node.kubernetes.io/worker-config": config}
        },
        "spec": {
            "nodeName": "worker-0",
            "restartPolicy": "OnFailure",
            "initContainers": [{"name": "image-extractor", "image": "quay.io/acme/kmod:5.14.0-284.el9.x86_64", "command": ["/bin/sh", "-c", "cp -R /opt/lib/modules /tmp/opt/lib/modules"]}],
            "containers": [{
                "name": "worker",
                "image": "gcr.io/k8s-staging-kmm/kernel-module-management-worker:latest",
                "args": ["kmod", "load", "/etc/kmm-worker/config.yaml"],
                "securityContext": {"capabilities": {"add": ["SYS_MODULE"]}}
            }]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &worker).await.unwrap();
    pod_phase(&pods, "kmm-worker-worker-0-acme", "Succeeded").await;
    let record = machine_record(&cluster, "worker-0", |d| {
        d.get("lsmod").is_some_and(|l| l.contains("acme_accel"))
    })
    .await;
    assert_eq!(
        record.get("lsmod").map(String::as_str),
        Some("acme_accel\n"),
        "{record:?}"
    );
    let other = machine_record(&cluster, "worker-1", |_| true).await;
    assert_eq!(
        other.get("lsmod").map(String::as_str),
        Some(""),
        "only the worker's node changed"
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_containerd_restart_fault_is_visible_and_rolled_back() {
    let scenario = Scenario::parse(NODES_AND_SHIM, "test", None).unwrap();
    let cluster = start(scenario).await;
    let before = machine_record(&cluster, "worker-1", |d| d.contains_key("config.toml")).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let installer = |name: &str| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"spinkube.dev/shimName": "spin"}},
            "spec": {
                "nodeName": "worker-1",
                "restartPolicy": "Never",
                "hostPID": true,
                "initContainers": [{
                    "name": "downloader",
                    "image": "ghcr.io/spinframework/shim-downloader:latest",
                    "env": [{"name": "SHIM_NAME", "value": "spin"}, {"name": "SHIM_LOCATION", "value": "https://example.com/spin.tar.gz"}],
                    "securityContext": {"privileged": true}
                }],
                "containers": [{
                    "name": "provisioner",
                    "image": "ghcr.io/spinframework/node-installer:latest",
                    "args": ["install", "-H", "/mnt/node-root", "-r", "spin"],
                    "securityContext": {"privileged": true}
                }]
            }
        }))
        .unwrap()
    };
    // The first install hits the fault: the pod fails, saying the configuration was rolled back.
    pods.create(&PostParams::default(), &installer("install-1"))
        .await
        .unwrap();
    let failed = pod_phase(&pods, "install-1", "Failed").await;
    let terminated = failed.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_ne!(terminated.exit_code, 0);
    assert!(
        terminated
            .message
            .unwrap_or_default()
            .contains("rolled back"),
        "the failure says what happened"
    );
    let after_fault = machine_record(&cluster, "worker-1", |d| {
        d.get("containerd")
            .is_some_and(|c| c.contains("rolled back"))
    })
    .await;
    assert_eq!(
        after_fault.get("config.toml"),
        before.get("config.toml"),
        "the configuration is the one before the install"
    );
    // The fault happens once: a second install succeeds and the runtime is configured.
    pods.create(&PostParams::default(), &installer("install-2"))
        .await
        .unwrap();
    pod_phase(&pods, "install-2", "Succeeded").await;
    let installed = machine_record(&cluster, "worker-1", |d| {
        d.get("config.toml")
            .is_some_and(|c| c.contains("runtimes.spin"))
    })
    .await;
    assert!(
        installed
            .get("config.toml")
            .unwrap()
            .contains("/opt/rcm/bin/containerd-shim-spin")
    );
    assert!(
        installed
            .get("shims")
            .unwrap()
            .contains("containerd-shim-spin")
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_os_image_change_reboots_the_pool_one_node_at_a_time_with_the_real_kubelet() {
    let text = r#"
nodes:
  - {namePrefix: worker-, count: 3, labels: {node-role.kubernetes.io/worker: ""}, kernelVersion: 5.14.0-284.el9.x86_64, osImage: RHCOS 414}
osImages:
  - {url: quay.io/os/rhcos@sha256:4140000000000000000000000000000000000000000000000000000000000000, kernelVersion: 5.14.0-284.el9.x86_64, osImage: RHCOS 414, release: 4.14.0}
  - {url: quay.io/os/rhcos@sha256:4150000000000000000000000000000000000000000000000000000000000000, kernelVersion: 5.14.0-362.el9.x86_64, osImage: RHCOS 415, release: 4.15.0}
"#;
    let scenario = Scenario::parse(text, "test", None).unwrap();
    let cluster = start(scenario).await;
    let nodes: Api<Node> = Api::all(cluster.client());
    let boot_ids = |list: &[Node]| -> Vec<String> {
        list.iter()
            .filter_map(|n| {
                n.status
                    .as_ref()?
                    .node_info
                    .as_ref()
                    .map(|i| i.boot_id.clone())
            })
            .collect()
    };
    let before = boot_ids(&nodes.list(&ListParams::default()).await.unwrap().items);
    let configs = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("machineconfiguration.openshift.io", "v1", "MachineConfig"),
        "machineconfigs",
    );
    let configs: Api<DynamicObject> = Api::all_with(cluster.client(), &configs);
    let config: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": "99-worker-os", "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"osImageURL": "quay.io/os/rhcos@sha256:4150000000000000000000000000000000000000000000000000000000000000"}
    }))
    .unwrap();
    configs
        .create(&PostParams::default(), &config)
        .await
        .unwrap();
    let mut most_unavailable = 0;
    let mut list = Vec::new();
    for _ in 0..3000 {
        list = nodes.list(&ListParams::default()).await.unwrap().items;
        let unavailable = list
            .iter()
            .filter(|n| !ready(n) || n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true))
            .count();
        most_unavailable = most_unavailable.max(unavailable);
        let done = list.iter().all(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.node_info.as_ref())
                .is_some_and(|i| i.kernel_version == "5.14.0-362.el9.x86_64")
        }) && list
            .iter()
            .all(|n| ready(n) && n.spec.as_ref().and_then(|s| s.unschedulable) != Some(true));
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for node in &list {
        let info = node
            .status
            .as_ref()
            .and_then(|s| s.node_info.as_ref())
            .unwrap();
        assert_eq!(
            info.kernel_version,
            "5.14.0-362.el9.x86_64",
            "{} runs the new kernel",
            node.metadata.name.as_deref().unwrap_or("")
        );
        assert_eq!(info.os_image, "RHCOS 415");
    }
    let after = boot_ids(&list);
    assert!(
        before.iter().all(|b| !after.contains(b)),
        "every node rebooted: {before:?} -> {after:?}"
    );
    assert_eq!(most_unavailable, 1, "one node at a time");
    cluster.shutdown().await;
}

/// How many watches of `resource` (`pods`, `nodes`) the API server is serving now, from its metrics.
async fn watchers(client: &kube::Client, resource: &str) -> usize {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(request).await.unwrap();
    let series = format!("apiserver_registered_watchers{{resource=\"{resource}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .map_or(0, |count| count.trim().parse().unwrap())
}

#[tokio::test(start_paused = true)]
async fn the_simulation_watches_pods_and_nodes_once_for_all_its_components() {
    let cluster = start(Scenario::load("demo").unwrap()).await;
    let client = cluster.client();
    for _ in 0..100 {
        if watchers(&client, "pods").await > 0 && watchers(&client, "nodes").await > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Every component has had time to start its watches.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(watchers(&client, "pods").await, 1, "one pod watch");
    assert_eq!(watchers(&client, "nodes").await, 1, "one node watch");
}
