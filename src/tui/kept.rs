//! What the console keeps of each object it watches: what its panes draw and its actions read, nothing more.
//!
//! Nodes, NodeModulesConfigs and pods come in the thousands on a large cluster, and most of each is of no use to
//! a list: a pod's volumes and the module configuration its annotations carry, a node's capacity and its other
//! conditions, the tolerations an NMC repeats for every module. The console drops those as objects arrive, so it
//! holds a fraction of what the cluster stores. The YAML view and the editor read the whole object from the API
//! server instead ([`super::live`]). `managedFields` never gets this far: every watched object is read without it
//! ([`super::lean`]).

use k8s_openapi::api::core::v1::{
    Container, ContainerImage, Node, NodeStatus, NodeSystemInfo, Pod, PodSpec, PodStatus,
};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use kube::Resource;

use kmm_api::conditions::node_ready_only;

use kmm_api::day0::{MachineConfig, MachineConfigPool, ModuleDay0};
use kmm_api::hub::ManagedClusterModule;
use kmm_api::imagecache::ImageCache;
use kmm_api::kmm::labels;
use kmm_api::kmm::{Module, ModuleImagesConfig, NodeModulesConfig, PreflightValidation};
use kmm_api::shim::Shim;

/// An object the console lists, and what of it the console keeps.
pub(super) trait Kept: Resource {
    /// Drop what no pane draws and no action reads. Without an override, the whole object is kept: the kinds
    /// that come in the thousands override it.
    fn keep_shown(&mut self) {}
}

impl Kept for Module {}
impl Kept for ModuleImagesConfig {}
impl Kept for Event {}
impl Kept for Shim {}
impl Kept for ImageCache {}
impl Kept for ModuleDay0 {}
impl Kept for MachineConfigPool {}
impl Kept for MachineConfig {}
impl Kept for PreflightValidation {}
impl Kept for ResourceSlice {}
impl Kept for ResourceClaim {}
impl Kept for ManagedClusterModule {}

/// A node's metadata, spec, Ready condition, OS, architecture and kernel (`nodeInfo`) and the images it reports
/// (the cache coverage). Addresses, capacity, the other conditions and the node's IDs and component versions go:
/// no pane shows them.
impl Kept for Node {
    fn keep_shown(&mut self) {
        if let Some(status) = self.status.take() {
            self.status = Some(NodeStatus {
                conditions: status.conditions.map(node_ready_only),
                images: status.images.map(|images| {
                    exact(
                        images
                            .into_iter()
                            .map(|image| ContainerImage {
                                names: image.names.map(exact),
                                size_bytes: image.size_bytes,
                            })
                            .collect(),
                    )
                }),
                node_info: status.node_info.map(|info| NodeSystemInfo {
                    architecture: info.architecture,
                    kernel_version: info.kernel_version,
                    operating_system: info.operating_system,
                    os_image: info.os_image,
                    ..NodeSystemInfo::default()
                }),
                ..NodeStatus::default()
            });
        }
    }
}

/// Each module's name, namespace, version and configuration, wanted and loaded: the tolerations, service account
/// and boot ID of every entry go.
impl Kept for NodeModulesConfig {
    fn keep_shown(&mut self) {
        self.spec.modules.shrink_to_fit();
        for module in &mut self.spec.modules {
            module.tolerations = Vec::new();
            module.service_account_name = String::new();
        }
        if let Some(status) = &mut self.status {
            status.modules.shrink_to_fit();
            for module in &mut status.modules {
                module.tolerations = Vec::new();
                module.service_account_name = String::new();
                module.boot_id = None;
            }
        }
    }
}

