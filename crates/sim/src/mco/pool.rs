//! The pool side of the Machine Config Operator: which nodes belong to which pool, which of them move to the
//! pool's rendered configuration next (never more unavailable at once than `maxUnavailable` allows), and the
//! pool's status.
//!
//! Progress lives in node annotations (`currentConfig`, `desiredConfig`, `state`, `reason`), as on OpenShift:
//! a pool hands a node its new configuration by setting `desiredConfig`; the node update (see `daemon`) does the
//! rest and sets `currentConfig`. A restarted simulation reads the annotations and goes on from there.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::render::{self, Rendered};
use crate::{MANAGER, World};
use kmm_api::day0::node_update::{
    CURRENT_CONFIG, DEGRADED, DESIRED_CONFIG, DONE, REASON, STATE, WORKING,
};
use kmm_api::day0::{MACHINE_CONFIG_ROLE_LABEL, MachineConfigPool, MachineConfigPoolSpec};

/// The pools every OpenShift cluster has, with the node role label that selects their nodes.
const DEFAULT_POOLS: &[&str] = &["master", "worker"];

/// Pool that wins when a node matches it and others.
const MASTER: &str = "master";
/// Pool every worker matches; a custom pool of the node wins over it.
const WORKER: &str = "worker";

/// Create the `master` and `worker` pools when the cluster has no pool at all.
pub(crate) async fn ensure_default_pools(client: &kube::Client) -> kube::Result<()> {
    let api: Api<MachineConfigPool> = Api::all(client.clone());
    if !api.list(&Default::default()).await?.items.is_empty() {
        return Ok(());
    }
    for role in DEFAULT_POOLS {
        let selector = |key: String| LabelSelector {
            match_labels: Some([(key, String::new())].into()),
            ..LabelSelector::default()
        };
        let mut pool = MachineConfigPool::new(
            role,
            MachineConfigPoolSpec {
                machine_config_selector: Some(LabelSelector {
                    match_labels: Some(
                        [(MACHINE_CONFIG_ROLE_LABEL.to_string(), role.to_string())].into(),
                    ),
                    ..LabelSelector::default()
                }),
                node_selector: Some(selector(format!("node-role.kubernetes.io/{role}"))),
                ..MachineConfigPoolSpec::default()
            },
        );
        pool.metadata.labels = Some(
            [(
                format!("pools.operator.machineconfiguration.openshift.io/{role}"),
                String::new(),
            )]
            .into(),
        );
        match api.create(&PostParams::default(), &pool).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// The pool a node belongs to: `master` first, then its one custom pool, then `worker`; none when it matches
/// several custom pools (the Machine Config Operator refuses to pick).
pub(crate) fn pool_of(node: &Node, pools: &[Arc<MachineConfigPool>]) -> Option<String> {
    let matching: Vec<String> = pools
        .iter()
        .filter(|p| render::selects(p.spec.node_selector.as_ref(), node.labels()))
        .map(|p| p.name_any())
        .collect();
    if matching.iter().any(|p| p == MASTER) {
        return Some(MASTER.to_string());
    }
    let custom: Vec<&String> = matching.iter().filter(|p| *p != WORKER).collect();
    match custom.as_slice() {
        [one] => Some((*one).clone()),
        [] => matching.into_iter().next(),
        _ => None,
    }
}

/// What the pool controller knows of one node.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    /// Node name.
    pub name: String,
    current: Option<String>,
    desired: Option<String>,
    state: Option<String>,
    reason: Option<String>,
    ready: bool,
    unschedulable: bool,
    running_url: Option<String>,
    /// resourceVersion of the Node this view was read from.
    resource_version: u64,
}

impl Member {
    /// What the pool controller sees of `node`.
    pub(crate) fn read(world: &World, node: &Node) -> Self {
        let annotation = |key: &str| node.annotations().get(key).cloned();
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        let name = node.name_any();
        Self {
            running_url: world
                .machines
                .with(&name, |m| render::running_os_image_url(world, m))
                .flatten(),
            current: annotation(CURRENT_CONFIG),
            desired: annotation(DESIRED_CONFIG),
            state: annotation(STATE),
            reason: annotation(REASON),
            ready,
            unschedulable: node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true),
            resource_version: node
                .resource_version()
                .and_then(|rv| rv.parse().ok())
                .unwrap_or(0),
            name,
        }
    }

    /// Whether `other` shows the same node in the same state, whichever write of it (resourceVersion) it was
    /// read from.
    pub(crate) fn sees_same(&self, other: &Member) -> bool {
        self.name == other.name
            && self.current == other.current
            && self.desired == other.desired
            && self.state == other.state
            && self.reason == other.reason
            && self.ready == other.ready
            && self.unschedulable == other.unschedulable
            && self.running_url == other.running_url
    }

    fn is(&self, state: &str) -> bool {
        self.state.as_deref() == Some(state)
    }

    fn is_done(&self) -> bool {
        self.current.is_some() && self.current == self.desired && self.is(DONE)
    }

    /// Not ready, or in the middle of (or stuck in) an update.
    fn is_unavailable(&self) -> bool {
        !self.ready || !self.is_done()
    }

    fn is_updated(&self, target: &str) -> bool {
        self.is_done() && self.current.as_deref() == Some(target)
    }

    /// Whether the node update has work to do on this node.
    pub(crate) fn needs_update(&self) -> bool {
        !self.is(DEGRADED) && (self.current != self.desired || self.is(WORKING))
    }
}

