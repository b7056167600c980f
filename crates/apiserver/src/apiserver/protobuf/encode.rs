//! JSON objects to protobuf messages: the inverse of [`super::message_to_json`], for clients and tests that speak
//! protobuf to the server.

use base64::Engine;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage,
    Value as PbValue,
};
use serde_json::Value;

use super::super::errors::ApiError;
use super::json_form::{is_inline, is_items_wrapper, json_name, special};

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
