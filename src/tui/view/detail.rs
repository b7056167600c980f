//! The Module detail pane's model: the Module's images per kernel, where it stands on each node it targets and
//! why, and its recent events.

use crate::tui::data::ClusterData;

use super::events::{EventRow, rows_about};
use super::images::{ImageRow, PodIndex, rows_of};
use super::modules::ModuleRow;
use super::{Health, matches_filter};

/// How many recent events the detail pane lists.
pub const RECENT_EVENTS: usize = 50;

/// Where a Module stands on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeModuleRow {
    /// The node.
    pub node: String,
    /// The node's kernel.
    pub kernel: String,
    /// The image for that kernel, if a mapping matched.
    pub image: String,
    /// `Loaded`, `Loading`, `Unloading`, `WaitingForImage`, `Unschedulable`, ...
    pub state: String,
    /// Why, when not loaded.
    pub why: String,
    /// Overall state.
    pub health: Health,
}

impl NodeModuleRow {
    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[
                &self.node,
                &self.kernel,
                &self.image,
                &self.state,
                &self.why,
            ],
        )
    }
}

/// Everything the detail pane shows of one Module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleDetail {
    /// The Module's summary row.
    pub summary: ModuleRow,
    /// Its images.
    pub images: Vec<ImageRow>,
    /// Its nodes.
    pub nodes: Vec<NodeModuleRow>,
    /// Its recent events, newest first.
    pub events: Vec<EventRow>,
}

/// The detail of the Module `namespace/name`, or `None` when it does not exist (any more).
pub fn detail(
    data: &ClusterData,
    namespace: &str,
    name: &str,
    now: jiff::Timestamp,
) -> Option<ModuleDetail> {
    let module = data.module(namespace, name)?;
    let pods = PodIndex::new(data);
    let images = data
        .mic(namespace, name)
        .map(|mic| rows_of(mic, &pods, now))
        .unwrap_or_default();
    let nodes = data
        .nmcs
        .iter()
        .filter_map(|nmc| {
            let node = nmc.metadata.name.clone().unwrap_or_default();
            let wanted = nmc
                .spec
                .modules
                .iter()
                .find(|m| m.namespace == namespace && m.name == name);
            let loaded = nmc.status.as_ref().and_then(|s| {
                s.modules
                    .iter()
                    .find(|m| m.namespace == namespace && m.name == name)
            });
            let (state, health) = match (wanted, loaded) {
                (Some(w), Some(l)) if l.config.as_ref() == Some(&w.config) => {
                    ("Loaded", Health::Ok)
                }
                (Some(_), _) => ("Loading", Health::Progressing),
                (None, Some(_)) => ("Unloading", Health::Progressing),
                (None, None) => return None,
            };
            let config = wanted
                .map(|w| &w.config)
                .or_else(|| loaded.and_then(|l| l.config.as_ref()));
            Some(NodeModuleRow {
                kernel: config.map(|c| c.kernel_version.clone()).unwrap_or_default(),
                image: config
                    .map(|c| c.container_image.clone())
                    .unwrap_or_default(),
                state: state.to_owned(),
                why: String::new(),
                health,
                node,
            })
        })
        .collect();
    Some(ModuleDetail {
        summary: ModuleRow::of(module, data),
        images,
        nodes,
        events: rows_about(data, "Module", namespace, name, now, RECENT_EVENTS),
    })
}
