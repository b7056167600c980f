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

/// The resource whose objects are also indexed by label key: pods, which a busy cluster holds by the hundred
/// thousand, while a console or an operator selects the few of its own by a label of theirs.
const LABEL_INDEXED: &str = "/pods";

/// A label key held by more pods than this is no longer indexed (`app`, `pod-template-hash`): its set would cost
/// memory for every pod and spare little, since a list selecting on it returns most of what it would test. Once
/// dropped it stays out of the index (putting it back would take a scan of every pod), and selectors on it scan.
const LABEL_INDEX_LIMIT: usize = 5_000;

/// Which objects hold each value of the indexed fields, and which pods hold each label key. A missing field is
/// indexed under the empty string, as field selectors read it (`spec.nodeName=` selects unscheduled pods).
#[derive(Default)]
pub(super) struct FieldIndexes {
    /// Per indexed field (by position in [`INDEXED`]): value → objects.
    values: Vec<HashMap<String, BTreeSet<ObjectKey>>>,
    /// Label key → the pods holding it; `None` for a key held by too many ([`LABEL_INDEX_LIMIT`]).
    label_keys: HashMap<String, Option<BTreeSet<ObjectKey>>>,
}

impl FieldIndexes {
    pub(super) fn new() -> Self {
        Self {
            values: INDEXED.iter().map(|_| HashMap::new()).collect(),
            label_keys: HashMap::new(),
        }
    }

    /// Whether any field or label of `resource` is indexed (only then do its writes need
    /// [`FieldIndexes::update`]).
    pub(super) fn covers(&self, resource: &ResourceKey) -> bool {
        &*resource.0 == LABEL_INDEXED
            || INDEXED
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
        if &*resource.0 == LABEL_INDEXED {
            self.update_label_keys(key, before, after);
        }
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

    /// Record the label keys a pod at `key` lost and gained from `before` to `after`.
    fn update_label_keys(
        &mut self,
        key: &ObjectKey,
        before: Option<&Value>,
        after: Option<&Value>,
    ) {
        let (old, new) = (label_keys(before), label_keys(after));
        for label in old.iter().filter(|label| !new.contains(label)) {
            if let Some(Some(holders)) = self.label_keys.get_mut(*label) {
                holders.remove(key);
                if holders.is_empty() {
                    self.label_keys.remove(*label);
                }
            }
        }
        for label in new.iter().filter(|label| !old.contains(label)) {
            let entry = self
                .label_keys
                .entry((*label).to_owned())
                .or_insert_with(|| Some(BTreeSet::new()));
            if let Some(holders) = entry {
                holders.insert(key.clone());
                if holders.len() > LABEL_INDEX_LIMIT {
                    *entry = None;
                }
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
        Some(within(self.values[position].get(value), namespace))
    }

    /// The keys of the objects of `resource` (in `namespace`, when given) that hold the label `label`, in key
    /// order; `None` when that label is not indexed (another resource, or a key too many pods hold).
    pub(super) fn lookup_label<'a>(
        &'a self,
        resource: &ResourceKey,
        namespace: Option<&'a str>,
        label: &str,
    ) -> Option<impl Iterator<Item = &'a ObjectKey>> {
        if &*resource.0 != LABEL_INDEXED {
            return None;
        }
        let holders = match self.label_keys.get(label) {
            Some(None) => return None,
            Some(Some(holders)) => Some(holders),
            None => None,
        };
        Some(within(holders, namespace))
    }
}

/// The keys of `keys` in `namespace` (all without one), in key order.
fn within<'a>(
    keys: Option<&'a BTreeSet<ObjectKey>>,
    namespace: Option<&'a str>,
) -> impl Iterator<Item = &'a ObjectKey> {
    let from = (namespace.unwrap_or_default().to_owned(), String::new());
    keys.into_iter()
        .flat_map(move |keys| keys.range(from.clone()..))
        .take_while(move |(ns, _)| namespace.is_none_or(|want| want == ns))
}

/// The label keys of an object, none when it is absent.
fn label_keys(object: Option<&Value>) -> Vec<&str> {
    object
        .and_then(|object| object.get("metadata")?.get("labels")?.as_object())
        .map(|labels| labels.keys().map(String::as_str).collect())
        .unwrap_or_default()
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
    fn pods_are_found_by_label_key_until_too_many_hold_it() {
        let pods = ResourceKey::new("", "pods");
        let mut indexes = FieldIndexes::new();
        let labelled = |labels: Value| json!({"metadata": {"labels": labels}});
        let holders = |indexes: &FieldIndexes, label: &str| -> Option<Vec<String>> {
            let found = indexes.lookup_label(&pods, None, label)?;
            Some(found.map(|(_, name)| name.clone()).collect())
        };
        let worker = labelled(json!({"app": "x", "kmm.node.kubernetes.io/worker-action": "Load"}));
        indexes.update(&pods, &key("w"), None, Some(&worker));
        for i in 0..LABEL_INDEX_LIMIT {
            let app = labelled(json!({"app": "x"}));
            indexes.update(&pods, &key(&format!("p{i}")), None, Some(&app));
        }
        let worker_action = "kmm.node.kubernetes.io/worker-action";
        assert_eq!(holders(&indexes, worker_action), Some(vec!["w".to_owned()]));
        assert_eq!(holders(&indexes, "missing"), Some(vec![]));
        // One holder more than the limit: the key leaves the index, and selectors on it scan.
        assert_eq!(holders(&indexes, "app"), None);
        // A pod that loses the label leaves the key's holders, and the key with its last one.
        let unlabelled = labelled(json!({"app": "x"}));
        indexes.update(&pods, &key("w"), Some(&worker), Some(&unlabelled));
        assert_eq!(holders(&indexes, worker_action), Some(vec![]));
        indexes.update(&pods, &key("v"), None, Some(&worker));
        assert_eq!(holders(&indexes, worker_action), Some(vec!["v".to_owned()]));
        let nodes = ResourceKey::new("", "nodes");
        assert!(indexes.lookup_label(&nodes, None, "app").is_none());
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
