//! Field sets of objects: the fields an object sets, the fields that differ between two versions,
//! and the identity of list items, following the list semantics of a [`ListTypes`].

use serde_json::{Map, Value};

use super::field_set::{FieldSet, PathElement};
use super::json_values::same_value;
use super::{ListKind, ListTypes};

/// The key fields of a list whose items are tracked one by one, `None` for atomic lists.
pub(super) enum Granularity {
    Set,
    Map(Vec<String>),
}

/// How the list at `names` is tracked.
pub(super) fn granularity(types: &dyn ListTypes, names: &[&str]) -> Option<Granularity> {
    match types.list_kind(names) {
        ListKind::Atomic => None,
        ListKind::Set => Some(Granularity::Set),
        ListKind::Map(keys) if keys.is_empty() => None,
        ListKind::Map(keys) => Some(Granularity::Map(keys)),
    }
}

/// The path element naming `item` in the list at `names`.
pub(super) fn item_element(
    item: &Value,
    granularity: &Granularity,
    types: &dyn ListTypes,
    names: &[&str],
) -> Result<PathElement, String> {
    let keys = match granularity {
        Granularity::Set => return Ok(PathElement::value(item)),
        Granularity::Map(keys) => keys,
    };
    let Value::Object(fields) = item else {
        return Err(format!(
            "associative list with keys has an element that is not an object: {item}"
        ));
    };
    let mut key = Map::new();
    for name in keys {
        let value = match fields.get(name) {
            Some(value) => value.clone(),
            None => types.key_default(names, name).ok_or_else(|| {
                format!(
                    "associative list with keys has an element that omits key field {name:?} (and doesn't have default value)"
                )
            })?,
        };
        key.insert(name.clone(), value);
    }
    Ok(PathElement::key(key))
}

/// The elements of every item of a list, `None` when some item has no identity (such lists are
/// then handled as one value).
pub(super) fn item_elements(
    items: &[Value],
    granularity: &Granularity,
    types: &dyn ListTypes,
    names: &[&str],
) -> Option<Vec<PathElement>> {
    items
        .iter()
        .map(|item| item_element(item, granularity, types, names).ok())
        .collect()
}

/// A dotted path of field names for messages, e.g. `.spec.template.spec.containers`.
pub(super) fn dotted(names: &[&str]) -> String {
    names.iter().map(|name| format!(".{name}")).collect()
}

/// The fields an applied configuration sets: every leaf, explicit `null`, empty map and empty
/// list, and every item of a tracked list. Items without identity or duplicated items are refused,
/// as kube-apiserver refuses them in an apply.
pub(super) fn applied_field_set(config: &Value, types: &dyn ListTypes) -> Result<FieldSet, String> {
    let mut walker = FieldSetWalker {
        types,
        set: FieldSet::default(),
    };
    if let Value::Object(fields) = config {
        walker.walk_map(fields, &mut Vec::new(), &mut Vec::new())?;
    }
    Ok(walker.set)
}

/// Collects the field set of an applied configuration.
struct FieldSetWalker<'t> {
    types: &'t dyn ListTypes,
    set: FieldSet,
}

impl<'v> FieldSetWalker<'_> {
    fn walk_map(
        &mut self,
        fields: &'v Map<String, Value>,
        names: &mut Vec<&'v str>,
        path: &mut Vec<PathElement>,
    ) -> Result<(), String> {
        for (name, value) in fields {
            names.push(name);
            path.push(PathElement::Field(name.clone()));
            let walked = self.walk_value(value, names, path);
            path.pop();
            names.pop();
            walked?;
        }
        Ok(())
    }

    fn walk_value(
        &mut self,
        value: &'v Value,
        names: &mut Vec<&'v str>,
        path: &mut Vec<PathElement>,
    ) -> Result<(), String> {
        match value {
            Value::Object(fields) if !fields.is_empty() => self.walk_map(fields, names, path),
            Value::Array(items) if !items.is_empty() => self.walk_list(items, names, path),
            _ => {
                self.set.insert(path);
                Ok(())
            }
        }
    }