/// What one pass over a pool found.
pub(crate) struct Outcome {
    /// Nodes the node update must work on.
    pub to_update: Vec<String>,
    /// Whether every node runs the rendered configuration.
    pub updated: bool,
}

/// The resourceVersion each node got from the operator's own last write to it. A pass over a large pool takes a
/// while, during which the watch cache is not read; the next pass must not act again on a view of a node that
/// predates what the operator itself already wrote (the "expectations" controllers keep), or it repeats its writes
/// forever on thousands of nodes.
pub(crate) type OwnWrites = HashMap<String, u64>;

/// Bring a pool's nodes towards its rendered configuration and publish its status.
pub(crate) async fn reconcile(
    world: &World,
    pool: &MachineConfigPool,
    nodes: &[Arc<Node>],
    rendered: &Rendered,
    own_writes: &mut OwnWrites,
) -> kube::Result<Outcome> {
    render::publish(&world.client, pool, rendered).await?;
    let mut members: Vec<Member> = nodes.iter().map(|n| Member::read(world, n)).collect();
    members.sort_by(|a, b| a.name.cmp(&b.name));
    let pool_name = pool.name_any();
    let target = rendered.name.as_str();
    let nodes_api: Api<Node> = Api::all(world.client.clone());
    // Views older than our own last write to a node are stale: act on those nodes in a later pass.
    let stale: Vec<bool> = members
        .iter()
        .map(|m| {
            own_writes
                .get(&m.name)
                .is_some_and(|written| m.resource_version < *written)
        })
        .collect();
    for (member, _) in members.iter_mut().zip(&stale).filter(|(_, stale)| !**stale) {
        adopt(&nodes_api, &pool_name, rendered, member, own_writes).await?;
    }
    if pool.spec.paused != Some(true) {
        let limit = max_unavailable(pool, members.len());
        let mut unavailable = members.iter().filter(|m| m.is_unavailable()).count();
        for (member, _) in members.iter_mut().zip(&stale).filter(|(_, stale)| !**stale) {
            if member.desired.as_deref() == Some(target) {
                continue;
            }
            let nothing_to_boot =
                rendered.os_image_url.is_none() || rendered.os_image_url == member.running_url;
            if member.is_unavailable() {
                assign(&nodes_api, member, target, false, own_writes).await?;
            } else if nothing_to_boot {
                assign(&nodes_api, member, target, true, own_writes).await?;
            } else if unavailable < limit {
                assign(&nodes_api, member, target, false, own_writes).await?;
                unavailable += 1;
            }
        }
    }
    publish_status(world, pool, &members, rendered).await?;
    Ok(Outcome {
        to_update: members
            .iter()
            .filter(|m| m.needs_update())
            .map(|m| m.name.clone())
            .collect(),
        updated: members.iter().all(|m| m.is_updated(target)),
    })
}

