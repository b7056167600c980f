//! Removal of fields a structural schema does not declare.
//!
//! Mirrors apiextensions-apiserver's pruning: the root and every
//! `x-kubernetes-embedded-resource` object keep `apiVersion`, `kind` and `metadata`;
//! `x-kubernetes-preserve-unknown-fields` keeps unknown keys but still prunes inside
//! declared properties; `additionalProperties` keeps every key. Pruned paths are
//! reported sorted, in the form `unknown field "spec.foo"` errors use.

use serde_json::Value;

use super::compile::{Additional, Node};
use super::validate::ROOT_META_FIELDS;

/// Prunes `obj` in place and returns the sorted paths of the removed fields.
pub(crate) fn prune_root(root: &Node, obj: &mut Value) -> Vec<String> {
    let mut pruner = Pruner {
        path: String::new(),
        pruned: Vec::new(),
    };
    pruner.prune(Some(root), obj, true, false);
    pruner.pruned.sort();
    pruner.pruned
}

struct Pruner {
    /// Path of the value being visited.
    path: String,
    pruned: Vec<String>,
}

/// What to do with one key of an object.
enum KeyFate<'a> {
    /// Keep the key and prune its value with this schema (`None`: no schema).
    Keep(Option<&'a Node>),
    /// Keep the key and its value untouched.
    KeepAsIs,
    /// Remove the key.
    Remove,
}

impl Pruner {
    /// Runs `visit` with `segment` appended to the current path.
    fn nested(&mut self, segment: &str, visit: impl FnOnce(&mut Pruner)) {
        let saved = self.path.len();
        if !segment.starts_with('[') && !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(segment);
        visit(self);
        self.path.truncate(saved);
    }

    fn record(&mut self, key: &str) {
        self.nested(key, |p| {
            let path = p.path.clone();
            p.pruned.push(path);
        });
    }

    /// Prunes `value`. `preserve_inherited` is set for the items of a list whose schema
    /// preserves unknown fields: like the server, the items then keep unknown keys too.
    fn prune(
        &mut self,
        node: Option<&Node>,
        value: &mut Value,
        embedded: bool,
        preserve_inherited: bool,
    ) {
        let preserve = preserve_inherited || node.is_some_and(|n| n.preserve_unknown_fields);
        match value {
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut child) in entries {
                    let fate = key_fate(node, &key, embedded, preserve);
                    match fate {
                        KeyFate::Keep(schema) => {
                            let child_embedded = schema.is_some_and(|s| s.embedded_resource);
                            self.nested(&key, |p| {
                                p.prune(schema, &mut child, child_embedded, false)
                            });
                            map.insert(key, child);
                        }
                        KeyFate::KeepAsIs => {
                            map.insert(key, child);
                        }
                        KeyFate::Remove => self.record(&key),
                    }
                }
            }
            Value::Array(items) => {
                let Some(node) = node else {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.nested(&format!("[{i}]"), |p| p.prune(None, item, false, false));
                    }
                    return;
                };
                let item_schema = node.items.as_deref();
                if preserve && item_schema.is_none() {
                    return;
                }
                let item_embedded = item_schema.is_some_and(|s| s.embedded_resource);
                for (i, item) in items.iter_mut().enumerate() {
                    self.nested(&format!("[{i}]"), |p| {
                        p.prune(item_schema, item, item_embedded, preserve)
                    });
                }
            }
            _ => {}
        }
    }
}

fn key_fate<'a>(node: Option<&'a Node>, key: &str, embedded: bool, preserve: bool) -> KeyFate<'a> {
    let Some(node) = node else {
        return KeyFate::Remove;
    };
    if embedded && ROOT_META_FIELDS.contains(&key) {
        return KeyFate::KeepAsIs;
    }
    if let Some(property) = node.property(key) {
        return KeyFate::Keep(Some(property));
    }
    match node.additional() {
        Additional::Schema(schema) => KeyFate::Keep(Some(schema)),
        Additional::Bool(_) => KeyFate::Keep(None),
        Additional::Absent if preserve => KeyFate::KeepAsIs,
        Additional::Absent => KeyFate::Remove,
    }
}
