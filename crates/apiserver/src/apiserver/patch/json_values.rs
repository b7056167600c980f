//! Comparisons and normal forms of JSON values that match how Kubernetes compares decoded values.

use serde_json::{Map, Number, Value};

/// Whether two values are equal the way Go compares decoded JSON: numbers by value, so that
/// `80` and `80.0` name the same port.
pub(super) fn same_value(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(left), Value::Number(right)) => same_number(left, right),
        (Value::Array(left), Value::Array(right)) => {
            left.len() == right.len() && left.iter().zip(right).all(|(l, r)| same_value(l, r))
        }
        (Value::Object(left), Value::Object(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .all(|(key, l)| right.get(key).is_some_and(|r| same_value(l, r)))
        }
        _ => left == right,
    }
}

fn same_number(left: &Number, right: &Number) -> bool {
    if left.is_f64() || right.is_f64() {
        left.as_f64() == right.as_f64()
    } else {
        left == right
    }
}

/// The value with object keys sorted and whole floats written as integers, so that equal values
/// serialize to the same text (used for `k:` and `v:` path elements).
pub(super) fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            let sorted: Map<String, Value> = keys
                .into_iter()
                .filter_map(|key| fields.get(key).map(|v| (key.clone(), canonical(v))))
                .collect();
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Number(number) => Value::Number(canonical_number(number)),
        other => other.clone(),
    }
}

fn canonical_number(number: &Number) -> Number {
    match number.as_f64() {
        Some(float) if number.is_f64() && float.fract() == 0.0 && float.abs() < 9.0e15 => {
            // Whole and within f64's exact integer range, so the conversion is lossless.
            Number::from(float as i64)
        }
        _ => number.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compares_numbers_by_value() {
        assert!(same_value(&json!({"p": [80]}), &json!({"p": [80.0]})));
        assert!(!same_value(&json!(80), &json!(81)));
        assert!(!same_value(&json!(80), &json!("80")));
        assert!(!same_value(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }

    #[test]
    fn canonical_form_sorts_keys_and_normalizes_numbers() {
        let value = json!({"protocol": "TCP", "containerPort": 80.0, "n": {"b": 1.5, "a": -2.0}});
        assert_eq!(
            canonical(&value).to_string(),
            r#"{"containerPort":80,"n":{"a":-2,"b":1.5},"protocol":"TCP"}"#
        );
    }
}