/// Give a node that carries no configuration yet (a new node) the one it runs, and correct a node whose machine
/// no longer runs the OS its configuration says (a machine replaced underneath it).
async fn adopt(
    nodes: &Api<Node>,
    pool: &str,
    rendered: &Rendered,
    member: &mut Member,
    own_writes: &mut OwnWrites,
) -> kube::Result<()> {
    let drifted = member.is_updated(&rendered.name)
        && rendered.os_image_url.is_some()
        && rendered.os_image_url != member.running_url;
    if member.current.is_some() && !drifted {
        return Ok(());
    }
    let own = render::config_name(pool, member.running_url.as_deref());
    patch_annotations(
        nodes,
        &member.name,
        json!({CURRENT_CONFIG: own, DESIRED_CONFIG: own, STATE: DONE}),
        own_writes,
    )
    .await?;
    member.current = Some(own.clone());
    member.desired = Some(own);
    member.state = Some(DONE.into());
    Ok(())
}

/// Hand a node its new configuration. A node that already runs it is simply marked done; a degraded node gets
/// a fresh attempt.
async fn assign(
    nodes: &Api<Node>,
    member: &mut Member,
    target: &str,
    already_running: bool,
    own_writes: &mut OwnWrites,
) -> kube::Result<()> {
    let annotations = if already_running && member.is_done() {
        member.current = Some(target.into());
        json!({CURRENT_CONFIG: target, DESIRED_CONFIG: target})
    } else if member.is(DEGRADED) {
        member.state = Some(WORKING.into());
        member.reason = None;
        json!({DESIRED_CONFIG: target, STATE: WORKING, REASON: null})
    } else {
        json!({DESIRED_CONFIG: target})
    };
    patch_annotations(nodes, &member.name, annotations, own_writes).await?;
    member.desired = Some(target.into());
    Ok(())
}

async fn patch_annotations(
    nodes: &Api<Node>,
    name: &str,
    annotations: Value,
    own_writes: &mut OwnWrites,
) -> kube::Result<()> {
    let params = PatchParams {
        field_manager: Some(MANAGER.to_string()),
        ..PatchParams::default()
    };
    let patch = json!({"metadata": {"annotations": annotations}});
    let written = nodes.patch(name, &params, &Patch::Merge(&patch)).await?;
    if let Some(rv) = written.resource_version().and_then(|rv| rv.parse().ok()) {
        own_writes.insert(name.to_string(), rv);
    }
    Ok(())
}

/// `spec.maxUnavailable`: a count or a percentage of the pool's nodes (rounded down, at least one); 1 when unset.
fn max_unavailable(pool: &MachineConfigPool, machines: usize) -> usize {
    match pool.spec.other.get("maxUnavailable") {
        Some(Value::Number(n)) => n
            .as_u64()
            .map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX).max(1)),
        Some(Value::String(s)) => s
            .strip_suffix('%')
            .and_then(|p| p.trim().parse::<usize>().ok())
            .map_or(1, |percent| (machines * percent / 100).max(1)),
        _ => 1,
    }
}

