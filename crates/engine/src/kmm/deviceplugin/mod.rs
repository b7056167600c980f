//! The device plugin reconciler: for each Module with `spec.devicePlugin`, one DaemonSet that runs the plugin on
//! the nodes where the module is loaded, as upstream KMM runs it. The shape, placement, labels, counts and removal
//! are those every Module workload shares ([`crate::kmm::plugins`]); a plugin adds the kubelet's device plugin
//! directory, where it registers.
//!
//! - Nodes the Module selects, that are not cordoned and whose taints its tolerations allow, carry
//!   `kmm.node.kubernetes.io/<ns>.<module>.device-plugin-target`; the DaemonSet's node selector asks for that label
//!   and the module's `…ready` label (and, during an ordered upgrade, the `version-schedule-pod` label of its
//!   version), so a plugin starts only where its driver is loaded and leaves a node cordoned for a drain. A Module
//!   without a loader places its plugin by its own selector.
//! - One DaemonSet per module version (`<module>-device-plugin-<five characters from the version>`, labelled
//!   `kmm.node.kubernetes.io/role=device-plugin` and with the Module's name); the DaemonSet of an earlier version is
//!   deleted once it places its plugin on no node.
//! - Nodes where a plugin pod is ready carry `…device-plugin-ready`.
//! - `status.devicePlugin`: `nodesMatchingSelectorNumber` and `desiredNumber` count the target nodes,
//!   `availableNumber` the available plugin pods of every version.
//! - A deleted Module, or one that no longer asks for a plugin, loses its DaemonSets and both labels; the Module's
//!   finalizer waits for the plugin pods to be gone before the module is unloaded.

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{HostPathVolumeSource, Volume, VolumeMount};
use kube::runtime::controller::Action;
use tokio_util::sync::CancellationToken;

use crate::kmm::plugins::daemonset::{self, PluginPod};
use crate::kmm::plugins::{self, PluginContext, Role, rollout};
use crate::runtime::context::{Context, Error};
use crate::runtime::shared::SharedWatches;
use kmm_api::kmm::{DevicePluginSpec, Module};

/// Where the kubelet keeps the device plugin registration socket, mounted into every plugin.
const KUBELET_DEVICE_PLUGINS_PATH: &str = "/var/lib/kubelet/device-plugins";
/// The volume of that directory.
const KUBELET_DEVICE_PLUGINS_VOLUME: &str = "kubelet-device-plugins";

/// The device plugin reconciler, subscribed to the engine's shared node watch now (before it starts); the future
/// runs it until `stop` is cancelled.
pub(super) fn run(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    plugins::run(context, shared, stop, Role::DevicePlugin, reconcile)
}

/// Reconcile one Module's device plugin.
async fn reconcile(module: Arc<Module>, context: Arc<PluginContext>) -> Result<Action, Error> {
    let plugin = module
        .spec
        .device_plugin
        .as_ref()
        .filter(|_| module.metadata.deletion_timestamp.is_none());
    let Some(plugin) = plugin else {
        return rollout::take_away(&module, &context).await;
    };
    let namespace = rollout::namespace_of(&module)?;
    let desired = daemonset::desired(&module, &namespace, Role::DevicePlugin, plugin_pod(plugin));
    rollout::roll_out(&module, &context, &desired).await
}

