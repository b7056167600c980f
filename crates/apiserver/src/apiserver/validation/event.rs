//! Events, in both APIs that write them: an event about an object lives in that object's namespace, and an event
//! with an event time (one recorded the newer way) says who reported it, what happened and why.

use serde_json::{Value, json};

use super::field::{Errors, text};
use super::meta;
use kmm_api::validation::names;

/// The longest `reportingInstance`, `action` and `reason`.
const SHORT_FIELD_MAX: usize = 128;
/// The longest note (message) of an event recorded the newer way.
const NOTE_MAX: usize = 1024;

/// How one of the two Event APIs names the fields the rules read.
pub(super) struct EventApi {
    /// The object the event is about: `involvedObject` (core) or `regarding` (`events.k8s.io`).
    regarding: &'static str,
    /// The reporting controller: `reportingComponent` in core's JSON, `reportingController` in the newer API.
    controller: &'static str,
    /// How kube-apiserver names the controller field in its refusal: `source` for core, as it always has.
    controller_shown: &'static str,
    /// The text: `message` (core) or `note`.
    note: &'static str,
    /// Whether every event must be of the newer shape (`events.k8s.io` requires it).
    always_new: bool,
}

/// Core `v1` Events: the old shape is accepted when no event time is given.
pub(super) const CORE: EventApi = EventApi {
    regarding: "involvedObject",
    controller: "reportingComponent",
    controller_shown: "source",
    note: "message",
    always_new: false,
};

/// `events.k8s.io/v1` Events.
pub(super) const EVENTS_V1: EventApi = EventApi {
    regarding: "regarding",
    controller: "reportingController",
    controller_shown: "reportingController",
    note: "note",
    always_new: true,
};

/// An Event written through `api`.
pub(super) fn event(obj: &Value, api: &EventApi) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let regarding_namespace = obj.get(api.regarding).map_or("", |r| text(r, "namespace"));
    let namespace_at = format!("{}.namespace", api.regarding);
    let mismatch = "does not match event.namespace";
    let has_time = obj.get("eventTime").is_some_and(|t| !t.is_null());
    if !has_time && !api.always_new {
        let agrees = if regarding_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == regarding_namespace
        };
        if !agrees {
            errors.invalid(&namespace_at, &json!(regarding_namespace), mismatch);
        }
        return errors;
    }
    if !has_time {
        errors.required("eventTime", "");
    }
    if regarding_namespace.is_empty() {
        if !matches!(namespace, "default" | "kube-system") {
            errors.invalid(&namespace_at, &json!(regarding_namespace), mismatch);
        }
    } else if regarding_namespace != namespace {
        errors.invalid(&namespace_at, &json!(regarding_namespace), mismatch);
    }
    let controller = text(obj, api.controller);
    if controller.is_empty() {
        errors.required(api.controller_shown, "");
    }
    errors.invalid_each(
        api.controller_shown,
        controller,
        names::qualified_name_errors(controller),
    );
    for field in ["reportingInstance", "action", "reason"] {
        let value = text(obj, field);
        if value.is_empty() {
            errors.required(field, "");
        } else if value.len() > SHORT_FIELD_MAX {
            errors.invalid(
                field,
                &json!(""),
                &format!("can have at most {SHORT_FIELD_MAX} characters"),
            );
        }
    }
    if text(obj, api.note).len() > NOTE_MAX {
        errors.invalid(
            api.note,
            &json!(""),
            &format!("can have at most {NOTE_MAX} characters"),
        );
    }
    let kind = text(obj, "type");
    if api.always_new && !matches!(kind, "Normal" | "Warning") {
        errors.invalid("type", &json!(""), &format!("has invalid value: {kind}"));
    }
    errors
}