    fn walk_list(
        &mut self,
        items: &'v [Value],
        names: &mut Vec<&'v str>,
        path: &mut Vec<PathElement>,
    ) -> Result<(), String> {
        let Some(granularity) = granularity(self.types, names) else {
            self.set.insert(path);
            return Ok(());
        };
        let mut elements = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            match item_element(item, &granularity, self.types, names) {
                Ok(element) if elements.contains(&element) => {
                    return Err(format!(
                        "{}: duplicate entries for {}",
                        dotted(names),
                        super::field_set::describe_path(std::slice::from_ref(&element))
                    ));
                }
                Ok(element) => elements.push(element),
                Err(reason) => {
                    return Err(format!("{}: element {index}: {reason}", dotted(names)));
                }
            }
        }
        for (item, element) in items.iter().zip(elements) {
            path.push(element);
            self.set.insert(path);
            let walked = match item {
                Value::Object(fields) => self.walk_map(fields, names, path),
                _ => Ok(()),
            };
            path.pop();
            walked?;
        }
        Ok(())
    }
}

/// What changed between two versions of an object, as sets of paths. Maps and list items that
/// appear or disappear whole are in `added`/`removed` themselves, besides their fields.
#[derive(Debug, Default)]
pub(super) struct Comparison {
    pub(super) added: FieldSet,
    pub(super) modified: FieldSet,
    pub(super) removed: FieldSet,
}

/// Compares two versions of an object field by field. `metadata.managedFields` is left out: it records who owns
/// the other fields and is never owned itself.
pub(super) fn compare(old: &Value, new: &Value, types: &dyn ListTypes) -> Comparison {
    let empty = Value::Object(Map::new());
    let old = if old.is_object() { old } else { &empty };
    let new = if new.is_object() { new } else { &empty };
    let mut comparer = Comparer {
        types,
        comparison: Comparison::default(),
    };
    comparer.compare(Some(old), Some(new), &mut Vec::new(), &mut Vec::new());
    comparer.comparison
}

struct Comparer<'t> {
    types: &'t dyn ListTypes,
    comparison: Comparison,
}

/// The broad type of a value: values of different shapes are never compared field by field.
#[derive(PartialEq)]
enum Shape {
    Map,
    List,
    Scalar,
}

fn shape(value: &Value) -> Shape {
    match value {
        Value::Object(_) => Shape::Map,
        Value::Array(_) => Shape::List,
        _ => Shape::Scalar,
    }
}

impl<'v> Comparer<'_> {
    fn compare(
        &mut self,
        old: Option<&'v Value>,
        new: Option<&'v Value>,
        names: &mut Vec<&'v str>,
        path: &mut Vec<PathElement>,
    ) {
        // Most writes change a few fields of a large object: equal subtrees hold no change, and comparing them
        // as values costs no allocation, where walking them builds a path for every field.
        if let (Some(old_value), Some(new_value)) = (old, new)
            && old_value == new_value
        {
            return;
        }
        if let (Some(old_value), Some(new_value)) = (old, new)
            && shape(old_value) != shape(new_value)
        {
            self.compare(old, None, names, path);
            self.compare(None, new, names, path);
            return;
        }
        let Some(sample) = old.or(new) else {
            return;
        };
        let walked_children = match shape(sample) {
            Shape::Map => self.compare_maps(old, new, names, path),
            Shape::List => self.compare_lists(old, new, names, path),
            Shape::Scalar => false,
        };
        if !walked_children {
            self.compare_leaf(old, new, path);
        } else if !path.is_empty() {
            if old.is_none() {
                self.comparison.added.insert(path);
            } else if new.is_none() {
                self.comparison.removed.insert(path);
            }
        }
    }

