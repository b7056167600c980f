//! The Module detail pane's model: the Module's images per kernel, where it stands on every node it targets or
//! matches and why, and its recent events.
//!
//! The per-node table starts from the engine's own planner ([`plan::plan`]), so the console and the engine agree on
//! which nodes a Module targets and why it skips the others; the NodeModulesConfigs, the image states and the worker
//! pods then say how far each node has come. Everything is indexed once per call, so the cost grows with the number
//! of nodes and pods, never with their product.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use k8s_openapi::api::core::v1::Pod;

use crate::tui::data::ClusterData;
use kmm_api::kmm::labels;
use kmm_api::kmm::{ImageState, ModuleConfig};
use kmm_engine::kmm::module::plan::{self, Plan, SkipReason};
use kmm_engine::{kmm::kernel, runtime::nodes};

use super::events::{EventRow, rows_about_module};
use super::images::{ImageRow, PodIndex, rows_of};
use super::modules::ModuleRow;
use super::{Health, matches_filter};

/// How many recent events the detail pane lists.
pub const RECENT_EVENTS: usize = 50;

/// Where a Module stands on one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeState {
    /// The module is loaded with the configuration the node's entry asks for.
    Loaded,
    /// The node has an entry and a worker is (or will be) loading it.
    Loading,
    /// The module is loaded but the node is no longer targeted: a worker unloads it.
    Unloading,
    /// The node is targeted but the image for its kernel does not exist yet.
    WaitingForImage,
    /// A taint the Module does not tolerate keeps it off the node.
    Unschedulable,
    /// No kernel mapping matches the node's kernel (or the mappings cannot be applied).
    NoMapping,
    /// The node is not Ready (or reports no kernel), so nothing runs there.
    NotReady,
    /// Ordered upgrade: the node is not labelled for the Module's version yet.
    AwaitingVersion,
}

impl NodeState {
    /// The state as the pane prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Loaded => "Loaded",
            NodeState::Loading => "Loading",
            NodeState::Unloading => "Unloading",
            NodeState::WaitingForImage => "WaitingForImage",
            NodeState::Unschedulable => "Unschedulable",
            NodeState::NoMapping => "NoMapping",
            NodeState::NotReady => "NotReady",
            NodeState::AwaitingVersion => "AwaitingVersion",
        }
    }
}

impl fmt::Display for NodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a Module stands on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeModuleRow {
    /// The node.
    pub node: String,
    /// The node's kernel.
    pub kernel: String,
    /// The image for that kernel, if a mapping matched.
    pub image: String,
    /// The state.
    pub state: NodeState,
    /// Why, when not loaded (or what is under way).
    pub why: String,
    /// How to colour the row.
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
                self.state.as_str(),
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
    /// Its nodes, by name.
    pub nodes: Vec<NodeModuleRow>,
    /// How many nodes are in each state, for the section title.
    pub node_states: BTreeMap<NodeState, usize>,
    /// Its recent events (and those of its images, pods and loads), newest first.
    pub events: Vec<EventRow>,
}

/// How the planner placed one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement<'a> {
    /// The node should carry the module, with this image.
    Target {
        /// The image for the node's kernel.
        image: &'a str,
    },
    /// Ordered upgrade in flight: the node's current entry is left as it is.
    Kept,
    /// The node matches the selector but gets no entry.
    Skipped(&'a SkipReason),
    /// The node does not match the selector (it only has a leftover entry or load).
    NotSelected,
}

/// The worker pod loading or unloading the module on a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerPod {
    /// `Load` or `Unload`.
    pub action: String,
    /// The pod's phase.
    pub phase: String,
}

