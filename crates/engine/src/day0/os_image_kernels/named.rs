//! Which OS images the cluster names, and who names each: every MachineConfig's `spec.osImageURL` (the pools'
//! rendered MachineConfigs only repeat them and are left out) and the release's OS image in
//! `openshift-machine-config-operator/machine-config-osimageurl` (`baseOSContainerImage` and `osImageURL`, for the
//! release its `releaseVersion` names).
//!
//! Only the release the cluster is at or moving to is named by an API object: ClusterVersion lists other releases
//! by version and payload image, not by OS image, so their kernels are not offered.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Resource, ResourceExt};

use crate::day0::release::{BASE_OS_IMAGE_KEY, RELEASE_VERSION_KEY};
use kmm_api::day0::{MachineConfig, MachineConfigPool};

/// The ConfigMap's other key naming the release's OS image (older releases name it there only).
const OS_IMAGE_URL_KEY: &str = "osImageURL";

/// Every OS image named, with its namers (`MachineConfig <name>`, `release <version>`), sorted.
pub(crate) fn named_images(
    configs: &[impl AsRef<MachineConfig>],
    release_os_image: Option<&ConfigMap>,
) -> BTreeMap<String, Vec<String>> {
    let mut named: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for config in configs.iter().map(AsRef::as_ref) {
        let rendered = config
            .owner_references()
            .iter()
            .any(|o| o.kind == MachineConfigPool::kind(&()));
        let image = config.spec.os_image_url.as_deref().map(str::trim);
        if let Some(image) = image.filter(|i| !i.is_empty() && !rendered) {
            named
                .entry(image.to_owned())
                .or_default()
                .push(format!("MachineConfig {}", config.name_any()));
        }
    }
    if let Some(data) = release_os_image.and_then(|c| c.data.as_ref()) {
        let namer = match data.get(RELEASE_VERSION_KEY).map(|v| v.trim()) {
            Some(version) if !version.is_empty() => format!("release {version}"),
            _ => "the cluster's release".to_owned(),
        };
        for key in [BASE_OS_IMAGE_KEY, OS_IMAGE_URL_KEY] {
            if let Some(image) = data.get(key).map(|i| i.trim()).filter(|i| !i.is_empty()) {
                named
                    .entry(image.to_owned())
                    .or_default()
                    .push(namer.clone());
            }
        }
    }
    for namers in named.values_mut() {
        namers.sort();
        namers.dedup();
    }
    named
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(name: &str, image: &str, rendered: bool) -> std::sync::Arc<MachineConfig> {
        let mut object = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": name}, "spec": {"osImageURL": image},
        });
        if rendered {
            object["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
                "name": "worker", "uid": "u",
            }]);
        }
        std::sync::Arc::new(serde_json::from_value(object).expect("a MachineConfig"))
    }

    #[test]
    fn machine_configs_and_the_release_name_images_once_each() {
        let configs = vec![
            config("99-worker-os", "quay.io/os@sha256:415", false),
            config("rendered-worker-1", "quay.io/os@sha256:415", true),
            config("99-infra-os", "quay.io/os@sha256:416", false),
            config("00-empty", "", false),
        ];
        let release: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "machine-config-osimageurl"},
            "data": {"releaseVersion": "4.15.3", "baseOSContainerImage": "quay.io/os@sha256:415",
                     "osImageURL": "quay.io/os@sha256:415"},
        }))
        .expect("a ConfigMap");
        let named = named_images(&configs, Some(&release));
        assert_eq!(
            named,
            BTreeMap::from([
                (
                    "quay.io/os@sha256:415".to_owned(),
                    vec![
                        "MachineConfig 99-worker-os".to_owned(),
                        "release 4.15.3".to_owned()
                    ]
                ),
                (
                    "quay.io/os@sha256:416".to_owned(),
                    vec!["MachineConfig 99-infra-os".to_owned()]
                ),
            ])
        );
    }
}
