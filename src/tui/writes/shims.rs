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
//! then read again and the change recomputed, a few times at most. The Shim is read and written through its typed
//! spec, so a field renamed in the API types is renamed in these writes too.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch};
use kube::{Client, ResourceExt};
use serde::Serialize;
use serde_json::Value;

use super::WriteError;
use super::errors::from_kube;
use super::params;
use super::retry::{Attempt, retrying};
use crate::tui::target::Target;
use kmm_api::errors::is_not_found;
use kmm_api::shim::{RollingUpdate, RolloutType, Shim, ShimSpec, names};
use kmm_engine::runtime::status::merge_patch;

/// Approve batch `batch` of `shim`.
pub async fn approve(client: &Client, shim: &Target, batch: i32) -> Result<String, WriteError> {
    let api = &Api::<Shim>::all(client.clone());
    retrying(shim, move || async move {
        let current = read(api, shim).await?;
        let mut spec = current.spec.clone();
        let rolling = rolling_section(&mut spec, shim)?;
        let approved = rolling.approved_batch.unwrap_or(0);
        if approved >= batch {
            return Ok(format!(
                "Batch {batch} of {shim} is approved already (approvedBatch {approved})"
            ));
        }
        rolling.approved_batch = Some(batch);
        write_spec(api, &current, &spec).await?;
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
    let api = &Api::<Shim>::all(client.clone());
    retrying(shim, move || async move {
        let current = read(api, shim).await?;
        let mut spec = current.spec.clone();
        let rolling = rolling_section(&mut spec, shim)?;
        let verb = if paused { "Paused" } else { "Resumed" };
        if rolling.paused == paused {
            return Ok(format!("{shim} is {} already", verb.to_lowercase()));
        }
        rolling.paused = paused;
        write_spec(api, &current, &spec).await?;
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

async fn read(api: &Api<Shim>, shim: &Target) -> Result<Shim, Attempt> {
    api.get(&shim.name).await.map_err(Attempt::from)
}

/// The rolling section of the spec, created empty when a rolling rollout has none yet, or a failure saying the
/// rollout has no batches.
fn rolling_section<'s>(
    spec: &'s mut ShimSpec,
    target: &Target,
) -> Result<&'s mut RollingUpdate, Attempt> {
    let strategy = &mut spec.rollout_strategy;
    if strategy.type_ != RolloutType::Rolling {
        return Err(Attempt::Failed(WriteError::local(format!(
            "{target} is not rolled out in batches (rolloutStrategy.type is not rolling)"
        ))));
    }
    Ok(strategy.rolling.get_or_insert(RollingUpdate {
        max_update: IntOrString::Int(1),
        approval: None,
        approved_batch: None,
        paused: false,
        max_failures: None,
    }))
}

/// A merge patch taking a Shim's spec from what was read to `spec`, guarded by the resourceVersion it was read at.
/// Both sides are the typed spec serialised, so a field the change turns to its default (`paused: false`, which the
/// spec leaves out) is cleared, and fields the typed spec does not know are left alone.
#[derive(Debug, Serialize)]
struct SpecPatch {
    metadata: ObjectMeta,
    spec: Value,
}

async fn write_spec(api: &Api<Shim>, current: &Shim, spec: &ShimSpec) -> Result<(), Attempt> {
    let (Ok(before), Ok(after)) = (
        serde_json::to_value(&current.spec),
        serde_json::to_value(spec),
    ) else {
        return Err(Attempt::Failed(WriteError::local(format!(
            "the spec of Shim {} cannot be written as JSON",
            current.name_any()
        ))));
    };
    let patch = SpecPatch {
        metadata: ObjectMeta {
            resource_version: current.metadata.resource_version.clone(),
            ..ObjectMeta::default()
        },
        spec: merge_patch(&before, &after),
    };
    api.patch(&current.name_any(), &params(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .map_err(Attempt::from)
}
