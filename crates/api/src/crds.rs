//! The CustomResourceDefinitions of every kind kmm-tui manages, as the embedded cluster installs
//! them and as `kmm-tui crds` prints them for `kubectl apply -f -`.
//!
//! The schemas come from the typed structs. A few rewrites bring them to the upstream shape:
//! - optional fields lose the `nullable` marker schemars gives `Option` (upstream CRDs never use
//!   it, and it would let explicit nulls through where upstream prunes them), and enums lose the
//!   `null` member that comes with it;
//! - objects that only collect unknown fields (`additionalProperties: true`, which structural
//!   schemas forbid) keep them with `x-kubernetes-preserve-unknown-fields` instead;
//! - the root declares `apiVersion`, `kind` and `metadata` as every upstream CRD does.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kube_core::CustomResourceExt;

use crate::day0::{ClusterVersion, MachineConfig, MachineConfigPool, ModuleDay0};
use crate::hub::ManagedClusterModule;
use crate::imagecache::ImageCache;
use crate::kmm::{
    Module, ModuleBuildSignConfig, ModuleImagesConfig, NodeModulesConfig, PreflightValidation,
    preflight,
};
use crate::ocm::cluster::ManagedCluster;
use crate::ocm::clusterset::{ManagedClusterSet, ManagedClusterSetBinding};
use crate::ocm::work::ManifestWork;
use crate::shim::Shim;

/// Category every kmm-tui kind carries, so `kubectl get kmm` lists them all.
pub const CATEGORY: &str = "kmm";

/// Every CRD kmm-tui owns, in a stable order.
pub fn all() -> Vec<CustomResourceDefinition> {
    vec![
        finish(Module::crd()),
        finish(NodeModulesConfig::crd()),
        finish(ModuleImagesConfig::crd()),
        finish(ModuleBuildSignConfig::crd()),
        finish(preflight_validation()),
        finish(ModuleDay0::crd()),
        finish(Shim::crd()),
        finish(ImageCache::crd()),
    ]
}

/// The CRDs a hub serves on top of [`all`]: OCM's ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding and
/// ManifestWork, and KMM's ManagedClusterModule. Only a hub installs them: on an ordinary cluster they would only
/// suggest a fleet that is not there.
pub fn hub() -> Vec<CustomResourceDefinition> {
    vec![
        finish(ManagedCluster::crd()),
        finish(ManagedClusterSet::crd()),
        finish(ManagedClusterSetBinding::crd()),
        finish(ManifestWork::crd()),
        finish(ManagedClusterModule::crd()),
    ]
}

/// Minimal CRDs for the OpenShift kinds ModuleDay0 reads and writes (MachineConfig,
/// MachineConfigPool, ClusterVersion), for clusters that lack them such as the embedded one.
///
/// They keep every unknown field, so real OpenShift objects round-trip through them.
pub fn openshift_views() -> Vec<CustomResourceDefinition> {
    vec![
        finish(MachineConfig::crd()),
        finish(MachineConfigPool::crd()),
        finish(ClusterVersion::crd()),
    ]
}

/// Multi-document YAML of `crds`, each document introduced by `---`.
pub fn to_yaml(crds: &[CustomResourceDefinition]) -> String {
    crds.iter()
        .map(|crd| match serde_saphyr::to_string(crd) {
            Ok(yaml) => format!("---\n{yaml}"),
            Err(error) => format!("---\n# {}: not printable: {error}\n", crd_name(crd)),
        })
        .collect()
}

fn crd_name(crd: &CustomResourceDefinition) -> &str {
    crd.metadata.name.as_deref().unwrap_or_default()
}

/// PreflightValidation serves `v1beta1` and `v1beta2`, storing `v1beta2` as upstream does.
fn preflight_validation() -> CustomResourceDefinition {
    let mut crd = PreflightValidation::crd();
    let older = preflight::v1beta1::PreflightValidation::crd();
    for mut version in older.spec.versions {
        version.storage = false;
        crd.spec.versions.insert(0, version);
    }
    crd
}

/// Applies the schema rewrites described in the module documentation to every version.
fn finish(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|validation| validation.open_api_v3_schema.as_mut())
        {
            declare_object_header(schema);
            rewrite(schema);
        }
    }
    crd
}

fn declare_object_header(root: &mut JSONSchemaProps) {
    let properties = root.properties.get_or_insert_with(Default::default);
    for (name, type_) in [
        ("apiVersion", "string"),
        ("kind", "string"),
        ("metadata", "object"),
    ] {
        properties
            .entry(name.to_owned())
            .or_insert_with(|| JSONSchemaProps {
                type_: Some(type_.to_owned()),
                ..JSONSchemaProps::default()
            });
    }
}

fn rewrite(schema: &mut JSONSchemaProps) {
    schema.nullable = None;
    if matches!(
        schema.additional_properties,
        Some(JSONSchemaPropsOrBool::Bool(true))
    ) {
        schema.additional_properties = None;
        schema.x_kubernetes_preserve_unknown_fields = Some(true);
    }
    if let Some(values) = &mut schema.enum_ {
        values.retain(|value| !value.0.is_null());
    }
    for property in schema
        .properties
        .iter_mut()
        .flat_map(|map| map.values_mut())
    {
        rewrite(property);
    }
    match &mut schema.items {
        Some(JSONSchemaPropsOrArray::Schema(item)) => rewrite(item),
        Some(JSONSchemaPropsOrArray::Schemas(items)) => items.iter_mut().for_each(rewrite),
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = &mut schema.additional_properties {
        rewrite(values);
    }
    for branch in [&mut schema.all_of, &mut schema.any_of, &mut schema.one_of]
        .into_iter()
        .flatten()
        .flatten()
    {
        rewrite(branch);
    }
}
