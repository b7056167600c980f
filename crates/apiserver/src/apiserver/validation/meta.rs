//! Rules every object's metadata follows, and the label selectors workloads carry: label and annotation keys and
//! values, owner references, selectors' operators, and whether a selector matches a set of labels.

use serde_json::{Value, json};

use super::field::{Errors, child, entries, index, items, text};
use kmm_api::validation::names;

/// The sum of an object's annotations kube-apiserver accepts (256 KiB).
const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

/// Labels, annotations, finalizers and owner references of `meta`, found at `path`.
pub(super) fn object_meta(meta: Option<&Value>, path: &str) -> Errors {
    let mut errors = Errors::default();
    let Some(meta) = meta else {
        return errors;
    };
    labels(&mut errors, meta.get("labels"), &child(path, "labels"));
    annotations(
        &mut errors,
        meta.get("annotations"),
        &child(path, "annotations"),
    );
    for finalizer in items(meta, "finalizers") {
        let name = finalizer.as_str().unwrap_or("");
        errors.invalid_each(
            &child(path, "finalizers"),
            name,
            names::qualified_name_errors(name),
        );
    }
    owner_references(&mut errors, items(meta, "ownerReferences"), path);
    errors
}

/// Keys must be qualified names and values label values; kube-apiserver names the map, not the key, as the field.
pub(super) fn labels(errors: &mut Errors, labels: Option<&Value>, path: &str) {
    for (key, value) in labels.and_then(Value::as_object).into_iter().flatten() {
        errors.invalid_each(path, key, names::qualified_name_errors(key));
        let value = value.as_str().unwrap_or("");
        errors.invalid_each(path, value, names::label_value_errors(value));
    }
}

fn annotations(errors: &mut Errors, annotations: Option<&Value>, path: &str) {
    let mut total = 0;
    for (key, value) in annotations.and_then(Value::as_object).into_iter().flatten() {
        errors.invalid_each(path, key, names::qualified_name_errors(&key.to_lowercase()));
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > ANNOTATIONS_MAX_BYTES {
        errors.too_long(path, ANNOTATIONS_MAX_BYTES);
    }
}

fn owner_references(errors: &mut Errors, references: &[Value], path: &str) {
    let at = child(path, "ownerReferences");
    for reference in references {
        for (field, what) in [
            ("apiVersion", "version"),
            ("kind", "kind"),
            ("name", "name"),
            ("uid", "uid"),
        ] {
            if text(reference, field).is_empty() {
                errors.invalid(
                    &child(&at, field),
                    &json!(""),
                    &format!("{what} must not be empty"),
                );
            }
        }
    }
    let controllers: Vec<&str> = references
        .iter()
        .filter(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| text(r, "name"))
        .collect();
    if controllers.len() > 1 {
        errors.invalid(
            &at,
            &Value::Array(references.to_vec()),
            &format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        );
    }
}

/// A `metav1.LabelSelector` at `path`: label rules for `matchLabels`, and operators that fit their values.
pub(super) fn label_selector(errors: &mut Errors, selector: &Value, path: &str) {
    labels(
        errors,
        selector.get("matchLabels"),
        &child(path, "matchLabels"),
    );
    let expressions = child(path, "matchExpressions");
    for (i, expression) in items(selector, "matchExpressions").iter().enumerate() {
        let at = index(&expressions, i);
        let has_values = !items(expression, "values").is_empty();
        match text(expression, "operator") {
            "In" | "NotIn" if !has_values => errors.required(
                &child(&at, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            ),
            "Exists" | "DoesNotExist" if has_values => errors.forbidden(
                &child(&at, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errors.invalid(
                &child(&at, "operator"),
                &json!(other),
                "not a valid selector operator",
            ),
        }
        let key = text(expression, "key");
        errors.invalid_each(&child(&at, "key"), key, names::qualified_name_errors(key));
    }
}

/// Whether a selector selects nothing at all (no labels, no expressions): workloads refuse one, for it would
/// claim every pod of the namespace.
pub(super) fn selector_is_empty(selector: &Value) -> bool {
    entries(selector, "matchLabels").next().is_none()
        && items(selector, "matchExpressions").is_empty()
}

/// Whether `selector` selects an object with `labels`.
pub(super) fn selector_matches(selector: &Value, labels: Option<&Value>) -> bool {
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    let by_labels = entries(selector, "matchLabels").all(|(k, v)| label(k) == v.as_str());
    by_labels
        && items(selector, "matchExpressions").iter().all(|e| {
            let value = label(text(e, "key"));
            let listed = || items(e, "values").iter().any(|v| v.as_str() == value);
            match text(e, "operator") {
                "In" => value.is_some() && listed(),
                "NotIn" => value.is_none() || !listed(),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

/// A map of labels as kube-apiserver prints it in an error: `map[string]string{"app":"web"}`, keys sorted.
pub(super) fn show_labels(labels: Option<&Value>) -> String {
    let mut pairs: Vec<(&String, &Value)> = labels
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .collect();
    pairs.sort_by_key(|(k, _)| *k);
    let body = pairs
        .iter()
        .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or("")))
        .collect::<Vec<_>>()
        .join(", ");
    if labels.is_none() {
        return "map[string]string(nil)".into();
    }
    format!("map[string]string{{{body}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_as_the_controllers_do() {
        let selector = json!({"matchLabels": {"app": "a"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]},
                                 {"key": "canary", "operator": "DoesNotExist"}]});
        assert!(selector_matches(
            &selector,
            Some(&json!({"app": "a", "tier": "web"}))
        ));
        assert!(!selector_matches(
            &selector,
            Some(&json!({"app": "a", "tier": "db"}))
        ));
        assert!(!selector_matches(
            &selector,
            Some(&json!({"app": "a", "tier": "web", "canary": "1"}))
        ));
        assert!(!selector_matches(&selector, None));
        assert!(selector_is_empty(&json!({})));
    }
}
