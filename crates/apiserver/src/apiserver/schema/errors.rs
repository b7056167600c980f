//! Field-level validation errors shaped like apimachinery's `field.Error`, so that
//! the API server can return the same `metav1.Status` causes and message text as
//! kube-apiserver.

use std::fmt;

use serde_json::Value;

use super::render;

/// The kind of a field error; each maps to a `metav1.StatusCause` reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// A required field is missing.
    Required,
    /// The value is malformed or out of bounds.
    Invalid,
    /// The value is not one of the enumerated values.
    NotSupported,
    /// A string is longer than `maxLength`.
    TooLong,
    /// A list or object has more items than allowed.
    TooMany,
    /// A set or map list repeats an element or key.
    Duplicate,
    /// The value has the wrong JSON type.
    TypeInvalid,
    /// The value is not allowed here.
    Forbidden,
}

impl FieldErrorKind {
    /// The machine-readable reason used in `metav1.StatusCause.reason`.
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
        }
    }

    /// The human-readable label that starts the message body.
    pub fn label(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid | FieldErrorKind::TypeInvalid => "Invalid value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::Forbidden => "Forbidden",
        }
    }

    /// Kinds whose message never shows the offending value.
    fn omits_value(self) -> bool {
        matches!(
            self,
            FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong
        )
    }
}

/// One validation failure at a field path such as `spec.kernelMappings[0].regexp`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// Path from the object root, with list indices and map keys (`spec.m[key]`).
    pub path: String,
    /// What went wrong.
    pub kind: FieldErrorKind,
    /// The offending value as shown in the message, if the message shows one.
    pub value: Option<Value>,
    /// Explanation appended after the value.
    pub detail: String,
}

impl FieldError {
    pub(crate) fn new(
        path: impl Into<String>,
        kind: FieldErrorKind,
        value: Option<Value>,
        detail: impl Into<String>,
    ) -> FieldError {
        FieldError {
            path: path.into(),
            kind,
            value,
            detail: detail.into(),
        }
    }

    /// The message without the leading path, as used for `metav1.StatusCause.message`.
    pub fn body(&self) -> String {
        let mut body = self.kind.label().to_string();
        if !self.kind.omits_value()
            && let Some(value) = &self.value
        {
            body.push_str(": ");
            body.push_str(&render::bad_value(value));
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.body())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn messages_match_apimachinery_wording() {
        let cases = [
            (
                FieldError::new("spec.kernelMappings", FieldErrorKind::Required, None, ""),
                "spec.kernelMappings: Required value",
            ),
            (
                FieldError::new(
                    "spec.type",
                    FieldErrorKind::NotSupported,
                    Some(json!("foo")),
                    "supported values: \"a\", \"b\"",
                ),
                "spec.type: Unsupported value: \"foo\": supported values: \"a\", \"b\"",
            ),
            (
                FieldError::new(
                    "spec.name",
                    FieldErrorKind::TooLong,
                    Some(json!("abcdef")),
                    "may not be more than 5 bytes",
                ),
                "spec.name: Too long: may not be more than 5 bytes",
            ),
            (
                FieldError::new(
                    "spec.list",
                    FieldErrorKind::TooMany,
                    Some(json!(4)),
                    "must have at most 3 items",
                ),
                "spec.list: Too many: 4: must have at most 3 items",
            ),
            (
                FieldError::new(
                    "spec.ports[1]",
                    FieldErrorKind::Duplicate,
                    Some(json!({"port": 80})),
                    "",
                ),
                "spec.ports[1]: Duplicate value: {\"port\":80}",
            ),
            (
                FieldError::new("spec.x", FieldErrorKind::Invalid, None, "must be set"),
                "spec.x: Invalid value: must be set",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }

    #[test]
    fn reasons_are_status_cause_types() {
        assert_eq!(FieldErrorKind::Required.reason(), "FieldValueRequired");
        assert_eq!(
            FieldErrorKind::TypeInvalid.reason(),
            "FieldValueTypeInvalid"
        );
        assert_eq!(FieldErrorKind::TypeInvalid.label(), "Invalid value");
        assert_eq!(FieldErrorKind::Duplicate.reason(), "FieldValueDuplicate");
    }
}
