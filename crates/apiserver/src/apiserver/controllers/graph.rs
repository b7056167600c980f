//! The collector's picture of ownership: where every object lives, by uid, and which objects name each uid as an
//! owner. Built once from the store and then kept current from the store's events, so finding an owner's
//! dependents or an owner itself costs a hash lookup instead of a walk over every stored object (the same split as
//! kube-controller-manager's `GraphBuilder` and its `uidToNode` map).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::apiserver::objects;
use crate::store::ResourceKey;
use crate::store::{Store, StoredObject};

/// An object's uid, shared between the maps that mention it.
pub(super) type Uid = Arc<str>;

/// Where an object is stored, so its current state can be read back from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Location {
    /// The resource it belongs to.
    pub resource: ResourceKey,
    /// Its namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// What the graph remembers of one object.
#[derive(Debug)]
struct Node {
    location: Location,
    /// The uids its ownerReferences name, in their order.
    owners: Vec<Uid>,
    /// The resourceVersion this entry was taken from; older events do not overwrite it.
    rv: u64,
}

/// Objects by uid and dependents by owner uid. An owner uid stays in `dependents` while something still names it,
/// whether or not the owner exists: an entry without a node is a dangling reference the collector must resolve.
#[derive(Debug, Default)]
pub(super) struct Graph {
    nodes: HashMap<Uid, Node>,
    dependents: HashMap<Uid, HashSet<Uid>>,
    /// Objects marked for deletion (deletionTimestamp set), which the collector may have to finish.
    terminating: HashSet<Uid>,
    /// Objects per namespace, so the end of a namespace's content is noticed without listing it.
    per_namespace: HashMap<String, usize>,
    /// Names of namespaces marked for deletion.
    terminating_namespaces: HashSet<String>,
}

/// The uids an object's ownerReferences name.
pub(super) fn owner_uids(obj: &Value) -> impl Iterator<Item = &str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
}

fn is_namespace(resource: &ResourceKey) -> bool {
    resource.group().is_empty() && resource.plural() == "namespaces"
}

impl Graph {
    /// The graph of everything the store holds now: the one full walk, done at start and whenever the event
    /// stream lost events.
    pub(super) fn build(store: &Store) -> Self {
        let mut graph = Self::default();
        for resource in store.resources() {
            for obj in store.list(&resource, None).0 {
                graph.observe(&resource, &obj);
            }
        }
        graph
    }

    /// Record an object as created or changed: its place, its owners (which an update may add or remove) and
    /// whether it is terminating. An event older than what the graph already holds for the uid is ignored.
    pub(super) fn observe(&mut self, resource: &ResourceKey, obj: &StoredObject) {
        let value = obj.value();
        let Some(uid) = objects::meta_str(&value, "uid") else {
            return;
        };
        let terminating = objects::is_terminating(&value);
        let (uid, old_owners) = match self.nodes.get_key_value(uid) {
            Some((_, node)) if node.rv >= obj.rv => return,
            Some((uid, node)) => {
                let same = node.owners.iter().map(|o| &**o).eq(owner_uids(&value));
                (uid.clone(), (!same).then(|| node.owners.clone()))
            }
            None => {
                let uid: Uid = Arc::from(uid);
                let namespace = obj.namespace().to_string();
                if !namespace.is_empty() {
                    *self.per_namespace.entry(namespace.clone()).or_default() += 1;
                }
                let location = Location {
                    resource: resource.clone(),
                    namespace,
                    name: obj.name().to_string(),
                };
                self.nodes.insert(
                    uid.clone(),
                    Node {
                        location,
                        owners: Vec::new(),
                        rv: 0,
                    },
                );
                (uid, Some(Vec::new()))
            }
        };
        if let Some(old_owners) = old_owners {
            let owners: Vec<Uid> = owner_uids(&value).map(|o| self.intern(o)).collect();
            for old in &old_owners {
                if !owners.contains(old) {
                    self.unlink(old, &uid);
                }
            }
            for owner in &owners {
                self.dependents
                    .entry(owner.clone())
                    .or_default()
                    .insert(uid.clone());
            }
            if let Some(node) = self.nodes.get_mut(&uid) {
                node.owners = owners;
            }
        }
        if let Some(node) = self.nodes.get_mut(&uid) {
            node.rv = obj.rv;
        }
        if terminating {
            self.terminating.insert(uid.clone());
        } else {
            self.terminating.remove(&uid);
        }
        if is_namespace(resource) {
            if terminating {
                self.terminating_namespaces.insert(obj.name().to_string());
            } else {
                self.terminating_namespaces.remove(obj.name());
            }
        }
    }

    /// Forget a deleted object. Whatever still names it as an owner keeps its entry under that uid, now dangling.
    pub(super) fn forget(&mut self, resource: &ResourceKey, obj: &StoredObject) {
        let value = obj.value();
        let Some(uid) = objects::meta_str(&value, "uid") else {
            return;
        };
        let Some((uid, node)) = self.nodes.remove_entry(uid) else {
            return;
        };
        for owner in &node.owners {
            self.unlink(owner, &uid);
        }
        self.terminating.remove(&uid);
        let namespace = &node.location.namespace;
        if let Some(count) = self.per_namespace.get_mut(namespace) {
            *count -= 1;
            if *count == 0 {
                self.per_namespace.remove(namespace);
            }
        }
        if is_namespace(resource) {
            self.terminating_namespaces.remove(&node.location.name);
        }
    }

    /// The shared uid for `uid` when the graph already knows it, so owners and their nodes share one allocation.
    fn intern(&self, uid: &str) -> Uid {
        self.nodes
            .get_key_value(uid)
            .map(|(k, _)| k.clone())
            .or_else(|| self.dependents.get_key_value(uid).map(|(k, _)| k.clone()))
            .unwrap_or_else(|| Arc::from(uid))
    }

