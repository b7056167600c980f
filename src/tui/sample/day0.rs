//! The sample's ModuleDay0s, one per story the Day-0 pane tells, added to a sample cluster by [`add`]:
//!
//! - `openshift-kmm/99-worker-kmod-os`: pool `worker` (every `pool-00` node) moves to RHCOS 415; its image is
//!   being built by a build pod, and the nodes already on 415 show the target reached.
//! - `openshift-kmm/99-infra-kmod-os`: pool `infra` stays on its layered image while the cluster moved to 4.15:
//!   `Available` with `LayeredImageKept`, the upgrade waiting for the opt-in.
//! - `openshift-kmm/99-gpu-kmod-os`: no pool has its selector (`Degraded`, `NoMachineConfigPool`).
//!
//! The shared sample has none, so the other panes' pictures do not change. [`add_awaiting_hand_over`] adds, on its
//! own, a kmm-managed MachineConfig the engine cannot hand over because the namespace of ModuleDay0s is missing.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{KERNELS, ago, event, object, pool};
use crate::tui::data::{ClusterData, KindSnapshot};
use kmm_api::day0::KMM_MANAGED_LABEL;
use kmm_api::kmm::labels;
use kmm_engine::day0::images::mic_name;
use kmm_engine::kmm::kernel;
use kmm_engine::runtime::object_names;

/// Namespace of every sample ModuleDay0.
const NAMESPACE: &str = "openshift-kmm";

/// The node label the sample pools select by.
const POOL_LABEL: &str = "kmm.sample/pool";

/// The sample's image repository.
const REPOSITORY: &str = "registry.local/acme/rhcos-kmod";

/// Add the Day-0 sample to `data`: ModuleDay0s, their MachineConfigPools, the building image's
/// ModuleImagesConfig and build pod, and their events.
///
/// One flat list of demo objects, each list written out whole so it reads like the Day-0 pane it fills; split up,
/// it would only hide which ModuleDay0 goes with which pool and event.
pub fn add(data: &mut ClusterData) {
    let old_os = KERNELS[0].1;
    let new_os = KERNELS[1].1;
    let worker_pool = pool(0);
    let day0s = vec![
        day0(
            "99-worker-kmod-os",
            &json!({POOL_LABEL: worker_pool}),
            new_os,
            &format!("{REPOSITORY}:415.92"),
            false,
            &conditions(
                ("False", "Building"),
                ("True", "Building"),
                ("False", "AsExpected"),
                &format!(
                    "{REPOSITORY}:415.92: building (pod 99-worker-kmod-os-day0-build: running)"
                ),
            ),
        ),
        day0(
            "99-infra-kmod-os",
            &json!({"node-role.kubernetes.io/infra": ""}),
            old_os,
            &format!("{REPOSITORY}:414.92"),
            false,
            &conditions(
                ("True", "LayeredImageKept"),
                ("False", "AsExpected"),
                ("False", "AsExpected"),
                &format!(
                    "the cluster is at release 4.15.3 (4.15) but the pool stays on the layered image \
                     {REPOSITORY}:414.92 (osMapping.clusterUpgradeTriggerNodeUpgrade is false)"
                ),
            ),
        ),
        day0(
            "99-gpu-kmod-os",
            &json!({"node-role.kubernetes.io/gpu": ""}),
            new_os,
            &format!("{REPOSITORY}:gpu-415.92"),
            true,
            &conditions(
                ("False", "NoMachineConfigPool"),
                ("False", "NoMachineConfigPool"),
                ("True", "NoMachineConfigPool"),
                "no MachineConfigPool selects nodes by node-role.kubernetes.io/gpu",
            ),
        ),
    ];
    let pools = vec![
        machine_config_pool("worker", &json!({POOL_LABEL: worker_pool}), (40, 40, 39, 0)),
        machine_config_pool(
            "infra",
            &json!({"node-role.kubernetes.io/infra": ""}),
            (3, 3, 3, 0),
        ),
    ];
    let mic = mic_name("99-worker-kmod-os");
    let image = format!("{REPOSITORY}:415.92");
    let build_pod = object_names::build_pod_name(&mic, &kernel::dns_safe(KERNELS[0].0));
    let mut mics = data.mics.clone();
    mics.push(object(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleImagesConfig",
        "metadata": {"name": mic, "namespace": NAMESPACE, "creationTimestamp": ago(600), "generation": 1},
        "spec": {"images": [{"image": image, "kernelVersion": KERNELS[0].0, "generation": 1}]},
        "status": {
            "imagesStates": [{"image": image, "status": "NeedsBuilding", "observedGeneration": 1}],
            "observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": "False", "reason": "Building",
                "message": format!("{image}: building (pod {build_pod}: running)"),
                "lastTransitionTime": ago(300)}],
        },
    })));
    let mut pods = data.pods.clone();
    pods.push(object(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": build_pod, "namespace": NAMESPACE, "creationTimestamp": ago(290),
            "labels": {labels::MODULE_NAME: mic, labels::RESOURCE_TYPE: "BuildImage",
                labels::TARGET_KERNEL: kernel::dns_safe(KERNELS[0].0)}},
        "spec": {"containers": [{"name": "build", "image": "gcr.io/kaniko-project/executor:v1.23.2"}]},
        "status": {"phase": "Running"},
    })));
    pods.push(object(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{mic}-pull-pod-x7k2q"), "namespace": NAMESPACE,
            "creationTimestamp": ago(320),
            "labels": {labels::IMAGE_OWNER: mic, labels::PULL_POD_TYPE: "one-time-pull"}},
        "spec": {"containers": [{"name": "pull", "image": image}]},
        "status": {"phase": "Failed"},
    })));
    let mut events = data.events.clone();
    events.extend([
        event(
            "MachineConfig",
            None,
            "99-worker-kmod-os",
            false,
            "ModuleDay0Created",
            "ModuleDay0 openshift-kmm/99-worker-kmod-os now manages osImageURL",
            900,
        ),
        event(
            "ModuleDay0",
            Some(NAMESPACE),
            "99-worker-kmod-os",
            false,
            "Building",
            &format!("{image}: building (pod {build_pod}: running)"),
            280,
        ),
        event(
            "Pod",
            Some(NAMESPACE),
            &build_pod,
            false,
            "Started",
            "Started container build",
            285,
        ),
        event(
            "ModuleDay0",
            Some(NAMESPACE),
            "99-gpu-kmod-os",
            true,
            "NoMachineConfigPool",
            "no MachineConfigPool selects nodes by node-role.kubernetes.io/gpu",
            120,
        ),
    ]);
    data.apply(KindSnapshot::ModuleImagesConfigs(mics));
    data.apply(KindSnapshot::Pods(pods));
    data.apply(KindSnapshot::Events(events));
    data.apply(KindSnapshot::MachineConfigPools(pools));
    data.apply(KindSnapshot::ModuleDay0s(day0s));
}

