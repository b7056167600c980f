//! Writing what the API shows of each machine — its Node's status and its `kmm-tui-sim/machine-<node>`
//! ConfigMap — when, and only when, it changed.
//!
//! Whatever changes a machine marks its node dirty; one task writes the dirty nodes, comparing with what it last
//! wrote (or, the first time, with what registration wrote), so an idle cluster of thousands of nodes writes
//! nothing, reads nothing and wakes nobody.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node, NodeStatus};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::Notify;

use super::node::WrittenStatus;
use super::{Kubelet, locked, node, record};
use crate::SIM_NAMESPACE;
use crate::scenario::NodeGroup;
use kmm_api::errors::is_not_found;

/// How many nodes are written at once.
const PARALLEL_WRITES: usize = 32;

/// The nodes whose machines changed since they were last published.
#[derive(Default)]
pub(super) struct Dirty {
    nodes: Mutex<BTreeSet<String>>,
    wake: Notify,
}

impl Dirty {
    /// Have `node` republished.
    pub(super) fn mark(&self, node: &str) {
        locked(&self.nodes).insert(node.to_string());
        self.wake.notify_one();
    }

    fn take(&self) -> BTreeSet<String> {
        std::mem::take(&mut *locked(&self.nodes))
    }
}

/// What was last written, per node: what the status said ([`WrittenStatus`]) and a fingerprint of the machine's
/// ConfigMap data (rewritten whole, so nothing of it but whether it changed matters).
#[derive(Default)]
struct Published {
    status: Mutex<HashMap<String, WrittenStatus>>,
    data: Mutex<HashMap<String, u64>>,
}

/// A hash of a machine's ConfigMap data.
fn data_fingerprint(data: &BTreeMap<String, String>) -> u64 {
    let mut hasher = DefaultHasher::new();
    data.hash(&mut hasher);
    hasher.finish()
}

/// Publish dirty nodes until the simulation stops.
pub(super) async fn run(kubelet: Arc<Kubelet>) {
    let published = Arc::new(Published::default());
    loop {
        tokio::select! {
            _ = kubelet.world.stop.cancelled() => return,
            _ = kubelet.publisher.wake.notified() => {}
        }
        let batch = kubelet.publisher.take();
        futures::stream::iter(batch)
            .for_each_concurrent(PARALLEL_WRITES, |node| {
                let kubelet = kubelet.clone();
                let published = published.clone();
                async move { publish(&kubelet, &published, &node).await }
            })
            .await;
    }
}

/// What the API holds for a node the publisher has not written yet (registration wrote it).
async fn first_seen(client: &kube::Client, published: &Published, name: &str) {
    if !locked(&published.status).contains_key(name)
        && let Ok(Some(node)) = Api::<Node>::all(client.clone()).get_opt(name).await
        && let Some(status) = node.status
    {
        locked(&published.status).insert(name.to_string(), WrittenStatus::of(&status));
    }
    if !locked(&published.data).contains_key(name)
        && let Ok(Some(cm)) = Api::<ConfigMap>::namespaced(client.clone(), SIM_NAMESPACE)
            .get_opt(&record::name(name))
            .await
        && let Some(data) = cm.data
    {
        locked(&published.data).insert(name.to_string(), data_fingerprint(&data));
    }
}

/// The scenario's group of the node at `index`.
fn group_of(groups: &[NodeGroup], index: usize) -> Option<&NodeGroup> {
    let mut first = 0;
    groups.iter().find(|g| {
        first += g.count as usize;
        index < first
    })
}

/// The merge patch that takes the stored status to `status`: the status itself, with the resources `previous`
/// listed and `status` does not (a device plugin that went) written as null, since a merge patch keeps what it does
/// not name.
pub(super) fn status_patch(
    status: &NodeStatus,
    previous: Option<&WrittenStatus>,
) -> serde_json::Value {
    let mut patch = serde_json::to_value(status).unwrap_or_default();
    let Some(previous) = previous else {
        return patch;
    };
    for (field, gone) in previous.gone(status) {
        patch[field][gone] = serde_json::Value::Null;
    }
    patch
}

async fn publish(kubelet: &Kubelet, published: &Published, name: &str) {
    let world = &kubelet.world;
    let (Some(handle), Some(machine)) = (kubelet.nodes.get(name), world.machines.get(name)) else {
        return;
    };
    first_seen(&world.client, published, name).await;
    let previous = locked(&published.status).get(name).cloned();
    let status = node::status(world, &machine, handle.index, previous.as_ref());
    if !previous.as_ref().is_some_and(|p| p.says_the_same(&status)) {
        let nodes: Api<Node> = Api::all(world.client.clone());
        let written = match nodes
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status_patch(&status, previous.as_ref()) })),
            )
            .await
        {
            Err(e) if is_not_found(&e) => match group_of(&world.scenario.nodes, handle.index) {
                // A deleted Node is registered again, as a running kubelet does.
                Some(group) => {
                    let object = node::new_object(world, group, &machine, handle.index);
                    nodes.create(&PostParams::default(), &object).await
                }
                None => Err(e),
            },
            other => other,
        };
        match written {
            Ok(n) => {
                let written = WrittenStatus::of(n.status.as_ref().unwrap_or(&status));
                locked(&published.status).insert(name.to_string(), written);
            }
            Err(e) => tracing::warn!(node = name, error = %e, "writing node status"),
        }
    }

    let data = record::data(&machine);
    let fingerprint = data_fingerprint(&data);
    if locked(&published.data).get(name) != Some(&fingerprint) {
        let maps: Api<ConfigMap> = Api::namespaced(world.client.clone(), SIM_NAMESPACE);
        let written = match maps
            .patch(
                &record::name(name),
                &PatchParams::default(),
                &Patch::Merge(json!({ "data": data })),
            )
            .await
        {
            Err(e) if is_not_found(&e) => {
                maps.create(&PostParams::default(), &record::config_map(&machine))
                    .await
            }
            other => other,
        };
        match written {
            Ok(_) => {
                locked(&published.data).insert(name.to_string(), fingerprint);
            }
            Err(e) => tracing::warn!(node = name, error = %e, "publishing the machine"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_belong_to_their_group_by_position() {
        let scenario = crate::scenario::Scenario::parse(
            "nodes:\n  - {namePrefix: a-, count: 2, kernelVersion: k, osImage: o}\n  - {namePrefix: b-, count: 3, kernelVersion: k, osImage: o}\n",
            "inline",
            None,
        )
        .expect("a valid scenario");
        let prefix = |i| group_of(&scenario.nodes, i).map(|g| g.name_prefix.as_str());
        assert_eq!(prefix(1), Some("a-"));
        assert_eq!(prefix(2), Some("b-"));
        assert_eq!(prefix(4), Some("b-"));
        assert_eq!(prefix(5), None);
    }
}
