//! Rows of the Nodes pane: readiness, kernel, OS image, the KMM modules loaded there, and taints.

use k8s_openapi::api::core::v1::Node;

use crate::engine::{kernel, nodes};
use crate::tui::data::ClusterData;

use super::{Health, matches_filter};

/// One node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRow {
    /// Name.
    pub name: String,
    /// Whether the kubelet reports Ready.
    pub ready: bool,
    /// Whether the node is cordoned.
    pub unschedulable: bool,
    /// Kernel version.
    pub kernel: String,
    /// OS image.
    pub os_image: String,
    /// Modules loaded (`namespace/name`), from the node's NodeModulesConfig status.
    pub modules_loaded: Vec<String>,
    /// Modules the node should load but has not yet.
    pub modules_pending: usize,
    /// Taints as `key=value:Effect`.
    pub taints: Vec<String>,
    /// Overall state.
    pub health: Health,
}

impl NodeRow {
    /// The row of one node.
    pub fn of(node: &Node, data: &ClusterData) -> NodeRow {
        let name = node.metadata.name.clone().unwrap_or_default();
        let info = node.status.as_ref().and_then(|s| s.node_info.as_ref());
        let nmc = data.nmc(&name);
        let modules_loaded: Vec<String> = nmc
            .and_then(|n| n.status.as_ref())
            .map(|status| {
                status
                    .modules
                    .iter()
                    .map(|m| format!("{}/{}", m.namespace, m.name))
                    .collect()
            })
            .unwrap_or_default();
        let modules_pending = nmc.map_or(0, |n| {
            n.spec
                .modules
                .iter()
                .filter(|m| !modules_loaded.contains(&format!("{}/{}", m.namespace, m.name)))
                .count()
        });
        let ready = nodes::is_ready(node);
        let unschedulable = node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        let health = if !ready {
            Health::Error
        } else if modules_pending > 0 {
            Health::Progressing
        } else if unschedulable {
            Health::Warning
        } else {
            Health::Ok
        };
        NodeRow {
            ready,
            unschedulable,
            kernel: kernel::node_kernel(node).unwrap_or("-").to_owned(),
            os_image: info.map(|i| i.os_image.clone()).unwrap_or_default(),
            taints: node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .map(|taints| taints.iter().map(nodes::describe_taint).collect())
                .unwrap_or_default(),
            modules_loaded,
            modules_pending,
            health,
            name,
        }
    }

    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        needle.is_empty()
            || matches_filter(needle, &[&self.name, &self.kernel, &self.os_image])
            || self.modules_loaded.iter().any(|m| m.contains(needle))
            || self
                .taints
                .iter()
                .any(|t| t.to_lowercase().contains(needle))
    }
}

/// Every node's row, by name.
pub fn rows(data: &ClusterData) -> Vec<NodeRow> {
    data.nodes
        .iter()
        .map(|node| NodeRow::of(node, data))
        .collect()
}
