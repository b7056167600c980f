//! The DRA driver reconciler: for each Module with `spec.dra`, the kubelet plugin of a Dynamic Resource Allocation
//! driver on the nodes where the module is loaded, and the DeviceClasses that select its devices, as upstream KMM
//! deploys them. Placement, labels, counts and removal are those of the device plugin ([`crate::kmm::plugins`]):
//!
//! - Target nodes carry `kmm.node.kubernetes.io/<ns>.<module>.dra-target`; the DaemonSet's node selector asks for it
//!   and the module's `…ready` label (and, during an ordered upgrade, the version's `version-schedule-pod` label),
//!   so a driver starts only where its kernel module is loaded, leaves a cordoned node, and leaves a node before its
//!   module reloads there ([`crate::kmm::module`] waits for it).
//! - One DaemonSet per module version (`<module>-dra-<five characters from the version>`, labelled
//!   `kmm.node.kubernetes.io/role=dra`), running `spec.dra.container` with the kubelet's plugin and registry
//!   directories and the CDI directory mounted, and the environment a kubelet plugin reads to find them.
//! - Nodes where a driver pod is ready carry `…dra-ready`; `status.dra` counts as `status.devicePlugin` does.
//! - [`device_classes`]: `spec.dra.deviceClasses`, labelled as the Module's.
//! - [`gate`]: on a cluster older than Kubernetes 1.34 nothing is deployed; the Module's `DRASupported` condition
//!   and a Warning Event (written by the Module reconciler, the one writer of its conditions) say why.
//! - A deleted Module, or one that no longer asks for a driver, loses its DaemonSets, labels and DeviceClasses; the
//!   Module's finalizer waits for the driver pods to be gone before the module is unloaded.

pub(crate) mod device_classes;
pub(crate) mod gate;

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    EnvVar, EnvVarSource, HostPathVolumeSource, ObjectFieldSelector, Volume, VolumeMount,
};
use kube::ResourceExt;
use kube::runtime::controller::Action;
use tokio_util::sync::CancellationToken;

use crate::kmm::plugins::daemonset::{self, PluginPod};
use crate::kmm::plugins::{self, PluginContext, Role, rollout};
use crate::runtime::context::{Context, Error};
use crate::runtime::shared::SharedWatches;
use kmm_api::kmm::{DraSpec, Module};

/// Where the kubelet finds the sockets of DRA kubelet plugins.
const KUBELET_PLUGINS_PATH: &str = "/var/lib/kubelet/plugins/";
/// Where kubelet plugins register with the kubelet.
const KUBELET_REGISTRY_PATH: &str = "/var/lib/kubelet/plugins_registry/";
/// Where drivers write the Container Device Interface specs of the devices they prepare.
const CDI_PATH: &str = "/var/run/cdi";

/// The DRA driver reconciler, subscribed to the engine's shared node watch now (before it starts); the future runs
/// it until `stop` is cancelled.
pub(super) fn run(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    plugins::run(context, shared, stop, Role::Dra, reconcile)
}

/// Reconcile one Module's DRA driver.
async fn reconcile(module: Arc<Module>, context: Arc<PluginContext>) -> Result<Action, Error> {
    let client = &context.engine.client;
    let namespace = rollout::namespace_of(&module)?;
    let name = module.name_any();
    let dra = module
        .spec
        .dra
        .as_ref()
        .filter(|_| module.metadata.deletion_timestamp.is_none());
    let Some(dra) = dra else {
        // A Module that never had a driver costs no API call; one being deleted is cleaned by its finalizer too.
        let had_driver = module.status.as_ref().is_some_and(|s| s.dra.is_some())
            || module.metadata.deletion_timestamp.is_some();
        if had_driver {
            device_classes::remove(client, &namespace, &name).await?;
        }
        return rollout::take_away(&module, &context).await;
    };
    // The Module reconciler says why in the Module's conditions; here nothing is deployed.
    if !gate::cluster_version(client).await?.supports_dra() {
        rollout::write_status(&context, &module, None).await?;
        return Ok(context.engine.resync());
    }
    if !rollout::finalizer_in_place(&module) {
        return Ok(Action::await_change());
    }
    let classes = device_classes::desired(&namespace, &name, dra)?;
    device_classes::ensure(client, &namespace, &name, &classes).await?;
    let desired = daemonset::desired(&module, &namespace, Role::Dra, driver_pod(dra));
    rollout::roll_out(&module, &context, &desired).await
}

/// A host directory volume named `name`.
fn host_volume(name: &str, path: &str, type_: &str) -> Volume {
    Volume {
        name: name.to_owned(),
        host_path: Some(HostPathVolumeSource {
            path: path.to_owned(),
            type_: Some(type_.to_owned()),
        }),
        ..Volume::default()
    }
}

