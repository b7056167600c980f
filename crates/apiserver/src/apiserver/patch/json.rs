//! JSON Patch (RFC 6902), served for `application/json-patch+json`, within kube-apiserver's bounds: at most
//! [`MAX_OPERATIONS`] operations, and `copy` operations copying at most [`MAX_COPIED_BYTES`] in all, so a short
//! patch of self-doubling copies cannot make the server build a document of gigabytes.

use serde_json::Value;

use super::PatchError;

/// The most operations a JSON patch may hold, as in kube-apiserver.
pub(super) const MAX_OPERATIONS: usize = 10_000;

/// The most bytes the `copy` operations of one patch may copy in all (the request body limit): with the body and
/// the object itself bounded too, this bounds the patched document.
pub(super) const MAX_COPIED_BYTES: usize = 3 * 1024 * 1024;

/// Applies an RFC 6902 JSON Patch (`add`, `remove`, `replace`, `move`, `copy`, `test`) to `target`.
///
/// The patch is all or nothing: when any operation fails, `target` is left exactly as it was and
/// the error names the operation (by position and `op`) and the path that failed.
pub(crate) fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let operations = parse_operations(patch)?;
    let mut patched = target.clone();
    let mut copied = 0;
    for (index, operation) in operations.iter().enumerate() {
        if let json_patch::PatchOperation::Copy(copy) = operation {
            let from = patched.pointer(copy.from.as_str());
            copied += from.map_or(0, |v| size_within(v, MAX_COPIED_BYTES - copied));
            if copied > MAX_COPIED_BYTES {
                return Err(PatchError::TooMuchCopied {
                    index,
                    limit: MAX_COPIED_BYTES,
                });
            }
        }
        json_patch::patch_unsafe(&mut patched, std::slice::from_ref(operation)).map_err(
            |error| PatchError::OperationFailed {
                index,
                op: operation_name(patch, index),
                path: error.path.to_string(),
                reason: error.kind.to_string(),
            },
        )?;
    }
    *target = patched;
    Ok(())
}

/// The size of `value` serialised (roughly: punctuation is counted, escapes are not), counted only until it
/// passes `budget`: the walk costs no more than the budget however large the value is.
fn size_within(value: &Value, budget: usize) -> usize {
    let mut size = 0;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        size += match value {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 8,
            Value::String(s) => s.len() + 2,
            Value::Array(items) => {
                pending.extend(items);
                items.len() + 2
            }
            Value::Object(fields) => {
                size += fields.keys().map(|k| k.len() + 4).sum::<usize>();
                pending.extend(fields.values());
                2
            }
        };
        if size > budget {
            break;
        }
    }
    size
}

/// Reads the patch document, reporting which operation is malformed when it does not parse.
fn parse_operations(patch: &Value) -> Result<Vec<json_patch::PatchOperation>, PatchError> {
    let Value::Array(operations) = patch else {
        return Err(PatchError::InvalidDocument(
            "a JSON patch must be an array of operations".to_owned(),
        ));
    };
    if operations.len() > MAX_OPERATIONS {
        return Err(PatchError::TooManyOperations {
            count: operations.len(),
            limit: MAX_OPERATIONS,
        });
    }
    operations
        .iter()
        .enumerate()
        .map(|(index, operation)| {
            serde_json::from_value(operation.clone()).map_err(|error| {
                PatchError::InvalidDocument(format!("operation {index} is malformed: {error}"))
            })
        })
        .collect()
}

