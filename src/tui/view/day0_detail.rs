//! The Day-0 detail's model: per node of the pool its OS image and kernel now and the OS it moves to, the pull,
//! build and sign pods of the ModuleDay0's image (its ModuleImagesConfig `<name>-day0`) and where that image
//! stands, the events of the ModuleDay0, its MachineConfig and those pods, and what opting in to cluster
//! upgrades would do when an upgrade waits for it.

use std::collections::HashSet;

use k8s_openapi::api::core::v1::Pod;

use crate::tui::data::{ClusterData, Kind};
use crate::tui::target::Target;
use kmm_api::day0::{ModuleDay0, node_update, reasons};
use kmm_api::kmm::labels;
use kmm_engine::day0::images::{self, ImageStage};
use kmm_engine::day0::pools;

use super::day0::{Day0Row, pool_list};
use super::events::EventRow;
use super::{Health, age, matches_filter};

/// How many recent events the detail pane lists.
pub const RECENT_EVENTS: usize = 50;

/// One node of the pool: what it runs and what it moves to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Day0NodeRow {
    /// The node.
    pub node: String,
    /// Its `status.nodeInfo.osImage` now.
    pub os_image: String,
    /// The `osImage` the mapping moves it to (`osMapping.literal`).
    pub target_os: String,
    /// Its kernel now (`status.nodeInfo.kernelVersion`).
    pub kernel: String,
    /// The kernel of the target OS, as a node of the pool that runs it already reports it: an OS image says its
    /// kernel only once a node boots it.
    pub target_kernel: Option<String>,
    /// The Machine Config Operator's word for its update (`Done`, `Working`, `Degraded`), when it said one.
    pub update: String,
    /// How to colour the row.
    pub health: Health,
}

impl Day0NodeRow {
    /// Whether the node runs the target OS already.
    pub fn on_target(&self) -> bool {
        self.os_image == self.target_os
    }

    /// `414.92.x (Plow) → 415.92.y (Plow)`: both without the leading words they share (the section title names
    /// the whole target); the target alone, ticked, once the node runs it.
    pub fn os_change(&self) -> String {
        if self.on_target() {
            return format!("{} ✓", self.target_os);
        }
        let (mut now, mut target) = (self.os_image.as_str(), self.target_os.as_str());
        while let (Some((word, now_rest)), Some((target_word, target_rest))) =
            (now.split_once(' '), target.split_once(' '))
        {
            if word != target_word {
                break;
            }
            (now, target) = (now_rest, target_rest);
        }
        format!("{now} → {target}")
    }

    /// `5.14.0-284… → 5.14.0-362…` while the node moves to a kernel a pool node already runs, else its kernel now.
    pub fn kernel_change(&self) -> String {
        match &self.target_kernel {
            Some(target) if *target != self.kernel => format!("{} → {target}", self.kernel),
            _ => self.kernel.clone(),
        }
    }

    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[&self.node, &self.os_image, &self.kernel, &self.update],
        )
    }
}

/// A pull, build or sign pod of the ModuleDay0's image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Day0PodRow {
    /// The pod.
    pub pod: Target,
    /// `Pull`, `Build` or `Sign`.
    pub role: &'static str,
    /// Its phase.
    pub phase: String,
    /// Its age.
    pub age: String,
    /// How to colour the row.
    pub health: Health,
}

impl Day0PodRow {
    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(needle, &[&self.pod.name, self.role, &self.phase])
    }
}

/// Everything the detail pane shows of one ModuleDay0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Day0Detail {
    /// The ModuleDay0's row.
    pub summary: Day0Row,
    /// The MachineConfig it manages, as its status names it.
    pub machine_config: Option<String>,
    /// Where its image stands: `Exists`, `Building: …`, or that no image work is under way.
    pub image_stage: String,
    /// The pool's nodes, by name.
    pub nodes: Vec<Day0NodeRow>,
    /// The pods of its image, by name.
    pub pods: Vec<Day0PodRow>,
    /// Recent events of the ModuleDay0, its MachineConfig and its image pods, newest first.
    pub events: Vec<EventRow>,
    /// What `clusterUpgradeTriggerNodeUpgrade` would do, while a cluster upgrade waits for that opt-in.
    pub upgrade_note: Option<String>,
}

