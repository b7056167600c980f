//! Metadata rules every write follows, as kube-apiserver applies them: names, generateName, uid, timestamps,
//! generation, and which parts of an object a request may change.

use rand::Rng;
use serde_json::{Map, Value, json};

use super::errors::Cause;
use super::registry::ResourceType;
use kmm_api::validation::names;

/// Current time in the RFC 3339 second-precision form Kubernetes uses for `metav1.Time`.
pub(crate) fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

/// `metadata` of an object as a map, created if missing or not an object. Writes refuse bodies that are not
/// objects before they get here; should one still arrive, it becomes an empty object rather than a panic.
pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let metadata = object_mut(obj)
        .entry("metadata")
        .or_insert_with(|| json!({}));
    object_mut(metadata)
}

/// `value` as a map, replacing it with an empty one when it is anything else.
fn object_mut(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(fields) => fields,
        _ => unreachable!("the value was just made an object"),
    }
}

/// A string field of `metadata`.
pub(crate) fn meta_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(key)?.as_str()
}

/// Append the random suffix kube-apiserver uses for `generateName` (5 characters without vowels or look-alikes).
pub(crate) fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    let keep = prefix.len().min(63 - 5);
    format!("{}{suffix}", &prefix[..keep])
}

/// DNS-1123 subdomain check (most object names): why the name is invalid, or None.
pub(crate) fn check_subdomain(name: &str) -> Option<String> {
    first_problem(names::dns1123_subdomain_errors(name))
}

/// DNS-1123 label check (namespace names): why the name is invalid, or None.
pub(crate) fn check_label(name: &str) -> Option<String> {
    first_problem(names::dns1123_label_errors(name))
}

/// The first of apimachinery's messages: a name that is too long is reported for its length alone,
/// so the cause stays one line a person can act on.
fn first_problem(mut problems: Vec<String>) -> Option<String> {
    (!problems.is_empty()).then(|| problems.swap_remove(0))
}

/// Path-segment check (RBAC object names, which may hold `:` as in `system:discovery`): why the name is invalid,
/// or None.
pub(crate) fn check_path_segment(name: &str) -> Option<String> {
    match name {
        "" => Some("name or generateName is required".into()),
        "." | ".." => Some(format!("may not be '{name}'")),
        _ if name.contains('/') => Some("may not contain '/'".into()),
        _ if name.contains('%') => Some("may not contain '%'".into()),
        _ => None,
    }
}

/// Validate the name of a new object of `rt`; a cause for a 422 when it is invalid.
pub(crate) fn check_name(rt: &ResourceType, name: &str) -> Option<Cause> {
    let problem = if rt.group.is_empty() && rt.plural == "namespaces" {
        check_label(name)
    } else if rt.group.is_empty() && rt.plural == "services" {
        first_problem(names::dns1035_label_errors(name))
    } else if rt.group == "rbac.authorization.k8s.io" {
        check_path_segment(name)
    } else {
        check_subdomain(name)
    };
    problem.map(|p| Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {name:?}: {p}"),
        field: "metadata.name".into(),
    })
}

/// Fields of metadata the server owns: a client can never set or change them.
const SERVER_OWNED: &[&str] = &[
    "uid",
    "creationTimestamp",
    "generation",
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
];

/// Fill in server-owned metadata for a new object.
pub(crate) fn init_metadata(rt: &ResourceType, obj: &mut Value) {
    let meta = meta_mut(obj);
    for key in SERVER_OWNED {
        meta.remove(*key);
    }
    meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
    if rt.tracks_generation {
        meta.insert("generation".into(), json!(1));
    }
    if !rt.namespaced {
        meta.remove("namespace");
    }
    drop_empty(
        meta,
        &["labels", "annotations", "finalizers", "ownerReferences"],
    );
}

/// Carry server-owned metadata from the stored object into an update, so a client cannot change it, and bump
/// `generation` when anything other than metadata and status changed.
pub(crate) fn carry_metadata(rt: &ResourceType, old: &Value, new: &mut Value) {
    let no_metadata = Map::new();
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&no_metadata);
    let meta = meta_mut(new);
    for key in SERVER_OWNED {
        match old_meta.get(*key) {
            Some(v) => meta.insert(key.to_string(), v.clone()),
            None => meta.remove(*key),
        };
    }
    meta.insert(
        "name".into(),
        old_meta.get("name").cloned().unwrap_or(Value::Null),
    );
    match old_meta.get("namespace") {
        Some(ns) => meta.insert("namespace".into(), ns.clone()),
        None => meta.remove("namespace"),
    };
    drop_empty(
        meta,
        &["labels", "annotations", "finalizers", "ownerReferences"],
    );
    if rt.tracks_generation && spec_changed(old, new) {
        let generation = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        meta_mut(new).insert("generation".into(), json!(generation));
    }
}

/// Whether anything other than `metadata` and `status` differs.
fn spec_changed(old: &Value, new: &Value) -> bool {
    fn spec(v: &Value) -> Vec<(&String, &Value)> {
        v.as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"))
            .collect()
    }
    let (old_spec, new_spec) = (spec(old), spec(new));
    old_spec.len() != new_spec.len()
        || old_spec
            .iter()
            .any(|(key, value)| new.get(key.as_str()) != Some(*value))
}