/// What the plugin's pods run: the Module's containers, with the kubelet's device plugin directory mounted first.
fn plugin_pod(plugin: &DevicePluginSpec) -> PluginPod<'_> {
    PluginPod {
        container: &plugin.container,
        init_container: plugin.init_container.as_ref(),
        service_account_name: plugin.service_account_name.clone(),
        volumes: &plugin.volumes,
        automount_service_account_token: plugin.automount_service_account_token,
        preset_volumes: vec![Volume {
            name: KUBELET_DEVICE_PLUGINS_VOLUME.to_owned(),
            host_path: Some(HostPathVolumeSource {
                path: KUBELET_DEVICE_PLUGINS_PATH.to_owned(),
                type_: Some("Directory".to_owned()),
            }),
            ..Volume::default()
        }],
        preset_mounts: vec![VolumeMount {
            name: KUBELET_DEVICE_PLUGINS_VOLUME.to_owned(),
            mount_path: KUBELET_DEVICE_PLUGINS_PATH.to_owned(),
            ..VolumeMount::default()
        }],
        preset_env: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::kmm::plugins::daemonset::Desired;
    use kmm_api::kmm::labels;
    use kube::ResourceExt;
    use serde_json::json;

    fn module(loader: bool, version: Option<&str>) -> Module {
        let mut spec = json!({
            "selector": {"gpu": "yes"},
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "imageRepoSecret": {"name": "pull"},
            "devicePlugin": {
                "container": {"image": "quay.io/acme/dp:1", "args": ["--x"], "volumeMounts": [{"name": "dev", "mountPath": "/dev"}]},
                "initContainer": {"image": "quay.io/acme/dp-init:1"},
                "serviceAccountName": "dp",
                "volumes": [{"name": "dev", "hostPath": {"path": "/dev"}}]
            }
        });
        if loader {
            spec["moduleLoader"] = json!({"container": {
                "version": version,
                "modprobe": {"moduleName": "kmod"},
                "kernelMappings": [{"regexp": "^.+$", "containerImage": "q/kmod:1"}]
            }});
        }
        serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": "gpu", "namespace": "acme", "uid": "u1"},
            "spec": spec,
        }))
        .expect("a Module")
    }

    fn desired_of(module: &Module) -> Desired {
        let plugin = module.spec.device_plugin.as_ref().expect("a device plugin");
        daemonset::desired(module, "acme", Role::DevicePlugin, plugin_pod(plugin))
    }

    #[test]
    fn the_plugin_waits_for_the_loaded_module_on_target_nodes() {
        let module_v2 = module(true, Some("v2"));
        let module = module(true, None);
        let desired = desired_of(&module);
        let pod = desired.spec.template.spec.clone().expect("a pod spec");
        assert_eq!(
            pod.node_selector,
            Some(BTreeMap::from([
                (
                    "kmm.node.kubernetes.io/acme.gpu.ready".to_owned(),
                    String::new()
                ),
                (
                    "kmm.node.kubernetes.io/acme.gpu.device-plugin-target".to_owned(),
                    String::new()
                ),
            ]))
        );
        assert_eq!(desired.labels[labels::DAEMONSET_ROLE], "device-plugin");
        assert_eq!(desired.labels[labels::MODULE_NAME], "gpu");
        let main = &pod.containers[0];
        assert_eq!(main.name, "device-plugin");
        let mounts: Vec<&str> = main
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.mount_path.as_str())
            .collect();
        assert_eq!(mounts, [KUBELET_DEVICE_PLUGINS_PATH, "/dev"]);
        assert_eq!(
            main.security_context.as_ref().and_then(|s| s.privileged),
            Some(true)
        );
        assert_eq!(
            pod.init_containers.expect("an init container")[0].name,
            "device-plugin-init"
        );
        assert_eq!(pod.volumes.map(|v| v.len()), Some(2));
        assert_eq!(pod.image_pull_secrets.map(|s| s.len()), Some(1));
        assert_eq!(pod.tolerations.map(|t| t.len()), Some(1));
        let object = daemonset::new_object(&module, "acme", &desired);
        let name = object.metadata.name.clone().unwrap_or_default();
        let prefix = "gpu-device-plugin-";
        assert!(
            name.starts_with(prefix) && name.len() == prefix.len() + 5,
            "{name}"
        );
        let versioned = daemonset::new_object(&module_v2, "acme", &desired);
        assert_ne!(versioned.metadata.name, object.metadata.name);
        assert_eq!(object.owner_references()[0].uid, "u1");
    }

    #[test]
    fn a_version_places_the_plugin_by_the_schedule_label_and_changes_the_hash() {
        let plain = desired_of(&module(true, None));
        let versioned = desired_of(&module(true, Some("v2")));
        let key = labels::version_schedule_pod("acme", "gpu");
        assert_eq!(versioned.labels[&key], "v2");
        let selector = versioned.spec.template.spec.and_then(|s| s.node_selector);
        assert_eq!(
            selector.and_then(|s| s.get(&key).cloned()).as_deref(),
            Some("v2")
        );
        assert_ne!(plain.hash, versioned.hash);
        assert_eq!(plain.hash, desired_of(&module(true, None)).hash);
    }
}
