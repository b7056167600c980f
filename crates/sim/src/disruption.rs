//! The disruption controller of the simulated cluster, as kube-controller-manager runs it: every
//! PodDisruptionBudget's status says how many of its pods are healthy and how many may be evicted now, which is
//! what the API server's evictions consult (`kubectl drain`).
//!
//! - `expectedPods` are the pods the budget selects that have not finished; `currentHealthy` those of them that are
//!   ready, not terminating and not evicted a moment ago (`disruptedPods`).
//! - `desiredHealthy` is `minAvailable` (a count, or a percentage of the expected pods rounded up), or the expected
//!   pods less `maxUnavailable` (likewise); `disruptionsAllowed` is how far the healthy pods exceed it, and the
//!   `DisruptionAllowed` condition says whether that is more than none.
//! - An entry of `disruptedPods` is dropped once its pod is gone or terminating, or after two minutes.
//!
//! Everything is decided from the API on every pass, so a restart of the cluster loses nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::workloads::replicas::{is_active, is_ready};
use super::{MANAGER, World, forget_managed_fields};
use kmm_apiserver::apiserver::selector::LabelSelector;

/// How long an evicted pod is counted as disrupted while it has not gone yet.
const DISRUPTION_TIMEOUT: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

/// How long a pass whose writes failed, or that holds disrupted pods, waits before it runs again without an event.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Start the controller; it runs until the world stops.
pub(crate) fn spawn(world: Arc<World>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let client = world.client.clone();
        let (budgets, budget_writer) = reflector::store::<PodDisruptionBudget>();
        let pods = world.watches.pods.store();
        let streams = [
            reflector::reflector(
                budget_writer,
                watcher(
                    Api::<PodDisruptionBudget>::all(client.clone()),
                    Default::default(),
                )
                .modify(forget_managed_fields),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            world.watches.pods.subscribe_with(|_| ()).boxed(),
        ];
        let mut events = futures::stream::select_all(streams);
        let mut due = true;
        loop {
            tokio::select! {
                () = world.stop.cancelled() => return,
                next = events.next() => match next {
                    Some(()) => due = true,
                    None => return,
                },
                () = tokio::time::sleep(RETRY), if due => {}
            }
            while let Some(Some(())) = events.next().now_or_never() {}
            let ready = budgets.wait_until_ready().now_or_never().is_some()
                && pods.wait_until_ready().now_or_never().is_some();
            if due && ready {
                due = !pass(&client, &budgets, &pods.state()).await;
            }
        }
    })
}

/// Bring every budget's status up to date; whether the pass is done (every write succeeded and no disrupted pod
/// waits to be forgotten).
async fn pass(
    client: &kube::Client,
    budgets: &Store<PodDisruptionBudget>,
    pods: &[Arc<Pod>],
) -> bool {
    let mut done = true;
    for budget in budgets.state() {
        if budget.meta().deletion_timestamp.is_some() {
            continue;
        }
        let status = status_of(&budget, pods, jiff::Timestamp::now());
        if status
            .get("disruptedPods")
            .and_then(Value::as_object)
            .is_some_and(|d| !d.is_empty())
        {
            done = false;
        }
        if let Err(error) = write_status(client, &budget, status).await {
            done = false;
            tracing::debug!(budget = %budget.name_any(), %error, "syncing poddisruptionbudget");
        }
    }
    done
}

