//! ModuleDay0 rules: a day-0 image replaces the node OS, so it must be pinned and producible.

use super::module::validate_sign;
use super::references::require_tag_or_digest;
use super::{FieldPath, FieldViolation};
use crate::day0::ModuleDay0;

const OS_MAPPING: &str = "spec.osMapping";

/// Violations of a ModuleDay0.
pub fn validate_module_day0(day0: &ModuleDay0) -> Vec<FieldViolation> {
    let mapping = &day0.spec.os_mapping;
    let mut violations = Vec::new();
    if mapping.literal.trim().is_empty() {
        violations.push(FieldViolation::new(
            OS_MAPPING.child("literal"),
            "set the nodes' OS image name as `oc get node -o jsonpath='{.status.nodeInfo.osImage}'` prints it",
        ));
    }
    violations.extend(require_tag_or_digest(
        OS_MAPPING.child("containerImage"),
        &mapping.container_image,
    ));
    if let Some(sign) = &mapping.sign {
        violations.extend(validate_sign(&OS_MAPPING.child("sign"), sign, ""));
        match sign.unsigned_image.as_deref() {
            Some(unsigned) => violations.extend(require_tag_or_digest(
                OS_MAPPING.child("sign").child("unsignedImage"),
                unsigned,
            )),
            None if mapping.build.is_none() => violations.push(FieldViolation::new(
                OS_MAPPING.child("sign").child("unsignedImage"),
                "signing needs an image to sign: set unsignedImage, or add a build section",
            )),
            None => {}
        }
    }
    if day0.spec.machine_config_pool_selector.is_empty() {
        violations.push(FieldViolation::new(
            "spec.machineConfigPoolSelector",
            "select the nodes of one MachineConfigPool, e.g. node-role.kubernetes.io/worker: \"\"",
        ));
    }
    violations
}
