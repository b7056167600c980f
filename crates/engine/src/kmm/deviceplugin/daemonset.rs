//! The device plugin DaemonSet a Module asks for, shaped as upstream KMM shapes it: named `<module>-device-plugin-…`
//! (one per module version),
//! labelled with the Module's name, the `device-plugin` role and (during an ordered upgrade) the module version, and
//! scheduled only on nodes where the module is loaded and which are targets of the plugin.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec};
use k8s_openapi::api::core::v1::{
    Container, HostPathVolumeSource, PodSpec, PodTemplateSpec, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use crate::runtime::digest::sha256_hex;
use crate::runtime::object_names;
use kmm_api::kmm::labels;
use kmm_api::kmm::{CommonContainerSpec, DevicePluginSpec, Module};

/// Where the kubelet keeps the device plugin registration socket, mounted into every plugin.
const KUBELET_DEVICE_PLUGINS_PATH: &str = "/var/lib/kubelet/device-plugins";
/// The volume of that directory.
const KUBELET_DEVICE_PLUGINS_VOLUME: &str = "kubelet-device-plugins";

/// The module version the Module's device plugin runs for now (empty without an ordered upgrade).
pub(super) fn module_version(module: &Module) -> &str {
    module
        .spec
        .module_loader
        .as_ref()
        .and_then(|l| l.container.version.as_deref())
        .unwrap_or_default()
}

/// The module version a device plugin DaemonSet runs for (empty when it carries no version label).
pub(super) fn daemon_set_version<'d>(
    daemon_set: &'d DaemonSet,
    namespace: &str,
    module: &str,
) -> &'d str {
    daemon_set
        .labels()
        .get(&labels::version_schedule_pod(namespace, module))
        .map(String::as_str)
        .unwrap_or_default()
}

/// Labels of the DaemonSet and its pods, and the nodes it runs on.
fn labels_and_node_selector(
    module: &Module,
    namespace: &str,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let name = module.name_any();
    let mut labels = BTreeMap::from([
        (labels::MODULE_NAME.to_owned(), name.clone()),
        (
            labels::DAEMONSET_ROLE.to_owned(),
            labels::DEVICE_PLUGIN_ROLE.to_owned(),
        ),
    ]);
    // Without a loader there is no readiness label to wait for: the plugin goes where the selector says.
    if module.spec.module_loader.is_none() {
        return (labels, module.spec.selector.clone());
    }
    let mut node_selector = BTreeMap::from([
        (labels::node_ready(namespace, &name), String::new()),
        (
            labels::device_plugin_target_label(namespace, &name),
            String::new(),
        ),
    ]);
    let version = module_version(module);
    if !version.is_empty() {
        let key = labels::version_schedule_pod(namespace, &name);
        labels.insert(key.clone(), version.to_owned());
        node_selector.insert(key, version.to_owned());
    }
    (labels, node_selector)
}

/// A container of the plugin: privileged (plugins reach devices), with the kubelet's plugin directory mounted
/// first for the main container.
fn container(spec: &CommonContainerSpec, name: &str, preset: Vec<VolumeMount>) -> Container {
    let mut mounts = preset;
    mounts.extend(spec.volume_mounts.iter().cloned());
    Container {
        name: name.to_owned(),
        image: Some(spec.image.clone()),
        command: (!spec.command.is_empty()).then(|| spec.command.clone()),
        args: (!spec.args.is_empty()).then(|| spec.args.clone()),
        env: (!spec.env.is_empty()).then(|| spec.env.clone()),
        image_pull_policy: spec
            .image_pull_policy
            .and_then(|p| serde_json::to_value(p).ok())
            .and_then(|v| v.as_str().map(str::to_owned)),
        resources: spec.resources.clone(),
        security_context: Some(SecurityContext {
            privileged: Some(true),
            ..SecurityContext::default()
        }),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        ..Container::default()
    }
}