/// What is known of one node for one Module: the input of [`node_state`].
#[derive(Clone, Copy, Debug)]
pub struct NodeFacts<'a> {
    /// Whether the node exists and is Ready.
    pub ready: bool,
    /// How the planner placed it.
    pub placement: Placement<'a>,
    /// The node's NodeModulesConfig entry for the Module.
    pub wanted: Option<&'a ModuleConfig>,
    /// What the node's NodeModulesConfig status says is loaded.
    pub loaded: Option<&'a ModuleConfig>,
    /// The state of the target's image in the ModuleImagesConfig.
    pub image: Option<&'a ImageRow>,
    /// The worker pod on the node.
    pub worker: Option<&'a WorkerPod>,
}

/// Where the Module stands on a node, and why: the rules of the per-node table.
pub fn node_state(facts: &NodeFacts<'_>) -> (NodeState, String, Health) {
    let worker = |verb: &str| {
        facts.worker.map_or_else(
            || format!("waiting for a worker pod to {verb} it"),
            |w| format!("{} worker {}", w.action.to_lowercase(), w.phase),
        )
    };
    let targeted = matches!(facts.placement, Placement::Target { .. } | Placement::Kept);
    if !targeted && facts.loaded.is_some() {
        let why = match facts.placement {
            Placement::Skipped(reason) => skip_text(reason),
            _ => "node no longer matches the selector".to_owned(),
        };
        return (
            NodeState::Unloading,
            format!("{why}; {}", worker("unload")),
            Health::Progressing,
        );
    }
    if let Placement::Skipped(reason) = facts.placement {
        let (state, health) = match reason {
            SkipReason::Taint(_) => (NodeState::Unschedulable, Health::Warning),
            SkipReason::NoMapping(_) => (NodeState::NoMapping, Health::Warning),
            SkipReason::BadMapping(_) => (NodeState::NoMapping, Health::Error),
            SkipReason::NoKernel => (NodeState::NotReady, Health::Error),
            SkipReason::AwaitingVersion(_) => (NodeState::AwaitingVersion, Health::Unknown),
        };
        return (state, skip_text(reason), health);
    }
    if let (Some(wanted), Some(loaded)) = (facts.wanted, facts.loaded)
        && wanted == loaded
    {
        let why = if facts.ready {
            String::new()
        } else {
            "node is NotReady".to_owned()
        };
        return (NodeState::Loaded, why, Health::Ok);
    }
    if !facts.ready {
        return (
            NodeState::NotReady,
            "node is NotReady: no worker runs until the kubelet reports Ready".to_owned(),
            Health::Error,
        );
    }
    if facts.wanted.is_some() {
        let why = match facts.loaded {
            Some(old) => format!(
                "replacing {} ({}); {}",
                old.container_image,
                old.kernel_version,
                worker("load")
            ),
            None => worker("load"),
        };
        return (NodeState::Loading, why, Health::Progressing);
    }
    let Placement::Target { image } = facts.placement else {
        return (
            NodeState::Loading,
            "ordered upgrade in flight".to_owned(),
            Health::Progressing,
        );
    };
    match facts.image {
        Some(row) if row.state == Some(ImageState::Exists) => (
            NodeState::Loading,
            "image exists; the engine writes the node's entry next".to_owned(),
            Health::Progressing,
        ),
        Some(row) => {
            let pod = row
                .pod
                .as_ref()
                .map(|pod| format!(" ({})", pod.summary()))
                .unwrap_or_default();
            let health = if row.state == Some(ImageState::DoesNotExist) || row.pull_failing() {
                Health::Error
            } else {
                Health::Progressing
            };
            (
                NodeState::WaitingForImage,
                format!("image {image} {}{pod}", row.state_label()),
                health,
            )
        }
        None => (
            NodeState::WaitingForImage,
            format!("image {image} not checked yet"),
            Health::Progressing,
        ),
    }
}

