//! JSON objects to protobuf messages: the inverse of [`super::message_to_json`], for clients and tests that speak
//! protobuf to the server.

use base64::Engine;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage,
    Value as PbValue,
};
use serde_json::Value;

use super::super::errors::ApiError;
use super::decode::special;

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
pub fn json_name(field: &FieldDescriptor) -> String {
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

/// Build the message of `descriptor` from its JSON form. `apiVersion` and `kind` belong to the envelope and are
/// skipped, as are unknown fields (the JSON path reports those); a value of the wrong type is a 400.
pub fn json_to_message(
    descriptor: &MessageDescriptor,
    value: &Value,
) -> Result<DynamicMessage, ApiError> {
    let mut message = DynamicMessage::new(descriptor.clone());
    match descriptor.full_name() {
        special::TIME | special::MICRO_TIME => {
            let text = value.as_str().ok_or_else(|| wrong(descriptor, value))?;
            let timestamp: jiff::Timestamp = text.parse().map_err(|e| {
                ApiError::bad_request(format!("{text:?} is not an RFC 3339 time: {e}"))
            })?;
            message.set_field_by_name("seconds", PbValue::I64(timestamp.as_second()));
            message.set_field_by_name("nanos", PbValue::I32(timestamp.subsec_nanosecond()));
        }
        special::QUANTITY => {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => return Err(wrong(descriptor, other)),
            };
            message.set_field_by_name("string", PbValue::String(text));
        }
        special::INT_OR_STRING => match value {
            Value::String(s) => {
                message.set_field_by_name("type", PbValue::I64(1));
                message.set_field_by_name("strVal", PbValue::String(s.clone()));
            }
            Value::Number(n) => {
                let int = n
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| wrong(descriptor, value))?;
                message.set_field_by_name("type", PbValue::I64(0));
                message.set_field_by_name("intVal", PbValue::I32(int));
            }
            other => return Err(wrong(descriptor, other)),
        },
        special::RAW_EXTENSION | special::FIELDS_V1 | special::CRD_JSON => {
            let raw = serde_json::to_vec(value).map_err(|e| ApiError::internal(e.to_string()))?;
            let name = if descriptor.full_name() == special::FIELDS_V1 {
                "Raw"
            } else {
                "raw"
            };
            message.set_field_by_name(name, PbValue::Bytes(raw.into()));
        }
        special::SCHEMA_OR_ARRAY => match value {
            Value::Array(_) => set_field(&mut message, "jSONSchemas", value)?,
            _ => set_field(&mut message, "schema", value)?,
        },
        special::SCHEMA_OR_BOOL => match value {
            Value::Bool(b) => message.set_field_by_name("allows", PbValue::Bool(*b)),
            _ => {
                message.set_field_by_name("allows", PbValue::Bool(true));
                set_field(&mut message, "schema", value)?;
            }
        },
        special::SCHEMA_OR_STRINGS => match value {
            Value::Array(_) => set_field(&mut message, "property", value)?,
            _ => set_field(&mut message, "schema", value)?,
        },
        _ if is_items_wrapper(descriptor) => set_field(&mut message, "items", value)?,
        _ => {
            let object = value.as_object().ok_or_else(|| wrong(descriptor, value))?;
            for field in descriptor.fields() {
                if is_inline(&field) {
                    let Kind::Message(embedded) = field.kind() else {
                        continue;
                    };
                    let inner = json_to_message(&embedded, value)?;
                    if inner.fields().next().is_some() {
                        message.set_field(&field, PbValue::Message(inner));
                    }
                    continue;
                }
                match object.get(&json_name(&field)) {
                    None | Some(Value::Null) => {}
                    Some(v) => message.set_field(&field, field_value(&field, v)?),
                }
            }
        }
    }
    Ok(message)
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

fn set_field(message: &mut DynamicMessage, name: &str, value: &Value) -> Result<(), ApiError> {
    let field = message
        .descriptor()
        .get_field_by_name(name)
        .expect("special messages declare their fields");
    let converted = field_value(&field, value)?;
    message.set_field(&field, converted);
    Ok(())
}

fn field_value(field: &FieldDescriptor, value: &Value) -> Result<PbValue, ApiError> {
    if field.is_map() {
        let entry = field.kind();
        let entry = entry.as_message().expect("map fields have entry messages");
        let value_field = entry.map_entry_value_field();
        let object = value.as_object().ok_or_else(|| wrong_field(field, value))?;
        let mut map = std::collections::HashMap::with_capacity(object.len());
        for (key, item) in object {
            if item.is_null() {
                continue;
            }
            map.insert(MapKey::String(key.clone()), scalar(&value_field, item)?);
        }
        return Ok(PbValue::Map(map));
    }
    if field.is_list() {
        let items = value.as_array().ok_or_else(|| wrong_field(field, value))?;
        return Ok(PbValue::List(
            items
                .iter()
                .map(|item| scalar(field, item))
                .collect::<Result<_, _>>()?,
        ));
    }
    scalar(field, value)
}

/// One value of a field's type (an element, for lists and maps).
fn scalar(field: &FieldDescriptor, value: &Value) -> Result<PbValue, ApiError> {
    let bad = || wrong_field(field, value);
    Ok(match field.kind() {
        Kind::Message(descriptor) => PbValue::Message(json_to_message(&descriptor, value)?),
        Kind::String => PbValue::String(value.as_str().ok_or_else(bad)?.to_string()),
        Kind::Bytes => {
            let text = value.as_str().ok_or_else(bad)?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| {
                    ApiError::bad_request(format!("{}: illegal base64 data: {e}", field.name()))
                })?;
            PbValue::Bytes(bytes.into())
        }
        Kind::Bool => PbValue::Bool(value.as_bool().ok_or_else(bad)?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => PbValue::I32(
            value
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(bad)?,
        ),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            PbValue::I64(value.as_i64().ok_or_else(bad)?)
        }
        Kind::Uint32 | Kind::Fixed32 => PbValue::U32(
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(bad)?,
        ),
        Kind::Uint64 | Kind::Fixed64 => PbValue::U64(value.as_u64().ok_or_else(bad)?),
        Kind::Double => PbValue::F64(value.as_f64().ok_or_else(bad)?),
        Kind::Float => PbValue::F32(value.as_f64().ok_or_else(bad)? as f32),
        Kind::Enum(_) => PbValue::EnumNumber(
            value
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(bad)?,
        ),
    })
}

fn wrong(descriptor: &MessageDescriptor, value: &Value) -> ApiError {
    ApiError::bad_request(format!(
        "{}: cannot encode {value} as this type",
        descriptor.name()
    ))
}

fn wrong_field(field: &FieldDescriptor, value: &Value) -> ApiError {
    ApiError::bad_request(format!(
        "{}.{}: cannot encode {value} as this field's type",
        field.parent_message().name(),
        field.name()
    ))
}