/// The `op` of the operation at `index`, for error messages.
fn operation_name(patch: &Value, index: usize) -> String {
    patch
        .get(index)
        .and_then(|operation| operation.get("op"))
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::arbitrary_json;
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {
                "replicas": 1,
                "template": {"spec": {"containers": [
                    {"name": "app", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]}
                ]}}
            }
        })
    }

    #[test]
    fn applies_each_operation_kind() {
        let cases = [
            (
                json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]),
                json!(3),
                "/spec/replicas",
            ),
            (
                json!([{"op": "add", "path": "/metadata/labels/tier", "value": "fe"}]),
                json!("fe"),
                "/metadata/labels/tier",
            ),
            (
                json!([{"op": "add", "path": "/spec/template/spec/containers/0/env/-", "value": {"name": "B"}}]),
                json!({"name": "B"}),
                "/spec/template/spec/containers/0/env/1",
            ),
            (
                json!([{"op": "copy", "from": "/metadata/labels", "path": "/spec/selector"}]),
                json!({"app": "web"}),
                "/spec/selector",
            ),
            (
                json!([{"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/name"}]),
                json!("web"),
                "/metadata/labels/name",
            ),
            (
                json!([
                    {"op": "test", "path": "/spec/replicas", "value": 1},
                    {"op": "remove", "path": "/metadata/labels/app"}
                ]),
                json!({}),
                "/metadata/labels",
            ),
        ];
        for (patch, expected, pointer) in cases {
            let mut target = deployment();
            json_patch(&mut target, &patch).unwrap();
            assert_eq!(target.pointer(pointer), Some(&expected), "patch {patch}");
        }
    }

    #[test]
    fn failures_leave_the_target_untouched_and_name_the_operation() {
        let cases = [
            (
                json!([
                    {"op": "replace", "path": "/spec/replicas", "value": 5},
                    {"op": "test", "path": "/spec/replicas", "value": 1}
                ]),
                "json patch operation 1 (test) failed at path \"/spec/replicas\"",
            ),
            (
                json!([{"op": "remove", "path": "/spec/missing"}]),
                "json patch operation 0 (remove) failed at path \"/spec/missing\"",
            ),
            (
                json!([{"op": "add", "path": "/nothing/here", "value": 1}]),
                "json patch operation 0 (add) failed at path \"/nothing/here\"",
            ),
            (
                json!([{"op": "move", "from": "/spec", "path": "/spec/inner"}]),
                "json patch operation 0 (move)",
            ),
            (
                json!([{"op": "frobnicate", "path": "/spec"}]),
                "invalid patch document: operation 0 is malformed",
            ),
            (
                json!({"op": "add"}),
                "invalid patch document: a JSON patch must be an array",
            ),
        ];
        for (patch, expected) in cases {
            let mut target = deployment();
            let error = json_patch(&mut target, &patch).unwrap_err();
            assert!(
                error.to_string().starts_with(expected),
                "{error} should start with {expected}"
            );
            assert_eq!(target, deployment());
        }
    }

    fn arbitrary_operation() -> impl Strategy<Value = Value> {
        let pointer =
            prop::collection::vec(prop_oneof!["[a-c]", "[0-2]", Just("-".to_owned())], 0..4)
                .prop_map(|parts| {
                    parts
                        .iter()
                        .map(|part| format!("/{part}"))
                        .collect::<String>()
                });
        (
            prop_oneof![
                Just("add"),
                Just("remove"),
                Just("replace"),
                Just("move"),
                Just("copy"),
                Just("test")
            ],
            pointer.clone(),
            pointer,
            arbitrary_json(),
        )
            .prop_map(|(op, path, from, value)| {
                json!({"op": op, "path": path, "from": from, "value": value})
            })
    }

    #[test]
    fn operations_and_copies_are_bounded() {
        let mut target = json!({"a": "x".repeat(1024)});
        let tests = Value::Array(vec![
            json!({"op": "test", "path": "/a", "value": 1});
            MAX_OPERATIONS + 1
        ]);
        let error = json_patch(&mut target, &tests).unwrap_err();
        assert!(
            matches!(error, PatchError::TooManyOperations { count, .. } if count == MAX_OPERATIONS + 1)
        );
        let mut doubling = vec![json!({"op": "add", "path": "/b", "value": []})];
        doubling.push(json!({"op": "copy", "from": "/a", "path": "/b/-"}));
        doubling.extend((0..20).map(|_| json!({"op": "copy", "from": "/b", "path": "/b/-"})));
        let error = json_patch(&mut target, &Value::Array(doubling)).unwrap_err();
        assert!(
            matches!(error, PatchError::TooMuchCopied { index, .. } if index < 15),
            "{error}"
        );
        assert_eq!(target, json!({"a": "x".repeat(1024)}));
    }

    proptest! {
        #[test]
        fn never_panics_and_is_atomic(
            target in arbitrary_json(),
            operations in prop::collection::vec(arbitrary_operation(), 0..5),
            raw in arbitrary_json(),
        ) {
            let mut patched = target.clone();
            if json_patch(&mut patched, &Value::Array(operations)).is_err() {
                prop_assert_eq!(&patched, &target);
            }
            let mut patched = target.clone();
            if json_patch(&mut patched, &raw).is_err() {
                prop_assert_eq!(&patched, &target);
            }
        }
    }
}
