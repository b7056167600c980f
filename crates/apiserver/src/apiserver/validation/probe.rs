//! Probes and lifecycle hooks: one handler each, ports that exist as numbers or names, thresholds that make
//! sense for the kind of probe.

use serde_json::{Value, json};

use super::field::{Errors, child, items};
use super::port::{number_or_name, port_number};

/// The handlers a probe may use.
const PROBE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];
/// The handlers a lifecycle hook may use.
pub(super) const HOOK_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "sleep"];

/// A probe at `at`; `which` is its field name (`livenessProbe`, `readinessProbe`, `startupProbe`).
pub(super) fn probe(errors: &mut Errors, probe: &Value, at: &str, which: &str) {
    handler(errors, probe, at, PROBE_HANDLERS);
    for field in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        errors.non_negative(probe, field, at);
    }
    if which != "readinessProbe"
        && let Some(success) = probe.get("successThreshold").and_then(Value::as_i64)
        && success != 1
    {
        errors.invalid(&child(at, "successThreshold"), &json!(success), "must be 1");
    }
    if let Some(grace) = probe
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
    {
        let at = child(at, "terminationGracePeriodSeconds");
        if which == "readinessProbe" {
            errors.invalid(&at, &json!(grace), "must not be set for readinessProbes");
        } else if grace <= 0 {
            errors.invalid(&at, &json!(grace), "must be greater than 0");
        }
    }
}

/// Exactly one of `allowed` handlers, each well-formed.
pub(super) fn handler(errors: &mut Errors, handler: &Value, at: &str, allowed: &[&str]) {
    let present: Vec<&str> = allowed
        .iter()
        .copied()
        .filter(|h| handler.get(*h).is_some())
        .collect();
    match present.as_slice() {
        [] => errors.required(at, "must specify a handler type"),
        [_] => {}
        [_, extra, ..] => errors.forbidden(
            &child(at, extra),
            "may not specify more than 1 handler type",
        ),
    }
    if let Some(exec) = handler.get("exec")
        && items(exec, "command").is_empty()
    {
        errors.required(&child(&child(at, "exec"), "command"), "");
    }
    if let Some(get) = handler.get("httpGet") {
        let get_at = child(at, "httpGet");
        number_or_name(errors, get.get("port"), &child(&get_at, "port"));
        match get.get("scheme").and_then(Value::as_str) {
            None | Some("HTTP" | "HTTPS") => {}
            Some(other) => {
                errors.not_supported(&child(&get_at, "scheme"), &json!(other), &["HTTP", "HTTPS"])
            }
        }
    }
    if let Some(socket) = handler.get("tcpSocket") {
        number_or_name(
            errors,
            socket.get("port"),
            &child(&child(at, "tcpSocket"), "port"),
        );
    }
    if let Some(grpc) = handler.get("grpc") {
        let port = grpc.get("port").and_then(Value::as_i64).unwrap_or(0);
        port_number(errors, port, &child(&child(at, "grpc"), "port"));
    }
    if let Some(sleep) = handler.get("sleep") {
        errors.non_negative(sleep, "seconds", &child(at, "sleep"));
    }
}
