//! Decoding, pruning and defaulting of built-in kinds.
//!
//! kube-apiserver decodes built-in objects into Go structs, which drops unknown fields (an error under
//! `fieldValidation=Strict`) and rejects wrongly typed ones. We get the same behaviour by round-tripping through the
//! k8s-openapi types: whatever does not survive the round trip is an unknown field. The defaults applied afterwards
//! are the ones clients and controllers rely on seeing (pod restart policy, image pull policy, namespace phase, ...).

use base64::Engine;
use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use super::errors::ApiError;
use super::registry::ResourceType;

/// Decode `obj` as the built-in kind of `rt`, replace it with its normalised form, and return the paths of the
/// fields that were unknown (and therefore dropped).
///
/// `stored` is the object as it is stored (already in normalised form) when `obj` updates it: then only the
/// top-level fields that differ from it are decoded, which is most of a write's cost saved on a status or label
/// change of a large object.
pub fn decode(
    rt: &ResourceType,
    obj: &mut Value,
    stored: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    let Some(normalise) = normaliser(rt) else {
        return Ok(Vec::new());
    };
    if let Some(stored) = stored
        && decodes_by_field(rt)
        && let Some(unknown) = decode_changed_fields(rt, normalise, obj, stored)
    {
        return Ok(unknown);
    }
    let normalised = normalise(rt, obj)?;
    let mut unknown = Vec::new();
    unknown_fields(obj, &normalised, "", &mut unknown);
    *obj = normalised;
    Ok(unknown)
}

/// Decodes an object through its k8s-openapi type and encodes it again.
type Normaliser = fn(&ResourceType, &Value) -> Result<Value, ApiError>;

/// The round trip through the k8s-openapi type of `rt`'s kind, None for kinds without one.
fn normaliser(rt: &ResourceType) -> Option<Normaliser> {
    let normalise: Normaliser = match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => round_trip::<api::core::v1::Namespace>,
        ("", "nodes") => round_trip::<api::core::v1::Node>,
        ("", "pods") => round_trip::<api::core::v1::Pod>,
        ("", "events") => round_trip::<api::core::v1::Event>,
        ("", "configmaps") => round_trip::<api::core::v1::ConfigMap>,
        ("", "secrets") => round_trip::<api::core::v1::Secret>,
        ("", "serviceaccounts") => round_trip::<api::core::v1::ServiceAccount>,
        ("apps", "deployments") => round_trip::<api::apps::v1::Deployment>,
        ("apps", "replicasets") => round_trip::<api::apps::v1::ReplicaSet>,
        ("apps", "daemonsets") => round_trip::<api::apps::v1::DaemonSet>,
        ("rbac.authorization.k8s.io", "clusterroles") => round_trip::<api::rbac::v1::ClusterRole>,
        ("rbac.authorization.k8s.io", "clusterrolebindings") => {
            round_trip::<api::rbac::v1::ClusterRoleBinding>
        }
        ("rbac.authorization.k8s.io", "roles") => round_trip::<api::rbac::v1::Role>,
        ("rbac.authorization.k8s.io", "rolebindings") => round_trip::<api::rbac::v1::RoleBinding>,
        ("batch", "jobs") => round_trip::<api::batch::v1::Job>,
        ("node.k8s.io", "runtimeclasses") => round_trip::<api::node::v1::RuntimeClass>,
        ("coordination.k8s.io", "leases") => round_trip::<api::coordination::v1::Lease>,
        ("events.k8s.io", "events") => round_trip::<api::events::v1::Event>,
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            round_trip::<CustomResourceDefinition>
        }
        ("authorization.k8s.io", "selfsubjectaccessreviews") => {
            round_trip::<api::authorization::v1::SelfSubjectAccessReview>
        }
        ("authorization.k8s.io", "subjectaccessreviews") => {
            round_trip::<api::authorization::v1::SubjectAccessReview>
        }
        ("authorization.k8s.io", "selfsubjectrulesreviews") => {
            round_trip::<api::authorization::v1::SelfSubjectRulesReview>
        }
        _ => return None,
    };
    Some(normalise)
}

