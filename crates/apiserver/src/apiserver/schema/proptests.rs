//! Property tests: no input panics, pruning is idempotent and keeps declared fields.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::Schema;
use super::compile::{Node, compile_node};
use super::formats::StringFormat;
use super::pattern;

const KEYS: [&str; 6] = ["a", "b", "c", "apiVersion", "kind", "metadata"];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS.to_vec()).prop_map(str::to_string)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        prop::sample::select(vec!["", "a", "abc", "2024-01-01T00:00:00Z", "é", "10%"])
            .prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

fn scalar_schema() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["string", "integer", "number", "boolean", ""]),
        any::<bool>(),
        prop::option::of(0u64..4),
        prop::option::of(prop::sample::select(vec!["^a", "[0-9]+", "\\d\\w", "^$"])),
        prop::option::of(prop::sample::select(vec![
            "int32",
            "date-time",
            "byte",
            "uuid",
            "float",
        ])),
        prop::option::of(-5i64..5),
        prop::option::of(prop::sample::select(vec![0.5, 2.0, 3.0])),
        prop::option::of(prop::collection::vec(json_value(), 0..3)),
        prop::option::of(json_value()),
        any::<bool>(),
    )
        .prop_map(
            |(ty, nullable, len, pattern, format, bound, multiple, enumeration, default, ios)| {
                let mut s = Map::new();
                if !ty.is_empty() {
                    s.insert("type".into(), json!(ty));
                }
                s.insert("nullable".into(), json!(nullable));
                if let Some(len) = len {
                    s.insert("maxLength".into(), json!(len));
                    s.insert("minLength".into(), json!(len / 2));
                }
                if let Some(p) = pattern {
                    s.insert("pattern".into(), json!(p));
                }
                if let Some(f) = format {
                    s.insert("format".into(), json!(f));
                }
                if let Some(b) = bound {
                    s.insert("minimum".into(), json!(b));
                    s.insert("maximum".into(), json!(b + 3));
                    s.insert("exclusiveMaximum".into(), json!(b % 2 == 0));
                }
                if let Some(m) = multiple {
                    s.insert("multipleOf".into(), json!(m));
                }
                if let Some(e) = enumeration {
                    s.insert("enum".into(), Value::Array(e));
                }
                if let Some(d) = default {
                    s.insert("default".into(), d);
                }
                if ios {
                    s.insert("x-kubernetes-int-or-string".into(), json!(true));
                }
                Value::Object(s)
            },
        )
}

fn schema_value() -> impl Strategy<Value = Value> {
    scalar_schema().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            (
                prop::collection::vec((key(), inner.clone()), 0..4),
                prop::collection::vec(key(), 0..2),
                prop::option::of(prop_oneof![
                    any::<bool>().prop_map(Value::Bool),
                    inner.clone()
                ]),
                any::<bool>(),
                any::<bool>(),
                prop::option::of(0u64..3),
            )
                .prop_map(
                    |(props, required, additional, preserve, embedded, max_props)| {
                        let mut s = Map::new();
                        s.insert("type".into(), json!("object"));
                        let properties: Map<String, Value> = props.into_iter().collect();
                        s.insert("properties".into(), Value::Object(properties));
                        s.insert("required".into(), json!(required));
                        if let Some(a) = additional {
                            s.insert("additionalProperties".into(), a);
                        }
                        s.insert(
                            "x-kubernetes-preserve-unknown-fields".into(),
                            json!(preserve),
                        );
                        s.insert("x-kubernetes-embedded-resource".into(), json!(embedded));
                        if let Some(m) = max_props {
                            s.insert("maxProperties".into(), json!(m));
                        }
                        Value::Object(s)
                    }
                ),
            (
                prop::option::of(inner.clone()),
                prop::option::of(prop::sample::select(vec!["atomic", "set", "map"])),
                prop::collection::vec(key(), 0..2),
                prop::option::of(0u64..3),
            )
                .prop_map(|(items, list_type, map_keys, max_items)| {
                    let mut s = Map::new();
                    s.insert("type".into(), json!("array"));
                    if let Some(items) = items {
                        s.insert("items".into(), items);
                    }
                    if let Some(t) = list_type {
                        s.insert("x-kubernetes-list-type".into(), json!(t));
                        s.insert("x-kubernetes-list-map-keys".into(), json!(map_keys));
                    }
                    if let Some(m) = max_items {
                        s.insert("maxItems".into(), json!(m));
                        s.insert("minItems".into(), json!(1));
                    }
                    Value::Object(s)
                }),
            (
                prop::sample::select(vec!["anyOf", "allOf", "oneOf"]),
                prop::collection::vec(inner.clone(), 1..3),
                prop::option::of(inner),
            )
                .prop_map(|(keyword, branches, not)| {
                    let mut s = Map::new();
                    s.insert(keyword.into(), Value::Array(branches));
                    if let Some(not) = not {
                        s.insert("not".into(), not);
                    }
                    Value::Object(s)
                }),
        ]
    })
}

