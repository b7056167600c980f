//! Reading and writing `metadata.managedFields`: one entry per manager, each owning a field set.

use serde_json::{Map, Value};

use super::field_set::{FieldSet, PathElement};

/// The kind of write through which a manager came to own its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who a managedFields entry belongs to. kube-apiserver tells entries apart by manager name,
/// operation and subresource, and for `Update` also by API version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ManagerId {
    pub(super) manager: String,
    pub(super) operation: Operation,
    pub(super) api_version: String,
    pub(super) subresource: Option<String>,
}

impl ManagerId {
    /// Whether both name the same managedFields entry.
    pub(super) fn same_manager(&self, other: &ManagerId) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }
}

/// One managedFields entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ManagerEntry {
    pub(super) id: ManagerId,
    pub(super) time: Option<String>,
    pub(super) fields: FieldSet,
}

impl ManagerEntry {
    /// How kube-apiserver names the manager in conflict messages.
    pub(super) fn label(&self) -> String {
        let mut label = quoted(&self.id.manager);
        if let Some(subresource) = &self.id.subresource {
            label.push_str(&format!(" with subresource {}", quoted(subresource)));
        }
        if self.id.operation == Operation::Update {
            label.push_str(&format!(" using {}", self.id.api_version));
            if let Some(time) = &self.time {
                label.push_str(&format!(" at {time}"));
            }
        }
        label
    }
}

fn quoted(text: &str) -> String {
    Value::from(text).to_string()
}

/// The entries of an object, in order; entries of the same manager are merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ManagedFields {
    entries: Vec<ManagerEntry>,
}

impl ManagedFields {
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn entries(&self) -> impl Iterator<Item = &ManagerEntry> {
        self.entries.iter()
    }

    pub(super) fn entries_mut(&mut self) -> impl Iterator<Item = &mut ManagerEntry> {
        self.entries.iter_mut()
    }

    pub(super) fn get(&self, id: &ManagerId) -> Option<&ManagerEntry> {
        self.entries.iter().find(|entry| entry.id.same_manager(id))
    }

    /// Adds the entry, or merges its fields into the entry of the same manager (taking its time).
    pub(super) fn upsert(&mut self, entry: ManagerEntry) {
        match self
            .entries
            .iter_mut()
            .find(|e| e.id.same_manager(&entry.id))
        {
            Some(existing) => {
                existing.fields = existing.fields.union(&entry.fields);
                existing.time = entry.time.or(existing.time.take());
            }
            None => self.entries.push(entry),
        }
    }

    /// Replaces the fields and time of the entry of `entry`'s manager, adding it if missing.
    pub(super) fn replace(&mut self, entry: ManagerEntry) {
        self.entries
            .retain(|existing| !existing.id.same_manager(&entry.id));
        self.entries.push(entry);
    }

    /// Reads the `metadata.managedFields` of an object; absent or `null` is no entries.
    pub(super) fn of_object(object: &Value) -> Result<ManagedFields, String> {
        match object.pointer("/metadata/managedFields") {
            None | Some(Value::Null) => Ok(ManagedFields::default()),
            Some(list) => ManagedFields::decode(list),
        }
    }

    fn decode(list: &Value) -> Result<ManagedFields, String> {
        let Value::Array(items) = list else {
            return Err("metadata.managedFields must be a list".to_owned());
        };
        let mut managed = ManagedFields::default();
        for (index, item) in items.iter().enumerate() {
            let entry = decode_entry(item)
                .map_err(|reason| format!("metadata.managedFields[{index}]: {reason}"))?;
            managed.upsert(entry);
        }
        Ok(managed)
    }

    /// Writes the entries into `metadata.managedFields`, dropping empty ones and sorting them as
    /// kube-apiserver does (`Apply` first, then by time, manager, API version and subresource).
    /// Without entries the field is removed.
    pub(super) fn write_into(mut self, object: &mut Value) {
        self.entries.retain(|entry| !entry.fields.is_empty());
        self.entries.sort_by(|a, b| {
            (
                a.id.operation,
                &a.time,
                &a.id.manager,
                &a.id.api_version,
                &a.id.subresource,
            )
                .cmp(&(
                    b.id.operation,
                    &b.time,
                    &b.id.manager,
                    &b.id.api_version,
                    &b.id.subresource,
                ))
        });
        let Some(fields) = object.as_object_mut() else {
            return;
        };
        if self.entries.is_empty() {
            if let Some(Value::Object(metadata)) = fields.get_mut("metadata") {
                metadata.shift_remove("managedFields");
            }
            return;
        }
        let encoded = Value::Array(self.entries.iter().map(encode_entry).collect());
        let metadata = fields
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !metadata.is_object() {
            *metadata = Value::Object(Map::new());
        }
        if let Value::Object(metadata) = metadata {
            metadata.insert("managedFields".to_owned(), encoded);
        }
    }
}