/// Kinds whose defaults never add or remove a top-level field, so a stored object's top-level fields are exactly
/// in the order the round trip writes them: the kinds written on every node, many times over.
fn decodes_by_field(rt: &ResourceType) -> bool {
    matches!(
        (rt.group.as_str(), rt.plural.as_str()),
        ("", "pods" | "nodes" | "configmaps" | "events") | ("coordination.k8s.io", "leases")
    )
}

/// Decode only the top-level fields of `obj` that differ from `stored`, keeping the others as stored; the result
/// is the full round trip's. None (and `obj` untouched) when the two do not have the same top-level fields, or the
/// changed fields alone do not decode, for then only the full round trip gives the answer.
fn decode_changed_fields(
    rt: &ResourceType,
    normalise: Normaliser,
    obj: &mut Value,
    stored: &Value,
) -> Option<Vec<String>> {
    let (Value::Object(fields), Value::Object(stored_fields)) = (&*obj, stored) else {
        return None;
    };
    if fields.len() != stored_fields.len() {
        return None;
    }
    let mut changed = serde_json::Map::new();
    for (key, value) in fields {
        let unchanged = stored_fields.get(key)? == value;
        if !unchanged || matches!(key.as_str(), "apiVersion" | "kind") {
            changed.insert(key.clone(), value.clone());
        }
    }
    let changed = Value::Object(changed);
    let normalised = normalise(rt, &changed).ok()?;
    let mut unknown = Vec::new();
    unknown_fields(&changed, &normalised, "", &mut unknown);
    let (Value::Object(changed), Value::Object(mut normalised), Some(fields)) =
        (changed, normalised, obj.as_object_mut())
    else {
        return None;
    };
    let mut kept = std::mem::take(fields);
    for key in stored_fields.keys() {
        let value = if changed.contains_key(key) {
            normalised.remove(key)
        } else {
            kept.remove(key)
        };
        if let Some(value) = value {
            fields.insert(key.clone(), value);
        }
    }
    Some(unknown)
}

/// Decode `obj` as `T` (straight from the tree, without copying it first) and encode it again.
fn round_trip<T: DeserializeOwned + Serialize>(
    rt: &ResourceType,
    obj: &Value,
) -> Result<Value, ApiError> {
    let typed = T::deserialize(obj).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            rt.kind, rt.storage_version, rt.kind
        ))
    })?;
    serde_json::to_value(typed)
        .map_err(|e| ApiError::internal(format!("encoding {}: {e}", rt.kind)))
}

/// Collect paths present (and non-null) in `input` but absent from `decoded`.
fn unknown_fields(input: &Value, decoded: &Value, path: &str, out: &mut Vec<String>) {
    match (input, decoded) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match b.get(key) {
                    Some(d) => unknown_fields(value, d, &child, out),
                    None if !value.is_null() => out.push(child),
                    None => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                unknown_fields(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Apply the defaults kube-apiserver applies on create and update.
pub fn apply_defaults(rt: &ResourceType, obj: &mut Value) {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => {
            if let Some(spec) = obj.get_mut("spec") {
                default_pod_spec(spec);
            }
        }
        ("", "namespaces") => {
            let name = obj
                .pointer("/metadata/name")
                .cloned()
                .unwrap_or(Value::Null);
            set_default(
                obj,
                &["metadata", "labels", "kubernetes.io/metadata.name"],
                name,
            );
            set_default(obj, &["spec", "finalizers"], json!(["kubernetes"]));
            set_default(obj, &["status", "phase"], json!("Active"));
        }
        ("", "secrets") => {
            set_default(obj, &["type"], json!("Opaque"));
            merge_string_data(obj);
        }
        ("apps", "deployments") => {
            drop_if_empty(obj, "/spec/strategy");
            set_default(obj, &["spec", "replicas"], json!(1));
            set_default(obj, &["spec", "revisionHistoryLimit"], json!(10));
            set_default(obj, &["spec", "progressDeadlineSeconds"], json!(600));
            set_default(
                obj,
                &["spec", "strategy"],
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
            );
            default_template(obj);
        }
        ("apps", "replicasets") => {
            set_default(obj, &["spec", "replicas"], json!(1));
            default_template(obj);
        }
        ("apps", "daemonsets") => {
            drop_if_empty(obj, "/spec/updateStrategy");
            set_default(obj, &["spec", "revisionHistoryLimit"], json!(10));
            set_default(
                obj,
                &["spec", "updateStrategy"],
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}),
            );
            default_template(obj);
        }
        ("batch", "jobs") => {
            set_default(obj, &["spec", "backoffLimit"], json!(6));
            set_default(obj, &["spec", "completions"], json!(1));
            set_default(obj, &["spec", "parallelism"], json!(1));
            set_default(obj, &["spec", "completionMode"], json!("NonIndexed"));
            set_default(obj, &["spec", "suspend"], json!(false));
            default_template(obj);
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            set_default(obj, &["spec", "conversion"], json!({"strategy": "None"}));
        }
        _ => {}
    }
}

