//! Field indexes: for a few fields that clients select on with `=` at scale, the store keeps which objects hold
//! each value, so such a list reads only the matching objects instead of testing every object of the resource.
//!
//! Pods by `spec.nodeName` is the one that matters: every kubelet and every per-node reconciler lists the pods of
//! one node, and with thousands of nodes a scan of every pod per list grows with the square of the cluster
//! (kube-apiserver's watch cache keeps the same index for the same reason).

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::ObjectKey;
use super::ResourceKey;

/// One indexed field of one resource.
struct IndexedField {
    /// The resource, as `group/plural`.
    resource: &'static str,
    /// The field as field selectors name it.
    field: &'static str,
    /// Where the field sits in the object.
    pointer: &'static str,
}

/// The fields the store indexes.
const INDEXED: &[IndexedField] = &[IndexedField {
    resource: "/pods",
    field: "spec.nodeName",
    pointer: "/spec/nodeName",
}];

/// Which objects hold each value of the indexed fields. A missing field is indexed under the empty string, as
/// field selectors read it (`spec.nodeName=` selects unscheduled pods).
#[derive(Default)]
pub(super) struct FieldIndexes {
    /// Per indexed field (by position in [`INDEXED`]): value → objects.
    values: Vec<HashMap<String, BTreeSet<ObjectKey>>>,
}

impl FieldIndexes {
    pub(super) fn new() -> Self {
        Self {
            values: INDEXED.iter().map(|_| HashMap::new()).collect(),
        }
    }

    /// Whether any field of `resource` is indexed (only then do its writes need [`FieldIndexes::update`]).
    pub(super) fn covers(&self, resource: &ResourceKey) -> bool {
        INDEXED
            .iter()
            .any(|indexed| &*resource.0 == indexed.resource)
    }

    /// Record that the object at `key` changed from `before` to `after` (either absent for a create or delete).
    pub(super) fn update(
        &mut self,
        resource: &ResourceKey,
        key: &ObjectKey,
        before: Option<&Value>,
        after: Option<&Value>,
    ) {
        for (position, indexed) in INDEXED.iter().enumerate() {
            if &*resource.0 != indexed.resource {
                continue;
            }
            let old = before.map(|v| field_value(v, indexed.pointer));
            let new = after.map(|v| field_value(v, indexed.pointer));
            if old == new {
                continue;
            }
            let values = &mut self.values[position];
            if let Some(old) = old
                && let Some(keys) = values.get_mut(old)
            {
                keys.remove(key);
                if keys.is_empty() {
                    values.remove(old);
                }
            }
            if let Some(new) = new {
                values
                    .entry(new.to_owned())
                    .or_default()
                    .insert(key.clone());
            }
        }
    }

    /// The keys of the objects of `resource` whose `field` equals `value`, in key order; `None` when that field
    /// is not indexed.
    pub(super) fn lookup(
        &self,
        resource: &ResourceKey,
        field: &str,
        value: &str,
    ) -> Option<impl Iterator<Item = &ObjectKey>> {
        let position = INDEXED
            .iter()
            .position(|i| &*resource.0 == i.resource && i.field == field)?;
        Some(self.values[position].get(value).into_iter().flatten())
    }
}

fn field_value<'v>(object: &'v Value, pointer: &str) -> &'v str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str) -> ObjectKey {
        ("ns".to_owned(), name.to_owned())
    }

    fn found(indexes: &FieldIndexes, node: &str) -> Vec<String> {
        indexes
            .lookup(&ResourceKey::new("", "pods"), "spec.nodeName", node)
            .expect("pods are indexed by node")
            .map(|(_, name)| name.clone())
            .collect()
    }

    #[test]
    fn pods_follow_their_node_through_binding_and_deletion() {
        let pods = ResourceKey::new("", "pods");
        let mut indexes = FieldIndexes::new();
        let pending = json!({"spec": {}});
        let bound = json!({"spec": {"nodeName": "n1"}});
        indexes.update(&pods, &key("a"), None, Some(&pending));
        indexes.update(&pods, &key("b"), None, Some(&bound));
        assert_eq!(found(&indexes, ""), ["a"]);
        assert_eq!(found(&indexes, "n1"), ["b"]);
        indexes.update(&pods, &key("a"), Some(&pending), Some(&bound));
        assert!(found(&indexes, "").is_empty());
        assert_eq!(found(&indexes, "n1"), ["a", "b"]);
        indexes.update(&pods, &key("b"), Some(&bound), None);
        assert_eq!(found(&indexes, "n1"), ["a"]);
        assert!(found(&indexes, "n2").is_empty());
    }

    #[test]
    fn only_indexed_fields_answer() {
        let indexes = FieldIndexes::new();
        let pods = ResourceKey::new("", "pods");
        assert!(indexes.lookup(&pods, "status.phase", "Running").is_none());
        let nodes = ResourceKey::new("", "nodes");
        assert!(indexes.lookup(&nodes, "spec.nodeName", "n1").is_none());
    }
}