/// An environment variable with a fixed value.
fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        ..EnvVar::default()
    }
}

/// An environment variable read from the pod's own fields.
fn env_from_field(name: &str, field: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: field.to_owned(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

/// What the driver's pods run: the Module's containers, with the kubelet's plugin and registry directories and the
/// CDI directory mounted first, and told where they are and which node and pod the driver runs as.
fn driver_pod(dra: &DraSpec) -> PluginPod<'_> {
    let directories = [
        ("kubelet-plugins", KUBELET_PLUGINS_PATH, "DirectoryOrCreate"),
        (
            "kubelet-plugins-registry",
            KUBELET_REGISTRY_PATH,
            "Directory",
        ),
        ("cdi", CDI_PATH, "DirectoryOrCreate"),
    ];
    PluginPod {
        container: &dra.container,
        init_container: dra.init_container.as_ref(),
        service_account_name: dra.service_account_name.clone(),
        volumes: &dra.volumes,
        automount_service_account_token: dra.automount_service_account_token,
        preset_volumes: directories
            .iter()
            .map(|(name, path, type_)| host_volume(name, path, type_))
            .collect(),
        preset_mounts: directories
            .iter()
            .map(|(name, path, _)| VolumeMount {
                name: (*name).to_owned(),
                mount_path: (*path).to_owned(),
                ..VolumeMount::default()
            })
            .collect(),
        preset_env: vec![
            env_from_field("NODE_NAME", "spec.nodeName"),
            env_from_field("POD_UID", "metadata.uid"),
            env("CDI_ROOT", CDI_PATH),
            env("KUBELET_REGISTRAR_DIRECTORY_PATH", KUBELET_REGISTRY_PATH),
            env("KUBELET_PLUGINS_DIRECTORY_PATH", KUBELET_PLUGINS_PATH),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kmm_api::kmm::labels;
    use serde_json::json;

    fn module(version: Option<&str>) -> Module {
        serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": "gpu", "namespace": "acme", "uid": "u1"},
            "spec": {
                "selector": {"gpu": "yes"},
                "moduleLoader": {"container": {
                    "version": version,
                    "modprobe": {"moduleName": "kmod"},
                    "kernelMappings": [{"regexp": "^.+$", "containerImage": "q/kmod:1"}]
                }},
                "dra": {
                    "container": {"image": "q/dra:1", "env": [{"name": "LOG", "value": "4"}]},
                    "serviceAccountName": "dra-driver",
                    "driverName": "gpu.example.com",
                    "volumes": [{"name": "dev", "hostPath": {"path": "/dev"}}]
                }
            },
        }))
        .expect("a Module")
    }

    #[test]
    fn the_driver_runs_with_the_kubelet_plugin_directories_on_loaded_nodes() {
        let module = module(Some("v2"));
        let dra = module.spec.dra.as_ref().expect("a DRA spec");
        let desired = daemonset::desired(&module, "acme", Role::Dra, driver_pod(dra));
        let pod = desired.spec.template.spec.clone().expect("a pod spec");
        assert_eq!(pod.service_account_name.as_deref(), Some("dra-driver"));
        let selector = pod.node_selector.clone().unwrap_or_default();
        assert!(selector.contains_key(&labels::node_ready("acme", "gpu")));
        assert!(selector.contains_key(&labels::dra_target_label("acme", "gpu")));
        assert_eq!(
            selector
                .get(&labels::version_schedule_pod("acme", "gpu"))
                .map(String::as_str),
            Some("v2")
        );
        let volumes: Vec<&str> = pod
            .volumes
            .iter()
            .flatten()
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(
            volumes,
            ["kubelet-plugins", "kubelet-plugins-registry", "cdi", "dev"]
        );
        let main = &pod.containers[0];
        let mounts: Vec<&str> = main
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.mount_path.as_str())
            .collect();
        assert_eq!(
            mounts,
            [KUBELET_PLUGINS_PATH, KUBELET_REGISTRY_PATH, CDI_PATH]
        );
        let env: Vec<&str> = main.env.iter().flatten().map(|e| e.name.as_str()).collect();
        assert_eq!(
            env,
            [
                "NODE_NAME",
                "POD_UID",
                "CDI_ROOT",
                "KUBELET_REGISTRAR_DIRECTORY_PATH",
                "KUBELET_PLUGINS_DIRECTORY_PATH",
                "LOG"
            ]
        );
        let object = daemonset::new_object(&module, "acme", &desired);
        assert!(object.name_any().starts_with("gpu-dra-"));
    }
}
