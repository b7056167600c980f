//! Toleration rules, as the API server applies them to pods, checked early so a Module does not
//! fail later when its pods are created.

use k8s_openapi::api::core::v1::Toleration;

use super::names::{is_label_value, is_qualified_name};
use super::{FieldPath, FieldViolation};

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// Violations of the tolerations listed at `field`.
pub(crate) fn validate_tolerations(field: &str, tolerations: &[Toleration]) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    for (index, toleration) in tolerations.iter().enumerate() {
        let at = field.index(index);
        let key = toleration.key.as_deref().unwrap_or_default();
        let operator = toleration.operator.as_deref().unwrap_or_default();
        let value = toleration.value.as_deref().unwrap_or_default();
        let effect = toleration.effect.as_deref().unwrap_or_default();

        if !key.is_empty() && !is_qualified_name(key) {
            violations.push(FieldViolation::new(
                at.child("key"),
                format!("\"{key}\" is not a valid label key; use [prefix/]name with alphanumerics, '-', '_' or '.'"),
            ));
        }
        if key.is_empty() && operator != "Exists" {
            violations.push(FieldViolation::new(
                at.child("operator"),
                "must be \"Exists\" when key is empty; set a key or use operator: Exists",
            ));
        }
        if toleration.toleration_seconds.is_some() && effect != "NoExecute" {
            violations.push(FieldViolation::new(
                at.child("effect"),
                "must be \"NoExecute\" when tolerationSeconds is set; remove tolerationSeconds or set effect: NoExecute",
            ));
        }
        match operator {
            "" | "Equal" if !is_label_value(value) => violations.push(FieldViolation::new(
                at.child("value"),
                format!("\"{value}\" is not a valid label value; use at most 63 alphanumerics, '-', '_' or '.'"),
            )),
            "" | "Equal" => {}
            "Exists" if !value.is_empty() => violations.push(FieldViolation::new(
                at.child("value"),
                "must be empty when operator is \"Exists\"; remove the value or use operator: Equal",
            )),
            "Exists" => {}
            other => violations.push(FieldViolation::new(
                at.child("operator"),
                format!("\"{other}\" is not an operator; use \"Equal\" or \"Exists\""),
            )),
        }
        if !effect.is_empty() && !EFFECTS.contains(&effect) {
            violations.push(FieldViolation::new(
                at.child("effect"),
                format!(
                    "\"{effect}\" is not a taint effect; use one of {EFFECTS:?} or leave it empty"
                ),
            ));
        }
    }
    violations
}
