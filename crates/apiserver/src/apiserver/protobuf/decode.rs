//! Protobuf messages to the JSON the Kubernetes JSON encoding gives for the same Go object.

use base64::Engine;
use prost_reflect::{DynamicMessage, MapKey, ReflectMessage, Value as PbValue};
use serde_json::{Map, Number, Value};

use super::super::errors::ApiError;
use super::json_form::{is_inline, is_items_wrapper, json_name, special};

/// The JSON form of a message. A zero time decodes to `null`, as Go's encoder writes it.
pub fn message_to_json(message: &DynamicMessage) -> Result<Value, ApiError> {
    Ok(convert_message(message)?.unwrap_or(Value::Null))
}

/// `None` when the message stands for an absent value (a zero time).
fn convert_message(message: &DynamicMessage) -> Result<Option<Value>, ApiError> {
    let descriptor = message.descriptor();
    let field = |name: &str| message.get_field_by_name(name);
    let is_set = |name: &str| message.has_field_by_name(name);
    let value = match descriptor.full_name() {
        special::TIME | special::MICRO_TIME => {
            if !is_set("seconds") && !is_set("nanos") {
                return Ok(None);
            }
            let seconds = field("seconds").and_then(|v| v.as_i64()).unwrap_or(0);
            let nanos = field("nanos").and_then(|v| v.as_i32()).unwrap_or(0);
            Value::String(format_time(
                seconds,
                nanos,
                descriptor.full_name() == special::MICRO_TIME,
            )?)
        }
        special::QUANTITY => Value::String(
            field("string")
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
        ),
        special::INT_OR_STRING => {
            if field("type").and_then(|v| v.as_i64()) == Some(1) {
                Value::String(
                    field("strVal")
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                )
            } else {
                Value::from(field("intVal").and_then(|v| v.as_i32()).unwrap_or(0))
            }
        }
        special::RAW_EXTENSION | special::FIELDS_V1 | special::CRD_JSON => {
            let raw_field = if descriptor.full_name() == special::FIELDS_V1 {
                "Raw"
            } else {
                "raw"
            };
            match field(raw_field).as_deref() {
                Some(PbValue::Bytes(raw)) if !raw.is_empty() => serde_json::from_slice(raw)
                    .map_err(|e| {
                        ApiError::bad_request(format!(
                            "{}: embedded JSON is malformed: {e}",
                            descriptor.name()
                        ))
                    })?,
                _ => return Ok(None),
            }
        }
        special::SCHEMA_OR_ARRAY => match field("jSONSchemas").as_deref() {
            Some(PbValue::List(items)) if !items.is_empty() => {
                convert_value(&PbValue::List(items.clone()))?
            }
            _ => schema_or_null(message)?,
        },
        special::SCHEMA_OR_BOOL => {
            if is_set("schema") {
                schema_or_null(message)?
            } else {
                Value::Bool(field("allows").and_then(|v| v.as_bool()).unwrap_or(false))
            }
        }
        special::SCHEMA_OR_STRINGS => match field("property").as_deref() {
            Some(PbValue::List(items)) if !items.is_empty() => Value::Array(
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(|s| Value::String(s.to_string())))
                    .collect(),
            ),
            _ => schema_or_null(message)?,
        },
        _ if is_items_wrapper(&descriptor) => match field("items").as_deref() {
            Some(PbValue::List(items)) => Value::Array(
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(|s| Value::String(s.to_string())))
                    .collect(),
            ),
            _ => Value::Array(Vec::new()),
        },
        _ => {
            let mut object = Map::new();
            for (field, value) in message.fields() {
                // Go writes every string of a struct, set or not; an empty one means "not set", as in JSON.
                if matches!(value, PbValue::String(s) if s.is_empty()) {
                    continue;
                }
                let converted = convert_value(value)?;
                if is_inline(&field) {
                    if let Value::Object(embedded) = converted {
                        object.extend(embedded);
                    }
                    continue;
                }
                if !converted.is_null() {
                    object.insert(json_name(&field), converted);
                }
            }
            Value::Object(object)
        }
    };
    Ok(Some(value))
}

fn schema_or_null(message: &DynamicMessage) -> Result<Value, ApiError> {
    match message.get_field_by_name("schema").as_deref() {
        Some(PbValue::Message(schema)) if message.has_field_by_name("schema") => {
            message_to_json(schema)
        }
        _ => Ok(Value::Null),
    }
}

fn convert_value(value: &PbValue) -> Result<Value, ApiError> {
    Ok(match value {
        PbValue::Bool(b) => Value::Bool(*b),
        PbValue::I32(n) => Value::from(*n),
        PbValue::I64(n) => Value::from(*n),
        PbValue::U32(n) => Value::from(*n),
        PbValue::U64(n) => Value::from(*n),
        PbValue::F32(n) => Number::from_f64(f64::from(*n)).map_or(Value::Null, Value::Number),
        PbValue::F64(n) => Number::from_f64(*n).map_or(Value::Null, Value::Number),
        PbValue::String(s) => Value::String(s.clone()),
        PbValue::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        PbValue::EnumNumber(n) => Value::from(*n),
        PbValue::Message(m) => message_to_json(m)?,
        PbValue::List(items) => {
            Value::Array(items.iter().map(convert_value).collect::<Result<_, _>>()?)
        }
        PbValue::Map(entries) => {
            let mut sorted: Vec<(String, &PbValue)> = entries
                .iter()
                .map(|(key, value)| {
                    let key = match key {
                        MapKey::String(s) => s.clone(),
                        MapKey::Bool(b) => b.to_string(),
                        MapKey::I32(n) => n.to_string(),
                        MapKey::I64(n) => n.to_string(),
                        MapKey::U32(n) => n.to_string(),
                        MapKey::U64(n) => n.to_string(),
                    };
                    (key, value)
                })
                .collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            let mut object = Map::new();
            for (key, value) in sorted {
                object.insert(key, convert_value(value)?);
            }
            Value::Object(object)
        }
    })
}

/// RFC 3339 in UTC, as `metav1.Time` (seconds) and `metav1.MicroTime` (microseconds) print themselves.
fn format_time(seconds: i64, nanos: i32, micro: bool) -> Result<String, ApiError> {
    let timestamp = jiff::Timestamp::from_second(seconds)
        .map_err(|e| ApiError::bad_request(format!("timestamp out of range: {e}")))?;
    let whole = timestamp.strftime("%Y-%m-%dT%H:%M:%S");
    Ok(if micro {
        format!("{whole}.{:06}Z", nanos.clamp(0, 999_999_999) / 1000)
    } else {
        format!("{whole}Z")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_as_kubernetes_prints_them() {
        assert_eq!(format_time(0, 0, false).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_time(1_700_000_000, 123_456_000, true).unwrap(),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            format_time(1_700_000_000, 123_456_000, false).unwrap(),
            "2023-11-14T22:13:20Z"
        );
    }
}