    fn compare_leaf(&mut self, old: Option<&Value>, new: Option<&Value>, path: &[PathElement]) {
        match (old, new) {
            (None, Some(_)) => self.comparison.added.insert(path),
            (Some(_), None) => self.comparison.removed.insert(path),
            (Some(old), Some(new)) if !same_value(old, new) => {
                self.comparison.modified.insert(path)
            }
            _ => {}
        }
    }

    /// Compares two maps field by field; `false` when both are empty and compare as one value.
    fn compare_maps(
        &mut self,
        old: Option<&'v Value>,
        new: Option<&'v Value>,
        names: &mut Vec<&'v str>,
        path: &mut Vec<PathElement>,
    ) -> bool {
        let old = old.and_then(Value::as_object);
        let new = new.and_then(Value::as_object);
        if old.is_none_or(Map::is_empty) && new.is_none_or(Map::is_empty) {
            return false;
        }
        let old_keys = old.into_iter().flat_map(Map::keys);
        let new_only = new
            .into_iter()
            .flat_map(Map::keys)
            .filter(|key| !old.is_some_and(|old| old.contains_key(*key)));
        let at_metadata = names.len() == 1 && names[0] == "metadata";
        for key in old_keys.chain(new_only) {
            if at_metadata && key == "managedFields" {
                continue;
            }
            names.push(key);
            path.push(PathElement::Field(key.clone()));
            self.compare(
                old.and_then(|old| old.get(key)),
                new.and_then(|new| new.get(key)),
                names,
                path,
            );
            path.pop();
            names.pop();
        }
        true
    }

    /// Compares two lists item by item; `false` when they compare as one value (atomic, both
    /// empty, or with items that cannot be told apart).
    fn compare_lists(
        &mut self,
        old: Option<&'v Value>,
        new: Option<&'v Value>,
        names: &mut Vec<&'v str>,
        path: &mut Vec<PathElement>,
    ) -> bool {
        let old: &[Value] = old.and_then(Value::as_array).map_or(&[], Vec::as_slice);
        let new: &[Value] = new.and_then(Value::as_array).map_or(&[], Vec::as_slice);
        if old.is_empty() && new.is_empty() {
            return false;
        }
        let Some(granularity) = granularity(self.types, names) else {
            return false;
        };
        let (Some(old_elements), Some(new_elements)) = (
            item_elements(old, &granularity, self.types, names),
            item_elements(new, &granularity, self.types, names),
        ) else {
            return false;
        };
        let old_items = first_occurrences(old, old_elements);
        let new_items = first_occurrences(new, new_elements);
        let new_only = new_items
            .iter()
            .filter(|(element, _)| !old_items.iter().any(|(seen, _)| seen == element));
        for (element, _) in old_items.iter().chain(new_only) {
            let find = |items: &[(PathElement, &'v Value)]| {
                items
                    .iter()
                    .find(|(candidate, _)| candidate == element)
                    .map(|(_, item)| *item)
            };
            path.push(element.clone());
            self.compare(find(&old_items), find(&new_items), names, path);
            path.pop();
        }
        true
    }
}

/// Pairs items with their elements, keeping the first of duplicated items.
fn first_occurrences(items: &[Value], elements: Vec<PathElement>) -> Vec<(PathElement, &Value)> {
    let mut unique: Vec<(PathElement, &Value)> = Vec::with_capacity(items.len());
    for (element, item) in elements.into_iter().zip(items) {
        if !unique.iter().any(|(seen, _)| *seen == element) {
            unique.push((element, item));
        }
    }
    unique
}

#[cfg(test)]
mod tests {
    use super::super::builtin_list_types;
    use super::super::field_set::describe_path;
    use super::*;
    use serde_json::json;

    fn described(set: &FieldSet) -> Vec<String> {
        set.member_paths()
            .iter()
            .map(|path| describe_path(path))
            .collect()
    }

