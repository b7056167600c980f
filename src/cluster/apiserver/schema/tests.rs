//! Behaviour of the public [`Schema`] API, keyword by keyword and on a realistic CRD.

use serde_json::{Value, json};

use super::*;

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

/// The `kernelMappings` list of [`module_schema`]: build settings with nested defaults.
fn kernel_mappings_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "literal": {"type": "string"},
                "regexp": {"type": "string"},
                "containerImage": {"type": "string"},
                "inTreeModulesToRemove": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set"
                },
                "build": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "dockerfileConfigMap": {"type": "object", "properties": {"name": {"type": "string", "default": ""}}},
                        "buildArgs": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {
                                "type": "object",
                                "required": ["name", "value"],
                                "properties": {"name": {"type": "string"}, "value": {"type": "string"}}
                            }
                        },
                        "secrets": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"name": {"type": "string", "default": ""}}}
                        },
                        "baseImageRegistryTLS": {
                            "type": "object",
                            "default": {},
                            "properties": {
                                "insecure": {"type": "boolean", "default": false},
                                "insecureSkipTLSVerify": {"type": "boolean", "default": false}
                            }
                        }
                    }
                }
            }
        }
    })
}

/// A cut-down KMM `Module` schema: nested objects, arrays of objects, a string map,
/// a list-map, an int-or-string, defaults at several depths and an embedded resource.
fn module_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["moduleLoader", "selector"],
                "properties": {
                    "selector": {"type": "object", "additionalProperties": {"type": "string"}},
                    "maxUpdate": {
                        "x-kubernetes-int-or-string": true,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "default": 1
                    },
                    "moduleLoader": {
                        "type": "object",
                        "required": ["container"],
                        "properties": {
                            "serviceAccountName": {"type": "string"},
                            "container": {
                                "type": "object",
                                "required": ["modprobe"],
                                "properties": {
                                    "imagePullPolicy": {
                                        "type": "string",
                                        "enum": ["Always", "IfNotPresent", "Never"],
                                        "default": "IfNotPresent"
                                    },
                                    "modprobe": {
                                        "type": "object",
                                        "required": ["moduleName"],
                                        "properties": {
                                            "moduleName": {"type": "string", "minLength": 1},
                                            "parameters": {"type": "array", "items": {"type": "string"}},
                                            "firmwarePath": {"type": "string"}
                                        }
                                    },
                                    "kernelMappings": kernel_mappings_schema()
                                }
                            }
                        }
                    },
                    "tolerations": {
                        "type": "array",
                        "x-kubernetes-list-type": "atomic",
                        "items": {"type": "object", "properties": {"key": {"type": "string"}, "tolerationSeconds": {"type": "integer", "format": "int64"}}}
                    },
                    "imageRepoSecret": {"type": "object", "nullable": true, "properties": {"name": {"type": "string"}}},
                    "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {"max": {"type": "integer", "default": 3}}}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
                }
            },
            "status": {
                "type": "object",
                "properties": {
                    "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
                }
            }
        }
    })
}

fn module() -> Schema {
    Schema::compile(&module_schema()).expect("module schema compiles")
}

fn sample_module() -> Value {
    json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "Module",
        "metadata": {"name": "kmm-ci", "namespace": "default", "unknownMeta": true},
        "spec": {
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {
                "container": {
                    "modprobe": {"moduleName": "kmm_ci_a", "extra": "x"},
                    "kernelMappings": [
                        {"regexp": "^.+$", "containerImage": "registry/kmm:${KERNEL_FULL_VERSION}", "typo": 1,
                         "build": {"buildArgs": [{"name": "A", "value": "1", "junk": true}]}},
                        {"literal": "6.1.0", "containerImage": "registry/kmm:6.1.0"}
                    ]
                }
            },
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}, "spec": {"any": "thing"}},
            "limits": {"node-a": {"max": 5, "junk": 1}},
            "unknownTop": {"deep": 1}
        },
        "status": {"conditions": [{"type": "Ready", "free": "form"}], "bogus": 1},
        "extraRoot": 1
    })
}

