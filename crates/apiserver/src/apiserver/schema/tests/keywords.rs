//! Each structural-schema keyword on its own, through a one-field schema.

use super::*;

#[test]
fn type_keyword() {
    let cases: &[(Value, Value, &[&str])] = &[
        (json!({"type": "integer"}), json!(3), &[]),
        (json!({"type": "integer"}), json!(3.0), &[]),
        (
            json!({"type": "integer"}),
            json!("string"),
            &[
                "spec.x: Invalid value: \"string\": spec.x in body must be of type integer: \"string\"",
            ],
        ),
        (
            json!({"type": "integer"}),
            json!(1.5),
            &[
                "spec.x: Invalid value: \"number\": spec.x in body must be of type integer: \"number\"",
                "spec.x: Invalid value: 1.5: Checked value must be of type integer (default format) in spec.x",
            ],
        ),
        (json!({"type": "number"}), json!(3), &[]),
        (json!({"type": "number"}), json!(2.5), &[]),
        (
            json!({"type": "string"}),
            json!(true),
            &[
                "spec.x: Invalid value: \"boolean\": spec.x in body must be of type string: \"boolean\"",
            ],
        ),
        (
            json!({"type": "boolean"}),
            json!("true"),
            &[
                "spec.x: Invalid value: \"string\": spec.x in body must be of type boolean: \"string\"",
            ],
        ),
        (
            json!({"type": "object"}),
            json!([]),
            &["spec.x: Invalid value: \"array\": spec.x in body must be of type object: \"array\""],
        ),
        (
            json!({"type": "array"}),
            json!({}),
            &[
                "spec.x: Invalid value: \"object\": spec.x in body must be of type array: \"object\"",
            ],
        ),
        (json!({}), json!({"anything": [1, "a"]}), &[]),
    ];
    for (schema, value, expected) in cases {
        check_field(schema.clone(), value.clone(), expected);
    }
}

#[test]
fn nullable_keyword() {
    check_field(
        json!({"type": "string", "nullable": true}),
        json!(null),
        &[],
    );
    check_field(
        json!({"type": "string"}),
        json!(null),
        &["spec.x: Invalid value: \"null\": spec.x in body must be of type string: \"null\""],
    );
    check_field(json!({}), json!(null), &[]);
}

#[test]
fn int_or_string_keyword() {
    let schema = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]});
    check_field(schema.clone(), json!(5), &[]);
    check_field(schema.clone(), json!("25%"), &[]);
    let plain = json!({"x-kubernetes-int-or-string": true});
    check_field(
        plain.clone(),
        json!(true),
        &[
            "spec.x: Invalid value: \"boolean\": spec.x in body must be of type integer,string: \"boolean\"",
        ],
    );
    check_field(
        plain,
        json!(1.5),
        &[
            "spec.x: Invalid value: \"number\": spec.x in body must be of type integer,string: \"number\"",
        ],
    );
}

#[test]
fn required_keyword() {
    check_field(
        json!({"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"}}}),
        json!({}),
        &["spec.x.a: Required value", "spec.x.b: Required value"],
    );
    check_field(
        json!({"type": "object", "required": ["a"]}),
        json!({"a": 1}),
        &[],
    );
    let root =
        json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}});
    assert_eq!(
        messages(&root, &json!({"kind": "Thing"})),
        ["spec: Required value"]
    );
}

#[test]
fn enum_keyword() {
    check_field(
        json!({"type": "string", "enum": ["a", "b"]}),
        json!("a"),
        &[],
    );
    check_field(
        json!({"type": "string", "enum": ["a", "b"]}),
        json!("foo"),
        &["spec.x: Unsupported value: \"foo\": supported values: \"a\", \"b\""],
    );
    check_field(json!({"type": "integer", "enum": [1, 2]}), json!(2.0), &[]);
    check_field(
        json!({"type": "integer", "enum": [1, 2]}),
        json!(3),
        &["spec.x: Unsupported value: 3: supported values: \"1\", \"2\""],
    );
    check_field(
        json!({"enum": [{"a": 1}]}),
        json!({"a": 2}),
        &["spec.x: Unsupported value: {\"a\":2}: supported values: \"{\\\"a\\\":1}\""],
    );
    check_field(
        json!({"type": "string", "nullable": true, "enum": ["a", null]}),
        json!(null),
        &[],
    );
}

