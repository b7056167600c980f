//! The cache detail: a coverage matrix of the nodes a cache targets × its images, each cell cached, pulling,
//! failed or missing, with a summary per image and, for the cells that have them, the puller pod and the reason a
//! pull failed. Built once per data change; drawing only slices the rows on screen, so 5,000 nodes cost no more to
//! draw than 40.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::tui::data::ClusterData;

use super::cache_images::{CacheImages, is_puller_of, pod_images, pod_node};
use super::caches::CacheRow;
use super::events::EventRow;
use super::{Health, matches_filter};

/// Container waiting reasons that mean the pull failed, not that it is still under way.
const PULL_FAILURES: [&str; 5] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "RegistryUnavailable",
];

/// Where one image stands on one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellState {
    /// The node holds the image.
    Cached,
    /// A puller pod is at work on it.
    Pulling,
    /// The last pull failed.
    Failed,
    /// Meant for the node, not there, and nothing pulling it.
    Missing,
    /// No list of the cache puts this image on this node.
    NotWanted,
}

impl CellState {
    /// The glyph the matrix draws, so the state reads without colour.
    pub fn glyph(self) -> &'static str {
        match self {
            CellState::Cached => "●",
            CellState::Pulling => "◐",
            CellState::Failed => "✗",
            CellState::Missing => "·",
            CellState::NotWanted => " ",
        }
    }

    /// The state in a word.
    pub fn label(self) -> &'static str {
        match self {
            CellState::Cached => "cached",
            CellState::Pulling => "pulling",
            CellState::Failed => "failed",
            CellState::Missing => "missing",
            CellState::NotWanted => "not wanted",
        }
    }

    /// How the matrix colours it.
    pub fn health(self) -> Health {
        match self {
            CellState::Cached => Health::Ok,
            CellState::Pulling => Health::Progressing,
            CellState::Failed => Health::Error,
            CellState::Missing => Health::Warning,
            CellState::NotWanted => Health::Unknown,
        }
    }
}

/// What is known about one cell beyond its state: the puller pod and why the pull failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellNote {
    /// Index of the image.
    pub image: usize,
    /// The newest puller pod of the image on the node.
    pub pod: Option<String>,
    /// Why the last pull failed.
    pub why: Option<String>,
}

/// One node's row of the matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoverageRow {
    /// Node name.
    pub node: String,
    /// One cell per image of the cache.
    pub cells: Vec<CellState>,
    /// Images meant for the node.
    pub wanted: usize,
    /// Of those, images it holds.
    pub cached: usize,
    /// Pods and failure reasons of the cells that have them.
    pub notes: Vec<CellNote>,
}

impl CoverageRow {
    /// What is known about the cell of image `image`.
    pub fn note(&self, image: usize) -> Option<&CellNote> {
        self.notes.iter().find(|note| note.image == image)
    }

    /// The `/` filter's rule: the node's name, or a state one of its cells is in (`/failed`, `/missing`).
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(needle, &[&self.node])
            || self
                .cells
                .iter()
                .any(|cell| *cell != CellState::NotWanted && cell.label() == needle)
    }

    /// Overall state of the node for this cache.
    pub fn health(&self) -> Health {
        [CellState::Failed, CellState::Missing, CellState::Pulling]
            .into_iter()
            .find(|state| self.cells.contains(state))
            .map_or(Health::Ok, CellState::health)
    }
}

/// One image's line of the summary: on how many of the nodes meant to hold it it is, and where it is not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageCoverage {
    /// The image as the cache spells it.
    pub image: String,
    /// Nodes it is meant for.
    pub wanted: usize,
    /// Nodes holding it.
    pub cached: usize,
    /// Nodes pulling it.
    pub pulling: usize,
    /// Nodes where its pull failed.
    pub failed: usize,
    /// Nodes lacking it with nothing pulling it.
    pub missing: usize,
}

impl ImageCoverage {
    /// Overall state of the image across nodes.
    pub fn health(&self) -> Health {
        if self.failed > 0 {
            Health::Error
        } else if self.missing > 0 {
            Health::Warning
        } else if self.pulling > 0 {
            Health::Progressing
        } else {
            Health::Ok
        }
    }

    /// The `/` filter's rule.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(needle, &[&self.image])
    }
}

/// Everything the cache detail shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheDetail {
    /// The cache's row of the Caches pane.
    pub summary: CacheRow,
    /// Per image: coverage across nodes. Matrix columns follow this order.
    pub images: Vec<ImageCoverage>,
    /// Per targeted node, by name: the matrix rows.
    pub nodes: Vec<CoverageRow>,
}