fn default_template(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}

fn default_pod_spec(spec: &mut Value) {
    set_default(spec, &["restartPolicy"], json!("Always"));
    set_default(spec, &["dnsPolicy"], json!("ClusterFirst"));
    set_default(spec, &["schedulerName"], json!("default-scheduler"));
    set_default(spec, &["terminationGracePeriodSeconds"], json!(30));
    set_default(spec, &["securityContext"], json!({}));
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                let policy = if image_tag_is_latest(image) {
                    "Always"
                } else {
                    "IfNotPresent"
                };
                set_default(c, &["imagePullPolicy"], json!(policy));
                set_default(
                    c,
                    &["terminationMessagePath"],
                    json!("/dev/termination-log"),
                );
                set_default(c, &["terminationMessagePolicy"], json!("File"));
            }
        }
    }
}

/// An image without a tag or digest, or tagged `latest`, is pulled `Always` by default.
fn image_tag_is_latest(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => true,
    }
}

/// Remove an empty object at `pointer`, which Go clients send for a struct they leave zero (kubectl's
/// `create deployment` sends `strategy: {}`), so that its default applies as kube-apiserver applies it.
fn drop_if_empty(obj: &mut Value, pointer: &str) {
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return;
    };
    if let Some(map) = obj.pointer_mut(parent).and_then(Value::as_object_mut)
        && map
            .get(key)
            .is_some_and(|v| v.as_object().is_some_and(|o| o.is_empty()))
    {
        map.remove(key);
    }
}

/// Set `path` to `value` unless something is there already.
fn set_default(obj: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for key in parents {
        if !cur.is_object() {
            return;
        }
        cur = cur
            .as_object_mut()
            .expect("checked object")
            .entry(key.to_string())
            .or_insert_with(|| json!({}));
    }
    if let Some(map) = cur.as_object_mut() {
        map.entry(last.to_string()).or_insert(value);
    }
}

