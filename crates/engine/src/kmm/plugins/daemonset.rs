//! The DaemonSet of a Module's device plugin or DRA driver, shaped as upstream KMM shapes both: named
//! `<module>-device-plugin-…` or `<module>-dra-…` (one per module version), labelled with the Module's name, the
//! role and (during an ordered upgrade) the module version, and scheduled only on nodes where the module is loaded
//! and which are targets of the workload. What differs between the two roles comes in a [`PluginPod`].

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, PodSpec, PodTemplateSpec, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use super::Role;
use crate::runtime::digest::sha256_hex;
use crate::runtime::object_names;
use kmm_api::kmm::labels;
use kmm_api::kmm::{CommonContainerSpec, Module};

/// What one role's spec and the role itself put into the pods: the user's containers, account and volumes, and the
/// host directories and environment the role always gives its main container.
pub(crate) struct PluginPod<'s> {
    /// Main container.
    pub container: &'s CommonContainerSpec,
    /// Init container.
    pub init_container: Option<&'s CommonContainerSpec>,
    /// Service account of the pods.
    pub service_account_name: Option<String>,
    /// The user's volumes.
    pub volumes: &'s [Volume],
    /// Whether the pods mount a service account token.
    pub automount_service_account_token: Option<bool>,
    /// Volumes the role always has, before the user's.
    pub preset_volumes: Vec<Volume>,
    /// Their mounts in the main container, before the user's.
    pub preset_mounts: Vec<VolumeMount>,
    /// Environment the main container always gets, before the user's.
    pub preset_env: Vec<EnvVar>,
}

/// The module version the Module's plugins run for now (empty without an ordered upgrade).
pub(crate) fn module_version(module: &Module) -> &str {
    module
        .spec
        .module_loader
        .as_ref()
        .and_then(|l| l.container.version.as_deref())
        .unwrap_or_default()
}

/// The module version a plugin DaemonSet runs for (empty when it carries no version label).
pub(crate) fn daemon_set_version<'d>(
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
    role: Role,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let name = module.name_any();
    let mut labels = BTreeMap::from([
        (labels::MODULE_NAME.to_owned(), name.clone()),
        (
            labels::DAEMONSET_ROLE.to_owned(),
            role.label_value().to_owned(),
        ),
    ]);
    // Without a loader there is no readiness label to wait for: the workload goes where the selector says.
    if module.spec.module_loader.is_none() {
        return (labels, module.spec.selector.clone());
    }
    let mut node_selector = BTreeMap::from([
        (labels::node_ready(namespace, &name), String::new()),
        (role.target_label(namespace, &name), String::new()),
    ]);
    let version = module_version(module);
    if !version.is_empty() {
        let key = labels::version_schedule_pod(namespace, &name);
        labels.insert(key.clone(), version.to_owned());
        node_selector.insert(key, version.to_owned());
    }
    (labels, node_selector)
}

/// A container of the workload: privileged (plugins and drivers reach devices), with the role's mounts and
/// environment first for the main container.
fn container(
    spec: &CommonContainerSpec,
    name: String,
    preset_mounts: Vec<VolumeMount>,
    preset_env: Vec<EnvVar>,
) -> Container {
    let mut mounts = preset_mounts;
    mounts.extend(spec.volume_mounts.iter().cloned());
    let mut env = preset_env;
    env.extend(spec.env.iter().cloned());
    Container {
        name,
        image: Some(spec.image.clone()),
        command: (!spec.command.is_empty()).then(|| spec.command.clone()),
        args: (!spec.args.is_empty()).then(|| spec.args.clone()),
        env: (!env.is_empty()).then_some(env),
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

/// The DaemonSet spec, labels and its hash for one of a Module's workloads.
pub(crate) struct Desired {
    /// Which workload.
    pub role: Role,
    /// Labels of the DaemonSet (also its selector and its pods' labels).
    pub labels: BTreeMap<String, String>,
    /// The spec.
    pub spec: DaemonSetSpec,
    /// Hash of labels and spec, kept in the role's [`Role::hash_annotation`].
    pub hash: String,
}

/// What the DaemonSet of `module`'s `role` workload, whose pods `pod` describes, should be.
pub(crate) fn desired(module: &Module, namespace: &str, role: Role, pod: PluginPod<'_>) -> Desired {
    let (labels, node_selector) = labels_and_node_selector(module, namespace, role);
    let mut volumes = pod.preset_volumes;
    volumes.extend(pod.volumes.iter().cloned());
    let main = role.container_name();
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
                init_containers: pod
                    .init_container
                    .map(|c| vec![container(c, format!("{main}-init"), Vec::new(), Vec::new())]),
                containers: vec![container(
                    pod.container,
                    main.to_owned(),
                    pod.preset_mounts,
                    pod.preset_env,
                )],
                priority_class_name: Some("system-node-critical".to_owned()),
                image_pull_secrets: module.spec.image_repo_secret.clone().map(|s| vec![s]),
                node_selector: Some(node_selector),
                service_account_name: pod.service_account_name,
                volumes: (!volumes.is_empty()).then_some(volumes),
                tolerations: (!module.spec.tolerations.is_empty())
                    .then(|| module.spec.tolerations.clone()),
                automount_service_account_token: pod.automount_service_account_token,
                ..PodSpec::default()
            }),
        },
        ..DaemonSetSpec::default()
    };
    let hash =
        sha256_hex(&serde_json::to_vec(&(&labels, &spec)).unwrap_or_default())[..16].to_owned();
    Desired {
        role,
        labels,
        spec,
        hash,
    }
}

