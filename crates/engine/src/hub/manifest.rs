//! The ManifestWork that carries a ManagedClusterModule's Module to one cluster, and what a stored one delivers.
//!
//! The Module is the MCM's `moduleSpec` for `spokeNamespace`, with the build and sign sections removed (spokes need
//! no build tooling: the hub built and signed every image) and the kernel mappings replaced by one literal mapping
//! per kernel the cluster runs. The work asks the spoke's agent to read the Module's node counts back, under the
//! feedback names upstream's hub uses, so the hub and the console see how far each spoke is.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use serde_json::{Value, json};

use super::plan::{Mapping, Mappings};
use kmm_api::hub::{ManagedClusterModule, NAME_LABEL};
use kmm_api::kmm::{KernelMapping, Module};
use kmm_api::ocm::work::{
    FeedbackRule, FeedbackType, JsonPath, ManifestConfigOption, ManifestWork, ManifestWorkSpec,
    ManifestsTemplate, ResourceIdentifier,
};

/// The Module status fields every work reads back: (feedback name, path), upstream's names.
const FEEDBACK: &[(&str, &str)] = &[
    (
        "moduleLoader.availableNumber",
        ".status.moduleLoader.availableNumber",
    ),
    (
        "moduleLoader.desiredNumber",
        ".status.moduleLoader.desiredNumber",
    ),
    (
        "moduleLoader.nodesMatchingSelectorNumber",
        ".status.moduleLoader.nodesMatchingSelectorNumber",
    ),
    (
        "devicePlugin.availableNumber",
        ".status.devicePlugin.availableNumber",
    ),
    (
        "devicePlugin.desiredNumber",
        ".status.devicePlugin.desiredNumber",
    ),
    (
        "devicePlugin.nodesMatchingSelectorNumber",
        ".status.devicePlugin.nodesMatchingSelectorNumber",
    ),
    ("dra.availableNumber", ".status.dra.availableNumber"),
    ("dra.desiredNumber", ".status.dra.desiredNumber"),
    (
        "dra.nodesMatchingSelectorNumber",
        ".status.dra.nodesMatchingSelectorNumber",
    ),
];

/// Feedback name of the nodes where the module is loaded.
pub(crate) const AVAILABLE: &str = "moduleLoader.availableNumber";

/// Feedback name of the nodes that should load it.
pub(crate) const DESIRED: &str = "moduleLoader.desiredNumber";

/// The work for `cluster` delivering `mcm` with `mappings`, controlled by the MCM.
pub(crate) fn work(mcm: &ManagedClusterModule, cluster: &str, mappings: &Mappings) -> ManifestWork {
    let name = mcm.metadata.name.clone().unwrap_or_default();
    let namespace = mcm.spec.spoke_namespace.clone();
    let mut spec = mcm.spec.module_spec.clone();
    if let Some(loader) = spec.module_loader.as_mut() {
        loader.container.build = None;
        loader.container.sign = None;
        loader.container.kernel_mappings = mappings
            .iter()
            .map(|(kernel, mapping)| KernelMapping {
                literal: Some(kernel.clone()),
                container_image: mapping.image.clone(),
                in_tree_modules_to_remove: mapping.in_tree_modules_to_remove.clone(),
                ..KernelMapping::default()
            })
            .collect();
    }
    let module = json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "Module",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    });
    ManifestWork {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(cluster.to_owned()),
            labels: Some(BTreeMap::from([(NAME_LABEL.to_owned(), name.clone())])),
            owner_references: owner(mcm).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: ManifestWorkSpec {
            workload: ManifestsTemplate {
                manifests: vec![module],
            },
            delete_option: None,
            manifest_configs: vec![ManifestConfigOption {
                resource_identifier: ResourceIdentifier {
                    group: "kmm.sigs.x-k8s.io".to_owned(),
                    resource: "modules".to_owned(),
                    name,
                    namespace,
                },
                feedback_rules: vec![FeedbackRule {
                    type_: FeedbackType::JsonPaths,
                    json_paths: FEEDBACK
                        .iter()
                        .map(|(name, path)| JsonPath {
                            name: (*name).to_owned(),
                            path: (*path).to_owned(),
                            version: None,
                        })
                        .collect(),
                }],
                update_strategy: None,
            }],
        },
        status: None,
    }
}

/// The MCM as the controlling owner of what it delivers: deleting the MCM deletes its works and images.
pub(crate) fn owner(mcm: &ManagedClusterModule) -> Option<OwnerReference> {
    mcm.controller_owner_ref(&())
}

/// The mappings a stored work delivers, kernel → image: what a cluster keeps while a new image is built.
pub(crate) fn delivered(work: &ManifestWork) -> Mappings {
    let Some(module) = work
        .spec
        .workload
        .manifests
        .iter()
        .find(|m| m.get("kind").and_then(Value::as_str) == Some("Module"))
        .and_then(|m| serde_json::from_value::<Module>(m.clone()).ok())
    else {
        return Mappings::new();
    };
    module
        .spec
        .module_loader
        .into_iter()
        .flat_map(|loader| loader.container.kernel_mappings)
        .filter_map(|mapping| {
            let kernel = mapping.literal?;
            Some((
                kernel,
                Mapping {
                    image: mapping.container_image,
                    in_tree_modules_to_remove: mapping.in_tree_modules_to_remove,
                },
            ))
        })
        .collect()
}

/// Whether `stored` already carries what `wanted` asks: its manifests, configs and label.
pub(crate) fn carries(stored: &ManifestWork, wanted: &ManifestWork) -> bool {
    stored.spec == wanted.spec
        && stored
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(NAME_LABEL))
            == wanted
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(NAME_LABEL))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_carries_the_module_without_build_or_sign_and_reads_back_what_it_delivers() {
        let mcm: ManagedClusterModule = serde_json::from_value(json!({
            "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
            "metadata": {"name": "accmod", "uid": "u1"},
            "spec": {
                "spokeNamespace": "acme", "selector": {},
                "moduleSpec": {
                    "selector": {"node-role.kubernetes.io/worker": ""},
                    "moduleLoader": {"container": {
                        "modprobe": {"moduleName": "accmod"},
                        "build": {"dockerfileConfigMap": {"name": "d"}},
                        "sign": {"keySecret": {"name": "k"}, "certSecret": {"name": "c"}},
                        "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/a:${KERNEL_FULL_VERSION}"}],
                    }},
                },
            },
        }))
        .expect("an MCM");
        let mappings = Mappings::from([(
            "5.14.0-1".to_owned(),
            Mapping {
                image: "quay.io/a:5.14.0-1".to_owned(),
                in_tree_modules_to_remove: vec!["old".to_owned()],
            },
        )]);
        let work = work(&mcm, "spoke-1", &mappings);
        assert_eq!(work.metadata.namespace.as_deref(), Some("spoke-1"));
        let module = &work.spec.workload.manifests[0];
        assert_eq!(
            module["metadata"],
            json!({"name": "accmod", "namespace": "acme"})
        );
        let container = &module["spec"]["moduleLoader"]["container"];
        assert!(container.get("build").is_none() && container.get("sign").is_none());
        assert_eq!(
            container["kernelMappings"],
            json!([{"literal": "5.14.0-1", "containerImage": "quay.io/a:5.14.0-1",
                    "inTreeModulesToRemove": ["old"]}])
        );
        assert_eq!(delivered(&work), mappings);
        assert_eq!(
            work.spec.manifest_configs[0].feedback_rules[0]
                .json_paths
                .len(),
            9
        );
        assert!(carries(&work, &work));
    }
}