/// Secrets: `stringData` is a write-only convenience folded into `data` (base64), as the real server does.
fn merge_string_data(obj: &mut Value) {
    let Some(string_data) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    let Value::Object(entries) = string_data else {
        return;
    };
    let data = obj
        .as_object_mut()
        .expect("secret is an object")
        .entry("data")
        .or_insert_with(|| json!({}));
    if let Some(data) = data.as_object_mut() {
        for (key, value) in entries {
            if let Some(text) = value.as_str() {
                data.insert(
                    key,
                    json!(base64::engine::general_purpose::STANDARD.encode(text)),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::apiserver::registry::Registry;

    #[test]
    fn unknown_fields_are_reported_and_dropped() {
        let registry = Registry::with_builtins();
        let rt = registry.get("", "configmaps").unwrap();
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "bogus": 1}, "data": {"k": "v"}, "extra": true});
        let unknown = decode(&rt, &mut cm, None).unwrap();
        assert_eq!(
            unknown,
            vec!["metadata.bogus".to_string(), "extra".to_string()]
        );
        assert!(cm.get("extra").is_none());
        assert_eq!(cm["data"]["k"], "v");
    }

    /// A pod as the server stores it: decoded and defaulted.
    fn stored_pod(rt: &ResourceType) -> Value {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "a", "namespace": "default", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1", "args": ["a"]}], "nodeName": "n1"},
            "status": {"phase": "Pending", "qosClass": "BestEffort"}});
        decode(rt, &mut pod, None).unwrap();
        apply_defaults(rt, &mut pod);
        pod
    }

    #[test]
    fn decoding_only_changed_fields_matches_the_full_round_trip() {
        let registry = Registry::with_builtins();
        let rt = registry.get("", "pods").unwrap();
        let stored = stored_pod(&rt);
        let changes: Vec<fn(&mut Value)> = vec![
            |p| {
                p["status"] =
                    json!({"phase": "Running", "startTime": "2026-01-01T00:00:00Z", "bogus": 1})
            },
            |p| p["metadata"]["labels"]["ready"] = json!("yes"),
            |p| p["metadata"]["labels"] = json!({"app": "x"}),
            |p| p["spec"]["containers"][0]["extra"] = json!(true),
            |p| p["status"] = Value::Null,
            |p| {
                p["status"]["conditions"] =
                    json!([{"type": "Ready", "status": "True", "lastProbeTime": null}])
            },
            |p| {
                p.as_object_mut().unwrap().shift_remove("status");
            },
            |p| p["unknownTopLevel"] = json!({"a": 1}),
        ];
        for change in changes {
            let mut by_field = stored.clone();
            change(&mut by_field);
            let mut full = by_field.clone();
            let unknown_by_field = decode(&rt, &mut by_field, Some(&stored)).unwrap();
            let unknown_full = decode(&rt, &mut full, None).unwrap();
            assert_eq!(by_field, full);
            assert_eq!(unknown_by_field, unknown_full);
            let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(
                keys(&by_field),
                keys(&full),
                "top-level fields in stored order"
            );
        }
    }

    #[test]
    fn a_changed_field_of_the_wrong_type_is_still_refused() {
        let registry = Registry::with_builtins();
        let rt = registry.get("", "pods").unwrap();
        let stored = stored_pod(&rt);
        let mut pod = stored.clone();
        pod["status"]["phase"] = json!(["not", "a", "string"]);
        let err = decode(&rt, &mut pod, Some(&stored)).unwrap_err();
        assert_eq!(err.code, 400);
        assert!(err.message.contains("cannot be handled as a Pod"));
    }

    #[test]
    fn wrong_types_are_bad_requests() {
        let registry = Registry::with_builtins();
        let rt = registry.get("", "pods").unwrap();
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": "nope"}});
        let err = decode(&rt, &mut pod, None).unwrap_err();
        assert_eq!(err.code, 400);
        assert!(
            err.message.contains("cannot be handled as a Pod"),
            "{}",
            err.message
        );
    }

    #[test]
    fn pod_defaults_follow_the_image_tag() {
        let registry = Registry::with_builtins();
        let rt = registry.get("", "pods").unwrap();
        let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "quay.io/x/y:1.2"}]}});
        apply_defaults(&rt, &mut pod);
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(
            pod["spec"]["containers"][1]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
    }

    #[test]
    fn secret_string_data_becomes_data() {
        let registry = Registry::with_builtins();
        let rt = registry.get("", "secrets").unwrap();
        let mut secret = json!({"stringData": {"token": "abc"}});
        apply_defaults(&rt, &mut secret);
        assert_eq!(secret["data"]["token"], "YWJj");
        assert_eq!(secret["type"], "Opaque");
        assert!(secret.get("stringData").is_none());
    }
}
