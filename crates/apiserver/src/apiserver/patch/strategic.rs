//! Kubernetes strategic merge patch, served for `application/strategic-merge-patch+json`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::json_values::same_value;
use super::{ListKind, ListTypes, PatchError};

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// Applies a strategic merge patch to `original` and returns the patched object.
///
/// Maps merge recursively and `null` deletes a key; lists merge as `types` says (by merge key,
/// as a set, or replaced whole); the directives `$patch`, `$retainKeys`, `$setElementOrder/<field>`
/// and `$deleteFromPrimitiveList/<field>` are honoured. A malformed directive fails the whole patch.
pub(crate) fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    types: &dyn ListTypes,
) -> Result<Value, PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError::InvalidDocument(
            "a strategic merge patch must be a JSON object".to_owned(),
        ));
    };
    let original = match original {
        Value::Object(fields) => fields.clone(),
        _ => Map::new(),
    };
    let mut merger = Merger {
        types,
        path: Vec::new(),
    };
    merger.merge_map(original, patch).map(Value::Object)
}

/// Walks the object and the patch together, remembering where it is for list semantics and errors.
struct Merger<'t> {
    types: &'t dyn ListTypes,
    path: Vec<String>,
}

impl Merger<'_> {
    fn error(&self, reason: String) -> PatchError {
        let path = if self.path.is_empty() {
            ".".to_owned()
        } else {
            self.path.iter().map(|name| format!(".{name}")).collect()
        };
        PatchError::Strategic { path, reason }
    }

    fn list_kind(&self) -> ListKind {
        let names: Vec<&str> = self.path.iter().map(String::as_str).collect();
        self.types.list_kind(&names)
    }

    /// Runs `merge` with `field` appended to the current path.
    fn in_field<R>(&mut self, field: &str, merge: impl FnOnce(&mut Self) -> R) -> R {
        self.path.push(field.to_owned());
        let result = merge(self);
        self.path.pop();
        result
    }

    /// The list a `<prefix>/<field>` directive key names, `None` when `key` is not that directive.
    fn directive_field<'k>(
        &self,
        key: &'k str,
        prefix: &str,
    ) -> Result<Option<&'k str>, PatchError> {
        let Some(rest) = key.strip_prefix(prefix) else {
            return Ok(None);
        };
        match rest.strip_prefix('/') {
            Some(field) => Ok(Some(field)),
            None => Err(self.error(format!(
                "directive {key:?} must name its list as \"{prefix}/<field>\""
            ))),
        }
    }

    fn merge_map(
        &mut self,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<Map<String, Value>, PatchError> {
        if let Some(directive) = patch.get(PATCH) {
            return match directive.as_str() {
                Some("replace") => {
                    let mut replacement = patch.clone();
                    replacement.shift_remove(PATCH);
                    self.merge_map(Map::new(), &replacement)
                }
                Some("delete") => Ok(Map::new()),
                _ => Err(self.error(format!(
                    "unknown patch type {directive} in map; a map accepts \"$patch\": \"replace\" or \"delete\""
                ))),
            };
        }
        self.apply_retain_keys(&mut original, patch)?;
        let ordered = self.apply_element_orders(&mut original, patch)?;
        for (key, value) in patch {
            let is_directive = key == RETAIN_KEYS
                || key.starts_with(SET_ELEMENT_ORDER)
                || key.starts_with(DELETE_FROM_PRIMITIVE_LIST);
            if !is_directive && !ordered.contains(key.as_str()) {
                self.merge_field(&mut original, key, value)?;
            }
        }
        for (key, value) in patch {
            if let Some(field) = self.directive_field(key, DELETE_FROM_PRIMITIVE_LIST)? {
                self.delete_from_primitive_list(&mut original, field, value)?;
            }
        }
        Ok(original)
    }

    fn merge_field(
        &mut self,
        original: &mut Map<String, Value>,
        key: &str,
        patch: &Value,
    ) -> Result<(), PatchError> {
        if patch.is_null() {
            original.shift_remove(key);
            return Ok(());
        }
        let current = original.get_mut(key).map(Value::take);
        let merged = self.in_field(key, |merger| merger.merge_value(current, patch))?;
        original.insert(key.to_owned(), merged);
        Ok(())
    }

    /// Merges a patch value into the current value of a field (absent, or of another type, is
    /// treated as empty so that the patch's own directives and nulls are still processed).
    fn merge_value(&mut self, current: Option<Value>, patch: &Value) -> Result<Value, PatchError> {
        match (current, patch) {
            (Some(Value::Object(current)), Value::Object(patch)) => {
                self.merge_map(current, patch).map(Value::Object)
            }
            (Some(Value::Array(current)), Value::Array(patch)) => {
                self.merge_list(current, patch).map(Value::Array)
            }
            (_, Value::Object(patch)) => self.merge_map(Map::new(), patch).map(Value::Object),
            (_, Value::Array(patch)) => self.merge_list(Vec::new(), patch).map(Value::Array),
            (_, scalar) => Ok(scalar.clone()),
        }
    }

    fn merge_list(
        &mut self,
        original: Vec<Value>,
        patch: &[Value],
    ) -> Result<Vec<Value>, PatchError> {
        match self.list_kind() {
            ListKind::Atomic => Ok(patch.to_vec()),
            ListKind::Set => self.merge_set(original, patch),
            ListKind::Map(keys) => match keys.first() {
                Some(key) => self.merge_keyed(original, patch, key),
                None => Ok(patch.to_vec()),
            },
        }
    }

    /// A primitive list with the merge strategy: the union, patch items ordered as in the patch.
    fn merge_set(&self, original: Vec<Value>, patch: &[Value]) -> Result<Vec<Value>, PatchError> {
        if let Some(item) = patch
            .iter()
            .find(|item| item.is_object() || item.is_array())
        {
            return Err(self.error(format!(
                "cannot merge {item} into a list of scalars; the list has no merge key"
            )));
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for item in original.iter().chain(patch) {
            if !merged.iter().any(|seen| same_value(seen, item)) {
                merged.push(item.clone());
            }
        }
        Ok(order_merged(merged, patch, &original, itself))
    }

    /// A list of maps with a merge key: `$patch` items first, then item by item.
    fn merge_keyed(
        &mut self,
        mut original: Vec<Value>,
        patch: &[Value],
        key: &str,
    ) -> Result<Vec<Value>, PatchError> {
        let mut replace = false;
        let mut items: Vec<&Map<String, Value>> = Vec::with_capacity(patch.len());
        for item in patch {
            let Value::Object(fields) = item else {
                return Err(self.error(format!(
                    "list item {item} must be an object carrying the merge key {key:?}"
                )));
            };
            let Some(directive) = fields.get(PATCH) else {
                items.push(fields);
                continue;
            };
            match directive.as_str() {
                Some("delete") => {
                    let Some(wanted) = fields.get(key) else {
                        return Err(self.missing_merge_key(item, key));
                    };
                    original.retain(|existing| !has_key_value(existing, key, wanted));
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(self.error(
                        "merging lists cannot yet be specified in the patch (\"$patch\": \"merge\")"
                            .to_owned(),
                    ));
                }
                _ => {
                    return Err(self.error(format!(
                        "unknown patch type {directive} in list item {item}; a list item accepts \"$patch\": \"replace\" or \"delete\""
                    )));
                }
            }
        }
        if replace {
            return items
                .into_iter()
                .map(|fields| self.merge_map(Map::new(), fields).map(Value::Object))
                .collect();
        }
        let server_order = original.clone();
        for fields in &items {
            let Some(wanted) = fields.get(key) else {
                return Err(self.missing_merge_key(&Value::Object((*fields).clone()), key));
            };
            let position = original
                .iter()
                .position(|existing| has_key_value(existing, key, wanted));
            match position.and_then(|index| original.get_mut(index)) {
                Some(existing) => {
                    let current = match existing.take() {
                        Value::Object(current) => current,
                        _ => Map::new(),
                    };
                    *existing = Value::Object(self.merge_map(current, fields)?);
                }
                None => original.push(Value::Object(self.merge_map(Map::new(), fields)?)),
            }
        }
        let patch_order: Vec<Value> = items.into_iter().cloned().map(Value::Object).collect();
        Ok(order_merged(
            original,
            &patch_order,
            &server_order,
            |item| item.get(key),
        ))
    }

    fn missing_merge_key(&self, item: &Value, key: &str) -> PatchError {
        self.error(format!(
            "map: {item} does not contain declared merge key: {key}"
        ))
    }

    /// `$retainKeys`: drops the original's keys that are not listed; every key the patch sets must be listed.
    fn apply_retain_keys(
        &self,
        original: &mut Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<(), PatchError> {
        let Some(retained) = patch.get(RETAIN_KEYS) else {
            return Ok(());
        };
        let Value::Array(retained) = retained else {
            return Err(self.error(format!(
                "{RETAIN_KEYS} must be a list of field names, got {retained}"
            )));
        };
        let retained: Vec<&str> = retained.iter().filter_map(Value::as_str).collect();
        for (key, value) in patch {
            let exempt = value.is_null()
                || key == RETAIN_KEYS
                || key.starts_with(SET_ELEMENT_ORDER)
                || key.starts_with(DELETE_FROM_PRIMITIVE_LIST);
            if !exempt && !retained.contains(&key.as_str()) {
                return Err(self.error(format!(
                    "the patch sets {key:?}, which its {RETAIN_KEYS} list does not retain"
                )));
            }
        }
        original.retain(|key, _| retained.contains(&key.as_str()));
        Ok(())
    }

    /// `$deleteFromPrimitiveList/<field>`: removes every listed value from the field's list.
    fn delete_from_primitive_list(
        &self,
        original: &mut Map<String, Value>,
        field: &str,
        values: &Value,
    ) -> Result<(), PatchError> {
        let Value::Array(values) = values else {
            return Err(self.error(format!(
                "{DELETE_FROM_PRIMITIVE_LIST}/{field} must be a list of values to delete, got {values}"
            )));
        };
        if let Some(Value::Array(items)) = original.get_mut(field) {
            items.retain(|item| !values.iter().any(|value| same_value(value, item)));
        }
        Ok(())
    }

    /// `$setElementOrder/<field>`: merges the field's list (if the patch has one) and orders the
    /// result as the directive lists it. Returns the fields whose patch lists were merged here.
    fn apply_element_orders<'p>(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &'p Map<String, Value>,
    ) -> Result<HashSet<&'p str>, PatchError> {
        let mut merged_fields = HashSet::new();
        for (key, order) in patch {
            let Some(field) = self.directive_field(key, SET_ELEMENT_ORDER)? else {
                continue;
            };
            let Value::Array(order) = order else {
                return Err(self.error(format!(
                    "{key} must be a list giving the order of {field:?}, got {order}"
                )));
            };
            let current = original.get(field).cloned();
            let ordered = self.in_field(field, |merger| {
                merger.ordered_list(current, patch.get(field), order)
            })?;
            if let Some(ordered) = ordered {
                original.insert(field.to_owned(), Value::Array(ordered));
                merged_fields.insert(field);
            }
        }
        Ok(merged_fields)
    }

    fn ordered_list(
        &mut self,
        current: Option<Value>,
        patch: Option<&Value>,
        order: &[Value],
    ) -> Result<Option<Vec<Value>>, PatchError> {
        let current = self.as_list(current.as_ref(), "the object's")?;
        let patch = self.as_list(patch, "the patch's")?;
        let merge_key = match self.list_kind() {
            ListKind::Map(keys) => keys.first().cloned(),
            ListKind::Atomic | ListKind::Set => None,
        };
        if let Some(patch) = patch {
            self.check_order(patch, order, merge_key.as_deref())?;
        }
        let server_order = current.cloned().unwrap_or_default();
        let merged = match (current, patch) {
            (None, None) => return Ok(None),
            (Some(current), None) => current.clone(),
            (current, Some(patch)) => {
                self.merge_list(current.cloned().unwrap_or_default(), patch)?
            }
        };
        let ordered = match merge_key.as_deref() {
            Some(key) => order_merged(merged, order, &server_order, |item| item.get(key)),
            None => order_merged(merged, order, &server_order, itself),
        };
        Ok(Some(ordered))
    }

    fn as_list<'v>(
        &self,
        value: Option<&'v Value>,
        whose: &str,
    ) -> Result<Option<&'v Vec<Value>>, PatchError> {
        match value {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(self.error(format!(
                "{whose} value {other} is not a list, so it cannot be ordered by {SET_ELEMENT_ORDER}"
            ))),
        }
    }

    /// The patch's items must appear in the `$setElementOrder` list, in the same relative order.
    fn check_order(
        &self,
        patch: &[Value],
        order: &[Value],
        merge_key: Option<&str>,
    ) -> Result<(), PatchError> {
        let mut order_items = order.iter();
        for item in patch {
            if item.get(PATCH).is_some() {
                continue;
            }
            let identity = match merge_key {
                Some(key) => item
                    .get(key)
                    .ok_or_else(|| self.missing_merge_key(item, key))?,
                None => item,
            };
            let found = order_items.any(|ordered| {
                let ordered = match merge_key {
                    Some(key) => ordered.get(key),
                    None => Some(ordered),
                };
                ordered.is_some_and(|ordered| same_value(ordered, identity))
            });
            if !found {
                return Err(self.error(format!(
                    "the order in patch list {} doesn't match {SET_ELEMENT_ORDER} list {}",
                    Value::Array(patch.to_vec()),
                    Value::Array(order.to_vec())
                )));
            }
        }
        Ok(())
    }
}