/// The detail of the cache `namespace/name`, or `None` when it does not exist.
pub fn detail(data: &ClusterData, namespace: &str, name: &str) -> Option<CacheDetail> {
    let cache = data.cache(namespace, name)?;
    let images = CacheImages::of(cache);
    let pods = puller_pods(data, namespace, name, &images);
    let failures = recorded_failures(cache, &images);
    let mut summary: Vec<ImageCoverage> = images
        .images
        .iter()
        .map(|image| ImageCoverage {
            image: image.clone(),
            ..ImageCoverage::default()
        })
        .collect();
    let mut nodes = Vec::new();
    let mut seen = HashMap::new();
    for node in data.nodes.iter().filter(|node| images.targets(node)) {
        let row = coverage_row(node, &images, &pods, &failures, &mut seen);
        for (cell, image) in row.cells.iter().zip(summary.iter_mut()) {
            let counter = match cell {
                CellState::Cached => &mut image.cached,
                CellState::Pulling => &mut image.pulling,
                CellState::Failed => &mut image.failed,
                CellState::Missing => &mut image.missing,
                CellState::NotWanted => continue,
            };
            *counter += 1;
            image.wanted += 1;
        }
        nodes.push(row);
    }
    Some(CacheDetail {
        summary: CacheRow::of(cache),
        images: summary,
        nodes,
    })
}

/// The newest puller pod per (node, image index).
fn puller_pods<'a>(
    data: &'a ClusterData,
    namespace: &str,
    name: &str,
    images: &CacheImages,
) -> HashMap<(&'a str, usize), &'a Pod> {
    let mut pods: HashMap<(&str, usize), &Pod> = HashMap::new();
    for pod in data
        .pods
        .iter()
        .filter(|pod| is_puller_of(pod, namespace, name))
    {
        let Some(node) = pod_node(pod) else {
            continue;
        };
        for index in pod_images(pod)
            .into_iter()
            .filter_map(|i| images.index_of(i))
        {
            let newer = |old: &&Pod| {
                pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
                    >= old.metadata.creation_timestamp.as_ref().map(|t| t.0)
            };
            let slot = pods.entry((node, index)).or_insert(pod);
            if newer(slot) {
                *slot = pod;
            }
        }
    }
    pods
}

/// Per node: `Reason: message` per image index, from `status.failures` and the per-node coverage.
type Failures<'a> = HashMap<&'a str, Vec<(usize, String)>>;

/// `Reason: message` per node and image index from the cache's status.
fn recorded_failures<'a>(
    cache: &'a kmm_api::imagecache::ImageCache,
    images: &CacheImages,
) -> Failures<'a> {
    let mut failures: Failures<'a> = HashMap::new();
    let mut record = |node: &'a str, index: usize, why: String| {
        let entries = failures.entry(node).or_default();
        if !entries.iter().any(|(known, _)| *known == index) {
            entries.push((index, why));
        }
    };
    let Some(status) = cache.status.as_ref() else {
        return failures;
    };
    // Per-node coverage names failures beyond the bounded `failures` lists.
    for node in &status.nodes {
        for failure in &node.failed {
            if let Some(index) = images.index_of(&failure.image) {
                record(
                    &node.node,
                    index,
                    reason_and_message(Some(&failure.reason), Some(&failure.message)),
                );
            }
        }
    }
    for (image, entries) in &status.failures {
        let Some(index) = images.index_of(image) else {
            continue;
        };
        for entry in entries {
            let why = if entry.message.is_empty() {
                entry.reason.clone()
            } else {
                format!("{}: {}", entry.reason, entry.message)
            };
            record(&entry.node, index, why);
        }
    }
    failures
}

/// One node's cells.
fn coverage_row<'a>(
    node: &'a Node,
    images: &CacheImages,
    pods: &HashMap<(&str, usize), &Pod>,
    failures: &Failures<'_>,
    seen: &mut HashMap<&'a str, Option<usize>>,
) -> CoverageRow {
    let name = node.metadata.name.clone().unwrap_or_default();
    let hostname = node
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get("kubernetes.io/hostname"))
        .map_or(name.as_str(), String::as_str);
    let held = images.held_by(node, seen);
    let wanted = images.wanted_mask(node);
    let recorded_on = |node: &str, index: usize| {
        failures
            .get(node)
            .and_then(|entries| entries.iter().find(|(i, _)| *i == index))
            .map(|(_, why)| why)
    };
    let mut row = CoverageRow {
        cells: Vec::with_capacity(images.images.len()),
        wanted: 0,
        cached: 0,
        notes: Vec::new(),
        node: name.clone(),
    };
    for (index, wanted) in wanted.into_iter().enumerate() {
        if !wanted {
            row.cells.push(CellState::NotWanted);
            continue;
        }
        row.wanted += 1;
        let pod = pods
            .get(&(name.as_str(), index))
            .or_else(|| pods.get(&(hostname, index)));
        let recorded = recorded_on(&name, index).or_else(|| recorded_on(hostname, index));
        let (state, why) = if held[index] {
            (CellState::Cached, None)
        } else {
            match pod.map(|pod| pod_state(pod)) {
                Some(PodState::Working) => (CellState::Pulling, recorded.cloned()),
                Some(PodState::Failed(why)) => (CellState::Failed, Some(why)),
                Some(PodState::Done) | None => match recorded {
                    Some(why) => (CellState::Failed, Some(why.clone())),
                    None => (CellState::Missing, None),
                },
            }
        };
        if state == CellState::Cached {
            row.cached += 1;
        }
        let pod_name = pod.and_then(|pod| pod.metadata.name.clone());
        if pod_name.is_some() || why.is_some() {
            row.notes.push(CellNote {
                image: index,
                pod: pod_name,
                why,
            });
        }
        row.cells.push(state);
    }
    row
}