/// Why the planner skipped a node, in a person's words.
fn skip_text(reason: &SkipReason) -> String {
    match reason {
        SkipReason::Taint(taint) => format!("taint {taint} not tolerated"),
        SkipReason::NoMapping(kernel) => format!("no kernel mapping matches {kernel}"),
        SkipReason::NoKernel => "node reports no kernel version yet".to_owned(),
        SkipReason::BadMapping(error) => format!("kernel mappings cannot apply: {error}"),
        SkipReason::AwaitingVersion(version) => {
            format!("node not labelled for version {version} yet")
        }
    }
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
    let plan = match &module.spec.module_loader {
        Some(loader) => {
            let all: Vec<&k8s_openapi::api::core::v1::Node> =
                data.nodes.iter().map(AsRef::as_ref).collect();
            plan::plan(module, &loader.container, &all)
        }
        None => Plan::default(),
    };
    let nodes = node_rows(data, namespace, name, &plan, &images);
    let mut node_states = BTreeMap::new();
    for row in &nodes {
        *node_states.entry(row.state).or_insert(0) += 1;
    }
    Some(ModuleDetail {
        summary: ModuleRow::of(module, data),
        images,
        nodes,
        node_states,
        events: rows_about_module(data, namespace, name, now, RECENT_EVENTS),
    })
}

/// One row per node the plan targets or skips, or whose NodeModulesConfig still carries the Module.
fn node_rows(
    data: &ClusterData,
    namespace: &str,
    name: &str,
    plan: &Plan,
    images: &[ImageRow],
) -> Vec<NodeModuleRow> {
    let mut placements: HashMap<&str, Placement<'_>> = HashMap::new();
    for target in &plan.targets {
        placements.insert(
            &target.node,
            Placement::Target {
                image: &target.mapping.image,
            },
        );
    }
    for node in &plan.keep {
        placements.insert(node, Placement::Kept);
    }
    for skip in &plan.skipped {
        placements.insert(&skip.node, Placement::Skipped(&skip.reason));
    }
    let entries = module_entries(data, namespace, name);
    let workers = worker_pods(data, namespace, name);
    let images_by_name: HashMap<&str, &ImageRow> =
        images.iter().map(|row| (row.image.as_str(), row)).collect();
    let mut names: Vec<&str> = placements.keys().chain(entries.keys()).copied().collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|node_name| {
            let node = data.node(node_name);
            let placement = placements
                .get(node_name)
                .copied()
                .unwrap_or(Placement::NotSelected);
            let (wanted, loaded) = entries.get(node_name).copied().unwrap_or_default();
            let target_image = match placement {
                Placement::Target { image } => Some(image),
                _ => None,
            };
            let facts = NodeFacts {
                ready: node.is_some_and(|n| nodes::is_ready(n)),
                placement,
                wanted,
                loaded,
                image: target_image.and_then(|image| images_by_name.get(image).copied()),
                worker: workers.get(node_name),
            };
            let (state, mut why, health) = node_state(&facts);
            if node.is_none() {
                why = format!("node is gone; {why}");
            }
            let config = wanted.or(loaded);
            NodeModuleRow {
                node: node_name.to_owned(),
                kernel: node
                    .and_then(|n| kernel::node_kernel(n))
                    .or(config.map(|c| c.kernel_version.as_str()))
                    .unwrap_or("-")
                    .to_owned(),
                image: target_image
                    .or(config.map(|c| c.container_image.as_str()))
                    .unwrap_or("-")
                    .to_owned(),
                state,
                why,
                health,
            }
        })
        .collect()
}

/// The Module's entry and loaded configuration in each NodeModulesConfig that mentions it, by node.
type Entries<'a> = HashMap<&'a str, (Option<&'a ModuleConfig>, Option<&'a ModuleConfig>)>;