#[test]
fn module_prune_reports_and_removes_unknown_fields() {
    let mut obj = sample_module();
    let pruned = module().prune(&mut obj);
    assert_eq!(
        pruned,
        [
            "extraRoot",
            "spec.limits.node-a.junk",
            "spec.moduleLoader.container.kernelMappings[0].build.buildArgs[0].junk",
            "spec.moduleLoader.container.kernelMappings[0].typo",
            "spec.moduleLoader.container.modprobe.extra",
            "spec.unknownTop",
            "status.bogus",
        ]
    );
    // Root metadata, embedded resources and preserved objects are kept as they were.
    assert_eq!(obj["metadata"]["unknownMeta"], json!(true));
    assert_eq!(obj["spec"]["template"]["spec"]["any"], json!("thing"));
    assert_eq!(
        obj["spec"]["template"]["metadata"]["labels"]["a"],
        json!("b")
    );
    assert_eq!(obj["status"]["conditions"][0]["free"], json!("form"));
    assert_eq!(obj["spec"]["limits"]["node-a"], json!({"max": 5}));
    assert_eq!(
        obj["spec"]["selector"]["node-role.kubernetes.io/worker"],
        json!("")
    );
    assert!(
        module().prune(&mut obj).is_empty(),
        "pruning twice removes nothing more"
    );
    assert!(
        module().validate(&obj).is_empty(),
        "{:?}",
        module().validate(&obj)
    );
}

#[test]
fn module_defaults_fill_nested_objects_items_and_maps() {
    let mut obj = sample_module();
    module().prune(&mut obj);
    obj["spec"]["limits"]["node-b"] = json!({});
    obj["spec"]["moduleLoader"]["container"]["kernelMappings"][1]["build"] =
        json!({"secrets": [{}, {"name": "s"}], "dockerfileConfigMap": {}});
    module().apply_defaults(&mut obj);
    let spec = &obj["spec"];
    assert_eq!(spec["maxUpdate"], json!(1));
    assert_eq!(
        spec["moduleLoader"]["container"]["imagePullPolicy"],
        json!("IfNotPresent")
    );
    let mappings = &spec["moduleLoader"]["container"]["kernelMappings"];
    // A defaulted `build: {}` receives its own properties' defaults.
    assert_eq!(
        mappings[0]["build"]["baseImageRegistryTLS"],
        json!({"insecure": false, "insecureSkipTLSVerify": false})
    );
    assert_eq!(
        mappings[1]["build"]["secrets"],
        json!([{"name": ""}, {"name": "s"}])
    );
    assert_eq!(
        mappings[1]["build"]["dockerfileConfigMap"],
        json!({"name": ""})
    );
    assert_eq!(spec["limits"]["node-b"], json!({"max": 3}));
    assert_eq!(spec["limits"]["node-a"], json!({"max": 5}));
    assert!(module().validate(&obj).is_empty());
}

#[test]
fn module_defaults_handle_nulls_like_the_server() {
    let mut obj = json!({"spec": {
        "maxUpdate": null,
        "imageRepoSecret": null,
        "selector": null,
        "moduleLoader": {"serviceAccountName": null, "container": {"modprobe": {"moduleName": "m"}}},
        "limits": {"a": null}
    }});
    module().apply_defaults(&mut obj);
    let spec = &obj["spec"];
    assert_eq!(
        spec["maxUpdate"],
        json!(1),
        "non-nullable null with a default is defaulted"
    );
    assert_eq!(
        spec["imageRepoSecret"],
        json!(null),
        "nullable null is kept"
    );
    assert!(
        spec.get("selector").is_none(),
        "non-nullable null without default is dropped"
    );
    assert!(spec["moduleLoader"].get("serviceAccountName").is_none());
    assert!(spec["limits"].get("a").is_none());
    assert_eq!(
        module()
            .validate(&obj)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["spec.selector: Required value"]
    );
}

