//! What the store holds and tells: a stored object with its serialised form, and the events of committed writes.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::cluster::apiserver::registry::ResourceKey;

/// One stored object: its JSON value, its serialised form (so lists and watches only copy bytes), and its version.
#[derive(Debug)]
pub struct StoredObject {
    /// The object, with `metadata.resourceVersion` set.
    pub value: Value,
    /// `value` serialised once at write time.
    pub json: Bytes,
    /// The resourceVersion of the write that produced this object.
    pub rv: u64,
}

impl StoredObject {
    pub(super) fn new(mut value: Value, rv: u64) -> Self {
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        // A boxed slice holds exactly the JSON; the vector it comes from may be up to twice as large.
        let json = Bytes::from(
            serde_json::to_vec(&value)
                .unwrap_or_default()
                .into_boxed_slice(),
        );
        Self {
            value: compacted(value),
            json,
            rv,
        }
    }

    /// The object's namespace (empty for cluster-scoped objects).
    pub fn namespace(&self) -> &str {
        self.value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        self.value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// `value` rebuilt with every map, list and string holding exactly what it contains. The objects a write produces
/// come out of parsing, merging and field tracking, whose maps grow by doubling: a map of one entry (most of the
/// `fieldsV1` trees of `managedFields` are such maps) reserves room for three. The stored tree lives as long as the
/// object and the history keep it, so its slack is paid for every object of the cluster.
fn compacted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut exact = Map::with_capacity(map.len());
            for (key, item) in map {
                exact.insert(exact_string(key), compacted(item));
            }
            Value::Object(exact)
        }
        Value::Array(items) => {
            let mut exact = Vec::with_capacity(items.len());
            exact.extend(items.into_iter().map(compacted));
            Value::Array(exact)
        }
        Value::String(text) => Value::String(exact_string(text)),
        scalar => scalar,
    }
}

fn exact_string(mut text: String) -> String {
    text.shrink_to_fit();
    text
}

/// What a write did, as watchers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed; the event carries its last state.
    Deleted,
}

impl EventType {
    /// The watch-protocol name of the event type.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }

    pub(super) fn code(self) -> i64 {
        match self {
            EventType::Added => 0,
            EventType::Modified => 1,
            EventType::Deleted => 2,
        }
    }

    pub(super) fn from_code(code: i64) -> Self {
        match code {
            0 => EventType::Added,
            1 => EventType::Modified,
            _ => EventType::Deleted,
        }
    }
}

/// One committed write.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion the write was given.
    pub rv: u64,
    /// Which resource it concerns.
    pub resource: ResourceKey,
    /// Added, modified or deleted.
    pub kind: EventType,
    /// The object after the write (for deletions, its last state with the deletion's resourceVersion).
    pub object: Arc<StoredObject>,
    /// The object before the write, so watches with selectors can turn a change into ADDED or DELETED.
    pub previous: Option<Arc<StoredObject>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stored_object_keeps_every_field_in_its_order_and_serialises_exactly() {
        let mut grown = Map::new();
        for key in ["z", "a", "m"] {
            grown.insert(
                key.to_string(),
                json!({"f:x": {}, "k:{\"type\":\"Ready\"}": {".": {}}}),
            );
        }
        let value = json!({
            "metadata": {"name": "n", "namespace": "ns", "labels": {"b": "2", "a": "1"}},
            "spec": {"list": [1, "two", {"three": [null, true, 3.5]}], "empty": {}, "none": []},
            "status": Value::Object(grown),
        });
        let stored = StoredObject::new(value.clone(), 7);
        let mut expected = value;
        expected["metadata"]["resourceVersion"] = json!("7");
        assert_eq!(stored.value, expected);
        let keys: Vec<&String> = stored.value["status"]
            .as_object()
            .expect("a map")
            .keys()
            .collect();
        assert_eq!(keys, ["z", "a", "m"]);
        assert_eq!(
            stored.json,
            serde_json::to_vec(&expected).expect("serialisable")
        );
        assert_eq!(
            (stored.namespace(), stored.name(), stored.rv),
            ("ns", "n", 7)
        );
    }
}