/// The identity of an item of a list without merge key: the item itself.
fn itself(item: &Value) -> Option<&Value> {
    Some(item)
}

fn has_key_value(item: &Value, key: &str, wanted: &Value) -> bool {
    item.get(key).is_some_and(|value| same_value(value, wanted))
}

/// Orders a merged list as kube-apiserver does: items named by `order` (the patch list or a
/// `$setElementOrder` list) in that order, the other items in `server_order` (the list before the
/// patch), the two interleaved so that each keeps the live order where both are live items.
fn order_merged(
    merged: Vec<Value>,
    order: &[Value],
    server_order: &[Value],
    identity: impl Fn(&Value) -> Option<&Value>,
) -> Vec<Value> {
    let position = |list: &[Value], item: &Value| {
        let wanted = identity(item)?;
        list.iter()
            .position(|candidate| identity(candidate).is_some_and(|id| same_value(id, wanted)))
    };
    let (mut from_patch, mut server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| position(order, item).is_some());
    from_patch.sort_by_key(|item| position(order, item).unwrap_or(usize::MAX));
    server_only.sort_by_key(|item| position(server_order, item).unwrap_or(usize::MAX));

    let mut ordered = Vec::with_capacity(from_patch.len() + server_only.len());
    let mut patch_items = from_patch.into_iter().peekable();
    let mut server_items = server_only.into_iter().peekable();
    loop {
        let take_server = match (server_items.peek(), patch_items.peek()) {
            (Some(_), None) => true,
            (None, _) => false,
            (Some(server), Some(patch)) => matches!(
                (position(server_order, server), position(server_order, patch)),
                (Some(s), Some(p)) if s < p
            ),
        };
        let next = if take_server {
            server_items.next()
        } else {
            patch_items.next()
        };
        match next {
            Some(item) => ordered.push(item),
            None => break,
        }
    }
    ordered
}

