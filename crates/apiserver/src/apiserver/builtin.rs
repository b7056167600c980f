//! Decoding and pruning of built-in kinds.
//!
//! kube-apiserver decodes built-in objects into Go structs, which drops unknown fields (an error under
//! `fieldValidation=Strict`) and rejects wrongly typed ones. We get the same behaviour by round-tripping through the
//! k8s-openapi types: whatever does not survive the round trip is an unknown field. Defaults are applied afterwards,
//! by [`super::defaults`].

use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use super::errors::ApiError;
use super::registry::ResourceType;

/// Decode `obj` as the built-in kind of `rt`, replace it with its normalised form, and return the paths of the
/// fields that were unknown (and therefore dropped).
///
/// `stored` is the object as it is stored (already in normalised form) when `obj` updates it: then only the
/// top-level fields that differ from it are decoded, which is most of a write's cost saved on a status or label
/// change of a large object.
pub(crate) fn decode(
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
        ("apps", "statefulsets") => round_trip::<api::apps::v1::StatefulSet>,
        ("rbac.authorization.k8s.io", "clusterroles") => round_trip::<api::rbac::v1::ClusterRole>,
        ("rbac.authorization.k8s.io", "clusterrolebindings") => {
            round_trip::<api::rbac::v1::ClusterRoleBinding>
        }
        ("rbac.authorization.k8s.io", "roles") => round_trip::<api::rbac::v1::Role>,
        ("rbac.authorization.k8s.io", "rolebindings") => round_trip::<api::rbac::v1::RoleBinding>,
        ("batch", "jobs") => round_trip::<api::batch::v1::Job>,
        ("batch", "cronjobs") => round_trip::<api::batch::v1::CronJob>,
        ("", "services") => round_trip::<api::core::v1::Service>,
        ("", "replicationcontrollers") => round_trip::<api::core::v1::ReplicationController>,
        ("policy", "poddisruptionbudgets") => round_trip::<api::policy::v1::PodDisruptionBudget>,
        ("discovery.k8s.io", "endpointslices") => round_trip::<api::discovery::v1::EndpointSlice>,
        ("", "endpoints") => round_trip::<api::core::v1::Endpoints>,
        ("apiregistration.k8s.io", "apiservices") => round_trip::<APIService>,
        ("node.k8s.io", "runtimeclasses") => round_trip::<api::node::v1::RuntimeClass>,
        ("coordination.k8s.io", "leases") => round_trip::<api::coordination::v1::Lease>,
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            round_trip::<api::admissionregistration::v1::ValidatingAdmissionPolicy>
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            round_trip::<api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>
        }
        ("resource.k8s.io", "deviceclasses") => round_trip::<api::resource::v1::DeviceClass>,
        ("resource.k8s.io", "resourceslices") => round_trip::<api::resource::v1::ResourceSlice>,
        ("resource.k8s.io", "resourceclaims") => round_trip::<api::resource::v1::ResourceClaim>,
        ("resource.k8s.io", "resourceclaimtemplates") => {
            round_trip::<api::resource::v1::ResourceClaimTemplate>
        }
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
        ("authentication.k8s.io", "tokenreviews") => {
            round_trip::<api::authentication::v1::TokenReview>
        }
        ("certificates.k8s.io", "certificatesigningrequests") => {
            round_trip::<api::certificates::v1::CertificateSigningRequest>
        }
        ("", "persistentvolumeclaims") => round_trip::<api::core::v1::PersistentVolumeClaim>,
        ("", "persistentvolumes") => round_trip::<api::core::v1::PersistentVolume>,
        ("networking.k8s.io", "ingresses") => round_trip::<api::networking::v1::Ingress>,
        ("networking.k8s.io", "ingressclasses") => round_trip::<api::networking::v1::IngressClass>,
        ("autoscaling", "horizontalpodautoscalers") => horizontal_pod_autoscaler,
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

/// The round trip of a HorizontalPodAutoscaler through the type of the version it is written in: `autoscaling/v1`
/// and `autoscaling/v2` differ in shape, and each is decoded as kube-apiserver decodes it before conversion.
fn horizontal_pod_autoscaler(rt: &ResourceType, obj: &Value) -> Result<Value, ApiError> {
    match obj.get("apiVersion").and_then(Value::as_str) {
        Some("autoscaling/v1") => {
            round_trip::<api::autoscaling::v1::HorizontalPodAutoscaler>(rt, obj)
        }
        _ => round_trip::<api::autoscaling::v2::HorizontalPodAutoscaler>(rt, obj),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::registry::Registry;
    use serde_json::json;

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
        super::super::defaults::apply(rt, &mut pod);
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
}
