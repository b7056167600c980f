//! What the store holds and tells: a stored object with its serialised form, and the events of committed writes.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};

use super::ResourceKey;

/// One stored object: its JSON value, its serialised form (so lists and watches only copy bytes), and its version.
///
/// The parsed value leaves out `metadata.managedFields`: about half of a typical object's tree is those field sets
/// (maps of one entry each, nested as deep as the fields they name), and nothing that reads the tree (selectors,
/// indexes, the garbage collector, the server's own controllers) looks at them. They stay in the serialised form,
/// which is what clients read, and are parsed from it when a write needs them ([`StoredObject::to_value`]).
///
/// A parsed tree costs three to four times the object's JSON. Objects that are written far more often than read
/// back by the server (Events) and the superseded states the watch history keeps are held only serialised
/// ([`StoredObject::serialised`], [`StoredObject::serialised_only`]) and parsed when something reads them.
#[derive(Debug)]
pub struct StoredObject {
    /// The parsed tree, or only the object's namespace and name when it is held serialised.
    form: Form,
    /// The whole object, managedFields included, serialised once at write time.
    pub json: Bytes,
    /// The resourceVersion of the write that produced this object.
    pub rv: u64,
    /// Where the managedFields left out of the tree are, when the object has any.
    managed_fields: Option<ManagedFieldsSpan>,
}

/// How much of an object is kept parsed.
#[derive(Debug)]
enum Form {
    /// The object with `metadata.resourceVersion` set and without `metadata.managedFields`.
    Parsed(Value),
    /// Nothing parsed but what the store keys the object by.
    Serialised { namespace: Box<str>, name: Box<str> },
}

/// Where an object's `metadata.managedFields` sit: which bytes of its serialised form, and which position among
/// the keys of `metadata` (so the object rebuilt for a write keeps its key order, and its bytes stay the same).
#[derive(Debug, Clone)]
struct ManagedFieldsSpan {
    bytes: Range<usize>,
    position: usize,
}

impl StoredObject {
    pub(super) fn new(value: Value, rv: u64) -> Self {
        Self::stored(value, rv, true)
    }

    /// Like [`StoredObject::new`], but held only serialised: for objects the server itself seldom reads.
    pub(super) fn serialised(value: Value, rv: u64) -> Self {
        Self::stored(value, rv, false)
    }

    /// The object at `rv`, its tree kept when `parsed` (in exact-size allocations, see [`compacted`]).
    fn stored(mut value: Value, rv: u64, parsed: bool) -> Self {
        let mut managed = None;
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
            if let Some(position) = meta.keys().position(|key| key == MANAGED_FIELDS) {
                managed = meta
                    .shift_remove(MANAGED_FIELDS)
                    .map(|fields| (position, fields));
            }
        }
        let (json, span) = serialised(&value, managed.as_ref().map(|(p, f)| (*p, f)));
        let form = if parsed {
            Form::Parsed(compacted(value))
        } else {
            Form::Serialised {
                namespace: key_part(&value, "namespace"),
                name: key_part(&value, "name"),
            }
        };
        Self {
            form,
            json: exact_bytes(json),
            rv,
            managed_fields: managed
                .zip(span)
                .map(|((position, _), bytes)| ManagedFieldsSpan { bytes, position }),
        }
    }

    /// The same object held only serialised, sharing its bytes with this one: what the watch history keeps, so
    /// a state that has been superseded costs its JSON and no tree.
    pub(super) fn serialised_only(self: &Arc<Self>) -> Arc<Self> {
        match self.form {
            Form::Serialised { .. } => self.clone(),
            Form::Parsed(_) => Arc::new(Self {
                form: self.key_form(),
                json: self.json.clone(),
                rv: self.rv,
                managed_fields: self.managed_fields.clone(),
            }),
        }
    }

    fn key_form(&self) -> Form {
        Form::Serialised {
            namespace: self.namespace().into(),
            name: self.name().into(),
        }
    }

    /// Whether the object is held only serialised (its value is parsed on every read).
    pub fn is_serialised(&self) -> bool {
        matches!(self.form, Form::Serialised { .. })
    }

    /// The object as selectors, indexes and the server's controllers read it: everything but
    /// `metadata.managedFields`. Never write this back: a write starts from [`StoredObject::to_value`]. Parsed
    /// from the serialised form when the object is held only serialised, so read it once per use.
    pub fn value(&self) -> Cow<'_, Value> {
        match &self.form {
            Form::Parsed(value) => Cow::Borrowed(value),
            Form::Serialised { .. } => {
                let mut value = self.parse();
                if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.shift_remove(MANAGED_FIELDS);
                }
                Cow::Owned(value)
            }
        }
    }

    /// The whole object, managedFields included, as clients read it: what a write that changes the object starts
    /// from, so the fields' owners survive it.
    pub fn to_value(&self) -> Value {
        let Form::Parsed(parsed) = &self.form else {
            return self.parse();
        };
        let mut value = parsed.clone();
        if let Some(span) = &self.managed_fields
            && let Some(fields) = self.managed_fields()
            && let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut)
        {
            let position = span.position.min(meta.len());
            meta.shift_insert(position, MANAGED_FIELDS.into(), fields);
        }
        value
    }

    /// The serialised form parsed back; it was serialised from a value, so it parses.
    fn parse(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// The object's `metadata.managedFields`, parsed from its serialised form.
    pub fn managed_fields(&self) -> Option<Value> {
        let span = self.managed_fields.as_ref()?;
        serde_json::from_slice(self.json.get(span.bytes.clone())?).ok()
    }

    /// The object's namespace (empty for cluster-scoped objects).
    pub fn namespace(&self) -> &str {
        match &self.form {
            Form::Parsed(value) => value
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            Form::Serialised { namespace, .. } => namespace,
        }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        match &self.form {
            Form::Parsed(value) => value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""),
            Form::Serialised { name, .. } => name,
        }
    }
}

