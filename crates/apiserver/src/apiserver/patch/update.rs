//! Field ownership for writes other than apply: create, update and the other patch types.

use serde_json::{Map, Value};

use super::ListTypes;
use super::managed_fields::{
    ManagedFields, ManagerEntry, ManagerId, Operation, api_version, asks_reset,
    without_server_fields,
};
use super::value_fields::compare;

/// Records in `new`'s `metadata.managedFields` that `manager` now owns the fields that differ
/// between `old` (`None` on create) and `new`, as kube-apiserver does for every non-apply write.
///
/// Those fields are taken from every other manager, and removed fields are dropped from everyone.
/// The entries are read from `new` when the client sent any (so managedFields can be edited),
/// otherwise from `old`; writes through a subresource always keep `old`'s. An object stored
/// without managedFields stays untracked until it is applied, and a write carrying an empty
/// managedFields list resets the tracking.
pub(crate) fn track_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
    types: &dyn ListTypes,
) {
    if !new.is_object() {
        return;
    }
    let Some(mut managed) = tracked_managers(old, new, subresource) else {
        ManagedFields::default().write_into(new);
        return;
    };
    let nothing = Value::Object(Map::new());
    let comparison = compare(old.unwrap_or(&nothing), new, types);
    let changed = without_server_fields(&comparison.modified.union(&comparison.added));
    for entry in managed.entries_mut() {
        entry.fields = entry
            .fields
            .difference(&changed)
            .difference(&comparison.removed);
    }
    if !changed.is_empty() {
        managed.upsert(ManagerEntry {
            id: ManagerId {
                manager: manager.to_owned(),
                operation: Operation::Update,
                api_version: api_version(new),
                subresource: subresource.map(str::to_owned),
            },
            time: Some(now.to_owned()),
            fields: changed,
        });
    }
    managed.write_into(new);
}

/// The entries the write starts from, `None` when the object is not tracked.
fn tracked_managers(
    old: Option<&Value>,
    new: &Value,
    subresource: Option<&str>,
) -> Option<ManagedFields> {
    let stored = || {
        old.and_then(|old| ManagedFields::of_object(old).ok())
            .unwrap_or_default()
    };
    let managed = if subresource.is_some() {
        stored()
    } else if asks_reset(new) {
        ManagedFields::default()
    } else {
        match ManagedFields::of_object(new) {
            Ok(sent) if !sent.is_empty() => sent,
            _ => stored(),
        }
    };
    if managed.is_empty() && old.is_some() {
        return None;
    }
    Some(managed)
}

#[cfg(test)]
mod tests {
    use super::super::builtin_list_types;
    use super::super::test_support::arbitrary_object_with_directives;
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const T0: &str = "2024-05-01T10:00:00Z";
    const T1: &str = "2024-05-01T11:00:00Z";

    fn types() -> &'static dyn ListTypes {
        builtin_list_types("", "Pod")
    }

    fn pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "1",
                         "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}
        })
    }

    fn created() -> Value {
        let mut pod = pod();
        track_update(None, &mut pod, "kubectl-create", None, T0, types());
        pod
    }

    #[test]
    fn create_owns_every_field_the_client_set() {
        let pod = created();
        assert_eq!(
            pod["metadata"]["managedFields"],
            json!([{
                "manager": "kubectl-create",
                "operation": "Update",
                "apiVersion": "v1",
                "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {".": {}, "f:containers": {
                        ".": {},
                        "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}
                    }}
                }
            }])
        );
    }

    #[test]
    fn update_moves_changed_fields_and_drops_removed_ones() {
        let old = created();
        let mut new = old.clone();
        new["metadata"]["resourceVersion"] = json!("2");
        new["metadata"]["labels"] = json!({"tier": "fe"});
        new["spec"]["containers"][0]["image"] = json!("nginx:2");
        track_update(Some(&old), &mut new, "kubectl-edit", None, T1, types());
        assert_eq!(
            new["metadata"]["managedFields"],
            json!([
                {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T0,
                 "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:labels": {}},
                    "f:spec": {".": {}, "f:containers": {".": {}, "k:{\"name\":\"app\"}": {".": {}, "f:name": {}}}}
                 }},
                {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "time": T1,
                 "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:labels": {"f:tier": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {"f:image": {}}}}
                 }}
            ])
        );
    }

    #[test]
    fn writes_that_change_nothing_keep_the_entries() {
        let old = created();
        let mut new = old.clone();
        new["metadata"]["resourceVersion"] = json!("2");
        track_update(Some(&old), &mut new, "kubectl-edit", None, T1, types());
        assert_eq!(
            new["metadata"]["managedFields"],
            old["metadata"]["managedFields"]
        );
    }

    #[test]
    fn keeps_stored_entries_when_the_client_sends_none() {
        let old = created();
        let mut new = old.clone();
        new["metadata"]
            .as_object_mut()
            .unwrap()
            .shift_remove("managedFields");
        new["spec"]["containers"][0]["image"] = json!("nginx:2");
        track_update(Some(&old), &mut new, "kubectl-edit", None, T1, types());
        let managers: Vec<&str> = new["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|entry| entry["manager"].as_str())
            .collect();
        assert_eq!(managers, vec!["kubectl-create", "kubectl-edit"]);
    }

    #[test]
    fn untracked_objects_stay_untracked_and_resets_clear_tracking() {
        let old = pod();
        let mut new = pod();
        new["spec"]["containers"][0]["image"] = json!("nginx:2");
        track_update(Some(&old), &mut new, "kubectl-edit", None, T1, types());
        assert_eq!(new["metadata"].get("managedFields"), None);

        let old = created();
        let mut reset = old.clone();
        reset["metadata"]["managedFields"] = json!([]);
        reset["spec"]["containers"][0]["image"] = json!("nginx:2");
        track_update(Some(&old), &mut reset, "kubectl-edit", None, T1, types());
        assert_eq!(reset["metadata"].get("managedFields"), None);
    }

    #[test]
    fn subresource_writes_keep_the_stored_entries() {
        let old = created();
        let mut new = old.clone();
        new["metadata"]["managedFields"] = json!([]);
        new["status"] =
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]});
        track_update(Some(&old), &mut new, "kubelet", Some("status"), T1, types());
        let entries = new["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0], old["metadata"]["managedFields"][0]);
        assert_eq!(entries[1]["manager"], json!("kubelet"));
        assert_eq!(entries[1]["subresource"], json!("status"));
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:status": {".": {}, "f:conditions": {".": {}, "k:{\"type\":\"Ready\"}": {
                ".": {}, "f:status": {}, "f:type": {}
            }}, "f:phase": {}}})
        );
    }

    proptest! {
        #[test]
        fn never_panics_and_never_keeps_empty_entries(
            old in arbitrary_object_with_directives(),
            new in arbitrary_object_with_directives(),
            subresource in prop::option::of(Just("status")),
        ) {
            let mut tracked = new.clone();
            track_update(Some(&old), &mut tracked, "m", subresource, T0, types());
            let mut created = new;
            track_update(None, &mut created, "m", subresource, T0, types());
            for object in [&tracked, &created] {
                if let Some(entries) = object.pointer("/metadata/managedFields").and_then(Value::as_array) {
                    let empty = json!({});
                    let no_empty_entry = entries.iter().all(|entry| entry["fieldsV1"] != empty);
                    prop_assert!(no_empty_entry, "empty entry in {}", object);
                }
            }
        }
    }
}