/// The detail of the ModuleDay0 `namespace/name`, or `None` when it does not exist.
pub fn detail(
    data: &ClusterData,
    namespace: &str,
    name: &str,
    now: jiff::Timestamp,
) -> Option<Day0Detail> {
    let day0 = data.day0(namespace, name)?;
    let pool_objects = pool_list(data);
    let summary = Day0Row::of(day0, &pool_objects);
    let target_os = &day0.spec.os_mapping.literal;
    let mut nodes: Vec<Day0NodeRow> = summary
        .pool
        .as_deref()
        .and_then(|pool| {
            pool_objects
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(pool))
        })
        .map(|pool| pools::members(pool, &data.nodes, &pool_objects))
        .unwrap_or_default()
        .iter()
        .map(|node| {
            let os_image = pools::os_image(node).unwrap_or_default().to_owned();
            let update = node
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(node_update::STATE))
                .cloned()
                .unwrap_or_default();
            let health = match (update.as_str(), &os_image == target_os) {
                (node_update::DEGRADED, _) => Health::Error,
                (_, true) => Health::Ok,
                (node_update::WORKING, false) => Health::Progressing,
                _ => Health::Warning,
            };
            Day0NodeRow {
                node: node.metadata.name.clone().unwrap_or_default(),
                os_image,
                target_os: target_os.clone(),
                kernel: pools::kernel_version(node).unwrap_or_default().to_owned(),
                target_kernel: None,
                update,
                health,
            }
        })
        .collect();
    let target_kernel = nodes
        .iter()
        .find(|node| node.on_target() && !node.kernel.is_empty())
        .map(|node| node.kernel.clone());
    for node in &mut nodes {
        node.target_kernel.clone_from(&target_kernel);
    }
    let mic_name = images::mic_name(name);
    let pods = image_pods(data, namespace, &mic_name, now);
    let pod_names: HashSet<&str> = pods.iter().map(|p| p.pod.name.as_str()).collect();
    let machine_config = day0.status.as_ref().and_then(|s| s.machine_config.clone());
    let events = data
        .events
        .iter()
        .filter(|event| {
            let Some(regarding) = event.regarding.as_ref() else {
                return false;
            };
            let object = regarding.name.as_deref().unwrap_or_default();
            let in_namespace = regarding.namespace.as_deref().unwrap_or_default() == namespace;
            match regarding.kind.as_deref().unwrap_or_default() {
                "ModuleDay0" => object == name && in_namespace,
                "MachineConfig" => machine_config.as_deref() == Some(object),
                "Pod" => in_namespace && pod_names.contains(object),
                _ => false,
            }
        })
        .take(RECENT_EVENTS)
        .map(|event| EventRow::of(event, now))
        .collect();
    Some(Day0Detail {
        image_stage: image_stage(data, day0, namespace, &mic_name),
        upgrade_note: summary
            .awaits_upgrade_opt_in()
            .then(|| upgrade_note(day0, &summary)),
        summary,
        machine_config,
        nodes,
        pods,
        events,
    })
}

/// Where the image stands according to the ModuleDay0's ModuleImagesConfig, in one line.
fn image_stage(data: &ClusterData, day0: &ModuleDay0, namespace: &str, mic_name: &str) -> String {
    let Some(mic) = data.mic(namespace, mic_name) else {
        return format!("no image work under way (ModuleImagesConfig {mic_name} is absent)");
    };
    let image = &day0.spec.os_mapping.container_image;
    let generation =
        images::requested_generation(mic, image).unwrap_or_else(|| images::generation(day0));
    // The engine tells a failed sign from a failed build by the pods; its condition says which it found.
    let sign_failed = day0
        .status
        .iter()
        .flat_map(|status| &status.conditions)
        .any(|condition| condition.reason == reasons::SIGN_FAILED);
    let stage = match images::stage(mic, image, generation, sign_failed) {
        ImageStage::Exists => "in the registry".to_owned(),
        ImageStage::Checking(message) => format!("checking: {message}"),
        ImageStage::WaitingForImage(message) => format!("waiting to be pushed: {message}"),
        ImageStage::Building(message) => format!("building: {message}"),
        ImageStage::Signing(message) => format!("signing: {message}"),
        ImageStage::Failed { reason, message } => format!("{reason}: {message}"),
    };
    format!("generation {generation}, {stage}")
}

/// What opting in to cluster upgrades would do for this ModuleDay0.
fn upgrade_note(day0: &ModuleDay0, row: &Day0Row) -> String {
    let pool = row.pool_label();
    let mut note = format!(
        "A cluster upgrade waits: pool {pool} stays on {}. With osMapping.clusterUpgradeTriggerNodeUpgrade: true \
         the engine builds the image again on the new release's OS (OS_AUTO, DTK_AUTO), tagged with the release \
         version, then rolls pool {pool} onto it",
        row.image
    );
    if day0.spec.os_mapping.build.is_none() {
        note.push_str("; set osMapping.build too, or there is nothing to build it with");
    }
    note.push('.');
    note
}

/// The pull, build and sign pods of the ModuleImagesConfig `mic` in `namespace`.
fn image_pods(
    data: &ClusterData,
    namespace: &str,
    mic: &str,
    now: jiff::Timestamp,
) -> Vec<Day0PodRow> {
    data.pods
        .iter()
        .filter(|pod| pod.metadata.namespace.as_deref() == Some(namespace))
        .filter_map(|pod| {
            let labels = pod.metadata.labels.as_ref()?;
            let role = if labels.get(labels::IMAGE_OWNER).map(String::as_str) == Some(mic) {
                "Pull"
            } else if labels.get(labels::MODULE_NAME).map(String::as_str) == Some(mic) {
                match labels.get(labels::RESOURCE_TYPE).map(String::as_str) {
                    Some("SignImage") => "Sign",
                    Some("BuildImage") => "Build",
                    _ => return None,
                }
            } else {
                return None;
            };
            Some(pod_row(pod, namespace, role, now))
        })
        .collect()
}

fn pod_row(pod: &Pod, namespace: &str, role: &'static str, now: jiff::Timestamp) -> Day0PodRow {
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Pending".to_owned());
    let health = match phase.as_str() {
        "Succeeded" => Health::Ok,
        "Failed" => Health::Error,
        "Running" => Health::Progressing,
        _ => Health::Unknown,
    };
    Day0PodRow {
        pod: Target::namespaced(
            Kind::Pod,
            namespace,
            pod.metadata.name.as_deref().unwrap_or_default(),
        ),
        role,
        phase,
        age: age(pod.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
        health,
    }
}
