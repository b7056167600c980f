//! `x-kubernetes-validations`: the CEL rules a CRD's schema carries, compiled with the schema and run on every
//! create and update of a custom resource, with kube-apiserver's semantics and wording.
//!
//! Each rule runs with `self` bound to the value at the schema node that declares it, wherever that node occurs
//! in the object (every list item, every map entry). A rule that reads `oldSelf` is a transition rule: it runs on
//! updates only, where the old object has a value at the same place (same property, same map key, same list-map
//! keys). A false result is a field error at the node's path (or at the rule's `fieldPath`), worded by
//! `messageExpression`, `message` or `failed rule: <rule>`, of the rule's `reason`. All rules of a request share
//! one cost budget; a rule over its per-call limit, or a request out of budget, stops the rules that follow.
//!
//! Not done here: CRD validation ratcheting (kube-apiserver lets an update keep an unchanged value that a rule
//! refuses); `optionalOldSelf`; the static cost estimate kube-apiserver checks when a CRD is written.

use serde_json::{Map, Value};

use kmm_cel::{Activation, Budget, EvalError, Program};

use super::compile::{Node, SchemaError};
use super::errors::{FieldError, FieldErrorKind};

/// The variables a CRD rule may read.
const VARIABLES: [&str; 2] = ["self", "oldSelf"];

/// The longest message a `messageExpression` may produce before kube-apiserver falls back to the default.
const MAX_MESSAGE_BYTES: usize = 5_000;

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
pub(crate) struct Rule {
    source: String,
    program: Program,
    message: Option<String>,
    message_expression: Option<Program>,
    reason: FieldErrorKind,
    field_path: Option<String>,
}

/// Compiles the `x-kubernetes-validations` of one schema node; a rule that does not compile refuses the CRD.
pub(crate) fn compile_rules(
    map: &Map<String, Value>,
    location: &str,
) -> Result<Vec<Rule>, SchemaError> {
    let Some(rules) = map.get("x-kubernetes-validations") else {
        return Ok(Vec::new());
    };
    let Some(rules) = rules.as_array() else {
        return Err(invalid(
            location,
            "x-kubernetes-validations must be an array".into(),
        ));
    };
    rules
        .iter()
        .enumerate()
        .map(|(i, rule)| compile_rule(rule, &format!("{location}/x-kubernetes-validations[{i}]")))
        .collect()
}

fn compile_rule(rule: &Value, location: &str) -> Result<Rule, SchemaError> {
    let text = |key: &str| -> Result<Option<String>, SchemaError> {
        match rule.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(location, format!("{key} must be a string"))),
        }
    };
    let source = text("rule")?
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| invalid(&format!("{location}/rule"), "Required value".into()))?;
    let program = Program::compile(&source, &VARIABLES).map_err(|e| {
        invalid(
            &format!("{location}/rule"),
            format!("Invalid value: {source:?}: compilation failed: {e}"),
        )
    })?;
    let message = text("message")?;
    if message.as_deref().is_some_and(|m| m.contains(['\n', '\r'])) {
        return Err(invalid(
            &format!("{location}/message"),
            "Invalid value: message must not contain line breaks".into(),
        ));
    }
    let message_expression = match text("messageExpression")? {
        None => None,
        Some(expression) => Some(Program::compile(&expression, &VARIABLES).map_err(|e| {
            invalid(
                &format!("{location}/messageExpression"),
                format!("Invalid value: {expression:?}: messageExpression compilation failed: {e}"),
            )
        })?),
    };
    let reason = match text("reason")?.as_deref() {
        None | Some("FieldValueInvalid") => FieldErrorKind::Invalid,
        Some("FieldValueForbidden") => FieldErrorKind::Forbidden,
        Some("FieldValueRequired") => FieldErrorKind::Required,
        Some("FieldValueDuplicate") => FieldErrorKind::Duplicate,
        Some(other) => {
            return Err(invalid(
                &format!("{location}/reason"),
                format!(
                    "Unsupported value: {other:?}: supported values: \"FieldValueDuplicate\", \
                     \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                ),
            ));
        }
    };
    let field_path = match text("fieldPath")? {
        None => None,
        Some(path) => Some(normalize_field_path(&path).ok_or_else(|| {
            invalid(
                &format!("{location}/fieldPath"),
                format!("Invalid value: {path:?}: must be a valid path like .spec.field"),
            )
        })?),
    };
    Ok(Rule {
        source,
        program,
        message,
        message_expression,
        reason,
        field_path,
    })
}

/// `.spec.ports` becomes `spec.ports`; `['a.b']` stays an index. `None` for what is not a path.
fn normalize_field_path(path: &str) -> Option<String> {
    let path = path.trim();
    if !path.starts_with('.') && !path.starts_with('[') {
        return None;
    }
    let normalized = path.strip_prefix('.').unwrap_or(path);
    let valid = !normalized.is_empty()
        && !normalized.contains("..")
        && normalized
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-[]'$".contains(c));
    valid.then(|| normalized.to_string())
}

fn invalid(location: &str, message: String) -> SchemaError {
    SchemaError::Unsupported {
        location: location.to_string(),
        message,
    }
}

/// Whether any node of the tree carries a rule.
pub(crate) fn has_rules(node: &Node) -> bool {
    !node.rules.is_empty()
        || node.properties.iter().any(|(_, child)| has_rules(child))
        || node.additional_schema().is_some_and(has_rules)
        || node.items.as_deref().is_some_and(has_rules)
}

