//! The cluster-side controllers that API semantics depend on: owner-reference garbage collection and namespace
//! deletion. On a real cluster they run in kube-controller-manager; here they run next to the API server and act
//! on its store directly, reacting to store events and sweeping everything at start and periodically (which also
//! repairs whatever a restart interrupted).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::ApiServer;
use super::handlers::{DeletePolicy, delete_object};
use super::objects;
use super::registry::ResourceKey;
use crate::cluster::store::{EventType, StoredObject};

/// How often the full sweep runs even when no events arrive.
const SWEEP_INTERVAL: Duration = Duration::from_secs(30);

const FOREGROUND: &str = "foregroundDeletion";
const ORPHAN: &str = "orphan";
const NAMESPACE_FINALIZER: &str = "kubernetes";

/// Start the controllers on the runtime; they stop with the server.
pub fn spawn(server: ApiServer) {
    tokio::spawn(async move {
        let Ok((_, mut events)) = server.store().watch_from(server.store().current_rv()) else {
            return;
        };
        let shutdown = server.inner().shutdown.clone();
        sweep(&server);
        let mut ticker = tokio::time::interval(SWEEP_INTERVAL);
        loop {
            tokio::select! {
                received = events.recv() => match received {
                    Ok(event) => {
                        match event.kind {
                            EventType::Deleted => on_deleted(&server, &event.object),
                            _ => on_changed(&server, &event.resource, &event.object),
                        }
                    }
                    Err(RecvError::Lagged(_)) => sweep(&server),
                    Err(RecvError::Closed) => return,
                },
                _ = ticker.tick() => sweep(&server),
                _ = shutdown.cancelled() => return,
            }
        }
    });
}

/// Re-examine everything: terminating objects with GC finalizers, terminating namespaces, and dependents whose
/// owners are gone.
pub fn sweep(server: &ApiServer) {
    let store = server.store();
    let mut uids = HashSet::new();
    let mut all = Vec::new();
    for key in store.resources() {
        for obj in store.list(&key, None).0 {
            if let Some(uid) = objects::meta_str(&obj.value, "uid") {
                uids.insert(uid.to_string());
            }
            all.push((key.clone(), obj));
        }
    }
    for (key, obj) in &all {
        if objects::is_terminating(&obj.value) {
            on_changed(server, key, obj);
        }
        let refs = owner_refs(&obj.value);
        if !refs.is_empty() && refs.iter().any(|r| !uids.contains(r.as_str())) {
            collect_dependent(server, key, obj, &uids);
        }
    }
}

fn owner_refs(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Every object whose ownerReferences name `uid`.
fn dependents_of(server: &ApiServer, uid: &str) -> Vec<(ResourceKey, Arc<StoredObject>)> {
    let store = server.store();
    let mut out = Vec::new();
    for key in store.resources() {
        for obj in store.list(&key, None).0 {
            if owner_refs(&obj.value).iter().any(|r| r == uid) {
                out.push((key.clone(), obj));
            }
        }
    }
    out
}

fn all_uids(server: &ApiServer) -> HashSet<String> {
    let store = server.store();
    store
        .resources()
        .iter()
        .flat_map(|key| store.list(key, None).0)
        .filter_map(|o| objects::meta_str(&o.value, "uid").map(str::to_string))
        .collect()
}

fn on_deleted(server: &ApiServer, deleted: &StoredObject) {
    if let Some(uid) = objects::meta_str(&deleted.value, "uid") {
        let dependents = dependents_of(server, uid);
        if !dependents.is_empty() {
            let uids = all_uids(server);
            for (key, dep) in dependents {
                collect_dependent(server, &key, &dep, &uids);
            }
        }
    }
    // A dependent going away may complete an owner's foreground deletion or a namespace's cleanup.
    for owner_uid in owner_refs(&deleted.value) {
        if let Some((key, owner)) = find_by_uid(server, &owner_uid)
            && objects::is_terminating(&owner.value)
        {
            on_changed(server, &key, &owner);
        }
    }
    let ns = deleted.namespace();
    if !ns.is_empty() {
        let ns_key = ResourceKey::new("", "namespaces");
        if let Some(namespace) = server.store().get(&ns_key, "", ns)
            && objects::is_terminating(&namespace.value)
        {
            finish_namespace(server, &namespace);
        }
    }
}

fn find_by_uid(server: &ApiServer, uid: &str) -> Option<(ResourceKey, Arc<StoredObject>)> {
    let store = server.store();
    store.resources().into_iter().find_map(|key| {
        store
            .list(&key, None)
            .0
            .into_iter()
            .find(|o| objects::meta_str(&o.value, "uid") == Some(uid))
            .map(|o| (key.clone(), o))
    })
}

/// A dependent with no remaining owner is deleted; one with some owners left loses the dangling references.
fn collect_dependent(
    server: &ApiServer,
    key: &ResourceKey,
    dep: &Arc<StoredObject>,
    live_uids: &HashSet<String>,
) {
    let refs = owner_refs(&dep.value);
    let live: Vec<&String> = refs
        .iter()
        .filter(|r| live_uids.contains(r.as_str()))
        .collect();
    if live.len() == refs.len() {
        return;
    }
    let Some(rt) = server
        .registry()
        .get_key(key)
        .or_else(|| server.registry().get(key.group(), key.plural()))
    else {
        return;
    };
    if live.is_empty() {
        if !objects::is_terminating(&dep.value) {
            let _ = delete_object(server, &rt, key, dep, DeletePolicy::Background);
        }
        return;
    }
    let mut updated = dep.value.clone();
    if let Some(list) = updated
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        list.retain(|r| {
            r.get("uid")
                .and_then(Value::as_str)
                .is_some_and(|u| live_uids.contains(u))
        });
    }
    let _ = server.store().put(key, Some(dep.rv), updated);
}

