//! Rules for the KMM kinds the engine writes (NMC, MIC, MBSC) and for PreflightValidation.
//!
//! Upstream does not guard the internal kinds with a webhook, and its own samples carry image
//! placeholders, so only rules whose violation makes every worker, build or sign pod fail apply
//! here: a hand edit in the console then fails at once instead of on the node.

use std::collections::BTreeSet;

use super::module::{validate_modprobe, validate_sign};
use super::tolerations::validate_tolerations;
use super::{FieldPath, FieldViolation};
use crate::kmm::{
    ModuleBuildSignConfig, ModuleImageSpec, ModuleImagesConfig, NodeModulesConfig,
    PreflightValidation,
};

/// Violations of a PreflightValidation: the kernel to validate against must be named.
pub fn validate_preflight_validation(pfv: &PreflightValidation) -> Vec<FieldViolation> {
    if pfv.spec.kernel_version.trim().is_empty() {
        vec![FieldViolation::new(
            "spec.kernelVersion",
            "set the full kernel version the nodes will run, e.g. 5.14.0-427.13.1.el9_4.x86_64",
        )]
    } else {
        Vec::new()
    }
}

/// Violations of a NodeModulesConfig.
pub fn validate_node_modules_config(nmc: &NodeModulesConfig) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let mut seen = BTreeSet::new();
    for (index, module) in nmc.spec.modules.iter().enumerate() {
        let at = "spec.modules".index(index);
        if !seen.insert((module.namespace.as_str(), module.name.as_str())) {
            violations.push(FieldViolation::new(
                at.child("name"),
                format!(
                    "module {}/{} is listed twice; keep one entry per module",
                    module.namespace, module.name
                ),
            ));
        }
        violations.extend(validate_modprobe(
            &at.child("config").child("modprobe"),
            &module.config.modprobe,
        ));
        violations.extend(validate_tolerations(
            &at.child("tolerations"),
            &module.tolerations,
        ));
    }
    violations
}

/// Violations of a ModuleImagesConfig.
pub fn validate_module_images_config(mic: &ModuleImagesConfig) -> Vec<FieldViolation> {
    let mut violations: Vec<FieldViolation> = mic
        .spec
        .images
        .iter()
        .enumerate()
        .flat_map(|(index, image)| validate_image_spec(&"spec.images".index(index), &image.spec))
        .collect();
    violations.extend(validate_tolerations(
        "spec.tolerations",
        &mic.spec.tolerations,
    ));
    violations
}

/// Violations of a ModuleBuildSignConfig.
pub fn validate_module_build_sign_config(mbsc: &ModuleBuildSignConfig) -> Vec<FieldViolation> {
    let mut violations: Vec<FieldViolation> = mbsc
        .spec
        .images
        .iter()
        .enumerate()
        .flat_map(|(index, image)| validate_image_spec(&"spec.images".index(index), &image.spec))
        .collect();
    violations.extend(validate_tolerations(
        "spec.tolerations",
        &mbsc.spec.tolerations,
    ));
    violations
}

fn validate_image_spec(at: &str, image: &ModuleImageSpec) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    if image.kernel_version.trim().is_empty() {
        violations.push(FieldViolation::new(
            at.child("kernelVersion"),
            "set the kernel version the image is for",
        ));
    }
    if let Some(sign) = &image.sign {
        violations.extend(validate_sign(&at.child("sign"), sign, &image.dir_name));
    }
    violations
}
