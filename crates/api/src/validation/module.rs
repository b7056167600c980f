//! Module rules: the upstream KMM webhook's, reported per field.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Volume;
use regex::Regex;

use super::names::is_dns_subdomain;
use super::references::require_tag_or_digest;
use super::tolerations::validate_tolerations;
use super::{FieldPath, FieldViolation};
use crate::kmm::{
    DevicePluginSpec, DraSpec, KernelMapping, ModprobeSpec, Module, ModuleLoaderContainerSpec, Sign,
};

/// Longest `name` + `namespace`: node labels such as
/// `beta.kmm.node.kubernetes.io/version-schedule-pod.<namespace>.<name>` must fit in 63
/// characters after the prefix.
pub(crate) const MAX_NAME_AND_NAMESPACE: usize = 41;

/// Host paths a device plugin may mount.
pub(crate) const ALLOWED_HOST_PATHS: [&str; 5] = ["/dev", "/sys", "/var", "/opt", "/run"];

const CONTAINER: &str = "spec.moduleLoader.container";

/// Violations of a Module on create.
pub fn validate_module(module: &Module) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let name = module.metadata.name.as_deref().unwrap_or_default();
    let namespace = module.metadata.namespace.as_deref().unwrap_or_default();
    let combined = name.len() + namespace.len();
    if combined > MAX_NAME_AND_NAMESPACE {
        violations.push(FieldViolation::new(
            "metadata.name",
            format!(
                "name and namespace together are {combined} characters, more than \
                 {MAX_NAME_AND_NAMESPACE}; shorten the name so node labels stay within 63"
            ),
        ));
    }
    violations.extend(validate_tolerations(
        "spec.tolerations",
        &module.spec.tolerations,
    ));
    if let Some(dra) = &module.spec.dra {
        violations.extend(validate_dra(dra));
    }
    if let Some(device_plugin) = &module.spec.device_plugin {
        violations.extend(validate_device_plugin_volumes(device_plugin));
    }
    if let Some(loader) = &module.spec.module_loader {
        violations.extend(validate_container(&loader.container));
        violations.extend(validate_modprobe(
            &CONTAINER.child("modprobe"),
            &loader.container.modprobe,
        ));
        violations.extend(validate_signing(&loader.container));
    }
    violations
}

/// Violations of a Module on update: the create rules plus the ones that compare with `old`.
pub fn validate_module_update(old: &Module, new: &Module) -> Vec<FieldViolation> {
    let mut violations = validate_module(new);
    let version = |module: &Module| {
        module.spec.module_loader.as_ref().map(|loader| {
            loader
                .container
                .version
                .as_deref()
                .unwrap_or_default()
                .is_empty()
        })
    };
    if let (Some(old_unversioned), Some(new_unversioned)) = (version(old), version(new))
        && old_unversioned != new_unversioned
    {
        violations.push(FieldViolation::new(
            CONTAINER.child("version"),
            "cannot change between empty and non-empty; delete the Module and create it again",
        ));
    }
    violations
}