fn decode_entry(item: &Value) -> Result<ManagerEntry, String> {
    let Value::Object(fields) = item else {
        return Err("an entry must be an object".to_owned());
    };
    let text = |name: &str| -> Result<Option<String>, String> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(format!("{name} must be a string, got {other}")),
        }
    };
    let operation = match text("operation")?.as_deref() {
        Some("Apply") => Operation::Apply,
        Some("Update") => Operation::Update,
        other => {
            return Err(format!(
                "operation must be \"Apply\" or \"Update\", got {other:?}"
            ));
        }
    };
    if let Some(fields_type) = text("fieldsType")?
        && fields_type != "FieldsV1"
    {
        return Err(format!(
            "fieldsType must be \"FieldsV1\", got {fields_type:?}"
        ));
    }
    let set = match fields.get("fieldsV1") {
        None | Some(Value::Null) => FieldSet::default(),
        Some(fields_v1) => FieldSet::from_fields_v1(fields_v1)?,
    };
    Ok(ManagerEntry {
        id: ManagerId {
            manager: text("manager")?.unwrap_or_default(),
            operation,
            api_version: text("apiVersion")?.unwrap_or_default(),
            subresource: text("subresource")?.filter(|subresource| !subresource.is_empty()),
        },
        time: text("time")?,
        fields: set,
    })
}

fn encode_entry(entry: &ManagerEntry) -> Value {
    let mut fields = Map::new();
    fields.insert("manager".to_owned(), Value::from(entry.id.manager.as_str()));
    fields.insert(
        "operation".to_owned(),
        Value::from(entry.id.operation.as_str()),
    );
    fields.insert(
        "apiVersion".to_owned(),
        Value::from(entry.id.api_version.as_str()),
    );
    if let Some(time) = &entry.time {
        fields.insert("time".to_owned(), Value::from(time.as_str()));
    }
    fields.insert("fieldsType".to_owned(), Value::from("FieldsV1"));
    fields.insert("fieldsV1".to_owned(), entry.fields.to_fields_v1());
    if let Some(subresource) = &entry.id.subresource {
        fields.insert("subresource".to_owned(), Value::from(subresource.as_str()));
    }
    Value::Object(fields)
}

/// Whether a write asks to reset tracking: an empty list, or one entry with nothing in it.
pub(super) fn asks_reset(object: &Value) -> bool {
    match object.pointer("/metadata/managedFields") {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [Value::Object(only)] => only.is_empty(),
            _ => false,
        },
        _ => false,
    }
}

/// A copy of the object without `metadata.managedFields`, as fields are compared and merged.
pub(super) fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(Value::Object(metadata)) = copy.get_mut("metadata") {
        metadata.shift_remove("managedFields");
    }
    copy
}

/// Fields the server sets, which nobody owns.
const SERVER_FIELDS: &[&[&str]] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "clusterName"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
];

/// The set without the fields nobody owns.
pub(super) fn without_server_fields(set: &FieldSet) -> FieldSet {
    let mut server_fields = FieldSet::default();
    for names in SERVER_FIELDS {
        let path: Vec<PathElement> = names
            .iter()
            .map(|name| PathElement::Field((*name).to_owned()))
            .collect();
        server_fields.insert(&path);
    }
    set.difference(&server_fields)
}