fn module_entries<'a>(data: &'a ClusterData, namespace: &str, name: &str) -> Entries<'a> {
    let mut entries = Entries::new();
    for nmc in &data.nmcs {
        let wanted = nmc
            .spec
            .modules
            .iter()
            .find(|m| m.namespace == namespace && m.name == name)
            .map(|m| &m.config);
        let loaded = nmc.status.as_ref().and_then(|status| {
            status
                .modules
                .iter()
                .find(|m| m.namespace == namespace && m.name == name)
                .and_then(|m| m.config.as_ref())
        });
        if wanted.is_some() || loaded.is_some() {
            let node = nmc.metadata.name.as_deref().unwrap_or_default();
            entries.insert(node, (wanted, loaded));
        }
    }
    entries
}

/// The newest worker pod of the Module on each node.
fn worker_pods<'a>(
    data: &'a ClusterData,
    namespace: &str,
    name: &str,
) -> HashMap<&'a str, WorkerPod> {
    let mut newest: HashMap<&str, &Pod> = HashMap::new();
    for pod in &data.pods {
        let Some(pod_labels) = pod.metadata.labels.as_ref() else {
            continue;
        };
        let ours = pod.metadata.namespace.as_deref() == Some(namespace)
            && pod_labels.get(labels::MODULE_NAME).map(String::as_str) == Some(name)
            && pod_labels.contains_key(labels::WORKER_ACTION);
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if let (true, Some(node)) = (ours, node) {
            let slot = newest.entry(node).or_insert(pod);
            if pod.metadata.creation_timestamp > slot.metadata.creation_timestamp {
                *slot = pod;
            }
        }
    }
    newest
        .into_iter()
        .map(|(node, pod)| {
            let action = pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::WORKER_ACTION))
                .cloned()
                .unwrap_or_default();
            let phase = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_else(|| "Pending".to_owned());
            (node, WorkerPod { action, phase })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::view::images::ImagePod;

    fn config(image: &str) -> ModuleConfig {
        serde_json::from_value(serde_json::json!({
            "kernelVersion": "5.14.0", "containerImage": image, "insecurePull": false,
            "modprobe": {"moduleName": "kmod"}
        }))
        .expect("module config")
    }

    fn image_row(state: Option<ImageState>, pod: Option<(&'static str, &str)>) -> ImageRow {
        ImageRow {
            namespace: "ns".into(),
            module: "kmod".into(),
            image: "quay.io/x:k".into(),
            kernel: "5.14.0".into(),
            state,
            generation: 1,
            observed_generation: Some(1),
            pod: pod.map(|(role, phase)| ImagePod {
                role,
                phase: phase.into(),
                pull_error: None,
            }),
            age: "1m".into(),
            health: Health::Progressing,
        }
    }

    fn facts<'a>(placement: Placement<'a>) -> NodeFacts<'a> {
        NodeFacts {
            ready: true,
            placement,
            wanted: None,
            loaded: None,
            image: None,
            worker: None,
        }
    }

    const TARGET: Placement<'static> = Placement::Target {
        image: "quay.io/x:k",
    };

    #[test]
    fn a_matching_load_is_loaded() {
        let current = config("quay.io/x:k");
        let state = node_state(&NodeFacts {
            wanted: Some(&current),
            loaded: Some(&current),
            ..facts(TARGET)
        });
        assert_eq!(state, (NodeState::Loaded, String::new(), Health::Ok));
    }

    #[test]
    fn an_entry_not_yet_loaded_is_loading_with_the_worker_phase() {
        let current = config("quay.io/x:k");
        let old = config("quay.io/x:old");
        let worker = WorkerPod {
            action: "Load".into(),
            phase: "Running".into(),
        };
        let (state, why, _) = node_state(&NodeFacts {
            wanted: Some(&current),
            loaded: Some(&old),
            worker: Some(&worker),
            ..facts(TARGET)
        });
        assert_eq!(state, NodeState::Loading);
        assert_eq!(why, "replacing quay.io/x:old (5.14.0); load worker Running");
        let (_, why, _) = node_state(&NodeFacts {
            wanted: Some(&current),
            ..facts(TARGET)
        });
        assert_eq!(why, "waiting for a worker pod to load it");
    }

    #[test]
    fn a_target_whose_image_is_missing_waits_and_names_the_image_and_its_pod() {
        let building = image_row(Some(ImageState::NeedsBuilding), Some(("build", "Running")));
        let (state, why, health) = node_state(&NodeFacts {
            image: Some(&building),
            ..facts(TARGET)
        });
        assert_eq!(state, NodeState::WaitingForImage);
        assert_eq!(why, "image quay.io/x:k NeedsBuilding (build Running)");
        assert_eq!(health, Health::Progressing);
        let missing = image_row(Some(ImageState::DoesNotExist), None);
        let (_, _, health) = node_state(&NodeFacts {
            image: Some(&missing),
            ..facts(TARGET)
        });
        assert_eq!(health, Health::Error);
        let (state, why, _) = node_state(&facts(TARGET));
        assert_eq!(
            (state, why.as_str()),
            (
                NodeState::WaitingForImage,
                "image quay.io/x:k not checked yet"
            )
        );
    }

    #[test]
    fn an_existing_image_without_an_entry_is_about_to_load() {
        let exists = image_row(Some(ImageState::Exists), None);
        let (state, _, _) = node_state(&NodeFacts {
            image: Some(&exists),
            ..facts(TARGET)
        });
        assert_eq!(state, NodeState::Loading);
    }

    #[test]
    fn skipped_nodes_say_why() {
        let taint = SkipReason::Taint("maintenance=true:NoSchedule".into());
        let (state, why, _) = node_state(&facts(Placement::Skipped(&taint)));
        assert_eq!(state, NodeState::Unschedulable);
        assert_eq!(why, "taint maintenance=true:NoSchedule not tolerated");
        let unmapped = SkipReason::NoMapping("6.1.0".into());
        let (state, why, _) = node_state(&facts(Placement::Skipped(&unmapped)));
        assert_eq!(state, NodeState::NoMapping);
        assert_eq!(why, "no kernel mapping matches 6.1.0");
        let version = SkipReason::AwaitingVersion("v2".into());
        let (state, _, _) = node_state(&facts(Placement::Skipped(&version)));
        assert_eq!(state, NodeState::AwaitingVersion);
        let (state, _, _) = node_state(&facts(Placement::Skipped(&SkipReason::NoKernel)));
        assert_eq!(state, NodeState::NotReady);
    }

    #[test]
    fn a_load_on_a_node_no_longer_targeted_is_unloading() {
        let old = config("quay.io/x:k");
        let taint = SkipReason::Taint("maintenance=true:NoSchedule".into());
        let worker = WorkerPod {
            action: "Unload".into(),
            phase: "Pending".into(),
        };
        let (state, why, _) = node_state(&NodeFacts {
            loaded: Some(&old),
            worker: Some(&worker),
            ..facts(Placement::Skipped(&taint))
        });
        assert_eq!(state, NodeState::Unloading);
        assert_eq!(
            why,
            "taint maintenance=true:NoSchedule not tolerated; unload worker Pending"
        );
        let (state, why, _) = node_state(&NodeFacts {
            loaded: Some(&old),
            ..facts(Placement::NotSelected)
        });
        assert_eq!(state, NodeState::Unloading);
        assert!(
            why.starts_with("node no longer matches the selector"),
            "{why}"
        );
    }

    #[test]
    fn a_node_not_ready_keeps_the_worker_away() {
        let current = config("quay.io/x:k");
        let (state, _, health) = node_state(&NodeFacts {
            ready: false,
            wanted: Some(&current),
            ..facts(TARGET)
        });
        assert_eq!((state, health), (NodeState::NotReady, Health::Error));
        let (state, why, _) = node_state(&NodeFacts {
            ready: false,
            wanted: Some(&current),
            loaded: Some(&current),
            ..facts(TARGET)
        });
        assert_eq!(
            (state, why.as_str()),
            (NodeState::Loaded, "node is NotReady")
        );
    }
}
