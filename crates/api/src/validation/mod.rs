//! Admission rules shared by the embedded cluster (on create and update), the console's editor
//! and the engine.
//!
//! The rules are the ones the upstream operators enforce in their webhooks, reported all at once
//! rather than first-error-only, each naming the offending field and saying how to fix it.

mod day0;
mod hub;
mod imagecache;
mod kmm;
mod module;
pub mod names;
mod references;
mod shim;
mod tolerations;

use std::fmt;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use day0::validate_module_day0;
pub use hub::{validate_managed_cluster_module, validate_managed_cluster_set_binding};
pub use imagecache::{validate_image_cache, validate_image_cache_update};
pub use kmm::{
    validate_module_build_sign_config, validate_module_images_config, validate_node_modules_config,
    validate_preflight_validation,
};
pub use module::{validate_module, validate_module_update};
pub use shim::validate_shim;

use crate::{
    day0 as day0_api, hub as hub_api, imagecache as imagecache_api, kmm as kmm_api, ocm,
    shim as shim_api,
};

/// One reason an object is rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldViolation {
    /// JSON path of the offending field, e.g. `spec.moduleLoader.container.kernelMappings[0].regexp`.
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl FieldViolation {
    /// A violation of `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Admission for create of any of our kinds given as JSON; empty Vec = admitted.
/// Unknown group/kind → empty.
pub fn validate_object(api_version: &str, kind: &str, obj: &Value) -> Vec<FieldViolation> {
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    match (group, kind) {
        (kmm_api::GROUP, "Module") => typed(obj, |module| validate_module(&module)),
        (kmm_api::GROUP, "NodeModulesConfig") => {
            typed(obj, |nmc| validate_node_modules_config(&nmc))
        }
        (kmm_api::GROUP, "ModuleImagesConfig") => {
            typed(obj, |mic| validate_module_images_config(&mic))
        }
        (kmm_api::GROUP, "ModuleBuildSignConfig") => {
            typed(obj, |mbsc| validate_module_build_sign_config(&mbsc))
        }
        (kmm_api::GROUP, "PreflightValidation") => preflight(obj),
        (kmm_api::GROUP, "ModuleDay0") => {
            typed::<day0_api::ModuleDay0>(obj, |day0| validate_module_day0(&day0))
        }
        (shim_api::GROUP, "Shim") => typed::<shim_api::Shim>(obj, |shim| validate_shim(&shim)),
        (imagecache_api::GROUP, "ImageCache") => {
            typed::<imagecache_api::ImageCache>(obj, |cache| validate_image_cache(&cache))
        }
        (hub_api::GROUP, "ManagedClusterModule") => {
            typed::<hub_api::ManagedClusterModule>(obj, |mcm| validate_managed_cluster_module(&mcm))
        }
        (ocm::CLUSTER_GROUP, "ManagedClusterSetBinding") => {
            typed::<ocm::clusterset::ManagedClusterSetBinding>(obj, |binding| {
                validate_managed_cluster_set_binding(&binding)
            })
        }
        _ => Vec::new(),
    }
}

/// Admission for update: the create rules on `new` plus the rules that compare with `old`.
pub fn validate_update(
    api_version: &str,
    kind: &str,
    old: &Value,
    new: &Value,
) -> Vec<FieldViolation> {
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    match (group, kind) {
        (kmm_api::GROUP, "Module") => match kmm_api::Module::deserialize(old) {
            Ok(old) => typed(new, |new| validate_module_update(&old, &new)),
            // An old object that no longer parses cannot be compared; judge the new one alone.
            Err(_) => validate_object(api_version, kind, new),
        },
        (imagecache_api::GROUP, "ImageCache") => {
            match imagecache_api::ImageCache::deserialize(old) {
                Ok(old) => typed(new, |new| validate_image_cache_update(&old, &new)),
                Err(_) => validate_object(api_version, kind, new),
            }
        }
        _ => validate_object(api_version, kind, new),
    }
}

/// PreflightValidation's spec is the same in both served versions, so either parses as the
/// stored one.
fn preflight(obj: &Value) -> Vec<FieldViolation> {
    let mut spec_only = obj.clone();
    if let Some(map) = spec_only.as_object_mut() {
        map.remove("status");
    }
    typed::<kmm_api::PreflightValidation>(&spec_only, |pfv| validate_preflight_validation(&pfv))
}

fn typed<T: DeserializeOwned>(
    obj: &Value,
    rules: impl FnOnce(T) -> Vec<FieldViolation>,
) -> Vec<FieldViolation> {
    match T::deserialize(obj) {
        Ok(object) => rules(object),
        Err(error) => vec![not_parsable(error)],
    }
}

fn not_parsable(error: serde_json::Error) -> FieldViolation {
    FieldViolation::new(
        "(object)",
        format!("does not match the kind's schema: {error}; fix the field it names"),
    )
}

/// Builds `parent.child` and `parent[index]` paths without repeating format strings.
pub(crate) trait FieldPath {
    /// `self.name`.
    fn child(&self, name: &str) -> String;
    /// `self[index]`.
    fn index(&self, index: usize) -> String;
}

impl FieldPath for str {
    fn child(&self, name: &str) -> String {
        format!("{self}.{name}")
    }

    fn index(&self, index: usize) -> String {
        format!("{self}[{index}]")
    }
}
