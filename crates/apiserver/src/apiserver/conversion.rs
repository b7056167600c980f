//! Conversion between the served versions of a resource whose versions differ in shape: a custom resource, as the
//! conversion webhook of the operator that owns it would do it, and the built-in HorizontalPodAutoscaler
//! ([`autoscaling`]). Every other resource's versions differ only by `apiVersion` (the `None` strategy), which
//! [`to_storage`] and [`from_storage`] rewrite.
//!
//! PreflightValidation is stored as `v1beta2`, whose status is a list of `{namespace, name, …}` verdicts; `v1beta1`
//! keeps them in `crStatuses`, a map keyed by `namespace/name` (and, for readers of the oldest form, by the bare
//! name too). A `v1beta1` write is taken back by its `namespace/name` keys only; a key without a namespace says
//! too little to be stored.

mod autoscaling;

use serde_json::{Map, Value, json};

use super::registry::ResourceType;

/// Whether `rt` is the HorizontalPodAutoscaler, stored as `autoscaling/v2` and served as `v1` too.
fn is_autoscaler(rt: &ResourceType) -> bool {
    rt.group == "autoscaling" && rt.plural == "horizontalpodautoscalers"
}

const KMM_GROUP: &str = "kmm.sigs.x-k8s.io";
const PREFLIGHT_PLURAL: &str = "preflightvalidations";
const PREFLIGHT_MAP_VERSION: &str = "v1beta1";

fn is_preflight(rt: &ResourceType) -> bool {
    rt.group == KMM_GROUP && rt.plural == PREFLIGHT_PLURAL
}

/// `obj`, written through `version` of `rt`, in the form it is stored in.
pub fn to_storage(rt: &ResourceType, version: &str, mut obj: Value) -> Value {
    if version == rt.storage_version {
        return obj;
    }
    if is_preflight(rt) && version == PREFLIGHT_MAP_VERSION {
        preflight_statuses_to_list(&mut obj);
    }
    if is_autoscaler(rt) && version == "v1" {
        autoscaling::to_v2(&mut obj);
    }
    obj["apiVersion"] = Value::String(rt.api_version(&rt.storage_version));
    obj
}

/// The stored `obj` as `version` of `rt` serves it.
pub fn from_storage(rt: &ResourceType, version: &str, mut obj: Value) -> Value {
    if is_preflight(rt) && version == PREFLIGHT_MAP_VERSION {
        preflight_statuses_to_map(&mut obj);
    }
    if is_autoscaler(rt) && version == "v1" {
        autoscaling::to_v1(&mut obj);
    }
    obj["apiVersion"] = Value::String(rt.api_version(version));
    obj
}

/// `status.modules[]` → `status.crStatuses{"ns/name", "name"}`.
fn preflight_statuses_to_map(obj: &mut Value) {
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(Value::Array(modules)) = status.remove("modules") else {
        return;
    };
    let mut statuses = Map::new();
    for module in modules {
        let Value::Object(mut verdict) = module else {
            continue;
        };
        let namespace = verdict.remove("namespace");
        let name = verdict.remove("name");
        let (Some(Value::String(namespace)), Some(Value::String(name))) = (namespace, name) else {
            continue;
        };
        statuses.insert(
            format!("{namespace}/{name}"),
            Value::Object(verdict.clone()),
        );
        statuses.insert(name, Value::Object(verdict));
    }
    if !statuses.is_empty() {
        status.insert("crStatuses".to_owned(), Value::Object(statuses));
    }
}

/// `status.crStatuses{"ns/name"}` → `status.modules[]`, in key order.
fn preflight_statuses_to_list(obj: &mut Value) {
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(Value::Object(statuses)) = status.remove("crStatuses") else {
        return;
    };
    let modules: Vec<Value> = statuses
        .into_iter()
        .filter_map(|(key, verdict)| {
            let (namespace, name) = key.split_once('/')?;
            let Value::Object(mut verdict) = verdict else {
                return None;
            };
            verdict.insert("namespace".to_owned(), json!(namespace));
            verdict.insert("name".to_owned(), json!(name));
            Some(Value::Object(verdict))
        })
        .collect();
    if !modules.is_empty() {
        status.insert("modules".to_owned(), Value::Array(modules));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored() -> Value {
        json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta2",
            "kind": "PreflightValidation",
            "spec": {"kernelVersion": "6.1.0"},
            "status": {"modules": [{
                "namespace": "ns", "name": "m", "verificationStatus": "Success",
                "verificationStage": "Done", "lastTransitionTime": "2026-01-01T00:00:00Z"
            }]}
        })
    }

    #[test]
    fn verdicts_are_keyed_both_ways_and_come_back_as_they_were() {
        let mut old = stored();
        preflight_statuses_to_map(&mut old);
        let statuses = old["status"]["crStatuses"].as_object().expect("a map");
        let mut keys: Vec<&String> = statuses.keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            ["m", "ns/m"],
            "keyed by namespace/name and by the bare name"
        );
        assert_eq!(statuses["ns/m"]["verificationStatus"], "Success");
        assert!(statuses["ns/m"].get("namespace").is_none());
        assert!(old["status"].get("modules").is_none());
        preflight_statuses_to_list(&mut old);
        assert_eq!(old, stored());
    }

    #[test]
    fn objects_without_verdicts_pass_through() {
        let mut bare = json!({"spec": {"kernelVersion": "6.1.0"}});
        preflight_statuses_to_map(&mut bare);
        preflight_statuses_to_list(&mut bare);
        assert_eq!(bare, json!({"spec": {"kernelVersion": "6.1.0"}}));
    }
}
