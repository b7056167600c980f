//! The release of ResourceClaims: when a pod that reserved a claim is deleted or has finished, its entry leaves the
//! claim's `status.reservedFor`, and a claim reserved for nobody any more is deallocated (its `status.allocation`
//! cleared), so its devices are free for other claims. Kubernetes does this in the resource claim controller of
//! kube-controller-manager; here it runs beside the scheduler, which reserves what it releases.

use std::collections::HashSet;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use serde_json::json;

use super::{Seen, changes_of, is_terminal};
use crate::{MANAGER, World};

/// Release the claims of pods that are gone whenever a pod goes or finishes, or a claim changes; until the world
/// stops.
pub(super) async fn run(world: Arc<World>) {
    let pods = world.watches.pods.store();
    let pod_events = world
        .watches
        .pods
        .subscribe_with(|change| match change {
            watcher::Event::Apply(pod) if !is_terminal(pod) => Seen::Pod(None, false),
            _ => Seen::Everything,
        })
        .filter(|seen| std::future::ready(matches!(seen, Seen::Everything)));
    let mut events = futures::stream::select(
        pod_events.boxed(),
        changes_of::<ResourceClaim>(&world.client),
    );
    loop {
        tokio::select! {
            () = world.stop.cancelled() => return,
            next = events.next() => if next.is_none() { return },
        }
        while let Some(Some(_)) = events.next().now_or_never() {}
        if pods.wait_until_ready().now_or_never().is_none() {
            continue;
        }
        release(&world, &pods).await;
    }
}

/// Drop the reservations of pods that are gone or have finished (a pod being deleted still runs, and keeps its
/// devices until it is gone), and deallocate the claims left unreserved.
async fn release(world: &World, pods: &Store<Pod>) {
    let api = Api::<ResourceClaim>::all(world.client.clone());
    let claims = match api.list(&ListParams::default()).await {
        Ok(claims) => claims.items,
        Err(error) => {
            tracing::debug!(%error, "claims not listed");
            return;
        }
    };
    if claims.iter().all(|c| c.status.is_none()) {
        return;
    }
    let alive: HashSet<String> = pods
        .state()
        .iter()
        .filter(|p| !is_terminal(p))
        .filter_map(|p| p.uid())
        .collect();
    for claim in claims {
        if let Some(status) = kept(&claim, &alive) {
            write(world, &claim, status).await;
        }
    }
}

/// The status `claim` should have with only the reservations of `alive` pods, when that differs from what it has.
fn kept(claim: &ResourceClaim, alive: &HashSet<String>) -> Option<serde_json::Value> {
    let status = claim.status.as_ref()?;
    let reserved = status.reserved_for.as_deref().unwrap_or_default();
    let kept: Vec<_> = reserved
        .iter()
        .filter(|r| r.resource != "pods" || alive.contains(&r.uid))
        .collect();
    if kept.len() == reserved.len() && !(kept.is_empty() && status.allocation.is_some()) {
        return None;
    }
    Some(if kept.is_empty() {
        json!({"reservedFor": null, "allocation": null})
    } else {
        json!({"reservedFor": kept})
    })
}

async fn write(world: &World, claim: &ResourceClaim, status: serde_json::Value) {
    let api: Api<ResourceClaim> =
        Api::namespaced(world.client.clone(), &claim.namespace().unwrap_or_default());
    let patch = json!({
        "metadata": {"resourceVersion": claim.resource_version()},
        "status": status,
    });
    let params = PatchParams {
        field_manager: Some(MANAGER.to_string()),
        ..PatchParams::default()
    };
    if let Err(error) = api
        .patch_status(&claim.name_any(), &params, &Patch::Merge(&patch))
        .await
    {
        tracing::debug!(claim = %claim.name_any(), %error, "claim not released");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(status: serde_json::Value) -> ResourceClaim {
        serde_json::from_value(json!({
            "metadata": {"name": "c", "namespace": "n"},
            "spec": {},
            "status": status,
        }))
        .expect("a claim")
    }

    #[test]
    fn reservations_of_gone_pods_go_and_the_last_deallocates() {
        let allocation = json!({"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "w-0", "device": "gpu-0"}]}});
        let two = claim(json!({"allocation": allocation, "reservedFor": [
            {"resource": "pods", "name": "a", "uid": "ua"},
            {"resource": "pods", "name": "b", "uid": "ub"}]}));
        let both = HashSet::from(["ua".to_owned(), "ub".to_owned()]);
        assert_eq!(kept(&two, &both), None);
        let only_a = HashSet::from(["ua".to_owned()]);
        assert_eq!(
            kept(&two, &only_a),
            Some(json!({"reservedFor": [{"resource": "pods", "name": "a", "uid": "ua"}]}))
        );
        assert_eq!(
            kept(&two, &HashSet::new()),
            Some(json!({"reservedFor": null, "allocation": null}))
        );
        let unreserved = claim(json!({"allocation": allocation}));
        assert_eq!(
            kept(&unreserved, &HashSet::new()),
            Some(json!({"reservedFor": null, "allocation": null}))
        );
        assert_eq!(kept(&claim(json!({})), &HashSet::new()), None);
    }
}
