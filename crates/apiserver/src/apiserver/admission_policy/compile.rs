//! ValidatingAdmissionPolicies and their bindings, read from their objects once: the expressions compiled, the
//! match rules parsed. The same reading validates them on create and update, with kube-apiserver's wording.

use serde_json::Value;

use kmm_cel::Program;

use super::super::selector::LabelSelector;
use super::super::validation::field::{self, Errors};

/// What a policy's expressions may read. `params` is always null: parameter resources are not supported.
const VARIABLES: [&str; 6] = [
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
];

const REASONS: [&str; 4] = [
    "Unauthorized",
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
];

/// A compiled ValidatingAdmissionPolicy.
#[derive(Debug)]
pub(crate) struct Policy {
    /// Whether an expression that cannot be evaluated denies the request (`failurePolicy: Fail`, the default).
    pub(crate) fail_closed: bool,
    pub(crate) constraints: Matching,
    pub(crate) conditions: Vec<Named>,
    pub(crate) variables: Vec<Named>,
    pub(crate) validations: Vec<Validation>,
}

/// A named expression: a match condition or a variable.
#[derive(Debug)]
pub(crate) struct Named {
    pub(crate) name: String,
    pub(crate) program: Program,
}

/// One `spec.validations[]` entry.
#[derive(Debug)]
pub(crate) struct Validation {
    pub(crate) program: Program,
    pub(crate) message: Option<String>,
    pub(crate) message_expression: Option<Program>,
    pub(crate) reason: Option<String>,
}

/// `matchConstraints` of a policy, or `matchResources` of a binding.
#[derive(Debug, Default)]
pub(crate) struct Matching {
    pub(crate) namespace_selector: Option<LabelSelector>,
    pub(crate) object_selector: Option<LabelSelector>,
    pub(crate) rules: Vec<ResourceRule>,
    pub(crate) exclude: Vec<ResourceRule>,
}

/// One `resourceRules[]` entry (a `NamedRuleWithOperations`).
#[derive(Debug)]
pub(crate) struct ResourceRule {
    pub(crate) groups: Vec<String>,
    pub(crate) versions: Vec<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) operations: Vec<String>,
    pub(crate) scope: String,
    pub(crate) names: Vec<String>,
}

/// A ValidatingAdmissionPolicyBinding.
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) name: String,
    pub(crate) policy: String,
    pub(crate) deny: bool,
    pub(crate) warn: bool,
    pub(crate) resources: Option<Matching>,
}

/// Reads a policy, or every problem of it.
pub(crate) fn policy(obj: &Value) -> Result<Policy, Errors> {
    let mut errors = Errors::default();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if spec.get("paramKind").is_some_and(|p| !p.is_null()) {
        errors.forbidden(
            "spec.paramKind",
            "parameter resources are not supported by this server; write the values into the expressions",
        );
    }
    let fail_closed = match spec.get("failurePolicy").and_then(Value::as_str) {
        None | Some("Fail") => true,
        Some("Ignore") => false,
        Some(other) => {
            errors.not_supported(
                "spec.failurePolicy",
                &Value::from(other),
                &["Fail", "Ignore"],
            );
            true
        }
    };
    let constraints = match spec.get("matchConstraints") {
        None | Some(Value::Null) => {
            errors.required("spec.matchConstraints", "");
            Matching::default()
        }
        Some(m) => {
            let matching = matching(m, "spec.matchConstraints", &mut errors);
            if matching.rules.is_empty() {
                errors.required("spec.matchConstraints.resourceRules", "");
            }
            matching
        }
    };
    let conditions = named(spec, "matchConditions", &mut errors);
    let variables = named(spec, "variables", &mut errors);
    let entries = field::items(spec, "validations");
    if entries.is_empty() && field::items(spec, "auditAnnotations").is_empty() {
        errors.required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        );
    }
    let mut validations = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let path = field::index("spec.validations", i);
        let expression = compile(entry, "expression", &path, &mut errors);
        let message_expression = match entry.get("messageExpression").and_then(Value::as_str) {
            Some(_) => compile(entry, "messageExpression", &path, &mut errors),
            None => None,
        };
        let message = entry
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string);
        if message.as_deref().is_some_and(|m| m.contains('\n')) {
            errors.invalid(
                &field::child(&path, "message"),
                &Value::from(message.clone()),
                "must not contain line breaks",
            );
        }
        let reason = entry
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(reason) = &reason
            && !REASONS.contains(&reason.as_str())
        {
            errors.not_supported(
                &field::child(&path, "reason"),
                &Value::from(reason.as_str()),
                &REASONS,
            );
        }
        if let Some(program) = expression {
            validations.push(Validation {
                program,
                message,
                message_expression,
                reason,
            });
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Policy {
        fail_closed,
        constraints,
        conditions,
        variables,
        validations,
    })
}

