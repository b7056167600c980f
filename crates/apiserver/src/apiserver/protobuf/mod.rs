//! Kubernetes' protobuf wire format for request bodies, which kubectl's typed clients (`create namespace`,
//! `create configmap`, `auth can-i`, ...) send and never fall back from.
//!
//! A body is the `k8s\0` magic followed by a `runtime.Unknown`: type meta (`apiVersion`, `kind`) and the raw bytes of
//! the object's message. The messages are decoded with the descriptors of the upstream `generated.proto` files (the
//! set the kube-rs project's `k8s-pb` bindings are built from, compiled into `kubernetes.fds` with
//! `protoc --include_imports`), and turned into the JSON the Kubernetes JSON encoding gives for the same object:
//! proto field names are the JSON names, and the handful of types with their own JSON form (times, quantities,
//! int-or-string, raw JSON, schema unions) are converted explicitly. The JSON then takes the same path as a JSON
//! body, so both encodings store the same object.

mod autoscaling;
mod certificates;
mod declare;
mod decode;
mod encode;
mod json_form;

use std::sync::LazyLock;

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value as PbValue};
use serde_json::Value;

use super::errors::ApiError;

pub use decode::message_to_json;
pub use encode::json_to_message;

/// The media type of Kubernetes' protobuf encoding.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every protobuf body.
pub const MAGIC: &[u8] = b"k8s\x00";

/// Descriptors of the built-in API groups the server serves, and of everything they import.
static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
    let mut pool = DescriptorPool::decode(&include_bytes!("kubernetes.fds")[..])
        .expect("the bundled Kubernetes descriptor set is valid");
    let meta_file = pool
        .get_message_by_name(&format!("{META_PACKAGE}.ObjectMeta"))
        .map(|m| m.parent_file().name().to_owned())
        .expect("the bundled descriptor set declares ObjectMeta");
    pool.add_file_descriptor_proto(certificates::file(&meta_file))
        .expect("the CertificateSigningRequest messages are valid");
    pool.add_file_descriptor_proto(autoscaling::file(&meta_file))
        .expect("the HorizontalPodAutoscaler messages are valid");
    pool
});

const UNKNOWN: &str = "apimachinery.pkg.runtime.Unknown";
const META_PACKAGE: &str = "apimachinery.pkg.apis.meta.v1";

/// Whether a body is in the protobuf encoding.
pub fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// Decode a protobuf body into the JSON object the JSON encoding of the same object is, `apiVersion` and `kind`
/// included.
pub fn decode_body(body: &[u8]) -> Result<Value, ApiError> {
    let raw = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| ApiError::bad_request("the protobuf body does not start with k8s\\0"))?;
    let envelope = DynamicMessage::decode(descriptor(UNKNOWN), raw)
        .map_err(|e| ApiError::bad_request(format!("the protobuf envelope is malformed: {e}")))?;
    let type_meta = envelope
        .get_field_by_name("typeMeta")
        .and_then(|v| v.as_message().cloned());
    let text = |name: &str| {
        type_meta
            .as_ref()
            .and_then(|m| m.get_field_by_name(name))
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if let Some(encoding) = envelope
        .get_field_by_name("contentEncoding")
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|e| !e.is_empty())
    {
        return Err(ApiError::bad_request(format!(
            "protobuf content encoding {encoding:?} is not supported"
        )));
    }
    let message = message_for(&api_version, &kind).ok_or_else(|| {
        ApiError::unsupported_media_type(
            MEDIA_TYPE,
            &format!(
                "application/json, application/yaml ({kind} in {api_version} has no protobuf encoding here)"
            ),
        )
    })?;
    let object_bytes = match envelope.get_field_by_name("raw").as_deref() {
        Some(PbValue::Bytes(bytes)) => bytes.clone(),
        _ => Default::default(),
    };
    let object = DynamicMessage::decode(message, object_bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version \"{api_version}\" cannot be decoded from protobuf: {e}"
        ))
    })?;
    let mut json = message_to_json(&object)?;
    if let Value::Object(map) = &mut json {
        let mut with_type = serde_json::Map::with_capacity(map.len() + 2);
        with_type.insert("apiVersion".into(), Value::String(api_version));
        with_type.insert("kind".into(), Value::String(kind));
        with_type.append(map);
        json = Value::Object(with_type);
    }
    Ok(json)
}

/// Encode a JSON object (with `apiVersion` and `kind`) as a protobuf body, as kubectl's typed clients send it.
pub fn encode_body(object: &Value) -> Result<Vec<u8>, ApiError> {
    let field = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    let message = message_for(api_version, kind).ok_or_else(|| {
        ApiError::bad_request(format!("{kind} in {api_version} has no protobuf encoding"))
    })?;
    let encoded = json_to_message(&message, object)?.encode_to_vec();
    let unknown = descriptor(UNKNOWN);
    let mut type_meta = DynamicMessage::new(
        unknown
            .get_field_by_name("typeMeta")
            .and_then(|f| f.kind().as_message().cloned())
            .expect("runtime.Unknown has typeMeta"),
    );
    type_meta.set_field_by_name("apiVersion", PbValue::String(api_version.to_string()));
    type_meta.set_field_by_name("kind", PbValue::String(kind.to_string()));
    let mut envelope = DynamicMessage::new(unknown);
    envelope.set_field_by_name("typeMeta", PbValue::Message(type_meta));
    envelope.set_field_by_name("raw", PbValue::Bytes(encoded.into()));
    let mut body = MAGIC.to_vec();
    envelope
        .encode(&mut body)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(body)
}

