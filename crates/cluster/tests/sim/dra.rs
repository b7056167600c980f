//! Dynamic resource allocation on the simulated nodes: a DRA driver's pod publishes its node's devices in a
//! ResourceSlice while the kernel module behind them is loaded, and the scheduler allocates ResourceClaims from
//! those slices, reserves them for their pods, keeps pods Pending with kube-scheduler's words when nothing fits,
//! and gives devices back when their pods go.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kmm_cluster::EmbeddedCluster;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

use super::workloads::eventually;

const SCENARIO: &str = r#"
seed: 7
timeScale: 10
nodes:
  - namePrefix: gpu-
    count: 2
    kernelVersion: 5.14.0-284.30.1.el9_2.x86_64
    osImage: RHCOS
    draDevices:
      - {driver: gpu.example.com, module: acme-gpu, count: 2, attributes: {model: A100}, capacity: {memory: 40Gi}}
  - {namePrefix: plain-, count: 1, kernelVersion: 5.14.0-284.30.1.el9_2.x86_64, osImage: RHCOS}
registry:
  images:
    - {name: "registry.k8s.io/dra-example-driver/dra-example-driver:v0.3.0", sizeMiB: 10}
    - {name: "quay.io/org/app:1", sizeMiB: 10}
"#;

/// Every node's loaded modules as the simulation keeps them, changed as a worker pod's modprobe changes them.
fn set_module(cluster: &EmbeddedCluster, node: &str, loaded: bool) {
    let world = cluster.simulation().expect("a simulation").world();
    world.machines.with(node, |machine| {
        if loaded {
            machine.modules.insert("acme_gpu".into());
        } else {
            machine.modules.remove("acme_gpu");
        }
    });
    world
        .machine_changed
        .send(node.to_owned())
        .expect("the kubelets listen");
}

/// The driver's pod on `node`, as upstream KMM's DRA DaemonSet runs `dra-example-kubeletplugin`.
async fn start_driver(client: &kube::Client, node: &str) {
    create(
        pods(client),
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("driver-{node}"), "namespace": "default"},
            "spec": {
                "nodeName": node,
                "containers": [{
                    "name": "plugin",
                    "image": "registry.k8s.io/dra-example-driver/dra-example-driver:v0.3.0",
                    "command": ["dra-example-kubeletplugin"],
                    "env": [{"name": "DRIVER_NAME", "value": "gpu.example.com"}]
                }]
            }
        }),
    )
    .await;
}

/// Create `manifest` through `api`.
async fn create<K>(api: Api<K>, manifest: Value) -> K
where
    K: Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(manifest).expect("a manifest");
    api.create(&PostParams::default(), &object)
        .await
        .expect("the object is created")
}

fn pods(client: &kube::Client) -> Api<Pod> {
    Api::namespaced(client.clone(), "default")
}

fn claims(client: &kube::Client) -> Api<ResourceClaim> {
    Api::namespaced(client.clone(), "default")
}