/// Reads a binding, or every problem of it.
pub(crate) fn binding(obj: &Value) -> Result<Binding, Errors> {
    let mut errors = Errors::default();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let policy = field::text(spec, "policyName").to_string();
    if policy.is_empty() {
        errors.required("spec.policyName", "");
    }
    if spec.get("paramRef").is_some_and(|p| !p.is_null()) {
        errors.forbidden(
            "spec.paramRef",
            "parameter resources are not supported by this server",
        );
    }
    let actions: Vec<&str> = field::items(spec, "validationActions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if actions.is_empty() {
        errors.required("spec.validationActions", "");
    }
    for (i, action) in actions.iter().enumerate() {
        if !["Deny", "Warn", "Audit"].contains(action) {
            errors.not_supported(
                &field::index("spec.validationActions", i),
                &Value::from(*action),
                &["Audit", "Deny", "Warn"],
            );
        }
    }
    let deny = actions.contains(&"Deny");
    let warn = actions.contains(&"Warn");
    if deny && warn {
        errors.invalid(
            "spec.validationActions",
            &Value::from(actions.clone()),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        );
    }
    let resources = match spec.get("matchResources") {
        None | Some(Value::Null) => None,
        Some(m) => Some(matching(m, "spec.matchResources", &mut errors)),
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Binding {
        name: obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        policy,
        deny,
        warn,
        resources,
    })
}

fn compile(entry: &Value, key: &str, path: &str, errors: &mut Errors) -> Option<Program> {
    let at = field::child(path, key);
    let source = entry.get(key).and_then(Value::as_str).unwrap_or("");
    if source.trim().is_empty() {
        errors.required(&at, "");
        return None;
    }
    match Program::compile(source, &VARIABLES) {
        Ok(program) => Some(program),
        Err(err) => {
            errors.invalid(
                &at,
                &Value::from(source),
                &format!("compilation failed: {err}"),
            );
            None
        }
    }
}

fn named(spec: &Value, key: &str, errors: &mut Errors) -> Vec<Named> {
    let mut found = Vec::new();
    for (i, entry) in field::items(spec, key).iter().enumerate() {
        let path = field::index(&format!("spec.{key}"), i);
        let name = field::text(entry, "name").to_string();
        if name.is_empty() {
            errors.required(&field::child(&path, "name"), "");
        } else if found.iter().any(|n: &Named| n.name == name) {
            errors.duplicate(&field::child(&path, "name"), &Value::from(name.as_str()));
        }
        if let Some(program) = compile(entry, "expression", &path, errors) {
            found.push(Named { name, program });
        }
    }
    found
}

fn matching(m: &Value, path: &str, errors: &mut Errors) -> Matching {
    let selector = |key: &str, errors: &mut Errors| match m.get(key) {
        None | Some(Value::Null) => None,
        Some(s) => match LabelSelector::from_label_selector(s) {
            Ok(selector) => Some(selector),
            Err(err) => {
                errors.invalid(&field::child(path, key), s, &err.to_string());
                None
            }
        },
    };
    let namespace_selector = selector("namespaceSelector", errors);
    let object_selector = selector("objectSelector", errors);
    let rules = |key: &str| -> Vec<ResourceRule> {
        field::items(m, key)
            .iter()
            .map(|rule| {
                let list = |k: &str| -> Vec<String> {
                    field::items(rule, k)
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                };
                ResourceRule {
                    groups: list("apiGroups"),
                    versions: list("apiVersions"),
                    resources: list("resources"),
                    operations: list("operations"),
                    scope: rule
                        .get("scope")
                        .and_then(Value::as_str)
                        .unwrap_or("*")
                        .to_string(),
                    names: list("resourceNames"),
                }
            })
            .collect()
    };
    Matching {
        namespace_selector,
        object_selector,
        rules: rules("resourceRules"),
        exclude: rules("excludeResourceRules"),
    }
}
