//! The sample's Shims, one per state the Shims pane explains, all on the nodes of the first pool: `lunatic`
//! complete everywhere, `slight` rolling its second batch, `spin-v2` waiting for batch 2 to be approved,
//! `broken-spin` failed on one node (its archive is missing), and `wasmedge` being uninstalled.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use serde_json::{Value, json};

use super::{POOL_LABEL, SampleNode, ago, event, object, pool};
use kmm_api::shim::Shim;
use kmm_api::shim::names::{self, INSTALLER_NAMESPACE};

/// The sample's Shims with their installer pods, their events, and the labels they put on each node (indexed
/// like `nodes`).
pub(super) struct SampleShims {
    /// The Shims.
    pub shims: Vec<Arc<Shim>>,
    /// Their installer pods.
    pub pods: Vec<Arc<Pod>>,
    /// Their events.
    pub events: Vec<Arc<Event>>,
    /// Node labels `<shim>=<state>` per node.
    pub labels: Vec<BTreeMap<String, String>>,
}

/// The Shims over `nodes`.
///
/// One flat list of demo objects, a paragraph per Shim (its rollout, its pods, its events, its node labels), read
/// top to bottom like the Shims pane it fills; the paragraphs share the node labels being built, so they stay in
/// one function rather than five that pass those around.
pub(super) fn shims(nodes: &[SampleNode]) -> SampleShims {
    let targets: Vec<usize> = (0..nodes.len())
        .filter(|i| nodes[*i].pool == pool(0))
        .collect();
    let name_of = |position: usize| nodes[targets[position]].name.as_str();
    let count = i32::try_from(targets.len()).unwrap_or(i32::MAX);
    let mut sample = SampleShims {
        shims: Vec::new(),
        pods: Vec::new(),
        events: Vec::new(),
        labels: Vec::new(),
    };
    let mut labels = vec![BTreeMap::new(); nodes.len()];
    let mut label = |position: usize, shim: &str, state: &str| {
        labels[targets[position]].insert(shim.to_owned(), state.to_owned());
    };

    // lunatic: provisioned everywhere.
    for position in 0..targets.len() {
        label(position, "lunatic", "provisioned");
    }
    let lunatic = shim_object(
        "lunatic",
        json!({"type": "recreate"}),
        json!({"platforms": [
            {"os": "linux", "arch": "amd64", "location": "https://github.com/spinframework/lunatic/releases/v0.13.2/lunatic-amd64.tar.gz"},
            {"os": "linux", "arch": "arm64", "location": "https://github.com/spinframework/lunatic/releases/v0.13.2/lunatic-arm64.tar.gz"},
        ]}),
        json!({"nodes": count, "nodesReady": count, "observedGeneration": 1, "conditions": [
            condition("Ready", true, "Complete", &format!("provisioned on {count} of {count} nodes")),
            condition("Progressing", false, "Complete", ""),
            condition("Degraded", false, "AsExpected", ""),
        ]}),
        None,
    );

    // slight: rolling, 25% a batch, batch 2 under way.
    let step = (targets.len() / 4).max(1);
    let batches = i32::try_from(targets.len().div_ceil(step)).unwrap_or(0);
    let mut slight_statuses = Vec::new();
    for position in 0..targets.len() {
        let batch = i32::try_from(position / step + 1).unwrap_or(0);
        match batch {
            1 => label(position, "slight", "provisioned"),
            2 => {
                label(position, "slight", "pending");
                slight_statuses.push(json!({"node": name_of(position), "state": "pending", "batch": 2,
                    "lastTransitionTime": ago(45)}));
                sample
                    .pods
                    .push(installer_pod("slight", name_of(position), 2, "install", "Running", None));
            }
            _ => slight_statuses.push(json!({"node": name_of(position), "state": "waiting", "batch": batch,
                "message": format!("waits for batch {}", batch - 1), "lastTransitionTime": ago(900)})),
        }
    }
    let slight_ready = i32::try_from(step.min(targets.len())).unwrap_or(0);
    let slight = shim_object(
        "slight",
        json!({"type": "rolling", "rolling": {"maxUpdate": "25%"}}),
        json!({"anonHttp": {"location": "https://github.com/deislabs/containerd-wasm-shims/releases/v0.11.1/containerd-wasm-shims-v1-slight-linux-x86_64.tar.gz"}}),
        json!({"nodes": count, "nodesReady": slight_ready, "observedGeneration": 1,
            "rollout": {"batch": 2, "batches": batches}, "nodeStatuses": slight_statuses, "conditions": [
            condition("Ready", false, "Rolling", &format!("provisioned on {slight_ready} of {count} nodes")),
            condition("Progressing", true, "Rolling", &format!("batch 2 of {batches} installing")),
            condition("Degraded", false, "AsExpected", ""),
        ]}),
        None,
    );

    // spin-v2: two nodes a batch, each batch approved by hand; batch 1 done, batch 2 waits.
    let spin_batches = i32::try_from(targets.len().div_ceil(2)).unwrap_or(0);
    let mut spin_statuses = Vec::new();
    for position in 0..targets.len() {
        let batch = i32::try_from(position / 2 + 1).unwrap_or(0);
        if batch == 1 {
            label(position, "spin-v2", "provisioned");
            sample.pods.push(installer_pod(
                "spin-v2",
                name_of(position),
                1,
                "install",
                "Succeeded",
                None,
            ));
        } else {
            let message = if batch == 2 {
                "waits for approval of batch 2".to_owned()
            } else {
                format!("waits for batch {}", batch - 1)
            };
            spin_statuses.push(
                json!({"node": name_of(position), "state": "waiting", "batch": batch,
                "message": message, "lastTransitionTime": ago(118)}),
            );
        }
    }
    let spin_ready = i32::try_from(targets.len().min(2)).unwrap_or(0);
    let awaiting = targets.len() > 2;
    let waits = format!("batch 2 of {spin_batches} waits for approval");
    let spin = shim_object(
        "spin-v2",
        json!({"type": "rolling", "rolling": {"maxUpdate": 2, "approval": "Manual", "approvedBatch": 1}}),
        json!({"anonHttp": {"location": "https://github.com/spinframework/containerd-shim-spin/releases/v0.17.0/containerd-shim-spin-v2-linux-x86_64.tar.gz"}}),
        json!({"nodes": count, "nodesReady": spin_ready, "observedGeneration": 1,
            "rollout": {"batch": 2, "batches": spin_batches, "awaitingApproval": awaiting,
                "approvals": [{"batch": 1, "approvedBy": "kmm-tui-console", "approvedAt": ago(125)}]},
            "nodeStatuses": spin_statuses, "conditions": [
            condition("Ready", false, "AwaitingApproval", &waits),
            condition("Progressing", true, "AwaitingApproval", &waits),
            condition("Degraded", false, "AsExpected", ""),
        ]}),
        None,
    );
    if !targets.is_empty() {
        let first: Vec<&str> = (0..targets.len().min(2)).map(name_of).collect();
        for (reason, note, secs) in [
            (
                "BatchApproved",
                format!("batch 1 of {spin_batches} approved by kmm-tui-console (approvedBatch 1)"),
                125,
            ),
            (
                "BatchStarted",
                format!("batch 1 of {spin_batches} started on {}", first.join(", ")),
                125,
            ),
            (
                "BatchFinished",
                format!(
                    "batch 1 of {spin_batches} finished: {spin_ready} of {} nodes provisioned, 0 failed",
                    targets.len()
                ),
                118,
            ),
        ] {
            sample
                .events
                .push(event("Shim", None, "spin-v2", false, reason, &note, secs));
        }
    }

    // broken-spin: its archive is missing, so the one node it targets failed.
    let broken_node = targets.get(2).map(|i| nodes[*i].name.clone());
    let missing = "https://example.com/missing/broken-spin.tar.gz";
    let failure = format!("downloader: 404 Not Found from {missing}");
    let mut broken_statuses = Vec::new();
    if let Some(node) = &broken_node {
        label(2, "broken-spin", "failed");
        broken_statuses.push(
            json!({"node": node, "state": "failed", "batch": 1, "message": failure,
            "lastTransitionTime": ago(300)}),
        );
        sample.pods.push(installer_pod(
            "broken-spin",
            node,
            1,
            "install",
            "Failed",
            Some(&failure),
        ));
        sample.events.push(event(
            "Shim",
            None,
            "broken-spin",
            true,
            "InstallFailed",
            &format!("{node}: {failure}"),
            300,
        ));
    }
    let broken = shim_object(
        "broken-spin",
        json!({"type": "recreate"}),
        json!({"anonHttp": {"location": missing}}),
        json!({"nodes": i32::from(broken_node.is_some()), "nodesReady": 0, "observedGeneration": 1,
            "nodeStatuses": broken_statuses, "conditions": [
            condition("Ready", false, "InstallFailed", "provisioned on 0 of 1 node"),
            condition("Progressing", false, "InstallFailed", ""),
            condition("Degraded", true, "InstallFailed",
                &format!("{}: {failure}", broken_node.as_deref().unwrap_or("-"))),
        ]}),
        broken_node.as_deref(),
    );

    // wasmedge: deleted; its first node is uninstalling.
    let mut wasmedge_statuses = Vec::new();
    if !targets.is_empty() {
        label(0, "wasmedge", "uninstall");
        wasmedge_statuses.push(json!({"node": name_of(0), "state": "uninstall",
            "message": "uninstalling", "lastTransitionTime": ago(20)}));
        sample.pods.push(installer_pod(
            "wasmedge",
            name_of(0),
            1,
            "uninstall",
            "Running",
            None,
        ));
    }
    let mut wasmedge = shim_object(
        "wasmedge",
        json!({"type": "recreate"}),
        json!({"anonHttp": {"location": "https://github.com/containerd/runwasi/releases/v0.4.0/containerd-shim-wasmedge-x86_64.tar.gz"}}),
        json!({"nodes": count, "nodesReady": 0, "observedGeneration": 1, "nodeStatuses": wasmedge_statuses,
            "conditions": [
            condition("Ready", false, "Uninstalling", "removing the shim from 1 node"),
            condition("Progressing", true, "Uninstalling", "removing the shim from 1 node"),
        ]}),
        None,
    );
    if let Some(metadata) = wasmedge.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert("deletionTimestamp".to_owned(), json!(ago(60)));
        metadata.insert(
            "finalizers".to_owned(),
            json!(["runtime.spinkube.dev/finalizer"]),
        );
    }

    sample.labels = labels;
    sample.shims = [lunatic, slight, spin, broken, wasmedge]
        .into_iter()
        .map(object)
        .collect();
    sample
}