#[test]
fn module_validation_reports_every_problem() {
    let mut obj = sample_module();
    module().prune(&mut obj);
    let container = &mut obj["spec"]["moduleLoader"]["container"];
    container["imagePullPolicy"] = json!("Sometimes");
    container["modprobe"] = json!({"moduleName": ""});
    container["kernelMappings"][0]["build"]["buildArgs"] =
        json!([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}, {"name": "B"}]);
    container["kernelMappings"][1]["inTreeModulesToRemove"] = json!(["a", "a"]);
    obj["spec"]["maxUpdate"] = json!(true);
    obj["spec"]["tolerations"] = json!([{"key": "k", "tolerationSeconds": "60"}, {"key": "k"}]);
    let got: Vec<String> = module()
        .validate(&obj)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        [
            "spec.maxUpdate: Invalid value: \"boolean\": spec.maxUpdate in body must be of type integer,string: \"boolean\"",
            "spec.maxUpdate: Invalid value: \"\": \"spec.maxUpdate\" must validate at least one schema (anyOf)",
            "spec.maxUpdate: Invalid value: \"boolean\": spec.maxUpdate in body must be of type integer: \"boolean\"",
            "spec.moduleLoader.container.imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
            "spec.moduleLoader.container.modprobe.moduleName: Invalid value: \"\": spec.moduleLoader.container.modprobe.moduleName in body should be at least 1 chars long",
            "spec.moduleLoader.container.kernelMappings[0].build.buildArgs[2].value: Required value",
            "spec.tolerations[0].tolerationSeconds: Invalid value: \"string\": spec.tolerations[0].tolerationSeconds in body must be of type integer: \"string\"",
            "spec.moduleLoader.container.kernelMappings[0].build.buildArgs[1]: Duplicate value: {\"name\":\"A\"}",
            "spec.moduleLoader.container.kernelMappings[1].inTreeModulesToRemove[1]: Duplicate value: \"a\"",
        ]
    );
}

#[test]
fn list_type_lookup_skips_list_positions() {
    let schema = module();
    type Lookup = Option<(ListType, Vec<String>)>;
    let cases: &[(&[&str], Lookup)] = &[
        (&["spec", "tolerations"], Some((ListType::Atomic, vec![]))),
        (
            &[
                "spec",
                "moduleLoader",
                "container",
                "kernelMappings",
                "build",
                "buildArgs",
            ],
            Some((ListType::Map, vec!["name".to_string()])),
        ),
        (
            &[
                "spec",
                "moduleLoader",
                "container",
                "kernelMappings",
                "inTreeModulesToRemove",
            ],
            Some((ListType::Set, vec![])),
        ),
        (
            &["spec", "moduleLoader", "container", "kernelMappings"],
            None,
        ),
        (&["spec", "nope"], None),
        (&[], None),
    ];
    for (path, expected) in cases {
        assert_eq!(schema.list_type_at(path), *expected, "{path:?}");
    }
}

#[test]
fn prune_without_schema_below_additional_properties_true() {
    let schema = Schema::compile(&field_schema(
        json!({"type": "object", "additionalProperties": true}),
    ))
    .expect("schema compiles");
    let mut obj = json!({"spec": {"x": {"a": 1, "b": {"c": 2}, "l": [{"d": 3}]}}});
    let pruned = schema.prune(&mut obj);
    assert_eq!(pruned, ["spec.x.b.c", "spec.x.l[0].d"]);
    assert_eq!(obj["spec"]["x"], json!({"a": 1, "b": {}, "l": [{}]}));
}

#[test]
fn preserve_unknown_fields_still_prunes_declared_properties() {
    let schema = Schema::compile(&field_schema(json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}
    })))
    .expect("schema compiles");
    let mut obj = json!({"spec": {"x": {"free": {"z": 1}, "known": {"a": "x", "b": 1}}}});
    assert_eq!(schema.prune(&mut obj), ["spec.x.known.b"]);
    assert_eq!(obj["spec"]["x"]["free"], json!({"z": 1}));
}