async fn slices_of(client: &kube::Client, node: &str) -> Vec<ResourceSlice> {
    Api::<ResourceSlice>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("listing slices")
        .items
        .into_iter()
        .filter(|s| s.spec.node_name.as_deref() == Some(node))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_driver_publishes_its_devices_while_the_module_is_loaded_and_withdraws_them() {
    let cluster = super::cluster_on(SCENARIO).await;
    let client = cluster.client();
    start_driver(&client, "gpu-0").await;
    let pods = pods(&client);
    eventually(60, "the driver runs", || async {
        pods.get("driver-gpu-0")
            .await
            .ok()
            .and_then(|p| p.status?.phase)
            .as_deref()
            == Some("Running")
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert!(
        slices_of(&client, "gpu-0").await.is_empty(),
        "no devices before the module is loaded"
    );

    set_module(&cluster, "gpu-0", true);
    eventually(30, "the slice is published", || async {
        slices_of(&client, "gpu-0").await.len() == 1
    })
    .await;
    let slice = slices_of(&client, "gpu-0").await.remove(0);
    assert_eq!(slice.spec.driver, "gpu.example.com");
    assert_eq!(slice.spec.pool.name, "gpu-0");
    let devices = slice.spec.devices.clone().unwrap_or_default();
    let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["gpu-0", "gpu-1"]);
    let model = devices[0].attributes.as_ref().and_then(|a| a.get("model"));
    assert_eq!(model.and_then(|m| m.string.as_deref()), Some("A100"));
    let owner = &slice.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Node", "gpu-0")
    );
    assert!(
        slices_of(&client, "gpu-1").await.is_empty(),
        "gpu-1 runs no driver"
    );

    set_module(&cluster, "gpu-0", false);
    eventually(30, "the unloaded module's devices go", || async {
        slices_of(&client, "gpu-0").await.is_empty()
    })
    .await;

    set_module(&cluster, "gpu-0", true);
    eventually(30, "the reloaded module's devices come back", || async {
        slices_of(&client, "gpu-0").await.len() == 1
    })
    .await;
    let eviction = json!({
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "driver-gpu-0", "namespace": "default"}
    });
    pods.create_subresource::<Value, Value>(
        "eviction",
        "driver-gpu-0",
        &PostParams::default(),
        &eviction,
    )
    .await
    .expect("the drain evicts the driver");
    eventually(60, "the drained node's devices go", || async {
        slices_of(&client, "gpu-0").await.is_empty()
    })
    .await;
    cluster.shutdown().await;
}

/// The claim's allocated devices (node, device names) and the pods it is reserved for.
async fn allocation(
    client: &kube::Client,
    claim: &str,
) -> (Option<String>, Vec<String>, Vec<String>) {
    let claim = claims(client).get(claim).await.expect("the claim");
    let status = claim.status.unwrap_or_default();
    let allocation = status.allocation.unwrap_or_default();
    let node = allocation
        .node_selector
        .and_then(|s| s.node_selector_terms.into_iter().next())
        .and_then(|t| {
            t.match_fields?
                .into_iter()
                .next()?
                .values?
                .into_iter()
                .next()
        });
    let results = allocation
        .devices
        .and_then(|d| d.results)
        .unwrap_or_default();
    let devices = results
        .iter()
        .map(|r| format!("{}/{}", r.pool, r.device))
        .collect();
    let reserved = status
        .reserved_for
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    (node, devices, reserved)
}

fn claim_manifest(name: &str, request: Value) -> Value {
    let mut exactly = json!({"deviceClassName": "gpu.example.com"});
    if let (Some(exactly), Value::Object(request)) = (exactly.as_object_mut(), request) {
        exactly.extend(request);
    }
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
    })
}

async fn claim(client: &kube::Client, name: &str, request: Value) {
    create(claims(client), claim_manifest(name, request)).await;
}

fn pod_manifest(name: &str, claims: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resourceClaims": claims,
            "containers": [{"name": "app", "image": "quay.io/org/app:1", "resources": {"claims": [{"name": "gpu"}]}}]
        }
    })
}

async fn pod_with_claim(client: &kube::Client, name: &str, claim: &str) {
    let claims = json!([{"name": "gpu", "resourceClaimName": claim}]);
    create(pods(client), pod_manifest(name, claims)).await;
}

async fn node_of(client: &kube::Client, pod: &str) -> Option<String> {
    pods(client).get(pod).await.ok()?.spec?.node_name
}

async fn unschedulable(client: &kube::Client, pod: &str) -> Option<String> {
    let pod = pods(client).get(pod).await.ok()?;
    let condition = pod
        .status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
    condition.message
}

const NOT_HELPFUL: &str =
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";

