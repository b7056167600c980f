//! Defaulting, as apiextensions-apiserver applies it to decoded custom resources.
//!
//! Two passes, in the server's order: first `null`s on non-nullable fields without a
//! default are dropped (the server does this while decoding), then defaults fill
//! missing fields and replace `null`s on non-nullable fields. Defaults are applied
//! top-down, so a defaulted object receives the defaults of its own properties too.

use serde_json::Value;

use super::compile::Node;

/// Drops non-defaultable nulls, then applies defaults below `root`.
pub(crate) fn apply(root: &Node, obj: &mut Value) {
    drop_non_nullable_nulls(root, obj);
    apply_defaults(root, obj);
}

fn drop_non_nullable_nulls(node: &Node, value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|key, child| {
                let Some(schema) = node.field(key) else {
                    return true;
                };
                if child.is_null() && !schema.nullable && schema.default.is_none() {
                    return false;
                }
                drop_non_nullable_nulls(schema, child);
                true
            });
        }
        Value::Array(items) => {
            if let Some(item_schema) = &node.items {
                for item in items {
                    drop_non_nullable_nulls(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

fn apply_defaults(node: &Node, value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, property) in &node.properties {
                let Some(default) = &property.default else {
                    continue;
                };
                let replace = match map.get(key) {
                    None => true,
                    Some(Value::Null) => !property.nullable,
                    Some(_) => false,
                };
                if replace {
                    map.insert(key.clone(), default.clone());
                }
            }
            for (key, child) in map.iter_mut() {
                if let Some(property) = node.property(key) {
                    apply_defaults(property, child);
                } else if let Some(schema) = node.additional_schema() {
                    replace_null(schema, child);
                    apply_defaults(schema, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &node.items {
                for item in items {
                    replace_null(item_schema, item);
                    apply_defaults(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

/// A null where the schema forbids null takes the schema's default (or stays null).
fn replace_null(schema: &Node, value: &mut Value) {
    if value.is_null()
        && !schema.nullable
        && let Some(default) = &schema.default
    {
        *value = default.clone();
    }
}
