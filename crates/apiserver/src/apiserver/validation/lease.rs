//! Leases, which leader election and node heartbeats hold: a duration that can expire and a transition count
//! that only counts.

use serde_json::{Value, json};

use super::field::{Errors, text};
use super::meta;

/// A Lease.
pub(super) fn lease(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    errors.positive(spec, "leaseDurationSeconds", "spec");
    errors.non_negative(spec, "leaseTransitions", "spec");
    let strategy = text(spec, "strategy");
    if !text(spec, "preferredHolder").is_empty() && strategy.is_empty() {
        errors.required(
            "spec.strategy",
            "must be specified when preferredHolder is set",
        );
    }
    if !strategy.is_empty() && strategy != "OldestEmulationVersion" {
        errors.not_supported(
            "spec.strategy",
            &json!(strategy),
            &["OldestEmulationVersion"],
        );
    }
    errors
}
