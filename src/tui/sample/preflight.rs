//! The sample's kernel upgrade plan, added to a sample cluster by [`add`]: PreflightValidation `preflight`
//! validates every Module against the sample's second kernel, one verdict per story the Preflight pane tells
//! (ready, built but not pushed, checking, not ready, not verified yet); the first Module gains a device plugin,
//! so the nodes that move to the kernel show the plugin they lose, and the second a build section, so it can build. The shared sample has none of this, so the other
//! panes' pictures do not change.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use super::{KERNELS, ago, object};
use crate::tui::data::{ClusterData, KindSnapshot};
use kmm_api::kmm::os_image_kernels::{self, OsImageKernel};
use kmm_api::kmm::{Build, DevicePluginSpec, Module};

/// The kernel of the OS image the sample's next MachineConfig names: no node runs it yet.
pub const NEXT_OS_KERNEL: &str = "5.14.0-427.13.1.el9_4.x86_64";

/// The engine's record of the kernels of the sample's OS images: the release's (a kernel nodes run), a
/// MachineConfig's naming the next OS (a kernel no node runs) and one that cannot be pulled.
pub fn os_image_kernels() -> Arc<ConfigMap> {
    let entries = [
        OsImageKernel {
            image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:415".to_owned(),
            named_by: vec!["release 4.15.3".to_owned()],
            kernel: Some(KERNELS[1].0.to_owned()),
            failure: None,
        },
        OsImageKernel {
            image: "registry.local/acme/rhcos-kmod:416.94.202405010000-0".to_owned(),
            named_by: vec!["MachineConfig 99-worker-next-os".to_owned()],
            kernel: Some(NEXT_OS_KERNEL.to_owned()),
            failure: None,
        },
        OsImageKernel {
            image: "registry.local/acme/rhcos-rt:416".to_owned(),
            named_by: vec!["MachineConfig 99-infra-rt-os".to_owned()],
            kernel: None,
            failure: Some("ErrImagePull: not found".to_owned()),
        },
    ];
    object(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": os_image_kernels::CONFIG_MAP, "namespace": os_image_kernels::NAMESPACE},
        "data": {os_image_kernels::DATA_KEY: os_image_kernels::render(&entries)},
    }))
}

/// Add the upgrade plan to `data`.
pub fn add(data: &mut ClusterData) {
    let kernel = KERNELS[1].0;
    let stories = [
        ("Success", "verified image exists"),
        (
            "Success",
            "verified image builds; it was not pushed (pushBuiltImage is false)",
        ),
        (
            "InProgress",
            "verification is not finished yet: checking the registry (pull pod running)",
        ),
        (
            "Failure",
            "verified image does not exist and the Module has no build or sign section for this kernel",
        ),
    ];
    let verdicts: Vec<Value> = data
        .modules
        .iter()
        .zip(stories)
        .map(|(module, (status, reason))| {
            json!({
                "namespace": module.metadata.namespace, "name": module.metadata.name,
                "verificationStatus": status, "statusReason": reason,
                "verificationStage": if status == "InProgress" { "Image" } else { "Done" },
                "lastTransitionTime": ago(120),
            })
        })
        .collect();
    data.apply(KindSnapshot::PreflightValidations(vec![object(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta2", "kind": "PreflightValidation",
        "metadata": {"name": "preflight", "creationTimestamp": ago(600)},
        "spec": {"kernelVersion": kernel},
        "status": {"modules": verdicts},
    }))]));
    let modules: Vec<Arc<Module>> = data
        .modules
        .iter()
        .enumerate()
        .map(|(index, module)| {
            let mut changed = module.as_ref().clone();
            match index {
                0 => {
                    changed.spec.device_plugin = Some(
                        object::<DevicePluginSpec>(
                            json!({"container": {"image": "quay.io/acme/accel-device-plugin:1.0"}}),
                        )
                        .as_ref()
                        .clone(),
                    );
                }
                1 => {
                    let build = object::<Build>(
                        json!({"dockerfileConfigMap": {"name": "kmod-dockerfile"}}),
                    );
                    for loader in changed.spec.module_loader.iter_mut() {
                        loader.container.build = Some(build.as_ref().clone());
                    }
                }
                _ => return module.clone(),
            }
            Arc::new(changed)
        })
        .collect();
    data.apply(KindSnapshot::Modules(modules));
}