/// A terminating object: run the foreground/orphan protocol, or a namespace's cleanup.
fn on_changed(server: &ApiServer, key: &ResourceKey, obj: &Arc<StoredObject>) {
    if !objects::is_terminating(&obj.value) {
        return;
    }
    if key.group().is_empty() && key.plural() == "namespaces" {
        finish_namespace(server, obj);
        return;
    }
    let finalizers = objects::finalizers(&obj.value);
    let Some(uid) = objects::meta_str(&obj.value, "uid").map(str::to_string) else {
        return;
    };
    if finalizers.iter().any(|f| f == ORPHAN) {
        for (dep_key, dep) in dependents_of(server, &uid) {
            let mut updated = dep.value.clone();
            if let Some(list) = updated
                .pointer_mut("/metadata/ownerReferences")
                .and_then(Value::as_array_mut)
            {
                list.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
            }
            if let Some(meta) = updated.get_mut("metadata").and_then(Value::as_object_mut)
                && meta
                    .get("ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty)
            {
                meta.remove("ownerReferences");
            }
            let _ = server.store().put(&dep_key, Some(dep.rv), updated);
        }
        remove_finalizer(server, key, obj, ORPHAN);
    } else if finalizers.iter().any(|f| f == FOREGROUND) {
        let dependents = dependents_of(server, &uid);
        if dependents.is_empty() {
            remove_finalizer(server, key, obj, FOREGROUND);
            return;
        }
        for (dep_key, dep) in dependents {
            if let Some(rt) = server.registry().get_key(&dep_key) {
                let _ = delete_object(server, &rt, &dep_key, &dep, DeletePolicy::Foreground);
            }
        }
    }
}

/// Remove one finalizer; removing the last one removes the object.
fn remove_finalizer(
    server: &ApiServer,
    key: &ResourceKey,
    obj: &Arc<StoredObject>,
    finalizer: &str,
) {
    let remaining: Vec<String> = objects::finalizers(&obj.value)
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    if remaining.is_empty() {
        let _ = server
            .store()
            .delete(key, obj.namespace(), obj.name(), obj.rv);
        return;
    }
    let mut updated = obj.value.clone();
    updated["metadata"]["finalizers"] = json!(remaining);
    let _ = server.store().put(key, Some(obj.rv), updated);
}

/// Delete everything in a terminating namespace; once it is empty, drop the `kubernetes` finalizer and, when no
/// other finalizer remains, the namespace itself.
fn finish_namespace(server: &ApiServer, namespace: &Arc<StoredObject>) {
    let ns = namespace.name().to_string();
    let store = server.store();
    let mut remaining = 0;
    for key in store.resources() {
        let Some(rt) = server.registry().get_key(&key) else {
            continue;
        };
        if !rt.namespaced {
            continue;
        }
        for obj in store.list(&key, Some(&ns)).0 {
            remaining += 1;
            if !objects::is_terminating(&obj.value) {
                let _ = delete_object(server, &rt, &key, &obj, DeletePolicy::Background);
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
    let mut updated = current.value.clone();
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
    } else if updated != current.value {
        let _ = store.put(&key, Some(current.rv), updated);
    }
}