/// The `apiVersion` of an object, under which its managers' fields are recorded.
pub(super) fn api_version(object: &Value) -> String {
    object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn decodes_merges_sorts_and_encodes_entries() {
        let object = json!({"metadata": {"name": "x", "managedFields": [
            {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2024-01-02T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}, "subresource": "status"},
            {"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:a": {}}}},
            {"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2024-01-03T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:b": {}}}},
            {"manager": "ci", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-05T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:c": {}}}},
            {"manager": "gone", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}
        ]}});
        let managed = ManagedFields::of_object(&object).unwrap();
        let mut written = json!({"metadata": {"name": "x"}});
        managed.write_into(&mut written);
        assert_eq!(
            written,
            json!({"metadata": {"name": "x", "managedFields": [
                {"manager": "ci", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-05T00:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:c": {}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2024-01-02T00:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}, "subresource": "status"},
                {"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2024-01-03T00:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:a": {}, "f:b": {}}}}
            ]}})
        );
    }

    #[test]
    fn refuses_malformed_entries() {
        let cases = [
            (json!("nope"), "metadata.managedFields must be a list"),
            (
                json!([1]),
                "metadata.managedFields[0]: an entry must be an object",
            ),
            (
                json!([{"operation": "Patch"}]),
                "metadata.managedFields[0]: operation must be",
            ),
            (
                json!([{"operation": "Apply", "fieldsType": "FieldsV2"}]),
                "metadata.managedFields[0]: fieldsType must be",
            ),
            (
                json!([{"operation": "Apply", "fieldsV1": {"q:x": {}}}]),
                "metadata.managedFields[0]: path element",
            ),
        ];
        for (list, expected) in cases {
            let object = json!({"metadata": {"managedFields": list}});
            let error = ManagedFields::of_object(&object).unwrap_err();
            assert!(error.starts_with(expected), "{error}");
        }
    }

    #[test]
    fn labels_managers_like_kube_apiserver() {
        let entry = |operation, subresource: Option<&str>, time: Option<&str>| ManagerEntry {
            id: ManagerId {
                manager: "kubectl".to_owned(),
                operation,
                api_version: "apps/v1".to_owned(),
                subresource: subresource.map(str::to_owned),
            },
            time: time.map(str::to_owned),
            fields: FieldSet::default(),
        };
        assert_eq!(
            entry(Operation::Apply, None, Some("t")).label(),
            "\"kubectl\""
        );
        assert_eq!(
            entry(Operation::Update, None, None).label(),
            "\"kubectl\" using apps/v1"
        );
        assert_eq!(
            entry(
                Operation::Update,
                Some("status"),
                Some("2024-01-01T00:00:00Z")
            )
            .label(),
            "\"kubectl\" with subresource \"status\" using apps/v1 at 2024-01-01T00:00:00Z"
        );
    }

    #[test]
    fn recognizes_reset_requests() {
        assert!(asks_reset(&json!({"metadata": {"managedFields": []}})));
        assert!(asks_reset(&json!({"metadata": {"managedFields": [{}]}})));
        assert!(!asks_reset(&json!({"metadata": {}})));
        assert!(!asks_reset(
            &json!({"metadata": {"managedFields": [{}, {}]}})
        ));
    }

    /// `fieldsV1`-like trees whose keys are valid and invalid path elements.
    fn arbitrary_fields_v1() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            Just(".".to_owned()),
            "f:[a-c]".prop_map(String::from),
            Just("k:{\"name\":\"a\"}".to_owned()),
            Just("k:{\"port\":80.0}".to_owned()),
            Just("v:\"x\"".to_owned()),
            Just("i:0".to_owned()),
            Just("k:[]".to_owned()),
            "[a-z:]{0,3}".prop_map(String::from),
        ];
        let leaf = prop_oneof![Just(json!({})), Just(json!(1)), Just(Value::Null)];
        leaf.prop_recursive(4, 24, 4, move |inner| {
            prop::collection::vec((key.clone(), inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect()))
        })
    }

    proptest! {
        #[test]
        fn decoding_never_panics_and_round_trips(
            fields_v1 in arbitrary_fields_v1(),
            operation in prop_oneof![Just("Apply"), Just("Update"), Just("Other")],
        ) {
            let object = json!({"metadata": {"managedFields": [
                {"manager": "m", "operation": operation, "apiVersion": "v1", "fieldsV1": fields_v1}
            ]}});
            if let Ok(managed) = ManagedFields::of_object(&object) {
                let mut written = json!({"metadata": {}});
                managed.clone().write_into(&mut written);
                let mut expected = managed;
                expected.entries.retain(|entry| !entry.fields.is_empty());
                prop_assert_eq!(ManagedFields::of_object(&written), Ok(expected));
            }
        }
    }
}
