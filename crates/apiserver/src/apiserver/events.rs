//! One event store, two APIs: `events.k8s.io/v1` Events (what kube-rs's `Recorder` writes) are stored as core
//! `v1` Events (what `kubectl describe` and `kubectl get events` read), converting field names both ways as
//! kube-apiserver does, so an event recorded through either API is visible through both.

use serde_json::{Map, Value};

use super::registry::ResourceType;
use crate::store::ResourceKey;

/// Field renames between `events.k8s.io/v1` (left) and core `v1` (right).
const RENAMES: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

fn is_new_events(rt: &ResourceType) -> bool {
    rt.group == "events.k8s.io" && rt.plural == "events"
}

/// Where the Events of both APIs are stored: with the core `v1` ones.
pub fn stored_events() -> ResourceKey {
    ResourceKey::new("", "events")
}

/// Where objects of `rt` are stored.
pub fn storage_key(rt: &ResourceType) -> ResourceKey {
    if is_new_events(rt) {
        stored_events()
    } else {
        rt.key()
    }
}

/// Convert an object of `rt` into its stored form.
pub fn to_storage(rt: &ResourceType, obj: Value) -> Value {
    if !is_new_events(rt) {
        return obj;
    }
    let mut out = rename(obj, |k| {
        RENAMES
            .iter()
            .find(|(new, _)| *new == k)
            .map(|(_, old)| *old)
    });
    out["apiVersion"] = Value::String("v1".into());
    out
}

/// Convert a stored object into the form `rt` serves.
pub fn from_storage(rt: &ResourceType, obj: &Value) -> Value {
    if !is_new_events(rt) {
        return obj.clone();
    }
    let mut out = rename(obj.clone(), |k| {
        RENAMES
            .iter()
            .find(|(_, old)| *old == k)
            .map(|(new, _)| *new)
    });
    out["apiVersion"] = Value::String("events.k8s.io/v1".into());
    out
}

fn rename(obj: Value, map: impl Fn(&str) -> Option<&'static str>) -> Value {
    let Value::Object(fields) = obj else {
        return obj;
    };
    let renamed: Map<String, Value> = fields
        .into_iter()
        .map(|(k, v)| (map(&k).map(str::to_string).unwrap_or(k), v))
        .collect();
    Value::Object(renamed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::registry::Registry;
    use serde_json::json;

    #[test]
    fn events_round_trip_between_apis() {
        let registry = Registry::with_builtins();
        let new_api = registry.get("events.k8s.io", "events").unwrap();
        let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}, "regarding": {"kind": "Pod", "name": "p"}, "note": "pulled", "reportingController": "kubelet", "reason": "Pulled"});
        let stored = to_storage(&new_api, event.clone());
        assert_eq!(stored["involvedObject"]["name"], "p");
        assert_eq!(stored["message"], "pulled");
        assert_eq!(stored["reportingComponent"], "kubelet");
        assert_eq!(stored["apiVersion"], "v1");
        assert_eq!(from_storage(&new_api, &stored), event);
        assert_eq!(storage_key(&new_api), ResourceKey::new("", "events"));
    }
}