/// Keep `status` as it was (main endpoint of a resource with a status subresource).
pub(crate) fn keep_status(old: &Value, new: &mut Value) {
    let Some(obj) = new.as_object_mut() else {
        return;
    };
    match old.get("status") {
        Some(status) if obj.get("status") == Some(status) => None,
        Some(status) => obj.insert("status".into(), status.clone()),
        None => obj.remove("status"),
    };
}

/// Build the object a `/status` write produces: the stored object with only its status (and nothing else) taken
/// from the request. The request's other fields are reused where they equal the stored ones (a patch of the
/// status leaves them so), which spares copying the stored object.
pub(crate) fn with_status_from(old: &Value, request: Value) -> Value {
    let Value::Object(old_fields) = old else {
        return old.clone();
    };
    let mut request = match request {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    let Some(mut status) = request.remove("status") else {
        let mut out = old.clone();
        if let Some(obj) = out.as_object_mut() {
            obj.remove("status");
        }
        return out;
    };
    let mut out = Map::with_capacity(old_fields.len() + 1);
    for (key, stored) in old_fields {
        let value = if key == "status" {
            std::mem::take(&mut status)
        } else {
            match request.remove(key) {
                Some(sent) if sent == *stored => sent,
                _ => stored.clone(),
            }
        };
        out.insert(key.clone(), value);
    }
    if !old_fields.contains_key("status") {
        out.insert("status".into(), status);
    }
    Value::Object(out)
}

/// Remove keys whose value is null or an empty map/list: the server never stores them, so clients that send
/// `labels: {}` and clients that omit labels see the same object.
fn drop_empty(meta: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        let empty = match meta.get(*key) {
            Some(Value::Null) => true,
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            _ => false,
        };
        if empty {
            meta.remove(*key);
        }
    }
}

/// The finalizers of an object.
pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether deletion has been requested (the object waits for finalizers).
pub(crate) fn is_terminating(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// The labels of an object. Read by key rather than by JSON pointer, which allocates a string per step: a label
/// selector reads them of every object a list or watch tests.
pub(crate) fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata")?.get("labels")?.as_object()
}

/// The field manager of a request: `?fieldManager=` or, as kube-apiserver does, the user agent up to its first `/`.
pub(crate) fn field_manager(param: Option<&str>, user_agent: Option<&str>) -> String {
    param
        .map(str::to_string)
        .or_else(|| {
            user_agent.map(|ua| {
                ua.split('/')
                    .next()
                    .unwrap_or(ua)
                    .chars()
                    .take(128)
                    .collect()
            })
        })
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a `/status` write made of the stored object before it reused the request's unchanged fields.
    fn status_from_by_copy(old: &Value, request: &Value) -> Value {
        let mut out = old.clone();
        if let Some(obj) = out.as_object_mut() {
            match request.get("status") {
                Some(status) => obj.insert("status".into(), status.clone()),
                None => obj.remove("status"),
            };
        }
        out
    }

    #[test]
    fn a_status_write_changes_only_the_status() {
        let old = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"nodeName": "n"}, "status": {"phase": "Pending"}, "extra": 1});
        let requests = [
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"nodeName": "n"}, "status": {"phase": "Running"}, "extra": 1}),
            json!({"metadata": {"name": "other"}, "spec": {"nodeName": "m"}, "status": {"phase": "Failed"}}),
            json!({"spec": {"nodeName": "m"}}),
            json!({"status": {"phase": "Running"}, "new": true}),
            json!("not an object"),
        ];
        for request in requests {
            let expected = status_from_by_copy(&old, &request);
            let got = with_status_from(&old, request.clone());
            assert_eq!(got, expected, "{request}");
            assert_eq!(
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&expected).unwrap(),
                "same field order for {request}"
            );
        }
        let without_status = json!({"metadata": {"name": "p"}, "spec": {}});
        let request =
            json!({"metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Running"}});
        assert_eq!(
            serde_json::to_string(&with_status_from(&without_status, request.clone())).unwrap(),
            serde_json::to_string(&status_from_by_copy(&without_status, &request)).unwrap()
        );
    }

    #[test]
    fn names_follow_dns_rules() {
        assert!(check_subdomain("worker-1.example").is_none());
        assert!(check_subdomain("Worker").is_some());
        assert!(check_subdomain("-a").is_some());
        assert!(check_subdomain("").is_some());
        assert!(check_label("a.b").is_some());
        assert!(check_label("kube-system").is_none());
        assert!(check_label(&"a".repeat(64)).is_some());
        assert!(check_path_segment("system:discovery").is_none());
        assert!(check_path_segment("a/b").is_some());
        assert!(check_path_segment("..").is_some());
    }

    #[test]
    fn generated_names_keep_prefix_and_fit() {
        let n = generate_name("pull-");
        assert!(n.starts_with("pull-") && n.len() == 10, "{n}");
        assert!(generate_name(&"x".repeat(100)).len() <= 63);
    }

    #[test]
    fn field_manager_defaults_to_user_agent_program() {
        assert_eq!(
            field_manager(None, Some("kubectl/v1.32.4 (linux/amd64)")),
            "kubectl"
        );
        assert_eq!(field_manager(Some("engine"), Some("kubectl/v1")), "engine");
        assert_eq!(field_manager(None, None), "unknown");
    }
}
