//! Rows of the Nodes pane: readiness, kernel, OS image, the KMM modules loaded there, the device plugins ready there,
//! the image caches complete there, and taints.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;

use crate::tui::data::ClusterData;
use kmm_api::kmm::{NodeModulesConfig, labels};
use kmm_engine::{kmm::kernel, runtime::nodes};

use super::cache_images::CacheImages;
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
    /// ImageCaches that target the node.
    pub caches_wanted: usize,
    /// Of those, caches whose every image meant for the node is there.
    pub caches_complete: usize,
    /// Device plugins meant to run on the node (its `…device-plugin-target` labels).
    pub plugins_target: usize,
    /// Device plugins running and ready on the node (its `…device-plugin-ready` labels).
    pub plugins_ready: usize,
    /// Taints as `key=value:Effect`.
    pub taints: Vec<String>,
    /// Overall state.
    pub health: Health,
}

impl NodeRow {
    /// The row of one node; `caches` are the images of every ImageCache, worked out once for all nodes, each with
    /// the image names nodes report already matched against it.
    pub fn of<'a>(node: &'a Node, data: &ClusterData, caches: &mut [CacheCheck<'a>]) -> NodeRow {
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
        let (caches_wanted, caches_complete) = cache_coverage(node, caches);
        let plugin_labels = |suffix: &str| {
            node.metadata
                .labels
                .iter()
                .flatten()
                .filter(|(key, _)| {
                    key.starts_with(labels::NODE_LABEL_PREFIX) && key.ends_with(suffix)
                })
                .count()
        };
        NodeRow {
            plugins_target: plugin_labels(labels::DEVICE_PLUGIN_TARGET_SUFFIX),
            plugins_ready: plugin_labels(labels::DEVICE_PLUGIN_READY_SUFFIX),
            ready,
            caches_wanted,
            caches_complete,
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

/// One ImageCache's images, and which of them each name a node reports is.
pub type CacheCheck<'a> = (CacheImages, HashMap<&'a str, Option<usize>>);

/// How many caches target `node`, and how many of those it holds every image of.
fn cache_coverage<'a>(node: &'a Node, caches: &mut [CacheCheck<'a>]) -> (usize, usize) {
    let mut wanted = 0;
    let mut complete = 0;
    for (cache, seen) in caches.iter_mut() {
        let mask = cache.wanted_mask(node);
        if !mask.contains(&true) {
            continue;
        }
        wanted += 1;
        let held = cache.held_by(node, seen);
        if mask
            .iter()
            .zip(&held)
            .all(|(wanted, held)| !wanted || *held)
        {
            complete += 1;
        }
    }
    (wanted, complete)
}

/// The objects each node's row was made from, in the rows' order. The watches hand over an unchanged object as the
/// same shared pointer, so a row whose Node and NodeModulesConfig are the very objects it was made from is that row
/// again: when one node of 5,000 changes, one row is made and the rest are moved over.
#[derive(Clone, Debug, Default)]
pub struct NodeSources {
    rows: Vec<RowSources>,
}

/// The Node and NodeModulesConfig one row was made from.
#[derive(Clone, Debug)]
struct RowSources {
    node: Arc<Node>,
    nmc: Option<Arc<NodeModulesConfig>>,
}

impl RowSources {
    fn name(&self) -> &str {
        self.node.metadata.name.as_deref().unwrap_or_default()
    }

    fn same(&self, node: &Arc<Node>, nmc: Option<&Arc<NodeModulesConfig>>) -> bool {
        Arc::ptr_eq(&self.node, node)
            && match (&self.nmc, nmc) {
                (Some(before), Some(now)) => Arc::ptr_eq(before, now),
                (None, None) => true,
                _ => false,
            }
    }
}

impl NodeSources {
    /// Forget every row's sources, so the next rows are all made afresh: for changes every row depends on (the
    /// ImageCaches).
    pub fn clear(&mut self) {
        self.rows.clear();
    }
}

/// Every node's row, by name, moving over the rows of `previous` (made from `sources`) whose node and
/// NodeModulesConfig did not change; `sources` is updated to describe the rows returned.
pub fn rows_reusing(
    data: &ClusterData,
    previous: Vec<NodeRow>,
    sources: &mut NodeSources,
) -> Vec<NodeRow> {
    let before = std::mem::take(&mut sources.rows);
    let mut previous: Vec<Option<NodeRow>> = if before.len() == previous.len() {
        previous.into_iter().map(Some).collect()
    } else {
        Vec::new()
    };
    let mut caches: Vec<CacheCheck<'_>> = data
        .caches
        .iter()
        .map(|c| (CacheImages::of(c), HashMap::new()))
        .collect();
    sources.rows.reserve(data.nodes.len());
    data.nodes
        .iter()
        .enumerate()
        .map(|(index, node)| {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            let nmc = data.nmc(name);
            // Both lists are sorted by name: the row is most often at the same place, else found by name.
            let at = if before.get(index).is_some_and(|b| b.name() == name) {
                Some(index)
            } else {
                before.binary_search_by(|b| b.name().cmp(name)).ok()
            };
            let kept = at
                .filter(|&at| before[at].same(node, nmc))
                .and_then(|at| previous.get_mut(at)?.take());
            sources.rows.push(RowSources {
                node: node.clone(),
                nmc: nmc.cloned(),
            });
            kept.unwrap_or_else(|| NodeRow::of(node, data, &mut caches))
        })
        .collect()
}
