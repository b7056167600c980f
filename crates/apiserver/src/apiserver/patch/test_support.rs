//! What the patch appliers' tests share: generators for the property tests, and list semantics with every list
//! atomic.

use proptest::prelude::*;
use serde_json::Value;

use super::{ListKind, ListTypes};

/// List semantics of objects whose schema declares no list types (custom resources without
/// `x-kubernetes-list-type`): every list is atomic, `metadata` included.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct AtomicLists;

impl ListTypes for AtomicLists {
    fn list_kind(&self, _path: &[&str]) -> ListKind {
        ListKind::Atomic
    }
}

/// Scalars with a small alphabet, so that generated objects and patches share keys and values.
fn arbitrary_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-2.0f64..2.0).prop_map(Value::from),
        "[a-c]{0,2}".prop_map(Value::from),
    ]
}

/// Arbitrary nested JSON values of maps, lists and scalars.
pub(super) fn arbitrary_json() -> impl Strategy<Value = Value> {
    arbitrary_scalar().prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-d]", inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Keys that name ordinary fields, merge keys of the built-in kinds and every patch directive.
fn arbitrary_key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c]".prop_map(String::from),
        Just("name".to_owned()),
        Just("containers".to_owned()),
        Just("finalizers".to_owned()),
        Just("$patch".to_owned()),
        Just("$retainKeys".to_owned()),
        Just("$setElementOrder/containers".to_owned()),
        Just("$setElementOrder/finalizers".to_owned()),
        Just("$deleteFromPrimitiveList/finalizers".to_owned()),
        Just("$deleteFromPrimitiveList".to_owned()),
        Just("$setElementOrder".to_owned()),
    ]
}

/// Values that are often directive arguments.
fn arbitrary_directive_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::from("replace")),
        Just(Value::from("merge")),
        Just(Value::from("delete")),
        "[a-c]".prop_map(Value::from),
        arbitrary_scalar(),
    ]
}

/// Arbitrary nested values whose keys include directives and merge keys, to exercise every branch
/// of the strategic merge patch and of server-side apply.
pub(super) fn arbitrary_object_with_directives() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![arbitrary_directive_value(), arbitrary_scalar()];
    let value = leaf.prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((arbitrary_key(), inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    });
    prop::collection::vec((arbitrary_key(), value), 0..5)
        .prop_map(|entries| Value::Object(entries.into_iter().collect()))
}