/// What a puller pod says about its pull.
enum PodState {
    /// Still pulling (or about to).
    Working,
    /// It finished well.
    Done,
    /// The pull failed, and this is why.
    Failed(String),
}

fn pod_state(pod: &Pod) -> PodState {
    let status = pod.status.as_ref();
    let statuses = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten();
    let waiting_failure = statuses
        .clone()
        .filter_map(|s| s.state.as_ref()?.waiting.as_ref())
        .find(|w| {
            w.reason
                .as_deref()
                .is_some_and(|reason| PULL_FAILURES.contains(&reason))
        });
    if let Some(waiting) = waiting_failure {
        return PodState::Failed(reason_and_message(
            waiting.reason.as_deref(),
            waiting.message.as_deref(),
        ));
    }
    match status.and_then(|s| s.phase.as_deref()) {
        Some("Succeeded") => PodState::Done,
        Some("Failed") => {
            let terminated = statuses
                .filter_map(|s| s.state.as_ref()?.terminated.as_ref())
                .find(|t| t.exit_code != 0);
            PodState::Failed(match terminated {
                Some(t) => reason_and_message(t.reason.as_deref(), t.message.as_deref()),
                None => reason_and_message(
                    status.and_then(|s| s.reason.as_deref()),
                    status.and_then(|s| s.message.as_deref()),
                ),
            })
        }
        _ => PodState::Working,
    }
}

fn reason_and_message(reason: Option<&str>, message: Option<&str>) -> String {
    match (
        reason.filter(|r| !r.is_empty()),
        message.filter(|m| !m.is_empty()),
    ) {
        (Some(reason), Some(message)) => format!("{reason}: {}", message.trim()),
        (Some(reason), None) => reason.to_owned(),
        (None, Some(message)) => message.trim().to_owned(),
        (None, None) => "the puller pod failed".to_owned(),
    }
}

/// The events about pod `namespace/name`, newest first, at most `limit`.
pub fn pod_events(
    data: &ClusterData,
    namespace: &str,
    pod: &str,
    now: jiff::Timestamp,
    limit: usize,
) -> Vec<EventRow> {
    data.events
        .iter()
        .filter(|event| {
            event.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("Pod")
                    && r.name.as_deref() == Some(pod)
                    && r.namespace.as_deref() == Some(namespace)
            })
        })
        .take(limit)
        .map(|event| EventRow::of(event, now))
        .collect()
}

/// Columns the node names take in the matrix.
pub const NODE_COLUMN: u16 = 20;

/// Columns each image takes in the matrix.
pub const CELL_WIDTH: u16 = 3;

/// Columns the `cached/wanted` count at the end of each row takes.
pub const COUNT_COLUMN: u16 = 7;

/// How many image columns fit in a matrix `width` columns wide (borders included); at least one.
pub fn columns_per_page(width: u16) -> usize {
    usize::from(width.saturating_sub(2 + NODE_COLUMN + 1 + COUNT_COLUMN) / CELL_WIDTH).max(1)
}

/// Heights of the detail's parts in a body `height` rows high with `images` images and `nodes` nodes: the image
/// summary table, the matrix, and the selected cell's panel (the summary line takes the one row left). A matrix of
/// few nodes leaves the rest to the cell's panel and its events.
pub fn layout_heights(height: u16, images: usize, nodes: usize) -> (u16, u16, u16) {
    let roomy = height >= 30;
    let image_rows = u16::try_from(images)
        .unwrap_or(u16::MAX)
        .clamp(1, if roomy { 8 } else { 3 });
    let images_height = image_rows + 3;
    let least_cell_height = if roomy { 7 } else { 5 };
    let node_rows = u16::try_from(nodes).unwrap_or(u16::MAX).max(1);
    let matrix_height = height
        .saturating_sub(1 + images_height + least_cell_height)
        .min(node_rows.saturating_add(3))
        .max(4);
    let cell_height = height.saturating_sub(1 + images_height + matrix_height);
    (images_height, matrix_height, cell_height)
}
