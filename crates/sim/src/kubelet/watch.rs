//! What the kubelet follows: the simulation's shared pod watch for all nodes (each pod bound to a simulated node gets a
//! worker), and the machines underneath (changes announced by the other components, fault windows opening and closing).

use std::collections::{BTreeSet, HashSet};
use std::future::pending;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kmm_api::image_ref::comparison_key;
use kube::runtime::watcher::Event;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

use super::{Kubelet, Tracked, ephemeral, locked, worker};
use crate::mco::daemon::REBOOT_TIME;
use crate::scenario::Fault;
use crate::{inject, registry_record};

/// Follow every pod (the simulation's shared pod watch); start a worker for each pod bound to a simulated node,
/// stop it when the pod goes.
pub(super) async fn pods(kubelet: Arc<Kubelet>) {
    let mut changes = kubelet.world.watches.pods.subscribe();
    let mut relisted: Option<HashSet<String>> = None;
    loop {
        let change = tokio::select! {
            _ = kubelet.world.stop.cancelled() => return,
            change = changes.next() => change,
        };
        match change {
            Some(Event::Init) => relisted = Some(HashSet::new()),
            Some(Event::InitApply(pod)) => {
                if let (Some(seen), Some(uid)) = (relisted.as_mut(), pod.metadata.uid.clone()) {
                    seen.insert(uid);
                }
                seen(&kubelet, &pod);
            }
            Some(Event::InitDone) => {
                if let Some(seen) = relisted.take() {
                    forget_all_but(&kubelet, &seen);
                }
            }
            Some(Event::Apply(pod)) => seen(&kubelet, &pod),
            Some(Event::Delete(pod)) => gone(&kubelet, &pod),
            None => return,
        }
    }
}

/// A pod was created or changed.
fn seen(kubelet: &Arc<Kubelet>, pod: &Pod) {
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
    match pods.get(&uid) {
        Some(Tracked::Running(killed)) => return ephemeral::start_new(kubelet, pod, &node, killed),
        Some(Tracked::Done) => return,
        None => {}
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        pods.insert(uid, Tracked::Done);
        return;
    }
    let killed = CancellationToken::new();
    pods.insert(uid, Tracked::Running(killed.clone()));
    tokio::spawn(worker::run(kubelet.clone(), pod.clone(), node, killed));
}

/// A pod was deleted: its containers stop and its logs go.
fn gone(kubelet: &Kubelet, pod: &Pod) {
    if let Some(uid) = &pod.metadata.uid {
        if let Some(Tracked::Running(killed)) = locked(&kubelet.pods).remove(uid) {
            killed.cancel();
        }
        ephemeral::forget(kubelet, uid);
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

/// Follow machine changes announced by the other components, and wake when a fault window opens or closes or an
/// instant fault is due to apply it: nodes held NotReady, images lost, reboots, watches closed. Faults injected at
/// run time wake it when they change.
pub(super) async fn machines(kubelet: Arc<Kubelet>, mut changes: broadcast::Receiver<String>) {
    let world = kubelet.world.clone();
    let boundaries = world.faults.boundaries();
    let mut next = boundaries.partition_point(|t| *t < world.clock.now());
    let mut injected = world.faults.subscribe();
    // Nodes the injected faults held NotReady when last applied, to bring back when their entry goes.
    let mut held = BTreeSet::new();
    loop {
        let now = world.clock.now();
        let wake_at = [
            boundaries.get(next).copied(),
            world.faults.next_injected_boundary(now),
        ]
        .into_iter()
        .flatten()
        .min();
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
            changed = injected.changed() => {
                if changed.is_err() {
                    return;
                }
                apply_injected(&kubelet, &mut held);
            }
            _ = fault_window => {
                while boundaries.get(next).is_some_and(|at| *at <= world.clock.now()) {
                    apply_faults_at(&kubelet, boundaries[next]);
                    next += 1;
                }
                apply_injected(&kubelet, &mut held);
            }
        }
    }
}

/// Apply the scenario's faults that start, end or happen at `at`.
fn apply_faults_at(kubelet: &Arc<Kubelet>, at: Duration) {
    for fault in kubelet.world.faults.scenario_instants_at(at) {
        fire(kubelet, &fault);
    }
    for node in kubelet.world.faults.scenario_windows_at(at) {
        kubelet.refresh_node(&node);
    }
}

/// Apply the injected faults as they stand now: fire the instant ones that are due (and have their entries
/// removed), and bring every node an injected window holds, or held, up to date.
fn apply_injected(kubelet: &Arc<Kubelet>, held: &mut BTreeSet<String>) {
    let world = &kubelet.world;
    for due in world.faults.take_due(world.clock.now()) {
        fire(kubelet, &due.fault);
        let world = world.clone();
        tokio::spawn(async move { inject::remove_fired(&world, &due).await });
    }
    let holding: BTreeSet<String> = world
        .faults
        .injected()
        .into_iter()
        .filter_map(|i| match i.fault {
            Fault::NodeNotReady { node, .. } => Some(node),
            _ => None,
        })
        .collect();
    for node in held.union(&holding) {
        kubelet.refresh_node(node);
    }
    *held = holding;
}

/// Make an instant fault happen.
fn fire(kubelet: &Arc<Kubelet>, fault: &Fault) {
    let world = &kubelet.world;
    match fault {
        Fault::RemoveImage { image, nodes, .. } => {
            if nodes.is_empty() && world.registry.remove(image) {
                let world = world.clone();
                tokio::spawn(async move { registry_record::persist(&world).await });
            }
            let wanted = comparison_key(image);
            for node in nodes {
                let removed = world.machines.with(node, |machine| {
                    let stored = machine
                        .images
                        .iter()
                        .map(|(name, _)| name.clone())
                        .find(|name| comparison_key(name) == wanted);
                    stored.is_some_and(|name| machine.images.remove(&name))
                });
                if removed == Some(true) {
                    // No receiver means nobody publishes machines yet; the store changed either way.
                    let _ = world.machine_changed.send(node.clone());
                }
            }
        }
        Fault::Reboot { node, .. } => reboot(kubelet, node),
        Fault::CloseWatches { .. } => world.server.close_watches(),
        _ => {}
    }
}

/// Take `node`'s machine down, and after the time a reboot takes boot it again into the OS it ran. A machine that
/// is down already (rebooting into an update) does not crash, and one that another reboot brought up meanwhile is
/// left as it is.
fn reboot(kubelet: &Arc<Kubelet>, node: &str) {
    let world = kubelet.world.clone();
    let crashed = world.machines.with(node, |m| {
        let up = m.ready;
        m.ready = false;
        up.then(|| m.boot_id.clone())
    });
    let Some(Some(boot)) = crashed else {
        return;
    };
    kubelet.refresh_node(node);
    let node = node.to_owned();
    tokio::spawn(async move {
        tokio::select! {
            _ = world.stop.cancelled() => return,
            () = world.clock.sleep(REBOOT_TIME) => {}
        }
        world.machines.with(&node, |m| {
            if m.boot_id == boot {
                let (kernel, os) = (m.kernel_version.clone(), m.os_image.clone());
                let url = m.os_image_url.clone();
                m.reboot(&kernel, &os, url.as_deref());
                m.ready = true;
            }
        });
        let _ = world.machine_changed.send(node);
    });
}