#[test]
fn numeric_bounds() {
    let cases: &[(Value, Value, &[&str])] = &[
        (json!({"type": "integer", "minimum": 1}), json!(1), &[]),
        (
            json!({"type": "integer", "minimum": 1}),
            json!(0),
            &["spec.x: Invalid value: 0: spec.x in body should be greater than or equal to 1"],
        ),
        (
            json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}),
            json!(1),
            &["spec.x: Invalid value: 1: spec.x in body should be greater than 1"],
        ),
        (json!({"type": "integer", "maximum": 10}), json!(10), &[]),
        (
            json!({"type": "integer", "maximum": 10}),
            json!(11),
            &["spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10"],
        ),
        (
            json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
            json!(10),
            &["spec.x: Invalid value: 10: spec.x in body should be less than 10"],
        ),
        (
            json!({"type": "number", "maximum": 10}),
            json!(10.5),
            &["spec.x: Invalid value: 10.5: spec.x in body should be less than or equal to 10"],
        ),
        (
            json!({"type": "number", "minimum": 0.5}),
            json!(0.25),
            &["spec.x: Invalid value: 0.25: spec.x in body should be greater than or equal to 0.5"],
        ),
    ];
    for (schema, value, expected) in cases {
        check_field(schema.clone(), value.clone(), expected);
    }
}

#[test]
fn multiple_of_keyword() {
    check_field(json!({"type": "integer", "multipleOf": 5}), json!(15), &[]);
    check_field(
        json!({"type": "integer", "multipleOf": 5}),
        json!(12),
        &["spec.x: Invalid value: 12: spec.x in body should be a multiple of 5"],
    );
    check_field(
        json!({"type": "number", "multipleOf": 0.1}),
        json!(0.3),
        &[],
    );
    check_field(
        json!({"type": "number", "multipleOf": 0.5}),
        json!(0.75),
        &["spec.x: Invalid value: 0.75: spec.x in body should be a multiple of 0.5"],
    );
}

#[test]
fn string_length_and_pattern() {
    let cases: &[(Value, Value, &[&str])] = &[
        (
            json!({"type": "string", "maxLength": 3}),
            json!("日本語"),
            &[],
        ),
        (
            json!({"type": "string", "maxLength": 3}),
            json!("abcd"),
            &["spec.x: Too long: may not be more than 3 bytes"],
        ),
        (
            json!({"type": "string", "maxLength": 1}),
            json!("ab"),
            &["spec.x: Too long: may not be more than 1 byte"],
        ),
        (
            json!({"type": "string", "minLength": 2}),
            json!("a"),
            &["spec.x: Invalid value: \"a\": spec.x in body should be at least 2 chars long"],
        ),
        (
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!("abc"),
            &[],
        ),
        (
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!("ABC"),
            &["spec.x: Invalid value: \"ABC\": spec.x in body should match '^[a-z]+$'"],
        ),
        (
            // Only the first failing string rule is reported, as upstream.
            json!({"type": "string", "minLength": 5, "pattern": "^[a-z]+$"}),
            json!("A"),
            &["spec.x: Invalid value: \"A\": spec.x in body should be at least 5 chars long"],
        ),
    ];
    for (schema, value, expected) in cases {
        check_field(schema.clone(), value.clone(), expected);
    }
}

#[test]
fn format_keyword() {
    let cases: &[(Value, Value, &[&str])] = &[
        (
            json!({"type": "string", "format": "date-time"}),
            json!("2024-05-01T10:00:00Z"),
            &[],
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            json!("yesterday"),
            &[
                "spec.x: Invalid value: \"yesterday\": spec.x in body must be of type date-time: \"yesterday\"",
            ],
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            json!(5),
            &[
                "spec.x: Invalid value: \"int64\": spec.x in body must be of type date-time: \"int64\"",
            ],
        ),
        (
            json!({"type": "string", "format": "no-such-format"}),
            json!("x"),
            &[],
        ),
        (
            json!({"type": "integer", "format": "int32"}),
            json!(2147483647),
            &[],
        ),
        (
            json!({"type": "integer", "format": "int32"}),
            json!(3000000000_i64),
            &[
                "spec.x: Invalid value: 3000000000: Checked value must be of type integer with format int32 in spec.x",
            ],
        ),
        (
            json!({"type": "number", "format": "float"}),
            json!(1e39),
            &[
                "spec.x: Invalid value: 1e+39: Checked value must be of type number with format float in spec.x",
            ],
        ),
        (
            json!({"type": "string", "format": "byte"}),
            json!("not base64!"),
            &[
                "spec.x: Invalid value: \"not base64!\": spec.x in body must be of type byte: \"not base64!\"",
            ],
        ),
    ];
    for (schema, value, expected) in cases {
        check_field(schema.clone(), value.clone(), expected);
    }
}

