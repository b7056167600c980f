//! Ports as every kind names them (containers, probes, Services): a number in range, an IANA service name, a
//! protocol kube-proxy knows. Shared by those validators, so none of them depends on another for it.

use serde_json::{Value, json};

use super::field::{Errors, child, text};

/// A port's `protocol`: one of the three kube-proxy knows.
pub(super) fn protocol(errors: &mut Errors, port: &Value, at: &str) {
    match text(port, "protocol") {
        "" => errors.required(&child(at, "protocol"), ""),
        "TCP" | "UDP" | "SCTP" => {}
        other => errors.not_supported(
            &child(at, "protocol"),
            &json!(other),
            &["SCTP", "TCP", "UDP"],
        ),
    }
}

/// `Invalid value` unless `port` is a TCP/UDP port number.
pub(super) fn port_number(errors: &mut Errors, port: i64, at: &str) {
    if !(1..=65535).contains(&port) {
        errors.invalid(at, &json!(port), "must be between 1 and 65535, inclusive");
    }
}

/// A port given by number or by its container port's name (probes, Services' `targetPort`).
pub(super) fn number_or_name(errors: &mut Errors, port: Option<&Value>, at: &str) {
    match port {
        Some(Value::String(name)) => errors.invalid_each(at, name, port_name_errors(name)),
        Some(number) => port_number(errors, number.as_i64().unwrap_or(0), at),
        None => errors.required(at, ""),
    }
}

/// An IANA service name, what a named port must be: at most 15 lowercase letters, digits and single hyphens,
/// at least one letter.
pub(super) fn port_name_errors(name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if name.len() > 15 {
        problems.push("must be no more than 15 characters".to_string());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        problems
            .push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if name.contains("--") {
        problems.push("must not contain consecutive hyphens".into());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        problems.push("must contain at least one letter (a-z)".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push("must not begin or end with a hyphen".into());
    }
    problems
}