/// A Shim literal: cluster-scoped, on the first pool's nodes (or on `node` alone).
fn shim_object(
    name: &str,
    rollout: Value,
    fetch: Value,
    status: Value,
    node: Option<&str>,
) -> Value {
    let selector = match node {
        Some(node) => json!({"kubernetes.io/hostname": node}),
        None => json!({POOL_LABEL: pool(0)}),
    };
    json!({
        "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
        "metadata": {"name": name, "generation": 1, "creationTimestamp": ago(3600)},
        "spec": {"nodeSelector": selector, "fetchStrategy": fetch,
            "runtimeClass": {"name": format!("wasmtime-{name}"), "handler": name},
            "rolloutStrategy": rollout},
        "status": status,
    })
}

/// An installer pod of `shim` on `node`, of rollout batch `batch`; `failure` is the downloader's message when it
/// failed.
fn installer_pod(
    shim: &str,
    node: &str,
    batch: i32,
    operation: &str,
    phase: &str,
    failure: Option<&str>,
) -> Arc<Pod> {
    let downloader = match failure {
        Some(message) => {
            json!({"name": "downloader", "ready": false, "restartCount": 0, "image": "shim-downloader",
            "imageID": "", "state": {"terminated": {"exitCode": 1, "reason": "Error", "message": message}}})
        }
        None => {
            json!({"name": "downloader", "ready": false, "restartCount": 0, "image": "shim-downloader",
            "imageID": "", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}})
        }
    };
    object(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{node}-{shim}-{operation}"), "namespace": INSTALLER_NAMESPACE,
            "creationTimestamp": ago(60),
            "labels": {names::SHIM_NAME: shim, names::OPERATION: operation},
            "annotations": {names::POD_BATCH: batch.to_string()}},
        "spec": {"nodeName": node,
            "initContainers": [{"name": "downloader", "image": "ghcr.io/spinframework/shim-downloader:latest"}],
            "containers": [{"name": "provisioner", "image": "ghcr.io/spinframework/node-installer:latest",
                "args": [operation, "-H", "/mnt/node-root", "-r", shim]}]},
        "status": {"phase": phase, "initContainerStatuses": [downloader]},
    }))
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
        "message": message, "lastTransitionTime": ago(600), "observedGeneration": 1})
}
