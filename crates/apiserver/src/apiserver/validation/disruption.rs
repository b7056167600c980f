//! PodDisruptionBudgets: one way of saying how many pods may go (not both), as a count or a percentage, over a
//! valid selector.

use serde_json::{Value, json};

use super::apps::int_or_percent;
use super::field::{Errors, text};
use super::meta;

/// A PodDisruptionBudget.
pub(super) fn pod_disruption_budget(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let (min, max) = (spec.get("minAvailable"), spec.get("maxUnavailable"));
    if min.is_some() && max.is_some() {
        errors.invalid(
            "spec",
            spec,
            "minAvailable and maxUnavailable cannot be both set",
        );
    }
    for (value, at) in [(min, "spec.minAvailable"), (max, "spec.maxUnavailable")] {
        if let Some(value) = value {
            int_or_percent(&mut errors, value, at);
        }
    }
    if let Some(selector) = spec.get("selector") {
        meta::label_selector(&mut errors, selector, "spec.selector");
    }
    let policy = text(spec, "unhealthyPodEvictionPolicy");
    if !policy.is_empty() && !["AlwaysAllow", "IfHealthyBudget"].contains(&policy) {
        errors.not_supported(
            "spec.unhealthyPodEvictionPolicy",
            &json!(policy),
            &["AlwaysAllow", "IfHealthyBudget"],
        );
    }
    errors
}
