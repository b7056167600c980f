//! Set-up for the control-plane tests: a cluster and a world, nodes and machines made by hand, and a stand-in
//! for the one thing of the kubelet these tests need — republishing a node's readiness and boot after the
//! Machine Config Operator reboots its machine (the kubelet does this in the full simulation).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kmm_cluster::sim::World;
use kmm_cluster::sim::machine::{Containerd, ImageStore, Machine};
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// A running cluster and the world of a scenario on it.
pub(crate) struct Sim {
    /// Keeps the API server alive.
    pub cluster: EmbeddedCluster,
    /// The simulation's shared state.
    pub world: Arc<World>,
}

impl Sim {
    /// Start a cluster and a world for the scenario text.
    pub(crate) async fn start(scenario: &str) -> Self {
        let cluster = EmbeddedCluster::start(EmbeddedOptions::default())
            .await
            .expect("the embedded cluster starts");
        let scenario = Scenario::parse(scenario, "test", None).expect("the scenario parses");
        let world = World::new(
            cluster.server().clone(),
            cluster.client(),
            scenario,
            None,
            None,
        );
        Self { cluster, world }
    }

    /// The client of the cluster.
    pub(crate) fn client(&self) -> kube::Client {
        self.cluster.client()
    }

    /// Create a Ready node with labels and taints, backed by a machine running `os` (kernel, OS image, URL).
    pub(crate) async fn add_node(
        &self,
        name: &str,
        labels: Value,
        taints: Value,
        os: (&str, &str, &str),
    ) {
        let (kernel, os_image, url) = os;
        self.world.machines.lock().insert(
            name.to_string(),
            machine(name, kernel, os_image, (!url.is_empty()).then_some(url)),
        );
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
        }))
        .expect("a node");
        Api::<Node>::all(self.client())
            .create(&PostParams::default(), &node)
            .await
            .expect("the node is created");
        publish_node_status(&self.client(), &self.world, name).await;
    }

    /// Set a node's Ready condition by hand (a node that stopped reporting, or came back).
    pub(crate) async fn set_ready(&self, name: &str, ready: bool) {
        self.world.machines.with(name, |m| m.ready = ready);
        publish_node_status(&self.client(), &self.world, name).await;
    }

    /// Republish the status of every node whose machine changed, as the kubelet does.
    pub(crate) fn spawn_node_status(&self) -> JoinHandle<()> {
        let world = self.world.clone();
        let client = self.client();
        let mut changed = world.machine_changed.subscribe();
        tokio::spawn(async move {
            while let Ok(name) = changed.recv().await {
                publish_node_status(&client, &world, &name).await;
            }
        })
    }
}

/// A machine as the kubelet would register it.
pub(crate) fn machine(name: &str, kernel: &str, os_image: &str, url: Option<&str>) -> Machine {
    Machine {
        name: name.to_string(),
        kernel_version: kernel.to_string(),
        os_image: os_image.to_string(),
        os_image_url: url.map(str::to_string),
        boot_id: format!("boot-{name}-0"),
        architecture: "amd64".into(),
        operating_system: "linux".into(),
        disk_bytes: 100 << 30,
        modules: BTreeSet::new(),
        shims: BTreeMap::new(),
        containerd: Containerd {
            version: "1.7.13".into(),
            config_path: "/etc/containerd/config.toml".into(),
            config: String::new(),
            restarts: 0,
            last_restart: None,
        },
        images: ImageStore::default(),
        ready: true,
    }
}

/// Write a node's Ready condition and nodeInfo from its machine.
async fn publish_node_status(client: &kube::Client, world: &World, name: &str) {
    let Some(m) = world.machines.get(name) else {
        return;
    };
    let (status, reason) = if m.ready {
        ("True", "KubeletReady")
    } else {
        ("False", "KubeletNotReady")
    };
    let patch = json!({"status": {
        "conditions": [{"type": "Ready", "status": status, "reason": reason, "message": "",
            "lastHeartbeatTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"}],
        "nodeInfo": {
            "machineID": name, "systemUUID": name, "bootID": m.boot_id,
            "kernelVersion": m.kernel_version, "osImage": m.os_image,
            "containerRuntimeVersion": format!("containerd://{}", m.containerd.version),
            "kubeletVersion": "v1.34.0", "kubeProxyVersion": "",
            "operatingSystem": m.operating_system, "architecture": m.architecture,
        },
    }});
    Api::<Node>::all(client.clone())
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the node status is published");
}

pub(crate) use kmm_testing::{eventually, wait_for};
