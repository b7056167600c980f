//! Whole-object behaviour: error collection, type metadata, embedded resources, ratcheting and the
//! parts of a field error.

use super::*;

#[test]
fn all_errors_are_collected() {
    let schema = json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "count": {"type": "integer", "minimum": 0},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "items": {"type": "array", "items": {"type": "string", "maxLength": 2}}
            }
        }}
    });
    let obj = json!({"spec": {"count": -1, "mode": "c", "items": ["ok", "long"]}});
    assert_eq!(
        messages(&schema, &obj),
        [
            "spec.count: Invalid value: -1: spec.count in body should be greater than or equal to 0",
            "spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\"",
            "spec.items[1]: Too long: may not be more than 2 bytes",
            "spec.name: Required value",
        ]
    );
}

#[test]
fn root_type_meta_is_left_to_the_server() {
    let schema = json!({
        "type": "object",
        "properties": {"spec": {"type": "object"}, "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}},
        "additionalProperties": false
    });
    let obj = json!({"apiVersion": 1, "kind": "Thing", "metadata": {"name": "much-too-long"}, "spec": {}, "extra": 1});
    assert_eq!(
        messages(&schema, &obj),
        [": Invalid value: \"extra\": .extra in body is a forbidden property"]
    );
}

#[test]
fn embedded_resources_need_type_meta() {
    let schema = field_schema(json!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true
    }));
    let cases: &[(Value, &[&str])] = &[
        (
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
            &[],
        ),
        (
            json!({}),
            &[
                "spec.x.apiVersion: Required value",
                "spec.x.kind: Required value",
            ],
        ),
        (
            json!({"apiVersion": "a/b/c", "kind": ""}),
            &[
                "spec.x.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "spec.x.kind: Invalid value: \"\": must not be empty",
            ],
        ),
        (
            json!({"apiVersion": 1, "kind": "My_Kind"}),
            &[
                "spec.x.apiVersion: Invalid value: 1: must be a string",
                "spec.x.kind: Invalid value: \"My_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ],
        ),
    ];
    for (value, expected) in cases {
        let got = messages(&schema, &json!({"spec": {"x": value}}));
        assert_eq!(got, *expected, "value {value}");
    }
}

#[test]
fn update_ratchets_list_duplicates_already_stored() {
    let schema = Schema::compile(&field_schema(
        json!({"type": "array", "x-kubernetes-list-type": "set"}),
    ))
    .expect("schema compiles");
    let dup = json!({"spec": {"x": ["a", "a"]}});
    let clean = json!({"spec": {"x": ["a"]}});
    assert!(schema.validate_update(&dup, &dup).is_empty());
    assert_eq!(schema.validate_update(&dup, &clean).len(), 1);
    assert_eq!(schema.validate(&dup).len(), 1);
}

#[test]
fn field_errors_expose_status_cause_parts() {
    let errors = Schema::compile(&field_schema(json!({"type": "string", "enum": ["a"]})))
        .expect("schema compiles")
        .validate(&json!({"spec": {"x": "b"}}));
    let [error] = errors.as_slice() else {
        panic!("expected one error, got {errors:?}");
    };
    assert_eq!(error.path, "spec.x");
    assert_eq!(error.kind.reason(), "FieldValueNotSupported");
    assert_eq!(error.value, Some(json!("b")));
    assert_eq!(
        error.body(),
        "Unsupported value: \"b\": supported values: \"a\""
    );
}