/// A pod's metadata without the worker configuration KMM's annotations carry, the node it runs on (or is pinned
/// to), each container's name and image, and its phase and container states. Volumes, commands, environment,
/// tolerations, addresses and conditions go.
impl Kept for Pod {
    fn keep_shown(&mut self) {
        if let Some(annotations) = &mut self.metadata.annotations {
            annotations.remove(labels::WORKER_CONFIG);
            annotations.remove(labels::WORKER_TOLERATIONS);
        }
        if let Some(spec) = self.spec.take() {
            self.spec = Some(PodSpec {
                node_name: spec.node_name,
                node_selector: spec.node_selector.filter(|selector| !selector.is_empty()),
                containers: named_images(spec.containers),
                init_containers: spec.init_containers.map(named_images),
                ..PodSpec::default()
            });
        }
        if let Some(status) = self.status.take() {
            self.status = Some(PodStatus {
                phase: status.phase,
                reason: status.reason,
                message: status.message,
                start_time: status.start_time,
                container_statuses: status.container_statuses.map(exact),
                init_container_statuses: status.init_container_statuses.map(exact),
                ..PodStatus::default()
            });
        }
    }
}

/// Each container's name and image.
fn named_images(containers: Vec<Container>) -> Vec<Container> {
    exact(
        containers
            .into_iter()
            .map(|container| Container {
                name: container.name,
                image: container.image,
                ..Container::default()
            })
            .collect(),
    )
}

/// `list` in an allocation of its length. A list read from JSON grows as its items arrive, and one of one item
/// holds room for four: kept for every node, that spare room is most of what a list costs.
fn exact<T>(mut list: Vec<T>) -> Vec<T> {
    list.shrink_to_fit();
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_node_keeps_its_ready_condition_kernel_images_and_spec() {
        let mut node: Node = serde_json::from_value(json!({
            "metadata": {"name": "worker-1", "labels": {"zone": "a"}, "annotations": {"machineconfiguration.openshift.io/currentConfig": "rendered-1"}},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                "capacity": {"cpu": "4"},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                "images": [{"names": ["quay.io/x/y:1"]}],
                "nodeInfo": {"kernelVersion": "6.1", "osImage": "RHCOS", "architecture": "amd64", "bootID": "b",
                             "containerRuntimeVersion": "containerd://2", "kubeProxyVersion": "", "kubeletVersion": "v1.31",
                             "machineID": "m", "operatingSystem": "linux", "systemUUID": "u"}
            }
        }))
        .expect("node");
        node.keep_shown();
        let kept = serde_json::to_value(&node).expect("json");
        assert_eq!(
            kept["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}])
        );
        assert!(
            kept["status"].get("capacity").is_none() && kept["status"].get("addresses").is_none()
        );
        assert_eq!(kept["status"]["images"][0]["names"][0], "quay.io/x/y:1");
        assert_eq!(kept["status"]["nodeInfo"]["kernelVersion"], "6.1");
        assert_eq!(kept["spec"]["taints"][0]["key"], "k");
        assert_eq!(kept["metadata"]["labels"]["zone"], "a");
        assert_eq!(
            kept["metadata"]["annotations"]["machineconfiguration.openshift.io/currentConfig"],
            "rendered-1"
        );
    }

    #[test]
    fn a_node_modules_config_keeps_each_modules_configuration_without_its_tolerations() {
        let config = json!({"containerImage": "quay.io/x/kmod:6.1", "kernelVersion": "6.1",
                            "imagePullPolicy": "IfNotPresent", "insecurePull": false,
                            "modprobe": {"moduleName": "kmod", "dirName": "/opt"}});
        let toleration = json!([{"key": "node.kubernetes.io/disk-pressure", "operator": "Exists"}]);
        let mut nmc: NodeModulesConfig = serde_json::from_value(json!({
            "metadata": {"name": "worker-1"},
            "spec": {"modules": [{"name": "kmod", "namespace": "acme", "serviceAccountName": "default",
                                  "tolerations": toleration, "config": config}]},
            "status": {"modules": [{"name": "kmod", "namespace": "acme", "serviceAccountName": "default",
                                    "tolerations": toleration, "config": config, "bootId": "b"}]}
        }))
        .expect("nmc");
        nmc.keep_shown();
        let kept = serde_json::to_value(&nmc).expect("json");
        for side in ["spec", "status"] {
            let module = &kept[side]["modules"][0];
            assert!(
                module.get("tolerations").is_none() && module.get("bootId").is_none(),
                "{module}"
            );
            assert_eq!(module["config"], config);
            assert_eq!(
                (&module["name"], &module["namespace"]),
                (&json!("kmod"), &json!("acme"))
            );
        }
    }
}
