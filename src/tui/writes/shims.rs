//! Steering a Shim's rollout: approving the next batch, pausing and resuming, and retrying failed nodes.
//!
//! - **Approve** raises `spec.rolloutStrategy.rolling.approvedBatch` to the batch the user saw waiting. It never
//!   lowers it: when someone approved that batch (or a later one) meanwhile, nothing is written.
//! - **Pause/resume** sets `spec.rolloutStrategy.rolling.paused`: a paused rollout starts no new batch and lets
//!   the installs under way finish.
//! - **Retry** deletes the failed installer pods of the chosen nodes: the engine sees a node without a finished
//!   installer and starts a fresh one.
//!
//! Spec writes carry the resourceVersion they were computed from, so a concurrent write answers 409; the Shim is
//! then read again and the change recomputed, a few times at most.

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch};
use serde_json::{Value, json};

use super::WriteError;
use super::errors::from_kube;
use super::images::{Attempt, params, retrying};
use super::resources::dynamic_api;
use crate::api::errors::is_not_found;
use crate::api::shim::names;
use crate::tui::target::Target;

/// Approve batch `batch` of `shim`.
pub async fn approve(client: &Client, shim: &Target, batch: i32) -> Result<String, WriteError> {
    let api = &dynamic_api(client, shim);
    retrying(shim, move || async move {
        let current = read(api, shim).await?;
        rolling_section(&current, shim)?;
        let approved = current
            .data
            .pointer("/spec/rolloutStrategy/rolling/approvedBatch")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if approved >= i64::from(batch) {
            return Ok(format!(
                "Batch {batch} of {shim} is approved already (approvedBatch {approved})"
            ));
        }
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": {"rolloutStrategy": {"rolling": {"approvedBatch": batch}}},
        });
        api.patch(&shim.name, &params(), &Patch::Merge(&patch))
            .await
            .map_err(Attempt::from)?;
        Ok(format!(
            "Approved batch {batch} of {shim} (approvedBatch {approved}→{batch})"
        ))
    })
    .await
}

/// Pause (`paused`) or resume the rollout of `shim`.
pub async fn set_paused(
    client: &Client,
    shim: &Target,
    paused: bool,
) -> Result<String, WriteError> {
    let api = &dynamic_api(client, shim);
    retrying(shim, move || async move {
        let current = read(api, shim).await?;
        rolling_section(&current, shim)?;
        let now = current
            .data
            .pointer("/spec/rolloutStrategy/rolling/paused")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let verb = if paused { "Paused" } else { "Resumed" };
        if now == paused {
            return Ok(format!("{shim} is {} already", verb.to_lowercase()));
        }
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": {"rolloutStrategy": {"rolling": {"paused": paused}}},
        });
        api.patch(&shim.name, &params(), &Patch::Merge(&patch))
            .await
            .map_err(Attempt::from)?;
        Ok(format!("{verb} the rollout of {shim}"))
    })
    .await
}

/// Retry the failed installs of `shim` on `nodes` (every failed node when empty).
pub async fn retry(client: &Client, shim: &Target, nodes: &[String]) -> Result<String, WriteError> {
    let pods: Api<Pod> = Api::all(client.clone());
    let selector = format!("{}={}", names::SHIM_NAME, shim.name);
    let listed = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|error| from_kube(&error, shim))?;
    let failed: Vec<&Pod> = listed
        .items
        .iter()
        .filter(|pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed"))
        .filter(|pod| {
            let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
            nodes.is_empty() || node.is_some_and(|n| nodes.iter().any(|wanted| wanted == n))
        })
        .collect();
    if failed.is_empty() {
        return Err(WriteError::local(format!(
            "{shim} has no failed installer pod on {}",
            if nodes.is_empty() {
                "any node".to_owned()
            } else {
                nodes.join(", ")
            }
        )));
    }
    let mut retried = Vec::new();
    for pod in failed {
        let (Some(namespace), Some(name)) = (
            pod.metadata.namespace.as_deref(),
            pod.metadata.name.as_deref(),
        ) else {
            continue;
        };
        let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(error) if is_not_found(&error) => {}
            Err(error) => return Err(from_kube(&error, shim)),
        }
        retried.push(
            pod.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_else(|| name.to_owned()),
        );
    }
    retried.sort();
    retried.dedup();
    Ok(format!(
        "Retrying {shim} on {}: its failed installer pods were removed",
        retried.join(", ")
    ))
}

async fn read(api: &Api<DynamicObject>, shim: &Target) -> Result<DynamicObject, Attempt> {
    api.get(&shim.name).await.map_err(Attempt::from)
}

/// The rolling section of the Shim, or a failure saying its rollout has no batches.
fn rolling_section(shim: &DynamicObject, target: &Target) -> Result<(), Attempt> {
    let rolling = shim
        .data
        .pointer("/spec/rolloutStrategy/type")
        .and_then(Value::as_str)
        == Some("rolling");
    if rolling {
        Ok(())
    } else {
        Err(Attempt::Failed(WriteError::local(format!(
            "{target} is not rolled out in batches (rolloutStrategy.type is not rolling)"
        ))))
    }
}
