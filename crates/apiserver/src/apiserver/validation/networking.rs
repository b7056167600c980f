//! Ingresses and IngressClasses: something to route to (a default backend or rules), each path typed and, where
//! the type compares paths, absolute, each backend naming one service port or one resource; a class names its
//! controller.

use serde_json::{Value, json};

use super::field::{Errors, child, index, items, text};
use super::meta;

const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];

/// An Ingress.
pub(super) fn ingress(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let rules = items(spec, "rules");
    match spec.get("defaultBackend") {
        Some(backend) => self::backend(&mut errors, backend, "spec.defaultBackend"),
        None if rules.is_empty() => errors.invalid(
            "spec",
            spec,
            "either `defaultBackend` or `rules` must be specified",
        ),
        None => {}
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = index("spec.rules", i);
        let Some(http) = rule.get("http") else {
            continue;
        };
        let paths = items(http, "paths");
        if paths.is_empty() {
            errors.required(&child(&at, "http.paths"), "");
        }
        for (j, path) in paths.iter().enumerate() {
            let at = index(&child(&at, "http.paths"), j);
            let kind = text(path, "pathType");
            if kind.is_empty() {
                errors.required(&child(&at, "pathType"), "pathType must be specified");
            } else if !PATH_TYPES.contains(&kind) {
                errors.not_supported(&child(&at, "pathType"), &json!(kind), PATH_TYPES);
            }
            let route = text(path, "path");
            if matches!(kind, "Exact" | "Prefix") && !route.starts_with('/') {
                errors.invalid(
                    &child(&at, "path"),
                    &json!(route),
                    "must be an absolute path",
                );
            }
            match path.get("backend") {
                Some(b) => backend(&mut errors, b, &child(&at, "backend")),
                None => errors.required(&child(&at, "backend"), ""),
            }
        }
    }
    errors
}

/// A backend: a service with one port (by name or number), or a resource, not both.
fn backend(errors: &mut Errors, backend: &Value, at: &str) {
    match (backend.get("service"), backend.get("resource")) {
        (Some(_), Some(_)) => {
            errors.invalid(at, backend, "cannot set both resource and service backends");
        }
        (None, None) => errors.required(at, "one backend must be specified"),
        (Some(service), None) => {
            if text(service, "name").is_empty() {
                errors.required(&child(at, "service.name"), "");
            }
            let port = service.get("port").unwrap_or(&Value::Null);
            let by_name = !text(port, "name").is_empty();
            let by_number = port
                .get("number")
                .and_then(Value::as_i64)
                .is_some_and(|n| n != 0);
            match (by_name, by_number) {
                (true, true) => errors.invalid(
                    &child(at, "service.port"),
                    port,
                    "cannot set both port name & port number",
                ),
                (false, false) => errors.invalid(
                    &child(at, "service.port"),
                    port,
                    "port name or number is required",
                ),
                _ => {}
            }
            if let Some(number) = port.get("number").and_then(Value::as_i64)
                && !(0..=65535).contains(&number)
            {
                errors.invalid(
                    &child(at, "service.port.number"),
                    &json!(number),
                    "must be between 1 and 65535, inclusive",
                );
            }
        }
        (None, Some(resource)) => {
            for field in ["kind", "name"] {
                if text(resource, field).is_empty() {
                    errors.required(&child(at, &format!("resource.{field}")), "");
                }
            }
        }
    }
}

/// An IngressClass.
pub(super) fn ingress_class(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if text(spec, "controller").is_empty() {
        errors.required("spec.controller", "");
    }
    errors
}
