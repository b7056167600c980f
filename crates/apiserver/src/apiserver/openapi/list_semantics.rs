//! Marking list fields of the built-in schemas with how they merge (`x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`), from the same rules the
//! server's strategic merge patch and server-side apply follow ([`ListTypes`]), so clients that read the schema
//! merge as the server does.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::schema_refs::V3_PREFIX;
use crate::apiserver::patch::{ListKind, ListTypes};

/// Mark the lists reachable from the definition `kind` (a kind's schema) as `lists` says they merge. Definitions
/// shared by several kinds (`PodSpec`, `ObjectMeta`) gather the marks of each; a definition is walked once per
/// kind, which also ends recursive schemas.
pub(super) fn annotate(definitions: &mut Map<String, Value>, kind: &str, lists: &dyn ListTypes) {
    let mut walk = Walk {
        lists,
        path: Vec::new(),
        visited: HashSet::new(),
    };
    walk.definition(definitions, kind);
}

struct Walk<'a> {
    lists: &'a dyn ListTypes,
    /// Field names from the object's root, list positions left out.
    path: Vec<String>,
    visited: HashSet<String>,
}

impl Walk<'_> {
    fn definition(&mut self, definitions: &mut Map<String, Value>, name: &str) {
        if !self.visited.insert(name.to_string()) {
            return;
        }
        let Some(mut schema) = definitions.get(name).cloned() else {
            return;
        };
        self.properties(definitions, &mut schema);
        definitions.insert(name.to_string(), schema);
    }

    fn properties(&mut self, definitions: &mut Map<String, Value>, schema: &mut Value) {
        let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            return;
        };
        for (field, property) in properties.iter_mut() {
            self.path.push(field.clone());
            if property["type"] == "array" {
                self.mark(property);
                if let Some(name) = reference(&property["items"]) {
                    self.definition(definitions, &name);
                }
            } else if let Some(name) = reference(property) {
                self.definition(definitions, &name);
            }
            self.path.pop();
        }
    }

    fn mark(&self, property: &mut Value) {
        let path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        let marks = match self.lists.list_kind(&path) {
            ListKind::Atomic => return,
            ListKind::Set => json!({
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-list-type": "set",
            }),
            ListKind::Map(keys) if !keys.is_empty() => json!({
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": keys[0],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": keys,
            }),
            ListKind::Map(_) => return,
        };
        if let (Some(property), Value::Object(marks)) = (property.as_object_mut(), marks) {
            for (key, value) in marks {
                property.entry(key).or_insert(value);
            }
        }
    }
}

/// The definition a schema refers to, directly or as the single member of `allOf` (how a `$ref` with its own
/// description is written).
fn reference(schema: &Value) -> Option<String> {
    schema
        .get("$ref")
        .or_else(|| schema.pointer("/allOf/0/$ref"))
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(V3_PREFIX))
        .map(str::to_string)
}
