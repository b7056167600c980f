//! Uniqueness of `x-kubernetes-list-type: set` items and `map` keys.
//!
//! kube-apiserver runs this after schema validation with apimachinery field paths,
//! so map entries appear as `spec.labels[key]` here (not `spec.labels.key`). Only
//! the second occurrence of a repeated element is reported, as upstream does.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::compile::{ListType, Node};
use super::errors::{FieldError, FieldErrorKind};
use super::render;

/// Validates list semantics below an object.
pub(crate) fn validate_object(
    node: &Node,
    map: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if let Some(schema) = node.additional_schema() {
        for (key, value) in map {
            validate_value(schema, value, &format!("{path}[{key}]"), errors);
        }
    }
    for (key, value) in map {
        if let Some(schema) = node.property(key) {
            let child = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            validate_value(schema, value, &child, errors);
        }
    }
}

fn validate_value(node: &Node, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    match value {
        Value::Array(items) => validate_array(node, items, path, errors),
        Value::Object(map) => validate_object(node, map, path, errors),
        _ => {}
    }
}

fn validate_array(node: &Node, items: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    match node.list_type {
        Some(ListType::Set) => {
            for i in repeated(items.iter().map(identity_key)) {
                errors.push(duplicate(path, i, items[i].clone()));
            }
        }
        Some(ListType::Map) => validate_list_map(node, items, path, errors),
        Some(ListType::Atomic) | None => {}
    }
    if let Some(item_schema) = &node.items {
        for (i, item) in items.iter().enumerate() {
            validate_value(item_schema, item, &format!("{path}[{i}]"), errors);
        }
    }
}

fn validate_list_map(node: &Node, items: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    if let Some((i, item)) = items
        .iter()
        .enumerate()
        .find(|(_, item)| !matches!(item, Value::Object(_) | Value::Null))
    {
        errors.push(FieldError::new(
            format!("{path}[{i}]"),
            FieldErrorKind::Invalid,
            Some(item.clone()),
            "must be an object for an array of list-type map",
        ));
        return;
    }
    // The key of each item: the map-key fields it sets (unset keys are left out).
    let keys: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut key = Map::new();
            if let Value::Object(fields) = item {
                for name in &node.list_map_keys {
                    if let Some(v) = fields.get(name) {
                        key.insert(name.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in repeated(keys.iter().map(identity_key)) {
        errors.push(duplicate(path, i, keys[i].clone()));
    }
}

/// Identity of a list element: scalars keep their Go type (`1` and `1.0` differ),
/// compound values compare by their JSON encoding.
fn identity_key(value: &Value) -> String {
    match value {
        Value::Number(n) if n.as_i64().is_some() => format!("i{n}"),
        Value::Number(n) => format!("f{}", n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => format!("s{s}"),
        other => format!("j{}", render::go_json(other)),
    }
}

/// Indices of the second occurrence of every repeated key.
fn repeated(keys: impl Iterator<Item = String>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut indices = Vec::new();
    for (i, key) in keys.enumerate() {
        let count = seen.entry(key).or_insert(0);
        *count += 1;
        if *count == 2 {
            indices.push(i);
        }
    }
    indices
}

fn duplicate(path: &str, index: usize, value: Value) -> FieldError {
    FieldError::new(
        format!("{path}[{index}]"),
        FieldErrorKind::Duplicate,
        Some(value),
        "",
    )
}