    #[test]
    fn applied_field_set_owns_leaves_items_and_empty_values() {
        let types = builtin_list_types("apps", "Deployment");
        let config = json!({
            "apiVersion": "apps/v1",
            "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a"]},
            "spec": {
                "replicas": 2,
                "strategy": {},
                "paused": null,
                "template": {"spec": {
                    "tolerations": [{"key": "k"}],
                    "volumes": [],
                    "containers": [{"name": "app", "ports": [{"containerPort": 80}]}]
                }}
            }
        });
        let set = applied_field_set(&config, types).unwrap();
        assert_eq!(
            described(&set),
            vec![
                ".apiVersion",
                ".metadata.finalizers[=\"a\"]",
                ".metadata.labels.app",
                ".metadata.name",
                ".spec.paused",
                ".spec.replicas",
                ".spec.strategy",
                ".spec.template.spec.containers[name=\"app\"]",
                ".spec.template.spec.containers[name=\"app\"].name",
                ".spec.template.spec.containers[name=\"app\"].ports[containerPort=80,protocol=\"TCP\"]",
                ".spec.template.spec.containers[name=\"app\"].ports[containerPort=80,protocol=\"TCP\"].containerPort",
                ".spec.template.spec.tolerations",
                ".spec.template.spec.volumes",
            ]
        );
    }

    #[test]
    fn applied_field_set_refuses_items_it_cannot_identify() {
        let types = builtin_list_types("", "Pod");
        let cases = [
            (
                json!({"spec": {"containers": [{"image": "x"}]}}),
                ".spec.containers: element 0: associative list with keys has an element that omits key field \"name\"",
            ),
            (
                json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}),
                ".spec.containers: duplicate entries for [name=\"a\"]",
            ),
            (
                json!({"spec": {"containers": ["a"]}}),
                ".spec.containers: element 0: associative list with keys has an element that is not an object",
            ),
        ];
        for (config, expected) in cases {
            let error = applied_field_set(&config, types).unwrap_err();
            assert!(error.starts_with(expected), "{error}");
        }
    }

    #[test]
    fn comparison_finds_added_modified_and_removed_fields() {
        let types = builtin_list_types("", "Pod");
        let old = json!({
            "metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]},
            "spec": {"containers": [
                {"name": "app", "image": "v1", "args": ["a"]},
                {"name": "old", "image": "v1"}
            ]}
        });
        let new = json!({
            "metadata": {"labels": {"a": "1", "b": "3"}, "finalizers": ["y", "z"], "annotations": {"n": "1"}},
            "spec": {"containers": [
                {"name": "app", "image": "v2", "args": ["b"]},
                {"name": "side", "image": "v1"}
            ]}
        });
        let comparison = compare(&old, &new, types);
        assert_eq!(
            described(&comparison.added),
            vec![
                ".metadata.annotations",
                ".metadata.annotations.n",
                ".metadata.finalizers[=\"z\"]",
                ".spec.containers[name=\"side\"]",
                ".spec.containers[name=\"side\"].image",
                ".spec.containers[name=\"side\"].name",
            ]
        );
        assert_eq!(
            described(&comparison.modified),
            vec![
                ".metadata.labels.b",
                ".spec.containers[name=\"app\"].args",
                ".spec.containers[name=\"app\"].image",
            ]
        );
        assert_eq!(
            described(&comparison.removed),
            vec![
                ".metadata.finalizers[=\"x\"]",
                ".spec.containers[name=\"old\"]",
                ".spec.containers[name=\"old\"].image",
                ".spec.containers[name=\"old\"].name",
            ]
        );
    }

    #[test]
    fn comparison_treats_unidentifiable_lists_and_type_changes_as_values() {
        let types = builtin_list_types("", "Pod");
        let old = json!({"spec": {"containers": [{"image": "x"}], "x": {"a": 1}}});
        let new = json!({"spec": {"containers": [{"image": "y"}], "x": 5}});
        let comparison = compare(&old, &new, types);
        assert_eq!(described(&comparison.modified), vec![".spec.containers"]);
        assert_eq!(described(&comparison.added), vec![".spec.x"]);
        assert_eq!(described(&comparison.removed), vec![".spec.x", ".spec.x.a"]);
    }
}