/// Built-in kinds served in JSON (and YAML) only: the bundled descriptor set predates them, so a protobuf body of
/// one is refused with 415 naming the media types that are accepted. (HorizontalPodAutoscalers are stored as
/// `autoscaling/v2`, which has no message; `autoscaling/v1`, what `kubectl autoscale` sends, has one.)
pub const JSON_ONLY: &[(&str, &str)] = &[
    ("policy", "PodDisruptionBudget"),
    ("discovery.k8s.io", "EndpointSlice"),
    ("apiregistration.k8s.io", "APIService"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "IngressClass"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
    ("resource.k8s.io", "ResourceSlice"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
];

/// The message of a kind in a group version, or of a `meta.k8s.io` kind (`DeleteOptions`) sent under any group.
pub fn message_for(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let package = match group {
        "" => format!("api.core.{version}"),
        "apiextensions.k8s.io" => {
            format!("apiextensions_apiserver.pkg.apis.apiextensions.{version}")
        }
        "meta.k8s.io" => META_PACKAGE.to_string(),
        group => format!("api.{}.{version}", group.split('.').next().unwrap_or(group)),
    };
    POOL.get_message_by_name(&format!("{package}.{kind}"))
        .or_else(|| POOL.get_message_by_name(&format!("{META_PACKAGE}.{kind}")))
}

fn descriptor(name: &str) -> MessageDescriptor {
    POOL.get_message_by_name(name)
        .unwrap_or_else(|| panic!("the bundled descriptor set defines {name}"))
}

/// Whether an `Accept` header leaves the server no JSON to answer with (only protobuf is acceptable).
pub fn accepts_only_protobuf(accept: Option<&str>) -> bool {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return false;
    };
    accept.split(',').all(|part| {
        let media = part.split(';').next().unwrap_or("").trim();
        media == MEDIA_TYPE
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_resolve_to_their_messages() {
        let name = |v: &str, k: &str| message_for(v, k).map(|m| m.full_name().to_string());
        assert_eq!(
            name("v1", "Namespace").as_deref(),
            Some("api.core.v1.Namespace")
        );
        assert_eq!(
            name("apps/v1", "Deployment").as_deref(),
            Some("api.apps.v1.Deployment")
        );
        assert_eq!(
            name("rbac.authorization.k8s.io/v1", "Role").as_deref(),
            Some("api.rbac.v1.Role")
        );
        assert_eq!(
            name("apiextensions.k8s.io/v1", "CustomResourceDefinition").as_deref(),
            Some("apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition")
        );
        assert_eq!(
            name("v1", "DeleteOptions").as_deref(),
            Some("apimachinery.pkg.apis.meta.v1.DeleteOptions")
        );
        assert_eq!(name("kmm.sigs.x-k8s.io/v1beta1", "Module"), None);
    }

    #[test]
    fn a_configmap_survives_the_envelope() {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "default", "labels": {"app": "web"}},
            "data": {"mode": "fast", "empty": ""},
            "binaryData": {"blob": "AAEC"}
        });
        let body = encode_body(&cm).unwrap();
        assert!(is_protobuf(&body));
        assert_eq!(decode_body(&body).unwrap(), cm);
    }

    #[test]
    fn reviews_tokens_and_delete_options_survive_the_envelope() {
        let bodies = [
            json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": "jane", "groups": ["dev"], "extra": {"scopes": ["a", "b"]},
                         "resourceAttributes": {"verb": "get", "resource": "pods", "subresource": "log"}}
            }),
            json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                "spec": {"namespace": "default"}
            }),
            json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
            }),
            json!({
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"audiences": ["kmm-tui"], "expirationSeconds": 3600,
                         "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "1234"}}
            }),
            json!({
                "apiVersion": "v1", "kind": "DeleteOptions",
                "gracePeriodSeconds": 0, "dryRun": ["All"], "propagationPolicy": "Foreground",
                "preconditions": {"uid": "1234", "resourceVersion": "7"}
            }),
        ];
        for body in bodies {
            let encoded = encode_body(&body).unwrap();
            assert_eq!(decode_body(&encoded).unwrap(), body);
        }
    }

    #[test]
    fn only_a_protobuf_accept_is_refused() {
        assert!(accepts_only_protobuf(Some(MEDIA_TYPE)));
        assert!(!accepts_only_protobuf(Some(
            "application/vnd.kubernetes.protobuf, application/json"
        )));
        assert!(!accepts_only_protobuf(Some("application/json")));
        assert!(!accepts_only_protobuf(None));
    }

    #[test]
    fn garbage_is_a_bad_request() {
        let err = decode_body(b"k8s\x00\xff\xff\xff").unwrap_err();
        assert_eq!(err.code, 400, "{}", err.message);
    }
}

#[cfg(test)]
mod round_trip;
