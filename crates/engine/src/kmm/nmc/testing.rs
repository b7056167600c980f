//! NMC entries for the unit tests of this reconciler.

use k8s_openapi::api::core::v1::{LocalObjectReference, Toleration};

use kmm_api::kmm::{ImagePullPolicy, ModprobeSpec, ModuleConfig, NodeModuleSpec, NodeModuleStatus};

/// A module config for kernel `5.14.0` loading from `image`.
pub(super) fn config(image: &str) -> ModuleConfig {
    ModuleConfig {
        kernel_version: "5.14.0".into(),
        container_image: image.into(),
        image_pull_policy: ImagePullPolicy::IfNotPresent,
        insecure_pull: false,
        in_tree_modules_to_remove: Vec::new(),
        in_tree_module_to_remove: None,
        modprobe: ModprobeSpec {
            module_name: Some("kmod".into()),
            ..Default::default()
        },
    }
}

/// A spec entry of `namespace/name` for [`config`]`(image)`.
pub(super) fn spec_entry(namespace: &str, name: &str, image: &str) -> NodeModuleSpec {
    NodeModuleSpec {
        name: name.into(),
        namespace: namespace.into(),
        service_account_name: "worker-sa".into(),
        image_repo_secret: Some(LocalObjectReference {
            name: "pull-secret".into(),
        }),
        tolerations: vec![Toleration {
            key: Some("maintenance".into()),
            operator: Some("Exists".into()),
            ..Default::default()
        }],
        version: Some("v1".into()),
        config: config(image),
    }
}

/// A status entry of `namespace/name` recording [`config`]`(image)` loaded in boot `boot_id`.
pub(super) fn status_entry(
    namespace: &str,
    name: &str,
    image: &str,
    boot_id: &str,
) -> NodeModuleStatus {
    NodeModuleStatus {
        name: name.into(),
        namespace: namespace.into(),
        service_account_name: "worker-sa".into(),
        image_repo_secret: None,
        tolerations: Vec::new(),
        version: None,
        config: Some(config(image)),
        boot_id: Some(boot_id.into()),
    }
}