/// A new DaemonSet object for `desired`, owned by the Module (so the API server's garbage collector takes it with
/// the Module, should the engine not be there to).
pub(crate) fn new_object(module: &Module, namespace: &str, desired: &Desired) -> DaemonSet {
    let name = module.name_any();
    let version = module_version(module);
    let name = match desired.role {
        Role::DevicePlugin => object_names::device_plugin_daemon_set_name(&name, version),
        Role::Dra => object_names::dra_daemon_set_name(&name, version),
    };
    DaemonSet {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.to_owned()),
            labels: Some(desired.labels.clone()),
            annotations: Some(BTreeMap::from([(
                desired.role.hash_annotation().to_owned(),
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
pub(crate) fn owner_reference(module: &Module) -> Option<OwnerReference> {
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

    fn module(loader: bool) -> Module {
        let mut spec = json!({"selector": {"gpu": "yes"}});
        if loader {
            spec["moduleLoader"] = json!({"container": {
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

    fn bare_pod(spec: &CommonContainerSpec) -> PluginPod<'_> {
        PluginPod {
            container: spec,
            init_container: Some(spec),
            service_account_name: None,
            volumes: &[],
            automount_service_account_token: None,
            preset_volumes: Vec::new(),
            preset_mounts: Vec::new(),
            preset_env: vec![EnvVar {
                name: "PRESET".to_owned(),
                ..EnvVar::default()
            }],
        }
    }

    #[test]
    fn each_role_has_its_own_name_labels_selector_and_hash_annotation() {
        let spec: CommonContainerSpec =
            serde_json::from_value(json!({"image": "q/x:1", "env": [{"name": "USER"}]}))
                .expect("a container");
        let module = module(true);
        let plugin = desired(&module, "acme", Role::DevicePlugin, bare_pod(&spec));
        let driver = desired(&module, "acme", Role::Dra, bare_pod(&spec));
        assert_eq!(driver.labels[labels::DAEMONSET_ROLE], "dra");
        assert_eq!(plugin.labels[labels::DAEMONSET_ROLE], "device-plugin");
        let selector = driver
            .spec
            .template
            .spec
            .as_ref()
            .and_then(|s| s.node_selector.clone())
            .unwrap_or_default();
        assert!(selector.contains_key(&labels::dra_target_label("acme", "gpu")));
        assert!(selector.contains_key(&labels::node_ready("acme", "gpu")));
        let pod = driver.spec.template.spec.clone().expect("a pod spec");
        assert_eq!(pod.containers[0].name, "dra");
        let env: Vec<&str> = pod.containers[0]
            .env
            .iter()
            .flatten()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(env, ["PRESET", "USER"]);
        let init = pod.init_containers.expect("an init container");
        assert_eq!(init[0].name, "dra-init");
        assert_eq!(init[0].env.as_ref().map(Vec::len), Some(1));
        assert_ne!(plugin.hash, driver.hash);
        let object = new_object(&module, "acme", &driver);
        let name = object.metadata.name.clone().unwrap_or_default();
        assert!(
            name.starts_with("gpu-dra-") && name.len() == "gpu-dra-".len() + 5,
            "{name}"
        );
        assert!(object.annotations().contains_key(labels::DRA_HASH));
        assert_eq!(object.owner_references()[0].uid, "u1");
        let plugin_object = new_object(&module, "acme", &plugin);
        assert!(
            plugin_object
                .annotations()
                .contains_key(labels::DEVICE_PLUGIN_HASH)
        );
    }

    #[test]
    fn without_a_loader_the_workload_follows_the_selector() {
        let spec: CommonContainerSpec =
            serde_json::from_value(json!({"image": "q/x:1"})).expect("a container");
        let driver = desired(&module(false), "acme", Role::Dra, bare_pod(&spec));
        let selector = driver.spec.template.spec.and_then(|s| s.node_selector);
        assert_eq!(
            selector,
            Some(BTreeMap::from([("gpu".to_owned(), "yes".to_owned())]))
        );
    }
}