#[test]
fn item_and_property_counts() {
    let cases: &[(Value, Value, &[&str])] = &[
        (
            json!({"type": "array", "minItems": 1, "maxItems": 2}),
            json!([1]),
            &[],
        ),
        (
            json!({"type": "array", "minItems": 2}),
            json!([1]),
            &["spec.x: Invalid value: 1: spec.x in body should have at least 2 items"],
        ),
        (
            json!({"type": "array", "maxItems": 1}),
            json!([1, 2]),
            &["spec.x: Too many: 2: must have at most 1 item"],
        ),
        (
            json!({"type": "object", "maxProperties": 1}),
            json!({"a": 1, "b": 2}),
            &["spec.x: Too many: 2: must have at most 1 item"],
        ),
        (
            json!({"type": "object", "minProperties": 2}),
            json!({"a": 1}),
            &["spec.x: Invalid value: 1: spec.x in body should have at least 2 properties"],
        ),
    ];
    for (schema, value, expected) in cases {
        check_field(schema.clone(), value.clone(), expected);
    }
}

#[test]
fn items_and_additional_properties() {
    check_field(
        json!({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}}}),
        json!([{"n": "a"}, {"n": 1}]),
        &[
            "spec.x[1].n: Invalid value: \"integer\": spec.x[1].n in body must be of type string: \"integer\"",
        ],
    );
    check_field(
        json!({"type": "object", "additionalProperties": {"type": "string"}}),
        json!({"ok": "yes", "bad": 1}),
        &[
            "spec.x.bad: Invalid value: \"integer\": spec.x.bad in body must be of type string: \"integer\"",
        ],
    );
    check_field(
        json!({"type": "object", "properties": {"b": {}}, "additionalProperties": false}),
        json!({"a": 1, "b": 2}),
        &["spec.x: Invalid value: \"a\": spec.x.a in body is a forbidden property"],
    );
}

#[test]
fn list_types() {
    let cases: &[(Value, Value, &[&str])] = &[
        (
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}),
            json!(["a", "b", "a", "a"]),
            &["spec.x[2]: Duplicate value: \"a\""],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "set"}),
            json!([{"a": 1, "b": 2}, {"b": 2, "a": 1}]),
            &["spec.x[1]: Duplicate value: {\"a\":1,\"b\":2}"],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "atomic"}),
            json!(["a", "a"]),
            &[],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                   "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}),
            json!([{"name": "a"}, {"name": "b"}, {"name": "a", "v": 1}]),
            &["spec.x[2]: Duplicate value: {\"name\":\"a\"}"],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"]}),
            json!([{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}, {"protocol": "TCP", "port": 80}]),
            &["spec.x[2]: Duplicate value: {\"port\":80,\"protocol\":\"TCP\"}"],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}),
            json!(["s"]),
            &["spec.x[0]: Invalid value: \"s\": must be an object for an array of list-type map"],
        ),
    ];
    for (schema, value, expected) in cases {
        check_field(schema.clone(), value.clone(), expected);
    }
}

#[test]
fn list_sets_inside_maps_use_bracketed_keys() {
    check_field(
        json!({"type": "object", "additionalProperties": {"type": "array", "x-kubernetes-list-type": "set"}}),
        json!({"k": [1, 1]}),
        &["spec.x[k][1]: Duplicate value: 1"],
    );
}

#[test]
fn combinators() {
    let cases: &[(Value, Value, &[&str])] = &[
        (
            json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({"b": 1}),
            &[],
        ),
        (
            json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({}),
            &[
                "spec.x: Invalid value: \"\": \"spec.x\" must validate at least one schema (anyOf)",
                "spec.x.a: Required value",
            ],
        ),
        (
            json!({"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({"a": 1, "b": 2}),
            &[
                "spec.x: Invalid value: \"\": \"spec.x\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
            ],
        ),
        (
            json!({"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({"c": 1}),
            &[
                "spec.x: Invalid value: \"\": \"spec.x\" must validate one and only one schema (oneOf). Found none valid",
                "spec.x.a: Required value",
            ],
        ),
        (
            json!({"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]}),
            json!("a"),
            &[
                "spec.x: Invalid value: \"a\": spec.x in body should be at least 2 chars long",
                "spec.x: Invalid value: \"\": \"spec.x\" must validate all the schemas (allOf)",
            ],
        ),
        (
            json!({"type": "string", "not": {"enum": ["forbidden"]}}),
            json!("forbidden"),
            &["spec.x: Invalid value: \"\": \"spec.x\" must not validate the schema (not)"],
        ),
        (
            json!({"type": "string", "not": {"enum": ["forbidden"]}}),
            json!("fine"),
            &[],
        ),
    ];
    for (schema, value, expected) in cases {
        check_field(schema.clone(), value.clone(), expected);
    }
}

#[test]
fn cel_rules_are_not_evaluated() {
    check_field(
        json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a > 10", "message": "a too small"}]}),
        json!({"a": 1}),
        &[],
    );
}
