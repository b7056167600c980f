//! RuntimeClasses: a handler that names a CRI runtime (a DNS label, fixed once set), and scheduling constraints
//! and overhead as pods carry them.

use serde_json::{Value, json};

use super::field::{Errors, entries, items, key};
use super::{meta, quantity, scheduling};
use kmm_api::validation::names;

/// A RuntimeClass.
pub(super) fn runtime_class(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let handler = obj.get("handler").and_then(Value::as_str).unwrap_or("");
    errors.invalid_each("handler", handler, names::dns1123_label_errors(handler));
    if let Some(overhead) = obj.get("overhead") {
        for (name, amount) in entries(overhead, "podFixed") {
            let amount = amount.as_str().unwrap_or("");
            if quantity::nanos(amount).is_some_and(|n| n < 0) {
                errors.invalid(
                    &key("overhead.podFixed", name),
                    &json!(amount),
                    "must be greater than or equal to 0",
                );
            }
        }
    }
    if let Some(scheduling) = obj.get("scheduling") {
        meta::labels(
            &mut errors,
            scheduling.get("nodeSelector"),
            "scheduling.nodeSelector",
        );
        scheduling::tolerations(
            &mut errors,
            items(scheduling, "tolerations"),
            "scheduling.tolerations",
        );
    }
    errors
}

/// A RuntimeClass update: the handler stays.
pub(super) fn runtime_class_update(new: &Value, old: &Value) -> Errors {
    let mut errors = runtime_class(new);
    if new.get("handler") != old.get("handler") {
        errors.invalid(
            "handler",
            new.get("handler").unwrap_or(&Value::Null),
            "field is immutable",
        );
    }
    errors
}
