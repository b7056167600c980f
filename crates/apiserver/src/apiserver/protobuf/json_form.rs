//! Where a message's JSON form differs from a plain object of its proto fields, for both directions of the
//! conversion: the messages with a JSON form of their own, the fields merged into their parent, the field names
//! JSON spells differently, and the messages that are a bare list in JSON.

use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};

/// Messages whose JSON form is not an object of their fields.
pub(super) mod special {
    pub(crate) const TIME: &str = "apimachinery.pkg.apis.meta.v1.Time";
    pub(crate) const MICRO_TIME: &str = "apimachinery.pkg.apis.meta.v1.MicroTime";
    pub(crate) const FIELDS_V1: &str = "apimachinery.pkg.apis.meta.v1.FieldsV1";
    pub(crate) const QUANTITY: &str = "apimachinery.pkg.api.resource.Quantity";
    pub(crate) const INT_OR_STRING: &str = "apimachinery.pkg.util.intstr.IntOrString";
    pub(crate) const RAW_EXTENSION: &str = "apimachinery.pkg.runtime.RawExtension";
    pub(crate) const CRD_JSON: &str = "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON";
    pub(crate) const SCHEMA_OR_ARRAY: &str =
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray";
    pub(crate) const SCHEMA_OR_BOOL: &str =
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool";
    pub(crate) const SCHEMA_OR_STRINGS: &str =
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray";
}

/// Fields of Go structs embedded with `json:",inline"`: a message field in protobuf, their fields written into the
/// parent object in JSON.
const INLINE_FIELDS: &[&str] = &[
    "api.core.v1.Probe.handler",
    "api.core.v1.Volume.volumeSource",
    "api.core.v1.EphemeralContainer.ephemeralContainerCommon",
    "api.core.v1.PersistentVolumeSpec.persistentVolumeSource",
    "api.core.v1.ConfigMapEnvSource.localObjectReference",
    "api.core.v1.ConfigMapKeySelector.localObjectReference",
    "api.core.v1.ConfigMapProjection.localObjectReference",
    "api.core.v1.ConfigMapVolumeSource.localObjectReference",
    "api.core.v1.SecretEnvSource.localObjectReference",
    "api.core.v1.SecretKeySelector.localObjectReference",
    "api.core.v1.SecretProjection.localObjectReference",
];

/// Whether a field's JSON is merged into its parent object.
pub(super) fn is_inline(field: &FieldDescriptor) -> bool {
    INLINE_FIELDS.contains(&field.full_name())
}

/// The JSON name of a field: the proto name, except where JSON Schema's spelling is no proto identifier and for
/// one field whose proto name kept its Go spelling.
pub(super) fn json_name(field: &FieldDescriptor) -> String {
    let name = field.name();
    if field.full_name() == "api.authentication.v1.BoundObjectReference.uID" {
        return "uid".to_string();
    }
    if field.parent_message().name() != "JSONSchemaProps" {
        return name.to_string();
    }
    match name {
        "ref" => "$ref".to_string(),
        "schema" => "$schema".to_string(),
        _ => match name.strip_prefix("xKubernetes") {
            Some(rest) => {
                let mut out = String::from("x-kubernetes");
                for c in rest.chars() {
                    if c.is_ascii_uppercase() {
                        out.push('-');
                    }
                    out.push(c.to_ascii_lowercase());
                }
                out
            }
            None => name.to_string(),
        },
    }
}

/// Named string slices (`ExtraValue`, `Verbs`) are messages with one repeated string `items` field; their JSON is
/// the list.
pub(super) fn is_items_wrapper(descriptor: &MessageDescriptor) -> bool {
    let mut fields = descriptor.fields();
    matches!(
        (fields.next(), fields.next()),
        (Some(only), None) if only.name() == "items" && only.is_list() && matches!(only.kind(), Kind::String)
    )
}