#[cfg(test)]
mod tests {
    use super::super::test_support::AtomicLists;
    use super::super::test_support::{arbitrary_json, arbitrary_object_with_directives};
    use super::super::{builtin_list_types, merge_patch};
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web", "tier": "fe"}, "finalizers": ["a", "b"]},
            "spec": {
                "replicas": 1,
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {"name": "app", "image": "nginx:1", "args": ["-v"],
                             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                             "ports": [{"containerPort": 80}]},
                            {"name": "log", "image": "fluentd:1"}
                        ],
                        "volumes": [{"name": "data", "emptyDir": {}}]
                    }
                }
            }
        })
    }

    fn containers(object: &Value) -> &Value {
        &object["spec"]["template"]["spec"]["containers"]
    }

    fn patched(patch: Value) -> Value {
        strategic_merge_patch(
            &deployment(),
            &patch,
            builtin_list_types("apps", "Deployment"),
        )
        .unwrap_or_else(|error| panic!("{patch}: {error}"))
    }

    #[test]
    fn merges_maps_and_keyed_lists() {
        let result = patched(json!({
            "metadata": {"labels": {"tier": null, "track": "stable"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "app", "image": "nginx:2", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}
            ]}}}
        }));
        assert_eq!(
            result["metadata"]["labels"],
            json!({"app": "web", "track": "stable"})
        );
        assert_eq!(result["spec"]["replicas"], json!(3));
        assert_eq!(
            containers(&result),
            &json!([
                {"name": "app", "image": "nginx:2", "args": ["-v"],
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                 "ports": [{"containerPort": 80}]},
                {"name": "log", "image": "fluentd:1"}
            ])
        );
    }

    #[test]
    fn orders_lists_like_kube_apiserver() {
        let cases = [
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}}),
                vec!["side", "app", "log"],
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": "log", "image": "fluentd:2"}, {"name": "app"}]}}}}),
                vec!["log", "app"],
            ),
            (
                json!({"spec": {"template": {"spec": {
                    "$setElementOrder/containers": [{"name": "app"}, {"name": "side"}, {"name": "log"}],
                    "containers": [{"name": "side", "image": "busybox"}]
                }}}}),
                vec!["app", "side", "log"],
            ),
            (
                json!({"spec": {"template": {"spec": {
                    "$setElementOrder/containers": [{"name": "log"}, {"name": "app"}]
                }}}}),
                vec!["log", "app"],
            ),
        ];
        for (patch, expected) in cases {
            let result = patched(patch.clone());
            let names: Vec<&str> = containers(&result)
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|container| container["name"].as_str())
                .collect();
            assert_eq!(names, expected, "{patch}");
        }
    }

    #[test]
    fn handles_primitive_and_atomic_lists() {
        let cases = [
            (
                json!({"metadata": {"finalizers": ["c", "a"]}}),
                "/metadata/finalizers",
                json!(["c", "a", "b"]),
            ),
            (
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "z"]}}),
                "/metadata/finalizers",
                json!(["b"]),
            ),
            (
                json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
                "/metadata/finalizers",
                json!(["b", "a"]),
            ),
            (
                json!({"metadata": {"$deleteFromPrimitiveList/missing": ["a"]}}),
                "/metadata",
                json!({"name": "web", "labels": {"app": "web", "tier": "fe"}, "finalizers": ["a", "b"]}),
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "args": ["-q"]}]}}}}),
                "/spec/template/spec/containers/0/args",
                json!(["-q"]),
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 443}]}]}}}}),
                "/spec/template/spec/containers/0/ports",
                json!([{"containerPort": 443}, {"containerPort": 80}]),
            ),
        ];
        for (patch, pointer, expected) in cases {
            let result = patched(patch.clone());
            assert_eq!(result.pointer(pointer), Some(&expected), "{patch}");
        }
    }

    #[test]
    fn honours_patch_directives() {
        let cases = [
            (
                json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
                "/metadata/labels",
                json!({"only": "this"}),
            ),
            (
                json!({"metadata": {"labels": {"$patch": "delete"}}}),
                "/metadata/labels",
                json!({}),
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": "log", "$patch": "delete"}]}}}}),
                "/spec/template/spec/containers",
                json!([{"name": "app", "image": "nginx:1", "args": ["-v"],
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "ports": [{"containerPort": 80}]}]),
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "only", "image": "x", "gone": null}, {"$patch": "replace"}
                ]}}}}),
                "/spec/template/spec/containers",
                json!([{"name": "only", "image": "x"}]),
            ),
            (
                json!({"spec": {"template": {"spec": {"volumes": [
                    {"name": "data", "hostPath": {"path": "/d"}, "$retainKeys": ["name", "hostPath"]}
                ]}}}}),
                "/spec/template/spec/volumes",
                json!([{"name": "data", "hostPath": {"path": "/d"}}]),
            ),
            (
                json!({"spec": {"fresh": {"nested": {"$patch": "replace", "a": 1}, "gone": null}}}),
                "/spec/fresh",
                json!({"nested": {"a": 1}}),
            ),
        ];
        for (patch, pointer, expected) in cases {
            let result = patched(patch.clone());
            assert_eq!(result.pointer(pointer), Some(&expected), "{patch}");
        }
    }

    #[test]
    fn refuses_invalid_directives_with_the_location() {
        let cases = [
            (
                json!({"spec": {"template": {"spec": {"containers": [{"$patch": "merge"}]}}}}),
                "strategic merge patch failed at .spec.template.spec.containers: merging lists cannot yet be specified",
            ),
            (
                json!({"metadata": {"labels": {"$patch": "explode"}}}),
                "strategic merge patch failed at .metadata.labels: unknown patch type \"explode\"",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
                "strategic merge patch failed at .spec.template.spec.containers: map: {\"image\":\"x\"} does not contain declared merge key: name",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"$patch": "delete"}]}}}}),
                "does not contain declared merge key: name",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": ["app"]}}}}),
                "list item \"app\" must be an object",
            ),
            (
                json!({"spec": {"template": {"spec": {
                    "$setElementOrder/containers": [{"name": "app"}, {"name": "log"}],
                    "containers": [{"name": "log"}, {"name": "app"}]
                }}}}),
                "doesn't match $setElementOrder list",
            ),
            (
                json!({"spec": {"template": {"spec": {"$setElementOrder/containers": {"name": "app"}}}}}),
                "must be a list giving the order",
            ),
            (
                json!({"spec": {"$retainKeys": ["replicas"], "paused": true}}),
                "strategic merge patch failed at .spec: the patch sets \"paused\"",
            ),
            (
                json!({"spec": {"$retainKeys": "replicas"}}),
                "$retainKeys must be a list",
            ),
            (
                json!({"metadata": {"$deleteFromPrimitiveList": ["a"]}}),
                "directive \"$deleteFromPrimitiveList\" must name its list",
            ),
            (
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
                "must be a list of values to delete",
            ),
            (
                json!({"metadata": {"finalizers": [{"name": "x"}]}}),
                "cannot merge {\"name\":\"x\"} into a list of scalars",
            ),
        ];
        for (patch, expected) in cases {
            let error = strategic_merge_patch(
                &deployment(),
                &patch,
                builtin_list_types("apps", "Deployment"),
            )
            .unwrap_err()
            .to_string();
            assert!(error.contains(expected), "{patch}: {error}");
        }
        let error = strategic_merge_patch(&deployment(), &json!([]), &AtomicLists).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid patch document: a strategic merge patch must be a JSON object"
        );
    }

    #[test]
    fn patches_a_pod_with_atomic_lists_for_custom_resources() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "1"}]}});
        let patch = json!({"spec": {"containers": [{"name": "b", "image": "2"}]}});
        let merged = strategic_merge_patch(&pod, &patch, builtin_list_types("", "Pod")).unwrap();
        assert_eq!(
            merged["spec"]["containers"].as_array().map(Vec::len),
            Some(2)
        );
        let replaced = strategic_merge_patch(&pod, &patch, &AtomicLists).unwrap();
        assert_eq!(
            replaced["spec"]["containers"],
            json!([{"name": "b", "image": "2"}])
        );
    }

    /// Patches made only of maps and scalars, without directive keys.
    fn plain_patch() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..3).prop_map(Value::from),
            "[a-c]{0,2}".prop_map(Value::from),
        ];
        let value = leaf.prop_recursive(4, 24, 4, |inner| {
            prop::collection::vec(("[a-d]", inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect()))
        });
        prop::collection::vec(("[a-d]", value), 0..4)
            .prop_map(|entries| Value::Object(entries.into_iter().collect()))
    }

    proptest! {
        #[test]
        fn never_panics(original in arbitrary_object_with_directives(), patch in arbitrary_object_with_directives()) {
            for types in [builtin_list_types("", "Pod"), &AtomicLists as &dyn ListTypes] {
                let _ = strategic_merge_patch(&original, &patch, types);
            }
            let _ = strategic_merge_patch(&original, &Value::Array(vec![patch]), &AtomicLists);
        }

        #[test]
        fn without_lists_or_directives_equals_merge_patch(original in arbitrary_json(), patch in plain_patch()) {
            let mut expected = original.clone();
            merge_patch(&mut expected, &patch);
            let types = builtin_list_types("apps", "Deployment");
            prop_assert_eq!(strategic_merge_patch(&original, &patch, types).unwrap(), expected);
        }
    }
}