const MANAGED_FIELDS: &str = "managedFields";

/// `metadata.<field>` of an object as the store keys it (empty when absent), in an allocation of its own size.
fn key_part(value: &Value, field: &str) -> Box<str> {
    value
        .get("metadata")
        .and_then(|meta| meta.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
        .into()
}

/// `object` serialised exactly as `serde_json::to_vec` serialises it with `managed` (position, fields) put back
/// among the keys of its `metadata`, and which bytes those fields took.
fn serialised(object: &Value, managed: Option<(usize, &Value)>) -> (Vec<u8>, Option<Range<usize>>) {
    let (Some((position, fields)), Value::Object(top)) = (managed, object) else {
        return (serde_json::to_vec(object).unwrap_or_default(), None);
    };
    let mut out = Vec::new();
    let mut span = None;
    out.push(b'{');
    for (index, (key, item)) in top.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_key(&mut out, key);
        let Value::Object(meta) = item else {
            write(&mut out, item);
            continue;
        };
        if key != "metadata" {
            write(&mut out, item);
            continue;
        }
        let managed = std::iter::once((MANAGED_FIELDS, fields));
        let entries = meta.iter().map(|(k, v)| (k.as_str(), v));
        let entries = entries
            .clone()
            .take(position)
            .chain(managed)
            .chain(entries.skip(position));
        out.push(b'{');
        for (index, (key, item)) in entries.enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_key(&mut out, key);
            let start = out.len();
            write(&mut out, item);
            if key == MANAGED_FIELDS {
                span = Some(start..out.len());
            }
        }
        out.push(b'}');
    }
    out.push(b'}');
    (out, span)
}

fn write_key(out: &mut Vec<u8>, key: &str) {
    write(out, key);
    out.push(b':');
}

