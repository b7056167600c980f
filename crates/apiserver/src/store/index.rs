//! Field indexes: for a few fields that clients select on with `=` at scale, the store keeps which objects hold
//! each value, so such a list reads only the matching objects instead of testing every object of the resource.
//!
//! Pods by `spec.nodeName` is the one that matters most: every kubelet and every per-node reconciler lists the pods
//! of one node, and with thousands of nodes a scan of every pod per list grows with the square of the cluster
//! (kube-apiserver's watch cache keeps the same index for the same reason). Events by the kind of object they are
//! about and by the controller that reported them: a console lists the Events about the kinds it shows, a handful
//! among the hundreds of thousands a busy cluster keeps for an hour, and Events are held only serialised, so a
//! scan would parse every one of them for every such list.

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
const INDEXED: &[IndexedField] = &[
    IndexedField {
        resource: "/pods",
        field: "spec.nodeName",
        pointer: "/spec/nodeName",
    },
    IndexedField {
        resource: "/events",
        field: "involvedObject.kind",
        pointer: "/involvedObject/kind",
    },
    IndexedField {
        resource: "/events",
        field: "reportingComponent",
        pointer: "/reportingComponent",
    },
];

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

    /// The keys of the objects of `resource` (in `namespace`, when given) whose `field` equals `value`, in key
    /// order; `None` when that field is not indexed. A namespace is a range of the keys, so the Events about pods
    /// of one namespace are found without stepping over those of every other.
    pub(super) fn lookup<'a>(
        &'a self,
        resource: &ResourceKey,
        namespace: Option<&'a str>,
        field: &str,
        value: &str,
    ) -> Option<impl Iterator<Item = &'a ObjectKey>> {
        let position = INDEXED
            .iter()
            .position(|i| &*resource.0 == i.resource && i.field == field)?;
        let keys = self.values[position].get(value);
        let from = (namespace.unwrap_or_default().to_owned(), String::new());
        Some(
            keys.into_iter()
                .flat_map(move |keys| keys.range(from.clone()..))
                .take_while(move |(ns, _)| namespace.is_none_or(|want| want == ns)),
        )
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
            .lookup(&ResourceKey::new("", "pods"), None, "spec.nodeName", node)
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
    fn events_are_found_by_kind_within_one_namespace() {
        let events = ResourceKey::new("", "events");
        let mut indexes = FieldIndexes::new();
        let about =
            |kind: &str| json!({"involvedObject": {"kind": kind}, "reportingComponent": "kubelet"});
        for (namespace, name, kind) in [
            ("apps", "a", "Pod"),
            ("drivers", "b", "Pod"),
            ("drivers", "c", "Module"),
            ("drivers-2", "d", "Pod"),
        ] {
            let key = (namespace.to_owned(), name.to_owned());
            indexes.update(&events, &key, None, Some(&about(kind)));
        }
        let names = |namespace: Option<&str>, field: &str, value: &str| -> Vec<String> {
            indexes
                .lookup(&events, namespace, field, value)
                .expect("events are indexed")
                .map(|(_, name)| name.clone())
                .collect()
        };
        assert_eq!(names(Some("drivers"), "involvedObject.kind", "Pod"), ["b"]);
        assert_eq!(names(None, "involvedObject.kind", "Pod"), ["a", "b", "d"]);
        assert_eq!(names(None, "involvedObject.kind", "Module"), ["c"]);
        assert_eq!(
            names(Some("drivers"), "reportingComponent", "kubelet"),
            ["b", "c"]
        );
        assert!(names(Some("other"), "involvedObject.kind", "Pod").is_empty());
    }

    #[test]
    fn only_indexed_fields_answer() {
        let indexes = FieldIndexes::new();
        let pods = ResourceKey::new("", "pods");
        assert!(
            indexes
                .lookup(&pods, None, "status.phase", "Running")
                .is_none()
        );
        let nodes = ResourceKey::new("", "nodes");
        assert!(
            indexes
                .lookup(&nodes, None, "spec.nodeName", "n1")
                .is_none()
        );
    }
}
