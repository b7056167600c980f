//! The cluster-side controllers that API semantics depend on: owner-reference garbage collection and namespace
//! deletion. On a real cluster they run in kube-controller-manager; here they run next to the API server and act
//! on its store directly. What every namespace holds is kept by [`namespace_basics`], started by the embedded
//! cluster, which knows the CA it publishes.
//!
//! The collector keeps its own ownership [`graph`], built by one walk over the store at start (which also repairs
//! whatever a restart interrupted) and then kept current from the store's events, so handling an event costs what
//! the event concerns (the deleted object's dependents and owners), never a walk over every stored object. When
//! the event stream reports lost events the graph is rebuilt by the same full walk, on a blocking thread so the
//! runtime's workers keep serving requests. The periodic sweep re-examines only what the graph marks as
//! unfinished (terminating objects, dependents of missing owners): it retries work whose writes failed, and costs
//! hash lookups rather than JSON walks, so it stays cheap every 30 s with 50,000 objects. The sweep also drops from a
//! durable store the history no watch can resume from any more, so the database, and what a restart reads back,
//! stays as bounded as the history in memory.

mod graph;
pub mod kubernetes_service;
pub mod namespace_basics;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::ApiServer;
use super::handlers::{DeletePolicy, delete_object};
use super::objects;
use crate::store::ResourceKey;
use crate::store::{Event, EventType, FeedReceiver, StoredObject};
use graph::{Graph, Location, owner_uids};

/// How often unfinished work is retried even when no events arrive.
const SWEEP_INTERVAL: Duration = Duration::from_secs(30);

const FOREGROUND: &str = "foregroundDeletion";
const ORPHAN: &str = "orphan";
const NAMESPACE_FINALIZER: &str = "kubernetes";

/// Start the controllers on the runtime; they stop with the server.
pub fn spawn(server: ApiServer) {
    tokio::spawn(async move {
        let Ok((_, events)) = server.store().watch_from(server.store().current_rv()) else {
            return;
        };
        run(server, events).await;
    });
}

/// The controller loop: one task handling the store's events in order, rebuilding on lost events, sweeping on a
/// timer.
async fn run(server: ApiServer, mut events: FeedReceiver) {
    let shutdown = server.inner().shutdown.clone();
    let Some(mut collector) = Collector::rebuilt(server).await else {
        return;
    };
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + SWEEP_INTERVAL, SWEEP_INTERVAL);
    let mut last_rv = 0;
    loop {
        tokio::select! {
            received = events.recv() => match received {
                Ok(event) => {
                    last_rv = event.rv;
                    collector.handle(&event);
                }
                // Behind the live feed: catch up from the store's history when it still holds what was missed.
                Err(RecvError::Lagged(_)) if last_rv > 0 && collector.catch_up(&mut events, &mut last_rv) => {}
                Err(RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "the garbage collector lost events; rebuilding its graph");
                    let Some(rebuilt) = Collector::rebuilt(collector.server.clone()).await else {
                        return;
                    };
                    collector = rebuilt;
                }
                Err(RecvError::Closed) => return,
            },
            _ = ticker.tick() => {
                collector.sweep();
                if let Err(error) = collector.server.store().compact() {
                    tracing::warn!(%error, "compacting the durable watch history failed");
                }
            }
            _ = shutdown.cancelled() => return,
        }
    }
}

/// The garbage collector and namespace finaliser, with the graph it decides from.
struct Collector {
    server: ApiServer,
    graph: Graph,
}

impl Collector {
    /// Handle the events after `last_rv` from the store's history and follow the live feed from there; false when
    /// the history no longer reaches back that far.
    fn catch_up(&mut self, events: &mut FeedReceiver, last_rv: &mut u64) -> bool {
        let Ok((missed, resumed)) = self.server.store().watch_from(*last_rv) else {
            return false;
        };
        *events = resumed;
        for event in missed {
            *last_rv = event.rv;
            self.handle(&event);
        }
        true
    }

