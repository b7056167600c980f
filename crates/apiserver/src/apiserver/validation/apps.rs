//! Workload controllers of the apps group (Deployment, ReplicaSet, DaemonSet) and the core ReplicationController:
//! a selector that selects the template's pods, a template whose pods run forever, and a rollout strategy that
//! can make progress.

use serde_json::{Value, json};

use super::field::{Errors, child, text};
use super::{meta, pod};

/// A Deployment.
pub(super) fn deployment(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    errors.non_negative(spec, "replicas", "spec");
    selected_template(&mut errors, spec, "deployment", "ReplicaSet");
    let strategy = spec.get("strategy").unwrap_or(&Value::Null);
    match text(strategy, "type") {
        "Recreate" if strategy.get("rollingUpdate").is_some() => errors.forbidden(
            "spec.strategy.rollingUpdate",
            "may not be specified when strategy `type` is 'Recreate'",
        ),
        "Recreate" => {}
        "RollingUpdate" => rolling_update(
            &mut errors,
            strategy.get("rollingUpdate"),
            "spec.strategy.rollingUpdate",
        ),
        other => errors.not_supported(
            "spec.strategy.type",
            &json!(other),
            &["Recreate", "RollingUpdate"],
        ),
    }
    for field in [
        "revisionHistoryLimit",
        "minReadySeconds",
        "progressDeadlineSeconds",
    ] {
        errors.non_negative(spec, field, "spec");
    }
    let min_ready = spec
        .get("minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(deadline) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64)
        && deadline >= 0
        && deadline <= min_ready
    {
        errors.invalid(
            "spec.progressDeadlineSeconds",
            &json!(deadline),
            "must be greater than minReadySeconds",
        );
    }
    errors
}

/// A ReplicaSet.
pub(super) fn replica_set(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    errors.non_negative(spec, "replicas", "spec");
    errors.non_negative(spec, "minReadySeconds", "spec");
    selected_template(&mut errors, spec, "deployment", "ReplicaSet");
    errors
}

/// A DaemonSet.
pub(super) fn daemon_set(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    selected_template(&mut errors, spec, "daemonset", "DaemonSet");
    let strategy = spec.get("updateStrategy").unwrap_or(&Value::Null);
    match text(strategy, "type") {
        "OnDelete" => {}
        "RollingUpdate" => rolling_update(
            &mut errors,
            strategy.get("rollingUpdate"),
            "spec.updateStrategy.rollingUpdate",
        ),
        other => errors.not_supported(
            "spec.updateStrategy.type",
            &json!(other),
            &["OnDelete", "RollingUpdate"],
        ),
    }
    errors.non_negative(spec, "revisionHistoryLimit", "spec");
    errors.non_negative(spec, "minReadySeconds", "spec");
    errors
}

/// A StatefulSet: its pods named after it in order, so it needs a selector of its template and a known pod
/// management policy and update strategy.
pub(super) fn stateful_set(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    for field in ["replicas", "minReadySeconds", "revisionHistoryLimit"] {
        errors.non_negative(spec, field, "spec");
    }
    selected_template(&mut errors, spec, "statefulset", "StatefulSet");
    match text(spec, "podManagementPolicy") {
        "OrderedReady" | "Parallel" => {}
        other => errors.not_supported(
            "spec.podManagementPolicy",
            &json!(other),
            &["OrderedReady", "Parallel"],
        ),
    }
    let strategy = spec.get("updateStrategy").unwrap_or(&Value::Null);
    match text(strategy, "type") {
        "OnDelete" if strategy.get("rollingUpdate").is_some() => errors.forbidden(
            "spec.updateStrategy.rollingUpdate",
            "only allowed for updateStrategy 'RollingUpdate'",
        ),
        "OnDelete" | "RollingUpdate" => {}
        other => errors.not_supported(
            "spec.updateStrategy.type",
            &json!(other),
            &["OnDelete", "RollingUpdate"],
        ),
    }
    if let Some(rolling) = strategy.get("rollingUpdate") {
        errors.non_negative(rolling, "partition", "spec.updateStrategy.rollingUpdate");
    }
    errors
}

/// A ReplicationController: a selector given as plain labels, defaulted from the template's.
pub(super) fn replication_controller(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    errors.non_negative(spec, "replicas", "spec");
    errors.non_negative(spec, "minReadySeconds", "spec");
    let selector = spec.get("selector");
    meta::labels(&mut errors, selector, "spec.selector");
    if selector
        .and_then(Value::as_object)
        .is_none_or(|s| s.is_empty())
    {
        errors.required("spec.selector", "");
    }
    let template = spec.get("template");
    let labels = template.and_then(|t| t.pointer("/metadata/labels"));
    let selects = selector
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
    if template.is_some() && !selects {
        errors.invalid_shown(
            "spec.template.metadata.labels",
            &meta::show_labels(labels),
            "`selector` does not match template `labels`",
        );
    }
    pod::long_running_template(&mut errors, template, "spec.template", "ReplicaSet");
    errors
}

/// A workload's update: its create rules, and a selector that stays as it was (pods would be orphaned).
pub(super) fn immutable_selector(mut errors: Errors, new: &Value, old: &Value) -> Errors {
    let selector = new.pointer("/spec/selector");
    if selector != old.pointer("/spec/selector") {
        errors.invalid(
            "spec.selector",
            selector.unwrap_or(&Value::Null),
            "field is immutable",
        );
    }
    errors
}

/// `spec.selector` and `spec.template` of a workload: a non-empty selector that selects the template's labels.
/// `what` names the workload in the empty-selector message, `controller` in the deadline one.
fn selected_template(errors: &mut Errors, spec: &Value, what: &str, controller: &str) {
    let template = spec.get("template");
    match spec.get("selector") {
        None => errors.required("spec.selector", ""),
        Some(selector) => {
            meta::label_selector(errors, selector, "spec.selector");
            if meta::selector_is_empty(selector) {
                errors.invalid(
                    "spec.selector",
                    selector,
                    &format!("empty selector is invalid for {what}"),
                );
            } else if let Some(template) = template {
                let labels = template.pointer("/metadata/labels");
                if !meta::selector_matches(selector, labels) {
                    errors.invalid_shown(
                        "spec.template.metadata.labels",
                        &meta::show_labels(labels),
                        "`selector` does not match template `labels`",
                    );
                }
            }
        }
    }
    pod::long_running_template(errors, template, "spec.template", controller);
}

/// `maxUnavailable` and `maxSurge`: counts or percentages, not both zero.
fn rolling_update(errors: &mut Errors, rolling: Option<&Value>, path: &str) {
    let Some(rolling) = rolling else {
        return;
    };
    let mut zero = [false; 2];
    for (i, field) in ["maxUnavailable", "maxSurge"].into_iter().enumerate() {
        let Some(value) = rolling.get(field) else {
            zero[i] = true;
            continue;
        };
        zero[i] = int_or_percent(errors, value, &child(path, field));
    }
    if zero == [true, true] {
        errors.invalid(
            &child(path, "maxUnavailable"),
            rolling.get("maxUnavailable").unwrap_or(&json!(0)),
            "may not be 0 when `maxSurge` is 0",
        );
    }
}

/// A count or a percentage (`maxUnavailable`, `minAvailable`): not negative, at most 100%. Returns whether it is
/// zero.
pub(super) fn int_or_percent(errors: &mut Errors, value: &Value, at: &str) -> bool {
    match value {
        Value::String(s) => match s.strip_suffix('%').and_then(|n| n.parse::<u64>().ok()) {
            Some(percent) => {
                if percent > 100 {
                    errors.invalid(at, value, "must not be greater than 100%");
                }
                percent == 0
            }
            None => {
                errors.invalid(
                    at,
                    value,
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                );
                false
            }
        },
        number => {
            let n = number.as_i64().unwrap_or(0);
            if n < 0 {
                errors.invalid(at, number, "must be greater than or equal to 0");
            }
            n == 0
        }
    }
}
