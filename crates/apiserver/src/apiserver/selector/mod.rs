//! Label and field selectors, parsed, printed and matched the way kube-apiserver does.
//!
//! Clients (`kubectl get -l`, `kube::Api::list` with `ListParams::labels`, informers) send selectors as
//! strings in the `labelSelector` and `fieldSelector` query parameters; controllers hold them as
//! `metav1.LabelSelector` objects. Both must select exactly what a real cluster would select, and reject
//! exactly what it would reject with a message the client recognises, so the grammar, the validation and
//! the error wording below follow kube-apiserver's.

mod field;
mod parser;

use std::fmt;

use serde_json::{Map, Value};

pub use field::FieldSelector;
use kmm_api::validation::names::{label_value_errors, qualified_name_errors};
use parser::LabelParser;

/// Why a selector was rejected; the message is what the server returns in its `BadRequest` status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    message: String,
}

impl SelectorError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// Joins several validation failures the way the server aggregates field errors: a lone error stands
    /// as it is, several are listed in brackets.
    fn aggregate(mut messages: Vec<String>) -> Option<Self> {
        match messages.len() {
            0 => None,
            1 => messages.pop().map(Self::new),
            _ => Some(Self::new(format!("[{}]", messages.join(", ")))),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Field-error wording for rejected label keys and values.
// ---------------------------------------------------------------------------------------------------------

/// `<path>: Invalid value: "<value>": <details>`, the server's field-error form.
fn invalid_value(path: &str, value: &str, details: &[String]) -> String {
    format!("{path}: Invalid value: {value:?}: {}", details.join("; "))
}

/// Renders a list of values the way the server prints a rejected string slice.
fn invalid_values(path: &str, values: &[String], detail: &str) -> String {
    let listed: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!(
        "{path}: Invalid value: []string{{{}}}: {detail}",
        listed.join(", ")
    )
}

// ---------------------------------------------------------------------------------------------------------
// Label selectors.
// ---------------------------------------------------------------------------------------------------------

/// How one requirement compares a label against its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One comma-separated term of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and free of duplicates, so that equal requirements compare and print equally.
    values: Vec<String>,
}

impl Requirement {
    /// Validates a requirement as the server does, reporting every problem at once.
    fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, SelectorError> {
        let mut problems = Vec::new();
        let key_errors = qualified_name_errors(key);
        if !key_errors.is_empty() {
            problems.push(invalid_value("key", key, &key_errors));
        }
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => problems.push(invalid_values(
                "values",
                &values,
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                problems.push(invalid_values(
                    "values",
                    &values,
                    "exact-match compatibility requires one single value",
                ))
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                problems.push(invalid_values(
                    "values",
                    &values,
                    "values set must be empty for exists and does not exist",
                ))
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    problems.push(invalid_values(
                        "values",
                        &values,
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, value) in values.iter().enumerate() {
                    if value.parse::<i64>().is_err() {
                        problems.push(format!(
                            "values[{i}]: Invalid value: {value:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, value) in values.iter().enumerate() {
            let value_errors = label_value_errors(value);
            if !value_errors.is_empty() {
                problems.push(invalid_value(
                    &format!("values[{i}][{key}]"),
                    value,
                    &value_errors,
                ));
            }
        }
        if let Some(error) = SelectorError::aggregate(problems) {
            return Err(error);
        }
        let mut values = values;
        values.sort();
        values.dedup();
        Ok(Self {
            key: key.to_owned(),
            operator,
            values,
        })
    }

    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let label = labels
            .and_then(|l| l.get(&self.key))
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        let has_value = |v: &String| self.values.binary_search(v).is_ok();
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                label.is_some_and(|v| has_value(&v))
            }
            Operator::NotEquals | Operator::NotIn => !label.is_some_and(|v| has_value(&v)),
            Operator::Exists => label.is_some(),
            Operator::DoesNotExist => label.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), [bound]) = (label, self.values.as_slice()) else {
                    return false;
                };
                match (actual.parse::<i64>(), bound.parse::<i64>()) {
                    (Ok(actual), Ok(bound)) if self.operator == Operator::GreaterThan => {
                        actual > bound
                    }
                    (Ok(actual), Ok(bound)) => actual < bound,
                    _ => false,
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let joined = self.values.join(",");
        match self.operator {
            Operator::Exists | Operator::DoesNotExist => Ok(()),
            Operator::Equals => write!(f, "={joined}"),
            Operator::DoubleEquals => write!(f, "=={joined}"),
            Operator::NotEquals => write!(f, "!={joined}"),
            Operator::GreaterThan => write!(f, ">{joined}"),
            Operator::LessThan => write!(f, "<{joined}"),
            Operator::In => write!(f, " in ({joined})"),
            Operator::NotIn => write!(f, " notin ({joined})"),
        }
    }
}

/// A label selector: every requirement must hold for an object to be selected.
///
/// Requirements are kept sorted by key (stably), as the server keeps them, so the printed form is
/// canonical and parses back to the same selector.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    /// A missing (`null`) `metav1.LabelSelector` selects nothing rather than everything.
    selects_nothing: bool,
}

impl LabelSelector {
    /// Parses the query-string syntax (`a=b,c!=d,e in (f,g),!h,i>3`).
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut requirements = LabelParser::new(s).parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            selects_nothing: false,
        })
    }

    /// Converts a `metav1.LabelSelector` (`{matchLabels, matchExpressions}`), as controllers hold them in
    /// `spec.selector`. `null` selects nothing; an empty object selects everything.
    pub fn from_label_selector(v: &Value) -> Result<Self, SelectorError> {
        let object = match v {
            Value::Null => {
                return Ok(Self {
                    requirements: Vec::new(),
                    selects_nothing: true,
                });
            }
            Value::Object(object) => object,
            other => {
                return Err(SelectorError::new(format!(
                    "a label selector must be an object, not {other}"
                )));
            }
        };
        let mut requirements = Vec::new();
        if let Some(labels) = non_null(object.get("matchLabels")) {
            let labels = labels
                .as_object()
                .ok_or_else(|| SelectorError::new("matchLabels must be an object of strings"))?;
            for (key, value) in labels {
                let value = value.as_str().ok_or_else(|| {
                    SelectorError::new(format!("matchLabels[{key}] must be a string"))
                })?;
                requirements.push(Requirement::new(
                    key,
                    Operator::Equals,
                    vec![value.to_owned()],
                )?);
            }
        }
        if let Some(expressions) = non_null(object.get("matchExpressions")) {
            let expressions = expressions
                .as_array()
                .ok_or_else(|| SelectorError::new("matchExpressions must be a list"))?;
            for expression in expressions {
                requirements.push(requirement_from_expression(expression)?);
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            selects_nothing: false,
        })
    }

    /// Whether an object carrying `labels` (its `metadata.labels`, absent when it has none) is selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        !self.selects_nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The label keys every selected object holds (those of `=`, `==`, `in` and existence requirements), so a
    /// store's index of objects by label key can give the candidates.
    pub fn required_keys(&self) -> impl Iterator<Item = &str> {
        self.requirements
            .iter()
            .filter(|r| {
                matches!(
                    r.operator,
                    Operator::Equals | Operator::DoubleEquals | Operator::In | Operator::Exists
                )
            })
            .map(|r| r.key.as_str())
    }

    /// Whether the selector selects every object, so callers can skip filtering.
    pub fn is_everything(&self) -> bool {
        !self.selects_nothing && self.requirements.is_empty()
    }
}

fn non_null(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// One `matchExpressions` entry: `{key, operator: In|NotIn|Exists|DoesNotExist, values}`.
fn requirement_from_expression(expression: &Value) -> Result<Requirement, SelectorError> {
    let text = |field: &str| {
        expression
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let operator = match text("operator") {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(SelectorError::new(format!(
                "{other:?} is not a valid label selector operator"
            )));
        }
    };
    let values = match non_null(expression.get("values")) {
        None => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| SelectorError::new("matchExpressions values must be strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(SelectorError::new("matchExpressions values must be a list")),
    };
    Requirement::new(text("key"), operator, values)
}

impl fmt::Display for LabelSelector {
    /// The canonical query-string form. A selector that selects nothing has no query-string form and
    /// prints as the empty string, as the server prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
