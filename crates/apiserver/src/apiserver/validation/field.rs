//! Field errors worded as kube-apiserver words them, so a refusal here reads exactly like one from a real
//! cluster: `spec.containers[0].name: Invalid value: "Foo_Bar": a lowercase RFC 1123 label must ...`.
//!
//! Every rule appends to one [`Errors`] list, and the whole list becomes one 422, as kube-apiserver reports every
//! problem of an object at once rather than the first.

use serde_json::Value;

use super::super::errors::Cause;

/// The field errors found in one object, in the order the rules found them.
#[derive(Debug, Default)]
pub(crate) struct Errors(Vec<Cause>);

impl Errors {
    /// The causes found, for the 422's `details.causes`.
    pub(crate) fn into_causes(self) -> Vec<Cause> {
        self.0
    }

    /// Whether no error was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn push(&mut self, reason: &str, field: &str, message: String) {
        self.0.push(Cause {
            reason: reason.into(),
            message,
            field: field.into(),
        });
    }

    /// `Required value`, with an optional explanation.
    pub(crate) fn required(&mut self, field: &str, detail: &str) {
        self.push(
            "FieldValueRequired",
            field,
            with_detail("Required value".into(), detail),
        );
    }

    /// `Invalid value: <value>: <detail>`.
    pub(crate) fn invalid(&mut self, field: &str, value: &Value, detail: &str) {
        self.push(
            "FieldValueInvalid",
            field,
            with_detail(format!("Invalid value: {}", show(value)), detail),
        );
    }

    /// `Invalid value: <shown>: <detail>`, for values kube-apiserver prints in Go's own notation (maps of labels).
    pub(crate) fn invalid_shown(&mut self, field: &str, shown: &str, detail: &str) {
        self.push(
            "FieldValueInvalid",
            field,
            with_detail(format!("Invalid value: {shown}"), detail),
        );
    }

    /// One `Invalid value` per problem a name grammar reports (the `names::*_errors` functions).
    pub(crate) fn invalid_each(&mut self, field: &str, value: &str, problems: Vec<String>) {
        for problem in problems {
            self.invalid(field, &Value::from(value), &problem);
        }
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`.
    pub(crate) fn not_supported(&mut self, field: &str, value: &Value, supported: &[&str]) {
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        self.push(
            "FieldValueNotSupported",
            field,
            format!(
                "Unsupported value: {}: supported values: {list}",
                show(value)
            ),
        );
    }

    /// `Duplicate value: <value>`.
    pub(crate) fn duplicate(&mut self, field: &str, value: &Value) {
        self.push(
            "FieldValueDuplicate",
            field,
            format!("Duplicate value: {}", show(value)),
        );
    }

    /// `Not found: <value>`: a reference to something the object does not have.
    pub(crate) fn not_found(&mut self, field: &str, value: &Value) {
        self.push(
            "FieldValueNotFound",
            field,
            format!("Not found: {}", show(value)),
        );
    }

    /// `Not found: <value>: <detail>`, saying what the reference should have named.
    pub(crate) fn not_found_because(&mut self, field: &str, value: &Value, detail: &str) {
        self.push(
            "FieldValueNotFound",
            field,
            with_detail(format!("Not found: {}", show(value)), detail),
        );
    }

    /// `Too many: <count>: must have at most <max> items`, for a list longer than kube-apiserver allows.
    pub(crate) fn too_many(&mut self, field: &str, count: usize, max: usize) {
        self.push(
            "FieldValueTooMany",
            field,
            format!("Too many: {count}: must have at most {max} items"),
        );
    }

    /// `Forbidden: <detail>`.
    pub(crate) fn forbidden(&mut self, field: &str, detail: &str) {
        self.push(
            "FieldValueForbidden",
            field,
            with_detail("Forbidden".into(), detail),
        );
    }

    /// `Too long: may not be more than <max> bytes`.
    pub(crate) fn too_long(&mut self, field: &str, max: usize) {
        self.push(
            "FieldValueTooLong",
            field,
            format!("Too long: may not be more than {max} bytes"),
        );
    }

    /// `Invalid value: <value>: must be greater than or equal to 0` when a number is negative.
    pub(crate) fn non_negative(&mut self, obj: &Value, field: &str, path: &str) {
        if let Some(n) = obj.get(field).and_then(Value::as_i64)
            && n < 0
        {
            self.invalid(
                &child(path, field),
                &Value::from(n),
                "must be greater than or equal to 0",
            );
        }
    }

    /// `Invalid value: <value>: must be greater than 0` when a number is zero or negative.
    pub(crate) fn positive(&mut self, obj: &Value, field: &str, path: &str) {
        if let Some(n) = obj.get(field).and_then(Value::as_i64)
            && n <= 0
        {
            self.invalid(
                &child(path, field),
                &Value::from(n),
                "must be greater than 0",
            );
        }
    }

    /// Append another list's errors (a part of an object validated on its own).
    pub(crate) fn extend(&mut self, other: Errors) {
        self.0.extend(other.0);
    }
}

fn with_detail(head: String, detail: &str) -> String {
    if detail.is_empty() {
        head
    } else {
        format!("{head}: {detail}")
    }
}

/// A value as kube-apiserver prints it in an error: strings quoted, numbers and booleans bare, anything else as
/// its JSON.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// `path.name`, or `name` at the top.
pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `path[index]`.
pub(crate) fn index(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

/// `path[key]`, how kube-apiserver names one entry of a map (`data[tls.crt]`).
pub(super) fn key(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

/// A string field of `obj`, empty when absent.
pub(crate) fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The items of an array field of `obj`, none when absent.
pub(crate) fn items<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    obj.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The entries of a map field of `obj`, none when absent.
pub(super) fn entries<'a>(
    obj: &'a Value,
    field: &str,
) -> impl Iterator<Item = (&'a String, &'a Value)> {
    obj.get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_read_as_kube_apiserver_writes_them() {
        let mut errors = Errors::default();
        errors.invalid(
            "spec.replicas",
            &json!(-3),
            "must be greater than or equal to 0",
        );
        errors.not_supported(
            "spec.restartPolicy",
            &json!("Sometimes"),
            &["Always", "OnFailure", "Never"],
        );
        errors.required("spec.selector", "");
        errors.duplicate("spec.volumes[1].name", &json!("data"));
        let messages: Vec<String> = errors
            .into_causes()
            .into_iter()
            .map(|c| c.message)
            .collect();
        assert_eq!(
            messages,
            [
                "Invalid value: -3: must be greater than or equal to 0",
                "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                "Required value",
                "Duplicate value: \"data\"",
            ]
        );
    }
}
