//! Which MachineConfigPool a ModuleDay0 targets, which nodes are in it and which MachineConfigs feed it, decided
//! the way the Machine Config Operator decides: a node in `master` belongs to it, else to its one custom pool,
//! else to `worker`; a pool renders every MachineConfig its `machineConfigSelector` selects.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;

use kmm_api::day0::{KMM_MANAGED_LABEL, MachineConfig, MachineConfigPool};

/// The pool that wins when a node matches it and others.
const MASTER: &str = "master";
/// The pool every worker matches; a custom pool of the node wins over it.
const WORKER: &str = "worker";

/// Whether `selector` selects an object carrying `labels`; an absent selector selects nothing, as the Machine
/// Config Operator treats a pool without one.
pub fn selects(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    let expressions_match = selector.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(&e.key);
        let listed = || value.is_some_and(|v| e.values.iter().flatten().any(|x| x == v));
        match e.operator.as_str() {
            "In" => listed(),
            "NotIn" => !listed(),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    labels_match && expressions_match
}

/// The pool whose node selector is exactly `pool_selector` (a ModuleDay0's `machineConfigPoolSelector`).
pub fn pool_for_selector<'p>(
    pools: &'p [MachineConfigPool],
    pool_selector: &BTreeMap<String, String>,
) -> Option<&'p MachineConfigPool> {
    pools.iter().find(|pool| {
        pool.spec.node_selector.as_ref().is_some_and(|s| {
            s.match_labels.as_ref() == Some(pool_selector)
                && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
        })
    })
}

/// The pool a node belongs to: `master` first, then its one custom pool, then `worker`; none when it matches
/// several custom pools.
pub fn pool_of<'p>(node: &Node, pools: &'p [MachineConfigPool]) -> Option<&'p MachineConfigPool> {
    let matching: Vec<&MachineConfigPool> = pools
        .iter()
        .filter(|p| selects(p.spec.node_selector.as_ref(), node.labels()))
        .collect();
    if let Some(master) = matching.iter().find(|p| p.name_any() == MASTER) {
        return Some(master);
    }
    let custom: Vec<&&MachineConfigPool> =
        matching.iter().filter(|p| p.name_any() != WORKER).collect();
    match custom.as_slice() {
        [one] => Some(one),
        [] => matching.first().copied(),
        _ => None,
    }
}

/// The nodes of `pool`, sorted by name.
pub fn members(
    pool: &MachineConfigPool,
    nodes: &[Arc<Node>],
    pools: &[MachineConfigPool],
) -> Vec<Arc<Node>> {
    let name = pool.name_any();
    let mut members: Vec<Arc<Node>> = nodes
        .iter()
        .filter(|node| pool_of(node, pools).is_some_and(|p| p.name_any() == name))
        .cloned()
        .collect();
    members.sort_by_key(|node| node.name_any());
    members
}

/// Whether a MachineConfig hands its `osImageURL` to kmm-tui.
pub fn is_kmm_managed(config: &MachineConfig) -> bool {
    config.labels().get(KMM_MANAGED_LABEL).map(String::as_str) == Some("true")
}

/// The kmm-managed MachineConfig that feeds `pool`: the one named `preferred` (a ModuleDay0 is named after its
/// MachineConfig), else the only one; none when there is none or several and none is preferred.
pub fn managed_config<'c>(
    pool: &MachineConfigPool,
    configs: &'c [MachineConfig],
    preferred: &str,
) -> Option<&'c MachineConfig> {
    let feeding: Vec<&MachineConfig> = configs
        .iter()
        .filter(|mc| is_kmm_managed(mc))
        .filter(|mc| selects(pool.spec.machine_config_selector.as_ref(), mc.labels()))
        .collect();
    feeding
        .iter()
        .find(|mc| mc.name_any() == preferred)
        .or(match feeding.as_slice() {
            [one] => Some(one),
            _ => None,
        })
        .copied()
}

/// The pool a MachineConfig feeds: among the pools selecting it, the one named after its role label, else the
/// first by name.
pub fn pool_fed_by<'p>(
    config: &MachineConfig,
    pools: &'p [MachineConfigPool],
) -> Option<&'p MachineConfigPool> {
    let role = config
        .labels()
        .get(kmm_api::day0::MACHINE_CONFIG_ROLE_LABEL)
        .cloned();
    let mut feeding: Vec<&MachineConfigPool> = pools
        .iter()
        .filter(|p| selects(p.spec.machine_config_selector.as_ref(), config.labels()))
        .collect();
    feeding.sort_by_key(|p| p.name_any());
    feeding
        .iter()
        .find(|p| Some(p.name_any()) == role)
        .or(feeding.first())
        .copied()
}

/// A node's `status.nodeInfo.osImage`.
pub fn os_image(node: &Node) -> Option<&str> {
    Some(node.status.as_ref()?.node_info.as_ref()?.os_image.as_str())
}

/// A node's `status.nodeInfo.kernelVersion`.
pub fn kernel_version(node: &Node) -> Option<&str> {
    Some(
        node.status
            .as_ref()?
            .node_info
            .as_ref()?
            .kernel_version
            .as_str(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pool(name: &str, node_labels: serde_json::Value) -> MachineConfigPool {
        serde_json::from_value(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
            "metadata": {"name": name},
            "spec": {
                "nodeSelector": {"matchLabels": node_labels},
                "machineConfigSelector": {"matchExpressions": [{"key": "machineconfiguration.openshift.io/role",
                    "operator": "In", "values": [name, "worker"]}]},
            },
        }))
        .expect("pool")
    }

    fn node(name: &str, labels: serde_json::Value) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
                .expect("node"),
        )
    }

    #[test]
    fn a_node_in_a_custom_pool_leaves_the_worker_pool() {
        let pools = [
            pool("worker", json!({"node-role.kubernetes.io/worker": ""})),
            pool("zone-b", json!({"node-role.kubernetes.io/zone-b": ""})),
        ];
        let nodes = [
            node("a", json!({"node-role.kubernetes.io/worker": ""})),
            node(
                "b",
                json!({"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/zone-b": ""}),
            ),
        ];
        let names = |pool: &MachineConfigPool| {
            members(pool, &nodes, &pools)
                .iter()
                .map(|n| n.name_any())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&pools[0]), ["a"]);
        assert_eq!(names(&pools[1]), ["b"]);
        let selector =
            BTreeMap::from([("node-role.kubernetes.io/zone-b".to_owned(), String::new())]);
        assert_eq!(
            pool_for_selector(&pools, &selector).map(|p| p.name_any()),
            Some("zone-b".into())
        );
    }

    #[test]
    fn a_machine_config_feeds_the_pool_of_its_role() {
        let pools = [
            pool("worker", json!({"node-role.kubernetes.io/worker": ""})),
            pool("zone-b", json!({"node-role.kubernetes.io/zone-b": ""})),
        ];
        let config: MachineConfig = serde_json::from_value(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": "99-zone-b-os", "labels": {
                "machineconfiguration.openshift.io/role": "zone-b",
                "machineconfiguration.openshift.io/kmm-managed": "true"}},
            "spec": {"osImageURL": "quay.io/acme/os:1"},
        }))
        .expect("mc");
        assert_eq!(
            pool_fed_by(&config, &pools).map(|p| p.name_any()),
            Some("zone-b".into())
        );
        let configs = [config];
        assert!(managed_config(&pools[1], &configs, "other").is_some());
        assert!(managed_config(&pools[0], &configs, "other").is_none());
    }
}
