//! ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`), evaluated on every create and update as
//! kube-apiserver evaluates them: each binding whose policy matches the request (the policy's
//! `matchConstraints`, the binding's `matchResources`, then the policy's `matchConditions`) runs the policy's
//! `variables` and `validations` over `object`, `oldObject`, `request` and `namespaceObject`. A failed
//! validation denies the write (`Deny`, with the validation's `reason` as the status), becomes a warning header
//! (`Warn`), or is dropped (`Audit`: this server keeps no audit log). An expression that cannot be evaluated
//! follows the policy's `failurePolicy`.
//!
//! Not supported: parameter resources (`paramKind`, `paramRef`: refused when the policy or binding is written),
//! the `authorizer` variable, `auditAnnotations`, deletes (a DELETE is never sent through admission here), and
//! the policies' status (`typeChecking`).

pub(crate) mod compile;
mod matching;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use kmm_cel::{Activation, Budget, Program, Value as CelValue};

use super::ApiServer;
use super::context::RequestContext;
use super::errors::ApiError;
use crate::store::ResourceKey;
use compile::{Binding, Policy};

const GROUP: &str = "admissionregistration.k8s.io";

/// Compiled objects by name, each with the resourceVersion it was compiled at (`None`: it does not compile, and is
/// not tried again until it changes).
type ByVersion<T> = Mutex<HashMap<String, (u64, Option<Arc<T>>)>>;

/// Policies and bindings compiled once per resourceVersion, by name.
#[derive(Default)]
pub(crate) struct Compiled {
    policies: ByVersion<Policy>,
    bindings: ByVersion<Binding>,
}

/// What a policy decided about a request.
enum Decision {
    Allow,
    Deny {
        message: String,
        reason: Option<String>,
    },
}

/// Runs every bound policy that matches the write of `obj` (`old` on updates): the warnings of `Warn` bindings, or
/// the refusal of the first `Deny` binding whose policy fails.
pub(crate) fn admit(
    server: &ApiServer,
    ctx: &RequestContext,
    obj: &Value,
    old: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    if ctx.rt.group == GROUP {
        // Policies never judge the policies themselves, so a bad one can always be fixed.
        return Ok(Vec::new());
    }
    let store = server.store();
    let (bindings, _) = store.list(
        &ResourceKey::new(GROUP, "validatingadmissionpolicybindings"),
        None,
    );
    if bindings.is_empty() {
        return Ok(Vec::new());
    }
    let compiled = &server.inner.admission_policies;
    let request = matching::Request::of(ctx, obj, old);
    let namespace = (ctx.rt.namespaced && !ctx.namespace().is_empty())
        .then(|| store.get(&ResourceKey::new("", "namespaces"), "", ctx.namespace()))
        .flatten()
        .map(|ns| ns.to_value());
    let mut warnings = Vec::new();
    for stored in bindings {
        let Some(binding) = cached(&compiled.bindings, stored.name(), stored.rv, || {
            compile::binding(&stored.to_value())
        }) else {
            continue;
        };
        let Some(policy_object) = store.get(
            &ResourceKey::new(GROUP, "validatingadmissionpolicies"),
            "",
            &binding.policy,
        ) else {
            continue;
        };
        let Some(policy) = cached(
            &compiled.policies,
            &binding.policy,
            policy_object.rv,
            || compile::policy(&policy_object.to_value()),
        ) else {
            continue;
        };
        if !request.matches(&policy.constraints, namespace.as_ref())
            || binding
                .resources
                .as_ref()
                .is_some_and(|m| !request.matches_binding(m, namespace.as_ref()))
        {
            continue;
        }
        let decision = evaluate(&policy, &request, obj, old, namespace.as_ref());
        if let Decision::Deny { message, reason } = decision {
            let prefix = format!(
                "ValidatingAdmissionPolicy '{}' with binding '{}'",
                binding.policy, binding.name
            );
            if binding.deny {
                return Err(ApiError::policy_denied(
                    &ctx.rt.group,
                    &ctx.rt.plural,
                    obj.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or(ctx.name()),
                    reason.as_deref(),
                    &format!("{prefix} denied request: {message}"),
                ));
            }
            if binding.warn {
                warnings.push(format!("Validation failed for {prefix}: {message}"));
            }
        }
    }
    Ok(warnings)
}

/// The compiled form of an object at `rv`, compiled now if the cache holds another version.
fn cached<T, E>(
    cache: &ByVersion<T>,
    name: &str,
    rv: u64,
    compile: impl FnOnce() -> Result<T, E>,
) -> Option<Arc<T>> {
    let mut cache = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((at, compiled)) = cache.get(name)
        && *at == rv
    {
        return compiled.clone();
    }
    let compiled = compile().ok().map(Arc::new);
    cache.insert(name.to_string(), (rv, compiled.clone()));
    compiled
}

/// Runs one policy's conditions, variables and validations.
fn evaluate(
    policy: &Policy,
    request: &matching::Request<'_>,
    obj: &Value,
    old: Option<&Value>,
    namespace: Option<&Value>,
) -> Decision {
    let mut activation = Activation::new();
    activation.bind_json("object", obj);
    activation.bind_json("oldObject", old.unwrap_or(&Value::Null));
    activation.bind_json("request", &request.to_json());
    activation.bind_json("namespaceObject", namespace.unwrap_or(&Value::Null));
    activation.bind_json("params", &Value::Null);
    activation.bind_json("variables", &json!({}));
    let mut budget = Budget::default();
    let failure = |expression: &Program, err: &dyn std::fmt::Display| -> Decision {
        if policy.fail_closed {
            Decision::Deny {
                message: format!(
                    "expression '{}' resulted in error: {err}",
                    expression.source()
                ),
                reason: None,
            }
        } else {
            Decision::Allow
        }
    };
    for condition in &policy.conditions {
        match condition.program.evaluate_bool(&activation, &mut budget) {
            Ok(true) => {}
            Ok(false) => return Decision::Allow,
            Err(err) => return failure(&condition.program, &err),
        }
    }
    let mut variables: Vec<(String, CelValue)> = Vec::new();
    for variable in &policy.variables {
        match variable.program.evaluate(&activation, &mut budget) {
            Ok(value) => {
                variables.push((variable.name.clone(), value));
                activation.bind("variables", variables_map(&variables));
            }
            Err(err) => return failure(&variable.program, &err),
        }
    }
    for validation in &policy.validations {
        match validation.program.evaluate_bool(&activation, &mut budget) {
            Ok(true) => {}
            Ok(false) => {
                let message = validation
                    .message_expression
                    .as_ref()
                    .and_then(|e| e.evaluate_string(&activation, &mut budget).ok())
                    .map(|m| m.trim().to_string())
                    .filter(|m| !m.is_empty() && !m.contains('\n'))
                    .or_else(|| validation.message.clone().filter(|m| !m.trim().is_empty()))
                    .unwrap_or_else(|| {
                        format!("failed expression: {}", validation.program.source())
                    });
                return Decision::Deny {
                    message,
                    reason: validation.reason.clone(),
                };
            }
            Err(err) => return failure(&validation.program, &err),
        }
    }
    Decision::Allow
}

/// `variables` as the map expressions select from (`variables.replicas`).
fn variables_map(variables: &[(String, CelValue)]) -> CelValue {
    kmm_cel::map_of(variables.iter().cloned())
}