fn validate_dra(dra: &DraSpec) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    if !is_dns_subdomain(&dra.driver_name) {
        violations.push(FieldViolation::new(
            "spec.dra.driverName",
            format!(
                "\"{}\" is not a DNS subdomain; use lowercase letters, digits, '-' and '.', \
                 e.g. gpu.example.com",
                dra.driver_name
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    for (index, class) in dra.device_classes.iter().enumerate() {
        let field = "spec.dra.deviceClasses".index(index).child("name");
        if !is_dns_subdomain(&class.name) {
            violations.push(FieldViolation::new(
                field,
                format!(
                    "\"{}\" is not a DNS subdomain; use lowercase letters, digits, '-' and '.'",
                    class.name
                ),
            ));
        } else if !seen.insert(class.name.as_str()) {
            violations.push(FieldViolation::new(
                field,
                format!(
                    "\"{}\" is listed twice; give each DeviceClass its own name",
                    class.name
                ),
            ));
        }
    }
    violations
}

fn validate_device_plugin_volumes(device_plugin: &DevicePluginSpec) -> Vec<FieldViolation> {
    device_plugin
        .volumes
        .iter()
        .enumerate()
        .filter_map(|(index, volume)| {
            let path = host_path(volume)?;
            (!is_allowed_host_path(path)).then(|| {
                FieldViolation::new(
                    "spec.devicePlugin.volumes"
                        .index(index)
                        .child("hostPath.path"),
                    format!(
                        "host path \"{path}\" is not allowed; mount a path under one of \
                         {ALLOWED_HOST_PATHS:?}"
                    ),
                )
            })
        })
        .collect()
}

fn host_path(volume: &Volume) -> Option<&str> {
    volume
        .host_path
        .as_ref()
        .map(|host_path| host_path.path.as_str())
}

/// Whether `path`, once `.` and `..` are resolved, lies under an allowed directory.
fn is_allowed_host_path(path: &str) -> bool {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let clean = format!("/{}", parts.join("/"));
    ALLOWED_HOST_PATHS
        .iter()
        .any(|allowed| clean == *allowed || clean.starts_with(&format!("{allowed}/")))
}

fn validate_container(container: &ModuleLoaderContainerSpec) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    if !container.in_tree_modules_to_remove.is_empty()
        && container.in_tree_module_to_remove.is_some()
    {
        violations.push(FieldViolation::new(
            CONTAINER.child("inTreeModuleToRemove"),
            "set only one of inTreeModulesToRemove and the deprecated inTreeModuleToRemove; \
             move the module into inTreeModulesToRemove",
        ));
    }
    let default_image = container.container_image.as_deref().unwrap_or_default();
    if !default_image.is_empty() {
        violations.extend(require_tag_or_digest(
            CONTAINER.child("containerImage"),
            default_image,
        ));
    }
    let mappings = CONTAINER.child("kernelMappings");
    if container.kernel_mappings.is_empty() {
        violations.push(FieldViolation::new(
            mappings.clone(),
            "add at least one kernel mapping (a literal or regexp kernel version and its image)",
        ));
    }
    for (index, mapping) in container.kernel_mappings.iter().enumerate() {
        violations.extend(validate_mapping(&mappings.index(index), mapping, container));
    }
    violations
}

fn validate_mapping(
    at: &str,
    mapping: &KernelMapping,
    container: &ModuleLoaderContainerSpec,
) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let literal = mapping.literal.as_deref().unwrap_or_default();
    let regexp = mapping.regexp.as_deref().unwrap_or_default();
    match (literal.is_empty(), regexp.is_empty()) {
        (false, false) => violations.push(FieldViolation::new(
            at.child("regexp"),
            "literal and regexp are mutually exclusive; keep only one of them",
        )),
        (true, true) => violations.push(FieldViolation::new(
            at.child("literal"),
            "set either literal (an exact kernel version) or regexp (a pattern such as '^.+$')",
        )),
        _ => {}
    }
    if let Err(error) = Regex::new(regexp) {
        violations.push(FieldViolation::new(
            at.child("regexp"),
            format!("\"{regexp}\" is not a valid regular expression: {error}"),
        ));
    }
    if mapping.container_image.is_empty() {
        if container
            .container_image
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            violations.push(FieldViolation::new(
                at.child("containerImage"),
                "no image for this mapping; set containerImage here or in \
                 spec.moduleLoader.container.containerImage",
            ));
        }
    } else {
        violations.extend(require_tag_or_digest(
            at.child("containerImage"),
            &mapping.container_image,
        ));
    }
    if !mapping.in_tree_modules_to_remove.is_empty() && mapping.in_tree_module_to_remove.is_some() {
        violations.push(FieldViolation::new(
            at.child("inTreeModuleToRemove"),
            "set only one of inTreeModulesToRemove and the deprecated inTreeModuleToRemove; \
             move the module into inTreeModulesToRemove",
        ));
    }
    let list_here_single_there = !mapping.in_tree_modules_to_remove.is_empty()
        && container.in_tree_module_to_remove.is_some();
    let single_here_list_there = mapping.in_tree_module_to_remove.is_some()
        && !container.in_tree_modules_to_remove.is_empty();
    if list_here_single_there || single_here_list_there {
        violations.push(FieldViolation::new(
            at.child("inTreeModulesToRemove"),
            "the mapping and the container use different forms of in-tree module removal; \
             use inTreeModulesToRemove in both",
        ));
    }
    violations
}