/// What the budget's status should say about `pods` at `now` (the `DisruptionAllowed` condition left out).
/// Recorded disruptions are kept while their pods are still there, so a pod just evicted is not counted healthy.
fn status_of(budget: &PodDisruptionBudget, pods: &[Arc<Pod>], now: jiff::Timestamp) -> Value {
    let spec = budget.spec.clone().unwrap_or_default();
    let selector = spec
        .selector
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|s| LabelSelector::from_label_selector(&s).ok());
    let namespace = budget.namespace();
    let selected: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|p| p.namespace() == namespace)
        .filter(|p| {
            let labels = serde_json::to_value(&p.metadata.labels).unwrap_or(Value::Null);
            selector
                .as_ref()
                .is_some_and(|s| s.matches(labels.as_object()))
        })
        .collect();
    let recorded = budget
        .status
        .as_ref()
        .and_then(|s| s.disrupted_pods.clone())
        .unwrap_or_default();
    let disrupted: BTreeMap<String, Value> = recorded
        .into_iter()
        .filter(|(name, when)| {
            let pending = selected
                .iter()
                .any(|p| p.name_any() == *name && p.metadata.deletion_timestamp.is_none());
            let expires = when.0.checked_add(DISRUPTION_TIMEOUT).unwrap_or(when.0);
            pending && expires > now
        })
        .map(|(name, when)| (name, json!(when)))
        .collect();
    let expected = selected.iter().filter(|p| !is_finished(p)).count();
    let healthy = selected
        .iter()
        .filter(|p| is_active(p) && is_ready(p) && !disrupted.contains_key(&p.name_any()))
        .count();
    let desired = match (&spec.min_available, &spec.max_unavailable) {
        (Some(min), _) => scaled(min, expected),
        (None, Some(max)) => expected.saturating_sub(scaled(max, expected)),
        (None, None) => 0,
    };
    let mut status = json!({
        "observedGeneration": budget.metadata.generation,
        "disruptionsAllowed": healthy.saturating_sub(desired),
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
    });
    if !disrupted.is_empty() {
        status["disruptedPods"] = json!(disrupted);
    }
    status
}

/// Whether the pod has run to its end.
fn is_finished(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// A count, or a percentage of `total` rounded up.
fn scaled(value: &IntOrString, total: usize) -> usize {
    match value {
        IntOrString::Int(n) => usize::try_from(*n).unwrap_or(0),
        IntOrString::String(text) => text
            .strip_suffix('%')
            .and_then(|p| p.parse::<usize>().ok())
            .map_or(0, |percent| (percent * total).div_ceil(100)),
    }
}

/// The counts of a budget's status, absent ones reading as 0.
const COUNTS: &[&str] = &[
    "observedGeneration",
    "disruptionsAllowed",
    "currentHealthy",
    "desiredHealthy",
    "expectedPods",
];

/// Write `status` and the `DisruptionAllowed` condition, unless the budget already says all of it.
async fn write_status(
    client: &kube::Client,
    budget: &PodDisruptionBudget,
    mut status: Value,
) -> kube::Result<()> {
    let old = serde_json::to_value(&budget.status).unwrap_or(Value::Null);
    let allowed = status["disruptionsAllowed"].as_u64().unwrap_or(0) > 0;
    let want = if allowed { "True" } else { "False" };
    let old_condition = old
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "DisruptionAllowed"));
    let same_counts = COUNTS
        .iter()
        .all(|key| old.get(*key).unwrap_or(&json!(0)) == status.get(*key).unwrap_or(&json!(0)));
    let no_pods = json!({});
    let same_disrupted = old.get("disruptedPods").unwrap_or(&no_pods)
        == status.get("disruptedPods").unwrap_or(&no_pods);
    let same_fields = same_counts && same_disrupted;
    if same_fields && old_condition.is_some_and(|c| c["status"] == want) {
        return Ok(());
    }
    let transition = match old_condition {
        Some(c) if c["status"] == want => c["lastTransitionTime"].clone(),
        _ => json!(
            jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        ),
    };
    let reason = if allowed {
        "SufficientPods"
    } else {
        "InsufficientPods"
    };
    status["conditions"] = json!([{
        "type": "DisruptionAllowed",
        "status": want,
        "reason": reason,
        "message": "",
        "observedGeneration": budget.metadata.generation,
        "lastTransitionTime": transition,
    }]);
    // A merge patch cannot remove map entries by leaving them out: the whole status replaces the old one.
    let mut replaced = budget.clone();
    replaced.status = Some(serde_json::from_value(status).map_err(kube::Error::SerdeError)?);
    let namespace = budget.namespace().unwrap_or_default();
    Api::<PodDisruptionBudget>::namespaced(client.clone(), &namespace)
        .replace_status(
            &budget.name_any(),
            &PostParams {
                field_manager: Some(MANAGER.to_owned()),
                ..Default::default()
            },
            &replaced,
        )
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up() {
        assert_eq!(scaled(&IntOrString::String("50%".into()), 3), 2);
        assert_eq!(scaled(&IntOrString::Int(2), 3), 2);
        assert_eq!(scaled(&IntOrString::String("0%".into()), 3), 0);
    }
}