    fn unlink(&mut self, owner: &str, dependent: &str) {
        if let Some(set) = self.dependents.get_mut(owner) {
            set.remove(dependent);
            if set.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }

    /// Whether an object with this uid exists (as far as the events received so far tell).
    pub(super) fn contains(&self, uid: &str) -> bool {
        self.nodes.contains_key(uid)
    }

    /// Where the object with this uid lives.
    pub(super) fn location(&self, uid: &str) -> Option<&Location> {
        self.nodes.get(uid).map(|n| &n.location)
    }

    /// The objects naming `owner` in their ownerReferences.
    pub(super) fn dependents_of(&self, owner: &str) -> Vec<(Uid, Location)> {
        self.dependents
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|uid| Some((uid.clone(), self.location(uid)?.clone())))
            .collect()
    }

    /// Objects naming at least one owner the graph does not hold.
    pub(super) fn with_dangling_owners(&self) -> Vec<(Uid, Location)> {
        let mut out: Vec<(Uid, Location)> = self
            .dependents
            .iter()
            .filter(|(owner, _)| !self.nodes.contains_key(*owner))
            .flat_map(|(_, deps)| deps.iter())
            .filter_map(|uid| Some((uid.clone(), self.location(uid)?.clone())))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    /// Objects marked for deletion.
    pub(super) fn terminating(&self) -> Vec<(Uid, Location)> {
        self.terminating
            .iter()
            .filter_map(|uid| Some((uid.clone(), self.location(uid)?.clone())))
            .collect()
    }

    /// Whether the namespace is marked for deletion.
    pub(super) fn namespace_is_terminating(&self, namespace: &str) -> bool {
        self.terminating_namespaces.contains(namespace)
    }

    /// How many objects the namespace holds.
    pub(super) fn objects_in(&self, namespace: &str) -> usize {
        self.per_namespace.get(namespace).copied().unwrap_or(0)
    }

    /// How many objects the graph holds.
    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configmap(name: &str, uid: &str, owners: &[&str]) -> Value {
        let refs: Vec<Value> = owners
            .iter()
            .map(|o| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o, "uid": o}))
            .collect();
        json!({"metadata": {"name": name, "namespace": "default", "uid": uid, "ownerReferences": refs}})
    }

    fn uids(entries: Vec<(Uid, Location)>) -> Vec<String> {
        let mut uids: Vec<String> = entries.into_iter().map(|(u, _)| u.to_string()).collect();
        uids.sort();
        uids
    }

    #[test]
    fn owner_references_changed_by_an_update_move_the_dependent() {
        let store = Store::in_memory(100);
        let key = ResourceKey::new("", "configmaps");
        let mut graph = Graph::default();
        for owner in ["a", "b"] {
            graph.observe(
                &key,
                &store.put(&key, None, configmap(owner, owner, &[])).unwrap(),
            );
        }
        let dep = store
            .put(&key, None, configmap("dep", "dep", &["a"]))
            .unwrap();
        graph.observe(&key, &dep);
        assert_eq!(uids(graph.dependents_of("a")), ["dep"]);
        assert!(graph.dependents_of("b").is_empty());

        let moved = store
            .put(&key, Some(dep.rv), configmap("dep", "dep", &["b"]))
            .unwrap();
        graph.observe(&key, &moved);
        assert!(
            graph.dependents_of("a").is_empty(),
            "the removed owner lets go"
        );
        assert_eq!(uids(graph.dependents_of("b")), ["dep"]);

        // An event older than what the graph holds changes nothing.
        graph.observe(&key, &dep);
        assert_eq!(uids(graph.dependents_of("b")), ["dep"]);
        assert!(graph.dependents_of("a").is_empty());
    }

    #[test]
    fn a_forgotten_owner_leaves_its_dependents_dangling() {
        let store = Store::in_memory(100);
        let key = ResourceKey::new("", "configmaps");
        let owner = store.put(&key, None, configmap("a", "a", &[])).unwrap();
        store
            .put(&key, None, configmap("dep", "dep", &["a"]))
            .unwrap();
        store
            .put(&key, None, configmap("free", "free", &[]))
            .unwrap();
        let mut graph = Graph::build(&store);
        assert_eq!(graph.len(), 3);
        assert_eq!(graph.objects_in("default"), 3);
        assert!(graph.with_dangling_owners().is_empty());

        let deleted = store.delete(&key, "default", "a", owner.rv).unwrap();
        graph.forget(&key, &deleted);
        assert!(!graph.contains("a"));
        assert_eq!(graph.objects_in("default"), 2);
        assert_eq!(uids(graph.with_dangling_owners()), ["dep"]);
        assert_eq!(uids(graph.dependents_of("a")), ["dep"]);
    }

    #[test]
    fn terminating_objects_and_namespaces_are_tracked() {
        let store = Store::in_memory(100);
        let namespaces = ResourceKey::new("", "namespaces");
        let ns = store
            .put(
                &namespaces,
                None,
                json!({"metadata": {"name": "team", "uid": "ns"}}),
            )
            .unwrap();
        let mut graph = Graph::build(&store);
        assert!(!graph.namespace_is_terminating("team"));
        let marked = store
            .put(
                &namespaces,
                Some(ns.rv),
                json!({"metadata": {"name": "team", "uid": "ns", "deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            )
            .unwrap();
        graph.observe(&namespaces, &marked);
        assert!(graph.namespace_is_terminating("team"));
        assert_eq!(uids(graph.terminating()), ["ns"]);
        graph.forget(&namespaces, &marked);
        assert!(!graph.namespace_is_terminating("team"));
        assert!(graph.terminating().is_empty());
    }
}
