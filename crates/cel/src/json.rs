//! JSON objects as CEL values, as Kubernetes binds them: objects become maps with string keys (so `self.spec`
//! selects a field and `has(self.spec)` tests one), arrays lists, integers `int`, other numbers `double`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::Value;
use cel::objects::{Key, Map};

/// The CEL value of a JSON value.
pub(crate) fn to_value(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => match n.as_u64() {
                Some(u) => Value::UInt(u),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(to_value).collect()))
        }
        serde_json::Value::Object(fields) => object(
            fields
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_value(v))),
        ),
    }
}

/// A CEL map of string keys.
pub(crate) fn object(entries: impl IntoIterator<Item = (Key, Value)>) -> Value {
    let map: HashMap<Key, Value> = entries.into_iter().collect();
    Value::Map(Map { map: Arc::new(map) })
}

/// The JSON form of a CEL value, where it has one (a policy's message or a variable shown to a person).
pub fn to_json(value: &Value) -> Option<serde_json::Value> {
    Some(match value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::from(*i),
        Value::UInt(u) => serde_json::Value::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f).map(serde_json::Value::Number)?,
        Value::String(s) => serde_json::Value::String(s.as_ref().clone()),
        Value::List(items) => {
            serde_json::Value::Array(items.iter().map(to_json).collect::<Option<_>>()?)
        }
        Value::Map(map) => {
            let mut fields = serde_json::Map::new();
            for (key, v) in map.map.iter() {
                let key = match key {
                    Key::String(s) => s.as_ref().clone(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                fields.insert(key, to_json(v)?);
            }
            serde_json::Value::Object(fields)
        }
        _ => return None,
    })
}

/// A CEL map of the named values: how one evaluation's results are handed to the next as fields of one variable
/// (an admission policy's `variables`).
pub fn map_of(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
    object(
        entries
            .into_iter()
            .map(|(name, value)| (Key::String(Arc::new(name)), value)),
    )
}