/// Counts, configuration and conditions, written only when they change.
async fn publish_status(
    world: &World,
    pool: &MachineConfigPool,
    members: &[Member],
    rendered: &Rendered,
) -> kube::Result<()> {
    let target = rendered.name.as_str();
    let machines = members.len();
    let updated = members.iter().filter(|m| m.is_updated(target)).count();
    let ready = members
        .iter()
        .filter(|m| m.is_updated(target) && m.ready && !m.unschedulable)
        .count();
    let unavailable = members.iter().filter(|m| m.is_unavailable()).count();
    let degraded: Vec<&Member> = members.iter().filter(|m| m.is(DEGRADED)).collect();
    let conditions = conditions(pool, target, updated == machines, &degraded);
    let mut status = json!({
        "configuration": {
            "name": target,
            "source": rendered.sources.iter().map(|name| json!({
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfig",
                "name": name,
            })).collect::<Vec<_>>(),
        },
        "machineCount": machines,
        "updatedMachineCount": updated,
        "readyMachineCount": ready,
        "unavailableMachineCount": unavailable,
        "degradedMachineCount": degraded.len(),
        "conditions": conditions,
    });
    if let Some(generation) = pool.metadata.generation {
        status["observedGeneration"] = json!(generation);
    }
    let current = serde_json::to_value(&pool.status).unwrap_or(Value::Null);
    let unchanged = status
        .as_object()
        .is_some_and(|fields| fields.iter().all(|(k, v)| current.get(k) == Some(v)));
    if unchanged {
        return Ok(());
    }
    let api: Api<MachineConfigPool> = Api::all(world.client.clone());
    let params = PatchParams {
        field_manager: Some(MANAGER.to_string()),
        ..PatchParams::default()
    };
    api.patch_status(
        &pool.name_any(),
        &params,
        &Patch::Merge(&json!({"status": status})),
    )
    .await?;
    Ok(())
}

/// The pool's conditions as the Machine Config Operator sets them: `Updated` once every node runs `target` and none
/// is degraded, `Updating` until then unless paused, and `NodeDegraded` and `Degraded` naming the degraded nodes.
fn conditions(
    pool: &MachineConfigPool,
    target: &str,
    every_node_updated: bool,
    degraded: &[&Member],
) -> Vec<Value> {
    let all_updated = every_node_updated && degraded.is_empty();
    let paused = pool.spec.paused == Some(true);
    let degraded_message = degraded
        .iter()
        .map(|m| {
            format!(
                "Node {} is reporting: {:?}",
                m.name,
                m.reason.as_deref().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let node_degraded = if degraded.is_empty() {
        ("False", String::new(), String::new())
    } else {
        (
            "True",
            format!(
                "{} nodes are reporting degraded status on sync",
                degraded.len()
            ),
            degraded_message.clone(),
        )
    };
    let previous = pool
        .status
        .as_ref()
        .and_then(|s| s.other.get("conditions"))
        .cloned()
        .unwrap_or(Value::Null);
    [
        (
            "Updated",
            if all_updated { "True" } else { "False" },
            String::new(),
            if all_updated {
                format!("All nodes are updated with MachineConfig {target}")
            } else {
                String::new()
            },
        ),
        (
            "Updating",
            if !all_updated && !paused {
                "True"
            } else {
                "False"
            },
            String::new(),
            if !all_updated && !paused {
                format!("All nodes are updating to MachineConfig {target}")
            } else {
                String::new()
            },
        ),
        (
            "NodeDegraded",
            node_degraded.0,
            node_degraded.1.clone(),
            node_degraded.2.clone(),
        ),
        ("RenderDegraded", "False", String::new(), String::new()),
        (
            "Degraded",
            node_degraded.0,
            node_degraded.1,
            node_degraded.2,
        ),
    ]
    .into_iter()
    .map(|(type_, status, reason, message)| condition(&previous, type_, status, &reason, &message))
    .collect()
}

/// A pool condition, keeping its transition time while its status stays the same.
fn condition(previous: &Value, type_: &str, status: &str, reason: &str, message: &str) -> Value {
    let since = previous
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .filter(|c| c["status"] == status)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(super::now()));
    json!({
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    })
}