/// The DaemonSet spec, labels and its hash for `module`'s device plugin `plugin`.
pub(super) struct Desired {
    /// Labels of the DaemonSet (also its selector and its pods' labels).
    pub labels: BTreeMap<String, String>,
    /// The spec.
    pub spec: DaemonSetSpec,
    /// Hash of labels and spec, kept in [`labels::DEVICE_PLUGIN_HASH`].
    pub hash: String,
}

/// What the device plugin DaemonSet of `module` should be.
pub(super) fn desired(module: &Module, plugin: &DevicePluginSpec, namespace: &str) -> Desired {
    let (labels, node_selector) = labels_and_node_selector(module, namespace);
    let mut volumes = vec![Volume {
        name: KUBELET_DEVICE_PLUGINS_VOLUME.to_owned(),
        host_path: Some(HostPathVolumeSource {
            path: KUBELET_DEVICE_PLUGINS_PATH.to_owned(),
            type_: Some("Directory".to_owned()),
        }),
        ..Volume::default()
    }];
    volumes.extend(plugin.volumes.iter().cloned());
    let preset = vec![VolumeMount {
        name: KUBELET_DEVICE_PLUGINS_VOLUME.to_owned(),
        mount_path: KUBELET_DEVICE_PLUGINS_PATH.to_owned(),
        ..VolumeMount::default()
    }];
    let spec = DaemonSetSpec {
        selector: LabelSelector {
            match_labels: Some(labels.clone()),
            match_expressions: None,
        },
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels.clone()),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                init_containers: plugin
                    .init_container
                    .as_ref()
                    .map(|c| vec![container(c, "device-plugin-init", Vec::new())]),
                containers: vec![container(&plugin.container, "device-plugin", preset)],
                priority_class_name: Some("system-node-critical".to_owned()),
                image_pull_secrets: module.spec.image_repo_secret.clone().map(|s| vec![s]),
                node_selector: Some(node_selector),
                service_account_name: plugin.service_account_name.clone(),
                volumes: Some(volumes),
                tolerations: (!module.spec.tolerations.is_empty())
                    .then(|| module.spec.tolerations.clone()),
                automount_service_account_token: plugin.automount_service_account_token,
                ..PodSpec::default()
            }),
        },
        ..DaemonSetSpec::default()
    };
    let hash =
        sha256_hex(&serde_json::to_vec(&(&labels, &spec)).unwrap_or_default())[..16].to_owned();
    Desired { labels, spec, hash }
}

/// A new DaemonSet object for `desired`, owned by the Module (so the API server's garbage collector takes it with
/// the Module, should the engine not be there to).
pub(super) fn new_object(module: &Module, namespace: &str, desired: &Desired) -> DaemonSet {
    DaemonSet {
        metadata: ObjectMeta {
            name: Some(object_names::device_plugin_daemon_set_name(
                &module.name_any(),
                module_version(module),
            )),
            namespace: Some(namespace.to_owned()),
            labels: Some(desired.labels.clone()),
            annotations: Some(BTreeMap::from([(
                labels::DEVICE_PLUGIN_HASH.to_owned(),
                desired.hash.clone(),
            )])),
            owner_references: owner_reference(module).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: Some(desired.spec.clone()),
        status: None,
    }
}

/// The Module as controlling owner.
pub(super) fn owner_reference(module: &Module) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: Module::api_version(&()).into_owned(),
        kind: Module::kind(&()).into_owned(),
        name: module.name_any(),
        uid: module.uid()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let plugin = module.spec.device_plugin.clone().expect("a device plugin");
        desired(module, &plugin, "acme")
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
        let object = new_object(&module, "acme", &desired);
        let name = object.metadata.name.clone().unwrap_or_default();
        let prefix = "gpu-device-plugin-";
        assert!(
            name.starts_with(prefix) && name.len() == prefix.len() + 5,
            "{name}"
        );
        let versioned = new_object(&module_v2, "acme", &desired);
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

    #[test]
    fn without_a_loader_the_plugin_follows_the_selector() {
        let desired = desired_of(&module(false, None));
        let selector = desired.spec.template.spec.and_then(|s| s.node_selector);
        assert_eq!(
            selector,
            Some(BTreeMap::from([("gpu".to_owned(), "yes".to_owned())]))
        );
    }
}
