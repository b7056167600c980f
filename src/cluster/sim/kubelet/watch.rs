//! What the kubelet follows: one pod watch for all nodes (each pod bound to a simulated node gets a worker), and
//! the machines underneath (changes announced by the other components, fault windows opening and closing).

use std::collections::HashSet;
use std::future::pending;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

use super::{Kubelet, Tracked, locked, worker};
use crate::cluster::sim::forget_managed_fields;
use crate::cluster::sim::scenario::Fault;

/// Watch every pod; start a worker for each pod bound to a simulated node, stop it when the pod goes.
pub async fn pods(kubelet: Arc<Kubelet>) {
    let api: Api<Pod> = Api::all(kubelet.world.client.clone());
    let stream = watcher::watcher(api, watcher::Config::default())
        .modify(forget_managed_fields)
        .default_backoff();
    futures::pin_mut!(stream);
    let mut relisted: Option<HashSet<String>> = None;
    loop {
        let event = tokio::select! {
            _ = kubelet.world.stop.cancelled() => return,
            event = stream.next() => event,
        };
        match event {
            Some(Ok(Event::Init)) => relisted = Some(HashSet::new()),
            Some(Ok(Event::InitApply(pod))) => {
                if let (Some(seen), Some(uid)) = (relisted.as_mut(), pod.metadata.uid.clone()) {
                    seen.insert(uid);
                }
                seen(&kubelet, pod);
            }
            Some(Ok(Event::InitDone)) => {
                if let Some(seen) = relisted.take() {
                    forget_all_but(&kubelet, &seen);
                }
            }
            Some(Ok(Event::Apply(pod))) => seen(&kubelet, pod),
            Some(Ok(Event::Delete(pod))) => gone(&kubelet, &pod),
            Some(Err(e)) => tracing::debug!(error = %e, "watching pods"),
            None => return,
        }
    }
}

/// A pod was created or changed.
fn seen(kubelet: &Arc<Kubelet>, pod: Pod) {
    let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
        return;
    };
    if !kubelet.nodes.contains_key(&node) {
        return;
    }
    let Some(uid) = pod.metadata.uid.clone() else {
        return;
    };
    let mut pods = locked(&kubelet.pods);
    if pod.metadata.deletion_timestamp.is_some() {
        if let Some(Tracked::Running(killed)) = pods.get(&uid) {
            killed.cancel();
        }
        return;
    }
    if pods.contains_key(&uid) {
        return;
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        pods.insert(uid, Tracked::Done);
        return;
    }
    let killed = CancellationToken::new();
    pods.insert(uid, Tracked::Running(killed.clone()));
    tokio::spawn(worker::run(kubelet.clone(), pod, node, killed));
}

/// A pod was deleted: its containers stop and its logs go.
fn gone(kubelet: &Kubelet, pod: &Pod) {
    if let Some(uid) = &pod.metadata.uid
        && let Some(Tracked::Running(killed)) = locked(&kubelet.pods).remove(uid)
    {
        killed.cancel();
    }
    if let (Some(namespace), Some(name)) = (&pod.metadata.namespace, &pod.metadata.name) {
        kubelet.world.server.logs().remove_pod(namespace, name);
    }
}

/// After a relist: pods that were not listed are gone.
fn forget_all_but(kubelet: &Kubelet, listed: &HashSet<String>) {
    locked(&kubelet.pods).retain(|uid, tracked| {
        let keep = listed.contains(uid);
        if let (false, Tracked::Running(killed)) = (keep, &*tracked) {
            killed.cancel();
        }
        keep
    });
}

/// Follow machine changes announced by the other components, and wake when a fault window opens or closes to
/// apply it: nodes held NotReady, images the registry loses.
pub async fn machines(kubelet: Arc<Kubelet>, mut changes: broadcast::Receiver<String>) {
    let world = kubelet.world.clone();
    let boundaries = world.faults.boundaries();
    let mut next = boundaries.partition_point(|t| *t < world.clock.now());
    loop {
        let wake_at = boundaries.get(next).copied();
        let fault_window = async {
            match wake_at {
                Some(at) => world.clock.sleep_until(at).await,
                None => pending::<()>().await,
            }
        };
        tokio::select! {
            _ = world.stop.cancelled() => return,
            change = changes.recv() => match change {
                Ok(node) => kubelet.refresh_node(&node),
                Err(RecvError::Lagged(_)) => {
                    for node in kubelet.nodes.keys() {
                        kubelet.refresh_node(node);
                    }
                }
                Err(RecvError::Closed) => return,
            },
            _ = fault_window => {
                if let Some(at) = wake_at {
                    apply_faults_at(&kubelet, at);
                }
                next += 1;
            }
        }
    }
}

/// Apply the faults that start or end at `at`.
fn apply_faults_at(kubelet: &Kubelet, at: Duration) {
    let world = &kubelet.world;
    for (image, when, nodes) in world.faults.image_removals() {
        if when != at {
            continue;
        }
        if nodes.is_empty() {
            world.registry.remove(&image);
        }
        let wanted = super::super::registry::normalise(&image);
        for node in &nodes {
            let removed = world.machines.with(node, |machine| {
                let stored = machine
                    .images
                    .iter()
                    .map(|(name, _)| name.clone())
                    .find(|name| super::super::registry::normalise(name) == wanted);
                stored.is_some_and(|name| machine.images.remove(&name))
            });
            if removed == Some(true) {
                // No receiver means nobody publishes machines yet; the store changed either way.
                let _ = world.machine_changed.send(node.clone());
            }
        }
    }
    for fault in &world.scenario.faults {
        if let Fault::NodeNotReady { node, from, to } = fault
            && (*from == at || *to == at)
        {
            kubelet.refresh_node(node);
        }
    }
}
