//! Set-up for the kubelet's tests: an embedded cluster with the simulation's kubelets on a scenario, pods bound
//! by `spec.nodeName`, and the ways a user would look at the result (pod status, events, Nodes, ConfigMaps).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, ContainerStatus, Event, Node, Pod};
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::sim::{SIM_NAMESPACE, World, kubelet};
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

/// One worker and one small image `quay.io/org/app:1`: the smallest world a container runs in, for the tests of
/// what a client does with a running container (exec, attach, logs, ephemeral containers).
pub(crate) const ONE_WORKER: &str = r#"
timeScale: 10
nodes:
  - namePrefix: worker-
    count: 1
    kernelVersion: 5.14.0-284.el9.x86_64
    osImage: Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)
    diskGiB: 1
registry:
  images:
    - {name: quay.io/org/app:1, sizeMiB: 10}
"#;

/// A running simulation with only kubelets.
pub(crate) struct Sim {
    pub cluster: EmbeddedCluster,
    pub world: Arc<World>,
}

/// Start an in-memory cluster with the kubelets of `scenario` (YAML).
pub(crate) async fn start(scenario: &str) -> Sim {
    start_with(scenario, EmbeddedOptions::default()).await
}

/// Start a cluster with `options` and the kubelets of `scenario` (YAML).
pub(crate) async fn start_with(scenario: &str, options: EmbeddedOptions) -> Sim {
    let cluster = EmbeddedCluster::start(options)
        .await
        .expect("the embedded cluster starts");
    let scenario = Scenario::parse(scenario, "test.yaml", None).expect("a valid scenario");
    let world = World::new(
        cluster.server().clone(),
        cluster.client(),
        scenario,
        None,
        None,
    );
    kubelet::register(&world).await.expect("nodes register");
    kubelet::spawn(world.clone());
    Sim { cluster, world }
}

impl Sim {
    pub(crate) fn client(&self) -> kube::Client {
        self.cluster.client()
    }

    pub(crate) fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client(), "default")
    }

    pub(crate) async fn stop(self) {
        self.world.stop.cancel();
        self.cluster.shutdown().await;
    }

    /// Create a pod from a JSON manifest in `default`.
    pub(crate) async fn create_pod(&self, manifest: Value) -> Pod {
        let pod: Pod = serde_json::from_value(manifest).expect("a pod manifest");
        self.pods()
            .create(&PostParams::default(), &pod)
            .await
            .expect("the pod is created")
    }

    /// Wait (in simulated-time-friendly steps) until the pod satisfies `check`; fail with `what` otherwise.
    pub(crate) async fn pod_until(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&Pod) -> bool,
    ) -> Pod {
        let mut last = None;
        for _ in 0..20_000 {
            if let Ok(pod) = self.pods().get(name).await {
                if check(&pod) {
                    return pod;
                }
                last = Some(pod);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "pod {name} never reached: {what}; last status: {}",
            serde_json::to_string_pretty(&last.and_then(|p| p.status)).unwrap_or_default()
        );
    }

    /// Wait until `check` holds for the Node.
    pub(crate) async fn node_until(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&Node) -> bool,
    ) -> Node {
        let api: Api<Node> = Api::all(self.client());
        for _ in 0..20_000 {
            if let Ok(node) = api.get(name).await
                && check(&node)
            {
                return node;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("node {name} never reached: {what}");
    }

    /// `(reason, message, count)` of the events about a pod, oldest first.
    pub(crate) async fn events_of(&self, pod: &str) -> Vec<(String, String, i32)> {
        let api: Api<Event> = Api::namespaced(self.client(), "default");
        let mut events: Vec<Event> = api
            .list(&ListParams::default())
            .await
            .expect("events list")
            .items
            .into_iter()
            .filter(|e| e.involved_object.name.as_deref() == Some(pod))
            .collect();
        events.sort_by_key(|e| e.metadata.creation_timestamp.clone());
        events
            .into_iter()
            .map(|e| {
                (
                    e.reason.unwrap_or_default(),
                    e.message.unwrap_or_default(),
                    e.count.unwrap_or(1),
                )
            })
            .collect()
    }

    /// The machine ConfigMap the kubelet publishes for `node`.
    pub(crate) async fn machine_record(&self, node: &str) -> ConfigMap {
        Api::<ConfigMap>::namespaced(self.client(), SIM_NAMESPACE)
            .get(&format!("machine-{node}"))
            .await
            .expect("the machine ConfigMap exists")
    }

    /// Image names in a node's published machine record.
    pub(crate) async fn recorded_images(&self, node: &str) -> Vec<String> {
        let cm = self.machine_record(node).await;
        let images = cm
            .data
            .and_then(|d| d.get("images").cloned())
            .unwrap_or_default();
        let images: Vec<Value> = serde_json::from_str(&images).expect("images are JSON");
        images
            .iter()
            .filter_map(|i| i["name"].as_str().map(str::to_string))
            .collect()
    }
}

/// A pod bound to `node` with one container.
pub(crate) fn pod(name: &str, node: &str, container: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [container]}
    })
}

/// The status of the pod's container called `name`.
pub(crate) fn container<'a>(pod: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)
}

/// The waiting reason of the pod's first container.
pub(crate) fn waiting_reason(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

/// The pod's phase.
pub(crate) fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// Status of the condition `type_` of a Node.
pub(crate) fn node_condition(node: &Node, type_: &str) -> Option<String> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}