/// Asserts that every key `pruned` lost from `original` is undeclared by `node`.
fn assert_declared_fields_kept(node: Option<&Node>, original: &Value, pruned: &Value) {
    match (original, pruned) {
        (Value::Object(before), Value::Object(after)) => {
            for (key, value) in before {
                let schema = node.and_then(|n| n.property(key));
                if schema.is_some() {
                    assert!(after.contains_key(key), "declared field {key} was pruned");
                }
                if let Some(kept) = after.get(key) {
                    assert_declared_fields_kept(schema, value, kept);
                }
            }
        }
        (Value::Array(before), Value::Array(after)) => {
            assert_eq!(before.len(), after.len(), "pruning never drops list items");
            let items = node.and_then(|n| n.items.as_deref());
            for (b, a) in before.iter().zip(after) {
                assert_declared_fields_kept(items, b, a);
            }
        }
        (b, a) => assert_eq!(b, a, "pruning never changes scalars"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn formats_and_patterns_never_panic(input in any::<String>(), regex in any::<String>()) {
        for name in ["date-time", "date", "byte", "uuid", "uuid4", "ipv4", "ipv6", "cidr", "mac",
                     "hostname", "hexcolor", "bsonobjectid", "k8s-short-name", "k8s-long-name"] {
            if let Some(format) = StringFormat::parse(name) {
                format.accepts(&input);
            }
        }
        if let Ok(compiled) = pattern::compile(&regex) {
            compiled.is_match(&input);
        }
    }

    #[test]
    fn arbitrary_json_as_schema_never_panics(schema in json_value(), obj in json_value()) {
        if let Ok(compiled) = Schema::compile(&schema) {
            let mut obj = obj;
            compiled.prune(&mut obj);
            compiled.apply_defaults(&mut obj);
            compiled.validate(&obj);
        }
    }

    #[test]
    fn generated_schemas_never_panic(schema in schema_value(), obj in json_value(), old in json_value()) {
        let compiled = Schema::compile(&schema).expect("generated schemas are well-formed");
        let mut obj = obj;
        compiled.validate(&obj);
        compiled.prune(&mut obj);
        compiled.apply_defaults(&mut obj);
        compiled.validate(&obj);
        compiled.validate_update(&obj, &old);
        for path in [&["a"][..], &["a", "b"], &["b", "c", "a"], &[]] {
            compiled.list_type_at(path);
        }
        for error in compiled.validate(&obj) {
            prop_assert!(!error.to_string().is_empty());
            prop_assert!(!error.kind.reason().is_empty());
        }
    }

    #[test]
    fn prune_is_idempotent_and_keeps_declared_fields(schema in schema_value(), obj in json_value()) {
        let compiled = Schema::compile(&schema).expect("generated schemas are well-formed");
        let node = compile_node(&schema, "").expect("generated schemas are well-formed");
        let original = obj.clone();
        let mut once = obj;
        let removed = compiled.prune(&mut once);
        assert_declared_fields_kept(Some(&node), &original, &once);
        let mut twice = once.clone();
        prop_assert_eq!(compiled.prune(&mut twice), Vec::<String>::new());
        prop_assert_eq!(&twice, &once);
        prop_assert_eq!(removed.is_empty(), original == once);
        let mut sorted = removed.clone();
        sorted.sort();
        prop_assert_eq!(sorted, removed);
    }
}