/// Add a MachineConfig labelled kmm-managed, `99-edge-kmod-os`, with the Event the engine publishes on it when
/// namespace `openshift-kmm` does not exist, and no ModuleDay0.
pub fn add_awaiting_hand_over(data: &mut ClusterData) {
    let name = "99-edge-kmod-os";
    let config = object(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name, "creationTimestamp": ago(900),
            "labels": {"machineconfiguration.openshift.io/role": "edge", KMM_MANAGED_LABEL: "true"}},
        "spec": {"osImageURL": format!("{REPOSITORY}:414.92")},
    }));
    let mut events = data.events.clone();
    events.push(event(
        "MachineConfig",
        None,
        name,
        true,
        "NamespaceMissing",
        &format!(
            "namespace {NAMESPACE} does not exist: create it (kubectl create namespace {NAMESPACE}); creating \
             ModuleDay0 {NAMESPACE}/{name}: namespaces \"{NAMESPACE}\" not found (404 NotFound)"
        ),
        240,
    ));
    data.apply(KindSnapshot::Events(events));
    data.apply(KindSnapshot::MachineConfigs(vec![config]));
}

/// The three conditions, the message shared by every true one and by `Available`.
fn conditions(
    available: (&str, &str),
    progressing: (&str, &str),
    degraded: (&str, &str),
    message: &str,
) -> Value {
    let condition = |type_: &str, (status, reason): (&str, &str)| {
        json!({"type": type_, "status": status, "reason": reason,
            "message": if status == "True" || type_ == "Available" { message } else { "" },
            "lastTransitionTime": ago(300)})
    };
    json!([
        condition("Available", available),
        condition("Progressing", progressing),
        condition("Degraded", degraded),
    ])
}

fn day0<T: serde::de::DeserializeOwned>(
    name: &str,
    selector: &Value,
    literal: &str,
    image: &str,
    build: bool,
    conditions: &Value,
) -> Arc<T> {
    let mut mapping = json!({"literal": literal, "containerImage": image});
    if build {
        mapping["build"] = json!({"dockerfileConfigMap": {"name": "kmod-os-dockerfile"}});
    }
    object(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleDay0",
        "metadata": {"name": name, "namespace": NAMESPACE, "creationTimestamp": ago(900), "generation": 1},
        "spec": {"osMapping": mapping, "machineConfigPoolSelector": selector},
        "status": {"machineConfig": name, "observedGeneration": 1, "conditions": conditions},
    }))
}

fn machine_config_pool<T: serde::de::DeserializeOwned>(
    name: &str,
    node_labels: &Value,
    (machines, updated, ready, degraded): (i32, i32, i32, i32),
) -> Arc<T> {
    object(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": name, "creationTimestamp": ago(86_400)},
        "spec": {
            "nodeSelector": {"matchLabels": node_labels},
            "machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": name}},
        },
        "status": {"machineCount": machines, "updatedMachineCount": updated,
            "readyMachineCount": ready, "degradedMachineCount": degraded},
    }))
}