/// Serialising JSON values and strings into memory cannot fail.
fn write(out: &mut Vec<u8>, item: &(impl Serialize + ?Sized)) {
    let _ = serde_json::to_writer(out, item);
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

/// `text` in an allocation of its own length. Shrinking in place is not enough: an allocator may keep a block that
/// shrinks by at most half as it is (mimalloc does), so the slack would stay with the stored object.
fn exact_string(text: String) -> String {
    if text.len() == text.capacity() {
        text
    } else {
        text.as_str().to_owned()
    }
}

/// `json` in an allocation of its own length. The vector it was written into grew by doubling, so it may be up to
/// twice as large as the JSON, and shrinking it in place frees nothing under an allocator that keeps a block that
/// shrinks by at most half (mimalloc): the copy is what makes every stored object, Events above all, cost its JSON
/// and no more.
fn exact_bytes(json: Vec<u8>) -> Bytes {
    if json.len() == json.capacity() {
        Bytes::from(json)
    } else {
        Bytes::copy_from_slice(&json)
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
        assert_eq!(*stored.value(), expected);
        assert_eq!(stored.to_value(), expected);
        let tree = stored.value();
        let keys: Vec<&String> = tree["status"].as_object().expect("a map").keys().collect();
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

    fn managed(manager: &str) -> Value {
        json!([{"manager": manager, "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:a\\\"b": {}}}, "f:data": {"f:k": {}}}}])
    }

    #[test]
    fn managed_fields_stay_out_of_the_tree_and_in_the_bytes_where_they_were() {
        for position in 0..4 {
            let mut meta = Map::new();
            for (index, (key, item)) in [
                ("name", json!("cm")),
                ("namespace", json!("ns")),
                ("labels", json!({"a\"b": "1"})),
            ]
            .into_iter()
            .enumerate()
            {
                if index == position {
                    meta.insert("managedFields".into(), managed("m"));
                }
                meta.insert(key.into(), item);
            }
            if position == 3 {
                meta.insert("managedFields".into(), managed("m"));
            }
            let value = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                               "data": {"k": "v", "managedFields": "not metadata"}});
            let stored = StoredObject::new(value.clone(), 3);
            let mut expected = value;
            expected["metadata"]["resourceVersion"] = json!("3");
            assert_eq!(
                stored.json,
                serde_json::to_vec(&expected).expect("serialisable"),
                "managedFields at {position}"
            );
            let whole = stored.to_value();
            assert_eq!(
                serde_json::to_vec(&whole).expect("serialisable"),
                stored.json,
                "key order kept with managedFields at {position}"
            );
            assert_eq!(stored.managed_fields(), Some(managed("m")));
            assert_eq!(stored.value()["metadata"].get("managedFields"), None);
            assert_eq!(
                stored.value()["data"]["managedFields"],
                json!("not metadata")
            );
            let rewritten = StoredObject::new(whole, 4);
            assert_eq!(rewritten.managed_fields(), Some(managed("m")));
        }
    }

    #[test]
    fn an_object_held_serialised_reads_as_the_parsed_one() {
        let value = json!({"apiVersion": "v1", "kind": "Event",
                           "metadata": {"name": "e", "namespace": "ns", "managedFields": managed("kubelet"),
                                        "labels": {"a": "1"}},
                           "involvedObject": {"kind": "Pod", "name": "p"}, "count": 2});
        let parsed = Arc::new(StoredObject::new(value.clone(), 9));
        let serialised = StoredObject::serialised(value, 9);
        let shared = parsed.serialised_only();
        for held in [&serialised, &*shared] {
            assert!(held.is_serialised());
            assert_eq!(held.json, parsed.json);
            assert_eq!(held.value(), parsed.value());
            assert_eq!(held.value()["metadata"].get("managedFields"), None);
            assert_eq!(held.to_value(), parsed.to_value());
            assert_eq!(held.managed_fields(), Some(managed("kubelet")));
            assert_eq!((held.namespace(), held.name(), held.rv), ("ns", "e", 9));
        }
        assert!(!parsed.is_serialised());
        assert_eq!(
            shared.json.as_ptr(),
            parsed.json.as_ptr(),
            "the serialised copy shares the bytes"
        );
        assert!(Arc::ptr_eq(&shared.serialised_only(), &shared));
    }

    #[test]
    fn objects_without_managed_fields_have_none() {
        let stored = StoredObject::new(json!({"metadata": {"name": "n"}}), 1);
        assert_eq!(stored.managed_fields(), None);
        assert_eq!(
            stored.to_value(),
            json!({"metadata": {"name": "n", "resourceVersion": "1"}})
        );
        let scalar = StoredObject::new(json!("text"), 2);
        assert_eq!(scalar.json, "\"text\"".as_bytes());
    }
}
