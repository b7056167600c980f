//! `pods/eviction`: delete a pod unless that would break its PodDisruptionBudget, which is what `kubectl drain`
//! relies on to take a node's pods away without taking a service down.
//!
//! As in kube-apiserver: a pod that is finished, still pending or already terminating is deleted without asking;
//! otherwise the one budget selecting it must have seen its latest spec and allow a disruption, or the answer is
//! 429 with the cause `DisruptionBudget` (a client such as kubectl retries). An allowed eviction takes one
//! disruption from the budget's status and records the pod under `disruptedPods` before the pod is deleted, so
//! evictions racing each other cannot together break the budget; the disruption controller gives it back once the
//! pod is gone. A pod that is not ready is evicted without spending a disruption while the budget is met
//! (`unhealthyPodEvictionPolicy: IfHealthyBudget`), or always (`AlwaysAllow`). Two budgets selecting one pod are
//! refused with 500, as kube-apiserver refuses them.

use std::sync::Arc;

use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::RequestContext;
use super::delete::{DeletePolicy, delete_object};
use crate::apiserver::errors::{ApiError, Cause};
use crate::apiserver::selector::LabelSelector;
use crate::apiserver::{ApiServer, ResponseBody, json_response, objects};
use crate::store::ResourceKey;
use crate::store::{CommitError, StoredObject};

/// How many times an eviction reads the pod and its budget again after a concurrent write before answering
/// 409, as kube-apiserver's `EvictionsRetry` does.
const EVICTION_ATTEMPTS: usize = 5;

/// The most pods a budget may hold as disrupted but not yet gone; more means its controller is not keeping up.
const MAX_DISRUPTED_PODS: usize = 2000;

/// Evict the pod the request names.
pub(super) fn evict(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    let budgets_key = ResourceKey::new("policy", "poddisruptionbudgets");
    for attempt in 1..=EVICTION_ATTEMPTS {
        let pod = server
            .store()
            .get(&ctx.storage, ctx.namespace(), ctx.name())
            .ok_or_else(|| ApiError::not_found("", "pods", ctx.name()))?;
        let outcome = match budget_of(server, &budgets_key, &pod)? {
            Some(budget) => spend_disruption(server, ctx, &budgets_key, &pod, &budget)?,
            None => Spent::Nothing,
        };
        if matches!(outcome, Spent::Raced) {
            if attempt < EVICTION_ATTEMPTS {
                continue;
            }
            return Err(ApiError::stale("", "pods", ctx.name()));
        }
        if ctx.dry_run() {
            break;
        }
        match delete_object(
            server,
            &ctx.rt,
            &ctx.storage,
            &pod,
            DeletePolicy::Background,
        ) {
            Ok(_) => break,
            Err(CommitError::Conflict) if attempt < EVICTION_ATTEMPTS => {}
            Err(CommitError::Conflict) => return Err(ApiError::stale("", "pods", ctx.name())),
            Err(e) => return Err(ApiError::commit_failed(e)),
        }
    }
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    ))
}

/// What consulting the budget came to, when the eviction may go on.
enum Spent {
    /// No disruption was taken (none was needed).
    Nothing,
    /// One disruption was taken from the budget.
    One,
    /// The budget changed while it was read: read everything again.
    Raced,
}

/// The one budget that guards the pod, if it needs guarding: none for a pod that is finished, pending or
/// already terminating, or that no budget selects.
fn budget_of(
    server: &ApiServer,
    budgets_key: &ResourceKey,
    pod: &StoredObject,
) -> Result<Option<Arc<StoredObject>>, ApiError> {
    let pod = pod.value();
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if objects::is_terminating(&pod) || matches!(phase, "Succeeded" | "Failed" | "Pending") {
        return Ok(None);
    }
    let namespace = objects::meta_str(&pod, "namespace").unwrap_or("");
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    let (budgets, _) = server.store().list(budgets_key, Some(namespace));
    let mut selecting = budgets.into_iter().filter(|budget| {
        budget
            .value()
            .pointer("/spec/selector")
            .and_then(|s| LabelSelector::from_label_selector(s).ok())
            .is_some_and(|s| s.matches(labels))
    });
    let first = selecting.next();
    if selecting.next().is_some() {
        return Err(ApiError::internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    Ok(first)
}

/// Take one disruption from the budget for the pod, or say why the pod may not be evicted.
fn spend_disruption(
    server: &ApiServer,
    ctx: &RequestContext,
    budgets_key: &ResourceKey,
    pod: &StoredObject,
    budget: &Arc<StoredObject>,
) -> Result<Spent, ApiError> {
    let value = budget.value();
    let name = objects::meta_str(&value, "name").unwrap_or("").to_owned();
    let count = |field: &str| {
        value
            .pointer(&format!("/status/{field}"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let generation = value
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if count("observedGeneration") < generation {
        return Err(refused(format!(
            "The disruption budget {name} is still being processed by the server."
        )));
    }
    let healthy = count("currentHealthy");
    let desired = count("desiredHealthy");
    if !is_ready(&pod.value()) {
        let policy = value
            .pointer("/spec/unhealthyPodEvictionPolicy")
            .and_then(Value::as_str);
        if policy == Some("AlwaysAllow") || (healthy >= desired && desired > 0) {
            return Ok(Spent::Nothing);
        }
    }
    let allowed = count("disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden("pdb disruptions allowed is negative"));
    }
    let disrupted = value
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, serde_json::Map::len);
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(ApiError::forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(refused(format!(
            "The disruption budget {name} needs {desired} healthy pods and has {healthy} currently"
        )));
    }
    if ctx.dry_run() {
        return Ok(Spent::One);
    }
    let mut spent = budget.to_value();
    spent["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if !spent["status"]["disruptedPods"].is_object() {
        spent["status"]["disruptedPods"] = json!({});
    }
    spent["status"]["disruptedPods"][pod.name()] = json!(objects::now_rfc3339());
    match server.store().put(budgets_key, Some(budget.rv), spent) {
        Ok(_) => Ok(Spent::One),
        Err(CommitError::Conflict) => Ok(Spent::Raced),
        Err(e) => Err(ApiError::commit_failed(e)),
    }
}

/// kube-apiserver's refusal of an eviction a budget does not allow: 429, and the budget's reason as the cause.
fn refused(why: String) -> ApiError {
    let mut error = ApiError::too_many_requests(
        "Cannot evict pod as it would violate the pod's disruption budget.",
        0,
    );
    if let Some(details) = error.details.as_mut() {
        details.retry_after_seconds = None;
        details.causes = vec![Cause {
            reason: "DisruptionBudget".into(),
            message: why,
            field: String::new(),
        }];
    }
    error
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}