/// Rules for `modprobe` at `at`, shared with the node-level copies of it.
pub(crate) fn validate_modprobe(at: &str, modprobe: &ModprobeSpec) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let module_name = modprobe.module_name.as_deref().unwrap_or_default();
    let raw = modprobe.raw_args.as_ref();
    let raw_load = raw.is_some_and(|args| !args.load.is_empty());
    let raw_unload = raw.is_some_and(|args| !args.unload.is_empty());
    if !module_name.is_empty() {
        if raw_load || raw_unload {
            violations.push(FieldViolation::new(
                at.child("rawArgs"),
                "rawArgs cannot be set together with moduleName; remove one of them",
            ));
        }
    } else if !raw_load || !raw_unload {
        violations.push(FieldViolation::new(
            at.child("moduleName"),
            "set moduleName, or set both rawArgs.load and rawArgs.unload",
        ));
    }
    let order = &modprobe.modules_loading_order;
    if !order.is_empty() {
        let field = at.child("modulesLoadingOrder");
        if order.len() < 2 {
            violations.push(FieldViolation::new(
                field.clone(),
                "list at least two modules, moduleName first, or remove the loading order",
            ));
        }
        if module_name.is_empty() {
            violations.push(FieldViolation::new(
                at.child("moduleName"),
                "a loading order needs moduleName; set it to the first module of the order",
            ));
        } else if order.first().is_some_and(|first| first != module_name) {
            violations.push(FieldViolation::new(
                field.index(0),
                format!("must be moduleName \"{module_name}\"; put it first in the loading order"),
            ));
        }
        let mut seen = BTreeSet::new();
        for (index, name) in order.iter().enumerate() {
            if !seen.insert(name.as_str()) {
                violations.push(FieldViolation::new(
                    field.index(index),
                    format!("\"{name}\" appears twice; list each module once"),
                ));
            }
        }
    }
    violations
}

fn validate_signing(container: &ModuleLoaderContainerSpec) -> Vec<FieldViolation> {
    let dir_name = container.modprobe.dir_name.as_str();
    let mut violations = Vec::new();
    if let Some(sign) = &container.sign {
        violations.extend(validate_sign(&CONTAINER.child("sign"), sign, dir_name));
    }
    for (index, mapping) in container.kernel_mappings.iter().enumerate() {
        if let Some(sign) = &mapping.sign {
            let at = CONTAINER.child("kernelMappings").index(index).child("sign");
            violations.extend(validate_sign(&at, sign, dir_name));
        }
    }
    violations
}

/// Rules for a `sign` section at `at` whose files must lie under `dir_name`.
pub(crate) fn validate_sign(at: &str, sign: &Sign, dir_name: &str) -> Vec<FieldViolation> {
    let field = at.child("filesToSign");
    if sign.files_to_sign.is_empty() {
        return vec![FieldViolation::new(
            field,
            "list the module files to sign, e.g. /opt/lib/modules/${KERNEL_FULL_VERSION}/my.ko",
        )];
    }
    let prefix = format!("{}/", dir_name.trim_end_matches('/'));
    sign.files_to_sign
        .iter()
        .enumerate()
        .filter(|(_, path)| !path.starts_with(&prefix))
        .map(|(index, path)| {
            FieldViolation::new(
                field.index(index),
                format!(
                    "\"{path}\" is not under modprobe dirName \"{dir_name}\"; use a path that \
                     starts with \"{prefix}\""
                ),
            )
        })
        .collect()
}
