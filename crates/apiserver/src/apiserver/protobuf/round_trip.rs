//! Property: for every served built-in kind, any object (as the JSON path stores it) survives JSON → protobuf →
//! JSON unchanged, and every field the descriptors name is a field k8s-openapi knows under the same JSON name.
//!
//! Objects are generated from the message descriptors themselves, seeded by proptest: every field may appear, with
//! values of its type (times, quantities, int-or-string, raw JSON and the schema unions in their JSON forms).

use base64::Engine;
use proptest::prelude::*;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};
use std::collections::HashSet;

use super::json_form::{is_inline, is_items_wrapper, json_name, special};
use super::{JSON_ONLY, decode_body, encode_body, message_for};
use crate::apiserver::builtin;
use crate::apiserver::registry::{Origin, Registry, ResourceType};

/// How deep nested messages go; deeper fields are left out so objects stay a readable size.
const MAX_DEPTH: usize = 6;

struct Generator {
    rng: StdRng,
    /// Fields always written: the ones k8s-openapi requires, learned from its "missing field" errors.
    required: HashSet<String>,
}

impl Generator {
    fn message(&mut self, descriptor: &MessageDescriptor, depth: usize) -> Value {
        match descriptor.full_name() {
            special::TIME => json!(self.time(false)),
            special::MICRO_TIME => json!(self.time(true)),
            special::QUANTITY => {
                const QUANTITIES: &[&str] = &["1", "250m", "2Gi", "1.5", "500Mi", "4k"];
                json!(QUANTITIES[self.rng.random_range(0..QUANTITIES.len())])
            }
            special::INT_OR_STRING => {
                if self.rng.random_bool(0.5) {
                    json!(self.rng.random_range(0..10_000))
                } else {
                    json!(format!("{}%", self.rng.random_range(0..100)))
                }
            }
            special::RAW_EXTENSION | special::CRD_JSON => {
                json!({"key": self.word(), "n": self.rng.random_range(0..100), "list": [true, null]})
            }
            special::FIELDS_V1 => json!({"f:metadata": {"f:labels": {}}}),
            special::SCHEMA_OR_ARRAY => {
                let schema = self.schema(descriptor, depth);
                if self.rng.random_bool(0.3) {
                    json!([schema])
                } else {
                    schema
                }
            }
            special::SCHEMA_OR_BOOL => {
                if self.rng.random_bool(0.5) {
                    json!(self.rng.random_bool(0.5))
                } else {
                    self.schema(descriptor, depth)
                }
            }
            special::SCHEMA_OR_STRINGS => {
                if self.rng.random_bool(0.5) {
                    json!([self.word(), self.word()])
                } else {
                    self.schema(descriptor, depth)
                }
            }
            _ if is_items_wrapper(descriptor) => json!([self.word()]),
            _ => {
                let mut object = Map::new();
                for field in descriptor.fields() {
                    if is_inline(&field) {
                        let Kind::Message(embedded) = field.kind() else {
                            continue;
                        };
                        if let Value::Object(inner) =
                            self.message(&embedded, depth.saturating_sub(1))
                        {
                            object.extend(inner);
                        }
                        continue;
                    }
                    let nested = matches!(field.kind(), Kind::Message(ref m) if !is_leaf(m));
                    let name = json_name(&field);
                    let wanted = self.rng.random_bool(0.35);
                    if !self.required.contains(&name) && ((nested && depth == 0) || !wanted) {
                        continue;
                    }
                    let value = self.field(&field, depth.saturating_sub(1));
                    object.insert(name, value);
                }
                Value::Object(object)
            }
        }
    }

    /// A `JSONSchemaProps` for one of the schema unions.
    fn schema(&mut self, union: &MessageDescriptor, depth: usize) -> Value {
        let schema = union
            .get_field_by_name("schema")
            .and_then(|f| f.kind().as_message().cloned())
            .expect("schema unions hold a schema");
        if depth == 0 {
            return json!({"type": "string"});
        }
        self.message(&schema, depth - 1)
    }

    fn field(&mut self, field: &FieldDescriptor, depth: usize) -> Value {
        let count = self.rng.random_range(1..=2);
        if field.is_map() {
            let entry = field.kind();
            let value_field = entry
                .as_message()
                .expect("map entry")
                .map_entry_value_field();
            let mut object = Map::new();
            for _ in 0..count {
                object.insert(self.word(), self.scalar(&value_field, depth));
            }
            return Value::Object(object);
        }
        if field.is_list() {
            return Value::Array((0..count).map(|_| self.scalar(field, depth)).collect());
        }
        self.scalar(field, depth)
    }

