//! JSON merge patch (RFC 7386), served for `application/merge-patch+json`.

use serde_json::{Map, Value};

/// Applies an RFC 7386 merge patch to `target` in place.
///
/// Objects merge key by key, `null` removes a key, and every other value (lists included)
/// replaces what was there. A patch that is not an object replaces the whole target, which is
/// what the RFC prescribes; the API server rejects such patches before calling this.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target_fields) = target {
        for (key, patch_value) in patch_fields {
            if patch_value.is_null() {
                target_fields.shift_remove(key);
            } else {
                merge_patch(
                    target_fields.entry(key.clone()).or_insert(Value::Null),
                    patch_value,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::arbitrary_json;
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// The examples of RFC 7386 appendix A, plus a Kubernetes-shaped one.
    #[test]
    fn follows_rfc_7386_examples() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
            (
                json!({"metadata": {"labels": {"app": "web", "tier": "fe"}}, "spec": {"replicas": 1}}),
                json!({"metadata": {"labels": {"tier": null}}, "spec": {"replicas": 3}}),
                json!({"metadata": {"labels": {"app": "web"}}, "spec": {"replicas": 3}}),
            ),
        ];
        for (target, patch, expected) in cases {
            let mut result = target.clone();
            merge_patch(&mut result, &patch);
            assert_eq!(result, expected, "target {target} patch {patch}");
        }
    }

    proptest! {
        #[test]
        fn applying_a_patch_twice_changes_nothing(target in arbitrary_json(), patch in arbitrary_json()) {
            let mut once = target.clone();
            merge_patch(&mut once, &patch);
            let mut twice = once.clone();
            merge_patch(&mut twice, &patch);
            prop_assert_eq!(once, twice);
        }
    }
}