#[tokio::test(start_paused = true)]
async fn the_scheduler_allocates_claims_from_published_devices_and_frees_them_with_their_pods() {
    let cluster = super::cluster_on(SCENARIO).await;
    let client = cluster.client();
    for node in ["gpu-0", "gpu-1"] {
        set_module(&cluster, node, true);
        start_driver(&client, node).await;
    }
    create(
        Api::<DeviceClass>::all(client.clone()),
        json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}
        }),
    )
    .await;
    eventually(60, "both drivers publish", || async {
        slices_of(&client, "gpu-0").await.len() == 1 && slices_of(&client, "gpu-1").await.len() == 1
    })
    .await;

    // A claim that does not exist, and one a template has not made yet, keep their pods waiting.
    pod_with_claim(&client, "lonely", "missing").await;
    let templated = json!([{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]);
    create(pods(&client), pod_manifest("templated", templated)).await;
    eventually(30, "the missing claim is named", || async {
        unschedulable(&client, "lonely").await
            == Some(format!(
                "0/3 nodes are available: resourceclaim \"missing\" not found. {NOT_HELPFUL}"
            ))
    })
    .await;
    eventually(30, "the templated pod waits for its claim", || async {
        unschedulable(&client, "templated").await
            == Some(format!(
                "0/3 nodes are available: waiting for resource claim gpu of pod default/templated to be created. {NOT_HELPFUL}"
            ))
    })
    .await;

    // ExactCount 2 takes both devices of one node.
    claim(&client, "pair", json!({"count": 2})).await;
    pod_with_claim(&client, "pair-user", "pair").await;
    eventually(30, "the pair's pod is bound", || async {
        node_of(&client, "pair-user").await.is_some()
    })
    .await;
    let full = node_of(&client, "pair-user").await.unwrap_or_default();
    let (node, devices, reserved) = allocation(&client, "pair").await;
    assert_eq!(node.as_deref(), Some(full.as_str()));
    assert_eq!(devices, [format!("{full}/gpu-0"), format!("{full}/gpu-1")]);
    assert_eq!(reserved, ["pair-user"]);
    let other = if full == "gpu-0" { "gpu-1" } else { "gpu-0" };

    // One device, shared by two pods: both run where it is.
    claim(&client, "shared", json!({"selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'A100'"}}]})).await;
    pod_with_claim(&client, "shared-a", "shared").await;
    eventually(30, "the first sharer is bound", || async {
        node_of(&client, "shared-a").await.is_some()
    })
    .await;
    pod_with_claim(&client, "shared-b", "shared").await;
    eventually(30, "the second sharer is bound", || async {
        node_of(&client, "shared-b").await.is_some()
    })
    .await;
    assert_eq!(node_of(&client, "shared-a").await.as_deref(), Some(other));
    assert_eq!(node_of(&client, "shared-b").await.as_deref(), Some(other));
    let (_, devices, reserved) = allocation(&client, "shared").await;
    assert_eq!(devices.len(), 1);
    assert_eq!(reserved, ["shared-a", "shared-b"]);

    // Two more devices are not free anywhere, and no device is an H100.
    claim(&client, "big", json!({"count": 2})).await;
    pod_with_claim(&client, "big-user", "big").await;
    claim(&client, "h100", json!({"selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'H100'"}}]})).await;
    pod_with_claim(&client, "h100-user", "h100").await;
    let no_fit = format!("0/3 nodes are available: 3 cannot allocate all claims. {NOT_HELPFUL}");
    eventually(30, "the big claim does not fit", || async {
        unschedulable(&client, "big-user").await.as_ref() == Some(&no_fit)
    })
    .await;
    eventually(30, "the H100 claim does not fit", || async {
        unschedulable(&client, "h100-user").await.as_ref() == Some(&no_fit)
    })
    .await;
    assert_eq!(allocation(&client, "big").await, (None, vec![], vec![]));

    // The pair's pod goes: its claim is deallocated, and the big claim gets the devices.
    pods(&client)
        .delete("pair-user", &DeleteParams::default())
        .await
        .expect("deleting the pair's pod");
    eventually(60, "the pair's claim is deallocated", || async {
        allocation(&client, "pair").await == (None, vec![], vec![])
    })
    .await;
    eventually(
        60,
        "the big claim's pod is bound where the devices were freed",
        || async { node_of(&client, "big-user").await.as_deref() == Some(full.as_str()) },
    )
    .await;
    let (_, devices, reserved) = allocation(&client, "big").await;
    assert_eq!(devices.len(), 2);
    assert_eq!(reserved, ["big-user"]);
    assert_eq!(node_of(&client, "h100-user").await, None);
    cluster.shutdown().await;
}