    fn scalar(&mut self, field: &FieldDescriptor, depth: usize) -> Value {
        match field.kind() {
            Kind::Message(m) => self.message(&m, depth),
            Kind::String => json!(self.word()),
            Kind::Bytes => {
                let bytes: Vec<u8> = (0..self.rng.random_range(1..8))
                    .map(|_| self.rng.random())
                    .collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            }
            Kind::Bool => json!(self.rng.random_bool(0.5)),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                json!(self.rng.random_range(-5..100_000i32))
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                json!(self.rng.random_range(-5..10_000_000_000i64))
            }
            Kind::Uint32 | Kind::Fixed32 => json!(self.rng.random_range(0..100_000u32)),
            Kind::Uint64 | Kind::Fixed64 => json!(self.rng.random_range(0..10_000_000u64)),
            Kind::Double | Kind::Float => json!(f64::from(self.rng.random_range(0..400i32)) / 4.0),
            Kind::Enum(_) => json!(0),
        }
    }

    fn word(&mut self) -> String {
        const WORDS: &[&str] = &[
            "alpha",
            "web",
            "kube-system",
            "app.kubernetes.io/name",
            "x",
            "Ready",
            "sha256:ab12",
            "héllo",
            "a b",
            "v1",
        ];
        WORDS[self.rng.random_range(0..WORDS.len())].to_string()
    }

    fn time(&mut self, micro: bool) -> String {
        let seconds = self.rng.random_range(0..4_000_000_000i64);
        let timestamp = jiff::Timestamp::from_second(seconds).expect("in range");
        if micro {
            let micros = self.rng.random_range(0..1_000_000);
            format!("{}.{micros:06}Z", timestamp.strftime("%Y-%m-%dT%H:%M:%S"))
        } else {
            timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
        }
    }
}

/// Messages generated as one value regardless of depth.
fn is_leaf(descriptor: &MessageDescriptor) -> bool {
    matches!(
        descriptor.full_name(),
        special::TIME
            | special::MICRO_TIME
            | special::QUANTITY
            | special::INT_OR_STRING
            | special::RAW_EXTENSION
            | special::CRD_JSON
            | special::FIELDS_V1
    )
}

/// Empty strings and empty lists carry no information in either encoding (Go writes an unset string as empty and
/// cannot tell a nil list from an empty one; k8s-openapi writes required ones out), so the comparison leaves them out.
fn without_empties(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| {
                    v.as_str() != Some("") && v.as_array().is_none_or(|a| !a.is_empty())
                })
                .map(|(k, v)| (k.clone(), without_empties(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_empties).collect()),
        other => other.clone(),
    }
}

fn served_builtins() -> Vec<std::sync::Arc<ResourceType>> {
    Registry::with_builtins()
        .all()
        .into_iter()
        .filter(|rt| matches!(rt.origin, Origin::Builtin))
        .filter(|rt| !JSON_ONLY.contains(&(rt.group.as_str(), rt.kind.as_str())))
        .collect()
}

#[test]
fn the_kinds_served_in_json_only_have_no_message() {
    for (group, kind) in JSON_ONLY {
        let registry = Registry::with_builtins();
        let rt = registry
            .all()
            .into_iter()
            .find(|rt| rt.group == *group && rt.kind == *kind)
            .expect("a served kind");
        assert!(
            message_for(&rt.api_version(&rt.storage_version), kind).is_none(),
            "{kind} has a message now"
        );
    }
}

#[test]
fn every_served_builtin_kind_has_a_message() {
    for rt in served_builtins() {
        for version in &rt.versions {
            assert!(
                message_for(&rt.api_version(version), &rt.kind).is_some(),
                "{} {} has no protobuf message",
                rt.api_version(version),
                rt.kind
            );
        }
    }
}

/// A generated object of `rt`'s kind as the JSON path stores it: generated again with every field k8s-openapi
/// says is missing until it decodes.
fn stored_object(rt: &ResourceType, seed: u64) -> Result<Value, TestCaseError> {
    let api_version = rt.api_version(&rt.storage_version);
    let descriptor = message_for(&api_version, &rt.kind).expect("checked above");
    let mut required = HashSet::new();
    loop {
        let mut generator = Generator {
            rng: StdRng::seed_from_u64(seed),
            required: required.clone(),
        };
        let mut object = generator.message(&descriptor, MAX_DEPTH);
        object["apiVersion"] = json!(api_version);
        object["kind"] = json!(rt.kind);
        match builtin::decode(rt, &mut object, None) {
            Ok(unknown) => {
                prop_assert!(
                    unknown.is_empty(),
                    "{}: fields named differently from k8s-openapi: {unknown:?}",
                    rt.kind
                );
                return Ok(object);
            }
            Err(e) => {
                let missing = e
                    .message
                    .split_once("missing field `")
                    .and_then(|(_, rest)| rest.split_once('`'))
                    .map(|(name, _)| name.to_string());
                match missing {
                    Some(name) if required.insert(name.clone()) => {}
                    _ => return Err(TestCaseError::fail(format!("{}: {}", rt.kind, e.message))),
                }
            }
        }
    }
}

fn check_round_trip(rt: &ResourceType, seed: u64) -> Result<(), TestCaseError> {
    let object = stored_object(rt, seed)?;
    let body = encode_body(&object)
        .map_err(|e| TestCaseError::fail(format!("encoding {}: {}", rt.kind, e.message)))?;
    let mut back = decode_body(&body)
        .map_err(|e| TestCaseError::fail(format!("decoding {}: {}", rt.kind, e.message)))?;
    // What is stored passes through the same decoding as a JSON body, which spells out the type of embedded
    // objects (a StatefulSet's volume claim templates) that protobuf leaves implicit.
    builtin::decode(rt, &mut back, None)
        .map_err(|e| TestCaseError::fail(format!("storing {}: {}", rt.kind, e.message)))?;
    prop_assert_eq!(
        without_empties(&back),
        without_empties(&object),
        "{}",
        rt.kind
    );
    Ok(())
}

proptest! {
    #[test]
    fn json_protobuf_json_round_trips_every_builtin_kind(seed in any::<u64>()) {
        for rt in served_builtins() {
            check_round_trip(&rt, seed)?;
        }
    }
}