/// Where the walk is, and what it has left to spend.
pub(crate) struct Walk {
    budget: Budget,
    stopped: bool,
    pub(crate) errors: Vec<FieldError>,
}

impl Walk {
    pub(crate) fn new() -> Walk {
        Walk {
            budget: Budget::default(),
            stopped: false,
            errors: Vec::new(),
        }
    }

    /// Runs every rule of `node` and its descendants on `value`; `old` is the value at the same place in the
    /// stored object, on updates.
    pub(crate) fn visit(&mut self, node: &Node, value: &Value, old: Option<&Value>, path: &str) {
        if self.stopped || value.is_null() {
            return;
        }
        if !node.rules.is_empty() {
            self.run_rules(node, value, old, path);
        }
        match value {
            Value::Object(map) => {
                for (key, child) in &node.properties {
                    if let Some(v) = map.get(key) {
                        let old = old.and_then(|o| o.get(key));
                        self.visit(child, v, old, &child_path(path, key));
                    }
                }
                if let Some(schema) = node.additional_schema() {
                    for (key, v) in map.iter().filter(|(k, _)| node.property(k).is_none()) {
                        let old = old.and_then(|o| o.get(key));
                        self.visit(schema, v, old, &format!("{path}[{key}]"));
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = &node.items {
                    for (i, item) in items.iter().enumerate() {
                        let old = old.and_then(|o| correlate(node, item, o));
                        self.visit(item_schema, item, old, &format!("{path}[{i}]"));
                    }
                }
            }
            _ => {}
        }
    }

    fn run_rules(&mut self, node: &Node, value: &Value, old: Option<&Value>, path: &str) {
        let type_name = Value::String(
            node.type_names()
                .filter(|_| !node.int_or_string)
                .unwrap_or("")
                .into(),
        );
        let mut activation = Activation::new();
        activation.bind_json("self", value);
        if let Some(old) = old {
            activation.bind_json("oldSelf", old);
        }
        for rule in &node.rules {
            if rule.program.references("oldSelf") && old.is_none() {
                continue;
            }
            match rule.program.evaluate_bool(&activation, &mut self.budget) {
                Ok(true) => {}
                Ok(false) => {
                    let path = match &rule.field_path {
                        Some(field) if path.is_empty() => field.clone(),
                        Some(field) if field.starts_with('[') => format!("{path}{field}"),
                        Some(field) => format!("{path}.{field}"),
                        None => path.to_string(),
                    };
                    // A duplicate names the value alone, as apimachinery's `field.Duplicate` does.
                    let detail = match rule.reason {
                        FieldErrorKind::Duplicate => String::new(),
                        _ => self.message(rule, &activation),
                    };
                    self.errors.push(FieldError::new(
                        display(&path),
                        rule.reason,
                        Some(type_name.clone()),
                        detail,
                    ));
                }
                Err(err) => {
                    let detail = evaluation_failure(&err, rule);
                    self.stopped = err.is_cost_limit() || err.is_budget_exhausted();
                    self.errors.push(FieldError::new(
                        display(path),
                        FieldErrorKind::Invalid,
                        Some(type_name.clone()),
                        detail,
                    ));
                    if self.stopped {
                        return;
                    }
                }
            }
        }
    }

    /// The message of a failed rule: its `messageExpression`'s string when that evaluates to a usable one, else
    /// its `message`, else `failed rule: <rule>`.
    fn message(&mut self, rule: &Rule, activation: &Activation) -> String {
        if let Some(expression) = &rule.message_expression
            && let Ok(message) = expression.evaluate_string(activation, &mut self.budget)
        {
            let message = message.trim();
            if !message.is_empty()
                && !message.contains(['\n', '\r'])
                && message.len() <= MAX_MESSAGE_BYTES
            {
                return message.to_string();
            }
        }
        match &rule.message {
            Some(message) if !message.trim().is_empty() => message.trim().to_string(),
            _ => format!("failed rule: {}", rule_error_string(rule)),
        }
    }
}

/// A rule named in an error: its message, or its source.
fn rule_error_string(rule: &Rule) -> String {
    match &rule.message {
        Some(message) if !message.trim().is_empty() => message.trim().to_string(),
        _ => rule.source.trim().to_string(),
    }
}

fn evaluation_failure(err: &EvalError, rule: &Rule) -> String {
    if err.is_cost_limit() {
        format!(
            "'{err}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
            rule_error_string(rule)
        )
    } else if err.is_budget_exhausted() {
        err.to_string()
    } else {
        format!("{err} evaluating rule: {}", rule_error_string(rule))
    }
}

/// The old list item a new one continues: the item with the same keys in a `map` list; none otherwise.
fn correlate<'o>(node: &Node, item: &Value, old: &'o Value) -> Option<&'o Value> {
    if node.list_type != Some(super::ListType::Map) || node.list_map_keys.is_empty() {
        return None;
    }
    let keys = |v: &Value| -> Vec<Option<Value>> {
        node.list_map_keys
            .iter()
            .map(|k| v.get(k).cloned())
            .collect()
    };
    let wanted = keys(item);
    old.as_array()?.iter().find(|o| keys(o) == wanted)
}

fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// The root's path as kube-apiserver prints a nil path.
fn display(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_string()
    } else {
        path.to_string()
    }
}
