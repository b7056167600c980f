//! What the store holds and tells: a stored object with its serialised form, and the events of committed writes.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

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
        let json = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Self { value, json, rv }
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
