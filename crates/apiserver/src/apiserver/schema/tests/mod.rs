//! Behaviour of the public [`Schema`] API, keyword by keyword and on a realistic CRD.

use serde_json::{Value, json};

use super::*;

mod keywords;
mod module;
mod objects;

/// A schema whose `spec.x` field has the given schema.
fn field_schema(x: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {"x": x}}
        }
    })
}

fn messages(schema: &Value, obj: &Value) -> Vec<String> {
    let schema = Schema::compile(schema).expect("schema compiles");
    schema
        .validate(obj)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Checks `spec.x = value` against a field schema, expecting exactly `expected`.
fn check_field(x: Value, value: Value, expected: &[&str]) {
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"x": value}});
    let got = messages(&field_schema(x.clone()), &obj);
    assert_eq!(got, expected, "schema {x} with value {value}");
}