    /// Build the graph from a full walk of the store and finish whatever is unfinished, off the runtime's worker
    /// threads (it is the one pass whose cost grows with the store).
    async fn rebuilt(server: ApiServer) -> Option<Self> {
        let rebuilding = tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let collector = Collector {
                graph: Graph::build(server.store()),
                server,
            };
            collector.sweep();
            tracing::debug!(
                objects = collector.graph.len(),
                took = ?started.elapsed(),
                "the garbage collector's graph is built"
            );
            collector
        });
        match rebuilding.await {
            Ok(collector) => Some(collector),
            Err(e) => {
                tracing::error!("the garbage collector stopped: {e}");
                None
            }
        }
    }

    /// Bring the graph up to date with one store event, then act on it.
    fn handle(&mut self, event: &Event) {
        match event.kind {
            EventType::Deleted => {
                self.graph.forget(&event.resource, &event.object);
                self.on_deleted(&event.object);
            }
            EventType::Added | EventType::Modified => {
                self.graph.observe(&event.resource, &event.object);
                self.on_changed(&event.resource, &event.object);
            }
        }
    }

    /// Retry what is unfinished: terminating objects (foreground, orphan, namespaces) and dependents whose owners
    /// are gone. Costs what is unfinished, not what is stored.
    fn sweep(&self) {
        for (uid, location) in self.graph.terminating() {
            if let Some(obj) = self.current(&uid, &location) {
                self.on_terminating(&location.resource, &obj);
            }
        }
        for (uid, location) in self.graph.with_dangling_owners() {
            if let Some(obj) = self.current(&uid, &location) {
                self.collect_dependent(&location.resource, &obj);
            }
        }
    }

    /// The stored object at `location`, if it is still the one with `uid`.
    fn current(&self, uid: &str, location: &Location) -> Option<Arc<StoredObject>> {
        self.server
            .store()
            .get(&location.resource, &location.namespace, &location.name)
            .filter(|obj| objects::meta_str(&obj.value(), "uid") == Some(uid))
    }

    /// The stored objects that name `owner` in their ownerReferences now.
    fn dependents_of(&self, owner: &str) -> Vec<(ResourceKey, Arc<StoredObject>)> {
        self.graph
            .dependents_of(owner)
            .into_iter()
            .filter_map(|(uid, location)| {
                let obj = self.current(&uid, &location)?;
                let still_owned = owner_uids(&obj.value()).any(|o| o == owner);
                still_owned.then_some((location.resource, obj))
            })
            .collect()
    }

    /// A created or changed object: finish its deletion if it is terminating; delete it if its namespace is
    /// terminating (an earlier delete lost a race with this write); collect it if it names an owner that is gone,
    /// which is how a dependent created after its owner's deletion goes too.
    fn on_changed(&self, key: &ResourceKey, obj: &Arc<StoredObject>) {
        let value = obj.value();
        if objects::is_terminating(&value) {
            self.on_terminating(key, obj);
            return;
        }
        let namespace = obj.namespace();
        if !namespace.is_empty() && self.graph.namespace_is_terminating(namespace) {
            if let Some(rt) = self.server.registry().get_key(key) {
                let _ = delete_object(&self.server, &rt, key, obj, DeletePolicy::Background);
            }
            return;
        }
        if owner_uids(&value).any(|owner| !self.graph.contains(owner)) {
            self.collect_dependent(key, obj);
        }
    }

    fn on_deleted(&self, deleted: &StoredObject) {
        let value = deleted.value();
        if let Some(uid) = objects::meta_str(&value, "uid") {
            for (key, dep) in self.dependents_of(uid) {
                self.collect_dependent(&key, &dep);
            }
        }
        // A dependent going away may complete an owner's foreground deletion.
        for owner_uid in owner_uids(&value) {
            if let Some(location) = self.graph.location(owner_uid)
                && let Some(owner) = self.current(owner_uid, location)
                && objects::is_terminating(&owner.value())
            {
                self.on_terminating(&location.resource, &owner);
            }
        }
        // ... or a namespace's cleanup.
        let ns = deleted.namespace();
        if !ns.is_empty()
            && self.graph.namespace_is_terminating(ns)
            && self.graph.objects_in(ns) == 0
        {
            let ns_key = ResourceKey::new("", "namespaces");
            if let Some(namespace) = self.server.store().get(&ns_key, "", ns) {
                self.finish_namespace(&namespace);
            }
        }
    }

    /// Whether the owner a reference names exists. The graph answers for every owner it holds; for one it does not,
    /// the store is asked by the reference's kind and name (and the uid compared), as kube's collector verifies an
    /// owner it has not observed before acting: a graph rebuilt resource by resource may not hold an owner created
    /// during the walk.
    fn owner_exists(&self, dependent: &StoredObject, reference: &Value) -> bool {
        let Some(uid) = reference.get("uid").and_then(Value::as_str) else {
            return false;
        };
        if self.graph.contains(uid) {
            return true;
        }
        let field = |name: &str| reference.get(name).and_then(Value::as_str).unwrap_or("");
        let group = field("apiVersion")
            .rsplit_once('/')
            .map(|(group, _)| group)
            .unwrap_or("");
        let Some(rt) = self.server.registry().by_kind(group, field("kind")) else {
            return false;
        };
        let namespace = if rt.namespaced {
            dependent.namespace()
        } else {
            ""
        };
        self.server
            .store()
            .get(&rt.key(), namespace, field("name"))
            .is_some_and(|owner| objects::meta_str(&owner.value(), "uid") == Some(uid))
    }

    /// A dependent with no remaining owner is deleted; one with some owners left loses the dangling references.
    fn collect_dependent(&self, key: &ResourceKey, dep: &Arc<StoredObject>) {
        let value = dep.value();
        let Some(refs) = value
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
        else {
            return;
        };
        let live: Vec<&Value> = refs.iter().filter(|r| self.owner_exists(dep, r)).collect();
        if live.len() == refs.len() {
            return;
        }
        let Some(rt) = self
            .server
            .registry()
            .get_key(key)
            .or_else(|| self.server.registry().get(key.group(), key.plural()))
        else {
            return;
        };
        if live.is_empty() {
            if !objects::is_terminating(&value) {
                let _ = delete_object(&self.server, &rt, key, dep, DeletePolicy::Background);
            }
            return;
        }
        let live: Vec<Value> = live.into_iter().cloned().collect();
        let mut updated = dep.to_value();
        updated["metadata"]["ownerReferences"] = Value::Array(live);
        let _ = self.server.store().put(key, Some(dep.rv), updated);
    }

    /// A terminating object: run the foreground/orphan protocol, or a namespace's cleanup.
    fn on_terminating(&self, key: &ResourceKey, obj: &Arc<StoredObject>) {
        if key.group().is_empty() && key.plural() == "namespaces" {
            self.finish_namespace(obj);
            return;
        }
        let value = obj.value();
        let finalizers = objects::finalizers(&value);
        let Some(uid) = objects::meta_str(&value, "uid") else {
            return;
        };
        if finalizers.iter().any(|f| f == ORPHAN) {
            for (dep_key, dep) in self.dependents_of(uid) {
                let mut updated = dep.to_value();
                if let Some(list) = updated
                    .pointer_mut("/metadata/ownerReferences")
                    .and_then(Value::as_array_mut)
                {
                    list.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
                }
                if let Some(meta) = updated.get_mut("metadata").and_then(Value::as_object_mut)
                    && meta
                        .get("ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(Vec::is_empty)
                {
                    meta.remove("ownerReferences");
                }
                let _ = self.server.store().put(&dep_key, Some(dep.rv), updated);
            }
            self.remove_finalizer(key, obj, ORPHAN);
        } else if finalizers.iter().any(|f| f == FOREGROUND) {
            let dependents = self.dependents_of(uid);
            if dependents.is_empty() {
                self.remove_finalizer(key, obj, FOREGROUND);
                return;
            }
            for (dep_key, dep) in dependents {
                if let Some(rt) = self.server.registry().get_key(&dep_key) {
                    let _ =
                        delete_object(&self.server, &rt, &dep_key, &dep, DeletePolicy::Foreground);
                }
            }
        }
    }

    /// Remove one finalizer; removing the last one removes the object.
    fn remove_finalizer(&self, key: &ResourceKey, obj: &Arc<StoredObject>, finalizer: &str) {
        let remaining: Vec<String> = objects::finalizers(&obj.value())
            .into_iter()
            .filter(|f| f != finalizer)
            .collect();
        if remaining.is_empty() {
            let _ = self
                .server
                .store()
                .delete(key, obj.namespace(), obj.name(), obj.rv);
            return;
        }
        let mut updated = obj.to_value();
        updated["metadata"]["finalizers"] = json!(remaining);
        let _ = self.server.store().put(key, Some(obj.rv), updated);
    }

    /// Delete everything in a terminating namespace; once it is empty, drop the `kubernetes` finalizer and, when no
    /// other finalizer remains, the namespace itself. Lists only the namespace, once when it starts terminating and
    /// once when the graph sees its last object go.
    fn finish_namespace(&self, namespace: &Arc<StoredObject>) {
        let ns = namespace.name().to_string();
        let store = self.server.store();
        let mut remaining = 0;
        for key in store.resources() {
            let Some(rt) = self.server.registry().get_key(&key) else {
                continue;
            };
            if !rt.namespaced {
                continue;
            }
            for obj in store.list(&key, Some(&ns)).0 {
                remaining += 1;
                if !objects::is_terminating(&obj.value()) {
                    let _ = delete_object(&self.server, &rt, &key, &obj, DeletePolicy::Background);
                }
            }
        }
        let still_there = store
            .resources()
            .iter()
            .any(|key| store.count(key, Some(&ns)) > 0);
        if remaining > 0 && still_there {
            return;
        }
        let key = ResourceKey::new("", "namespaces");
        let Some(current) = store.get(&key, "", &ns) else {
            return;
        };
        let mut updated = current.to_value();
        if let Some(list) = updated
            .pointer_mut("/spec/finalizers")
            .and_then(Value::as_array_mut)
        {
            list.retain(|f| f.as_str() != Some(NAMESPACE_FINALIZER));
        }
        let spec_empty = updated
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if spec_empty && objects::finalizers(&updated).is_empty() {
            let _ = store.delete(&key, "", &ns, current.rv);
        } else if updated != current.to_value() {
            let _ = store.put(&key, Some(current.rv), updated);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Feed, Store};

    fn configmap(name: &str, uid: &str, owner: Option<&str>) -> Value {
        let mut value = json!({"metadata": {"name": name, "namespace": "default", "uid": uid}});
        if let Some(owner) = owner {
            value["metadata"]["ownerReferences"] =
                json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": owner}]);
        }
        value
    }

    async fn until_gone(store: &Store, key: &ResourceKey, name: &str) -> bool {
        for _ in 0..500 {
            if store.get(key, "default", name).is_none() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// The collector hears of an owner's deletion only through events; when the stream reports lost events, the
    /// rebuilt graph must find the dependents of owners that went meanwhile.
    #[tokio::test]
    async fn lost_events_rebuild_the_graph() {
        let store = Arc::new(Store::in_memory(1_000));
        let server = ApiServer::new(store.clone());
        let key = ResourceKey::new("", "configmaps");
        let probe = store
            .put(&key, None, configmap("probe", "probe", None))
            .unwrap();
        store
            .put(
                &key,
                None,
                configmap("probe-dep", "probe-dep", Some("probe")),
            )
            .unwrap();
        let owner = store
            .put(&key, None, configmap("owner", "owner", None))
            .unwrap();
        store
            .put(&key, None, configmap("dep", "dep", Some("owner")))
            .unwrap();
        // The collector's events come from this feed of one event instead of the store's, so the test decides
        // what it hears and when it falls behind.
        let sender = Feed::new(store.current_rv(), 1, usize::MAX);
        let events = sender.subscribe(store.current_rv());
        let collector = tokio::spawn(run(server.clone(), events));

        // Once the collector acts on an event, its start-up walk is over.
        let gone = store.delete(&key, "default", "probe", probe.rv).unwrap();
        sender.publish(Arc::new(Event {
            rv: gone.rv,
            resource: key.clone(),
            kind: EventType::Deleted,
            object: gone,
            previous: None,
        }));
        assert!(until_gone(&store, &key, "probe-dep").await);

        // The owner goes without the collector hearing of it, and it misses events.
        store.delete(&key, "default", "owner", owner.rv).unwrap();
        let unrelated = store
            .put(&key, None, configmap("other", "other", None))
            .unwrap();
        for _ in 0..3 {
            sender.publish(Arc::new(Event {
                rv: unrelated.rv,
                resource: key.clone(),
                kind: EventType::Added,
                object: unrelated.clone(),
                previous: None,
            }));
        }
        assert!(
            until_gone(&store, &key, "dep").await,
            "the rebuilt graph finds the dependent of the vanished owner"
        );
        assert!(store.get(&key, "default", "other").is_some());
        server.shutdown();
        collector.await.unwrap();
    }
}
