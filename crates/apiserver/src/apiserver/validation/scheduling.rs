//! Where a pod may run: tolerations, node selectors and node affinity, shared by pods, pod templates and
//! RuntimeClasses' scheduling.

use serde_json::{Value, json};

use super::field::{Errors, child, index, items, text};
use kmm_api::validation::names;

const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// The tolerations at `path`.
pub(super) fn tolerations(errors: &mut Errors, list: &[Value], path: &str) {
    for (i, toleration) in list.iter().enumerate() {
        let at = index(path, i);
        let key = text(toleration, "key");
        let operator = text(toleration, "operator");
        let value = text(toleration, "value");
        let effect = text(toleration, "effect");
        if !key.is_empty() {
            errors.invalid_each(&child(&at, "key"), key, names::qualified_name_errors(key));
        }
        if key.is_empty() && operator != "Exists" {
            errors.invalid(
                &child(&at, "operator"),
                &json!(operator),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            );
        }
        if toleration.get("tolerationSeconds").is_some() && effect != "NoExecute" {
            errors.invalid(
                &child(&at, "effect"),
                &json!(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            );
        }
        match operator {
            "" | "Equal" => {
                let problems = names::label_value_errors(value);
                if !problems.is_empty() {
                    errors.invalid(&child(&at, "operator"), &json!(value), &problems.join(";"));
                }
            }
            "Exists" if !value.is_empty() => errors.invalid(
                &child(&at, "operator"),
                toleration,
                "value must be empty when `operator` is 'Exists'",
            ),
            "Exists" => {}
            other => {
                errors.not_supported(&child(&at, "operator"), &json!(other), &["Equal", "Exists"])
            }
        }
        if !effect.is_empty() && !EFFECTS.contains(&effect) {
            errors.not_supported(&child(&at, "effect"), &json!(effect), EFFECTS);
        }
    }
}

/// A taint's effect, which unlike a toleration's may not be empty.
pub(super) fn taint_effect(errors: &mut Errors, effect: &str, at: &str) {
    if effect.is_empty() {
        errors.required(at, "");
    } else if !EFFECTS.contains(&effect) {
        errors.not_supported(at, &json!(effect), EFFECTS);
    }
}

/// `spec.affinity.nodeAffinity` at `path`.
pub(super) fn node_affinity(errors: &mut Errors, affinity: Option<&Value>, path: &str) {
    let Some(affinity) = affinity else {
        return;
    };
    let required_at = child(path, "requiredDuringSchedulingIgnoredDuringExecution");
    if let Some(required) = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") {
        let terms = items(required, "nodeSelectorTerms");
        let terms_at = child(&required_at, "nodeSelectorTerms");
        if terms.is_empty() {
            errors.required(&terms_at, "must have at least one node selector term");
        }
        for (i, term) in terms.iter().enumerate() {
            node_selector_term(errors, term, &index(&terms_at, i));
        }
    }
    let preferred_at = child(path, "preferredDuringSchedulingIgnoredDuringExecution");
    for (i, preference) in items(affinity, "preferredDuringSchedulingIgnoredDuringExecution")
        .iter()
        .enumerate()
    {
        let at = index(&preferred_at, i);
        let weight = preference
            .get("weight")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if !(1..=100).contains(&weight) {
            errors.invalid(
                &child(&at, "weight"),
                &json!(weight),
                "must be in the range 1-100",
            );
        }
        if let Some(term) = preference.get("preference") {
            node_selector_term(errors, term, &child(&at, "preference"));
        }
    }
}

/// One node selector term at `at`: its expressions' keys, operators and values.
pub(super) fn node_selector_term(errors: &mut Errors, term: &Value, at: &str) {
    let expressions_at = child(at, "matchExpressions");
    for (i, requirement) in items(term, "matchExpressions").iter().enumerate() {
        let at = index(&expressions_at, i);
        let values = items(requirement, "values");
        let values_at = child(&at, "values");
        match text(requirement, "operator") {
            "In" | "NotIn" if values.is_empty() => errors.required(
                &values_at,
                "must be specified when `operator` is 'In' or 'NotIn'",
            ),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.forbidden(
                &values_at,
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            "Gt" | "Lt" if values.len() != 1 => errors.required(
                &values_at,
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            other => errors.invalid(
                &child(&at, "operator"),
                &json!(other),
                "not a valid selector operator",
            ),
        }
        let key = text(requirement, "key");
        errors.invalid_each(&child(&at, "key"), key, names::qualified_name_errors(key));
    }
    let fields_at = child(at, "matchFields");
    for (i, requirement) in items(term, "matchFields").iter().enumerate() {
        let at = index(&fields_at, i);
        let key = text(requirement, "key");
        if key != "metadata.name" {
            errors.invalid(
                &child(&at, "key"),
                &json!(key),
                "not a valid field selector key",
            );
        }
        match text(requirement, "operator") {
            "In" | "NotIn" if items(requirement, "values").len() != 1 => errors.required(
                &child(&at, "values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            ),
            "In" | "NotIn" => {}
            other => errors.invalid(
                &child(&at, "operator"),
                &json!(other),
                "not a valid selector operator",
            ),
        }
    }
}
