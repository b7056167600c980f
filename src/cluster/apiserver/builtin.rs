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
pub fn decode(rt: &ResourceType, obj: &mut Value) -> Result<Vec<String>, ApiError> {
    let normalised = match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => round_trip::<api::core::v1::Namespace>(rt, obj),
        ("", "nodes") => round_trip::<api::core::v1::Node>(rt, obj),
        ("", "pods") => round_trip::<api::core::v1::Pod>(rt, obj),
        ("", "events") => round_trip::<api::core::v1::Event>(rt, obj),
        ("", "configmaps") => round_trip::<api::core::v1::ConfigMap>(rt, obj),
        ("", "secrets") => round_trip::<api::core::v1::Secret>(rt, obj),
        ("", "serviceaccounts") => round_trip::<api::core::v1::ServiceAccount>(rt, obj),
        ("apps", "deployments") => round_trip::<api::apps::v1::Deployment>(rt, obj),
        ("apps", "daemonsets") => round_trip::<api::apps::v1::DaemonSet>(rt, obj),
        ("batch", "jobs") => round_trip::<api::batch::v1::Job>(rt, obj),
        ("node.k8s.io", "runtimeclasses") => round_trip::<api::node::v1::RuntimeClass>(rt, obj),
        ("coordination.k8s.io", "leases") => round_trip::<api::coordination::v1::Lease>(rt, obj),
        ("events.k8s.io", "events") => round_trip::<api::events::v1::Event>(rt, obj),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            round_trip::<CustomResourceDefinition>(rt, obj)
        }
        ("authorization.k8s.io", "selfsubjectaccessreviews") => {
            round_trip::<api::authorization::v1::SelfSubjectAccessReview>(rt, obj)
        }
        _ => return Ok(Vec::new()),
    }?;
    let mut unknown = Vec::new();
    unknown_fields(obj, &normalised, "", &mut unknown);
    *obj = normalised;
    Ok(unknown)
}

fn round_trip<T: DeserializeOwned + Serialize>(
    rt: &ResourceType,
    obj: &Value,
) -> Result<Value, ApiError> {
    let typed: T = serde_json::from_value(obj.clone()).map_err(|e| {
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
        let unknown = decode(&rt, &mut cm).unwrap();
        assert_eq!(
            unknown,
            vec!["metadata.bogus".to_string(), "extra".to_string()]
        );
        assert!(cm.get("extra").is_none());
        assert_eq!(cm["data"]["k"], "v");
    }

    #[test]
    fn wrong_types_are_bad_requests() {
        let registry = Registry::with_builtins();
        let rt = registry.get("", "pods").unwrap();
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": "nope"}});
        let err = decode(&rt, &mut pod).unwrap_err();
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
