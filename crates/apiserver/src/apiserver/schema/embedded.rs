//! TypeMeta checks for `x-kubernetes-embedded-resource` objects below the root.
//!
//! An embedded resource (a pod template, a raw manifest) must name its `apiVersion`
//! and `kind` like a top-level object. The root itself is checked by the API server.
//! Embedded `metadata` is kept but not validated.

use serde_json::{Map, Value};

use super::compile::Node;
use super::errors::{FieldError, FieldErrorKind};
use kmm_api::validation::names;

/// Checks every embedded resource below the root object.
pub(crate) fn validate_root(node: &Node, map: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    walk_object(node, map, "", errors);
}

fn walk(node: &Node, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            if node.embedded_resource {
                check_type_meta(map, path, errors);
            }
            walk_object(node, map, path, errors);
        }
        Value::Array(items) => {
            if let Some(item_schema) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    walk(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn walk_object(node: &Node, map: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    for (key, value) in map {
        if let Some(schema) = node.property(key) {
            let child = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            walk(schema, value, &child, errors);
        } else if let Some(schema) = node.additional_schema() {
            walk(schema, value, &format!("{path}[{key}]"), errors);
        }
    }
}

fn check_type_meta(map: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    let api_version_path = format!("{path}.apiVersion");
    let kind_path = format!("{path}.kind");
    let invalid = |path: &str, value: &Value, detail: &str| {
        FieldError::new(path, FieldErrorKind::Invalid, Some(value.clone()), detail)
    };
    match map.get("apiVersion") {
        None => errors.push(FieldError::new(
            &api_version_path,
            FieldErrorKind::Required,
            None,
            "",
        )),
        Some(Value::String(v)) if v.is_empty() => {
            errors.push(invalid(
                &api_version_path,
                &Value::String(v.clone()),
                "must not be empty",
            ));
        }
        Some(Value::String(v)) if v.matches('/').count() > 1 => {
            errors.push(invalid(
                &api_version_path,
                &Value::String(v.clone()),
                &format!("unexpected GroupVersion string: {v}"),
            ));
        }
        Some(Value::String(_)) => {}
        Some(other) => errors.push(invalid(&api_version_path, other, "must be a string")),
    }
    match map.get("kind") {
        None => errors.push(FieldError::new(
            &kind_path,
            FieldErrorKind::Required,
            None,
            "",
        )),
        Some(Value::String(v)) if v.is_empty() => {
            errors.push(invalid(
                &kind_path,
                &Value::String(v.clone()),
                "must not be empty",
            ));
        }
        Some(Value::String(v)) => {
            let problems = names::dns1035_label_errors(&v.to_ascii_lowercase());
            if !problems.is_empty() {
                errors.push(invalid(
                    &kind_path,
                    &Value::String(v.clone()),
                    &format!(
                        "may have mixed case, but should otherwise match: {}",
                        problems.join(",")
                    ),
                ));
            }
        }
        Some(other) => errors.push(invalid(&kind_path, other, "must be a string")),
    }
}
