//! What one pass decides: where each image stands on each node, which pods to create and delete, and
//! when to look again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;

use crate::imagecache::pods::Operation;

/// Where one image stands on one node that should hold it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PairState {
    /// On the node.
    Cached,
    /// A pod is pulling it (or its pull just finished and the node has not reported it yet).
    Pulling,
    /// Not on the node; waiting for a free slot (or, on a purged cache, left alone).
    Missing,
    /// The last pull failed; retried with back-off.
    Failed {
        /// Short reason.
        reason: String,
        /// The runtime's or registry's words.
        message: String,
    },
}

/// Where one image stands on a node it must leave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RemovalState {
    /// Gone from the node.
    Done,
    /// A delete pod works on it, or waits for a slot.
    Deleting,
    /// The delete failed (an image in use, typically); left for the kubelet's garbage collection.
    Failed {
        /// Short reason.
        reason: String,
        /// What crictl said.
        message: String,
    },
}

/// What the cache is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Keeping its images on its nodes.
    Caching,
    /// Deleting its images from its nodes (purge annotation).
    Purging,
    /// Purged: leaving its nodes alone until its spec changes or a refresh is asked for.
    Purged,
}

/// A pod to create.
#[derive(Clone, Debug)]
pub(crate) struct NewPod {
    /// The node it works on.
    pub node: Arc<Node>,
    /// The image.
    pub image: String,
    /// Pull, refresh or delete.
    pub operation: Operation,
    /// Attempt number.
    pub attempt: u32,
    /// Why the previous attempt failed.
    pub last_failure: Option<String>,
    /// The pod it takes over from, which must have left the API before this one is created: two pods for one
    /// image on one node would pull it twice.
    pub replaces: Option<String>,
}

/// A pod whose work is done and shows on its node: one of many swept away together (see [`Plan::sweep`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Finished {
    /// The image it pulled.
    pub image: String,
    /// Pull or refresh.
    pub operation: Operation,
    /// The node it worked on.
    pub node: String,
    /// Its name.
    pub name: String,
}

/// The decisions of one pass.
#[derive(Debug)]
pub(crate) struct Plan {
    /// What the cache is doing.
    pub mode: Mode,
    /// Per targeted node, its images and where each stands.
    pub pairs: BTreeMap<String, Vec<(String, PairState)>>,
    /// Images leaving nodes (spec edits and purges).
    pub removals: Vec<(String, String, RemovalState)>,
    /// Pods to create.
    pub create: Vec<NewPod>,
    /// Pods to delete, by name.
    pub delete: BTreeSet<String>,
    /// Succeeded pods whose image their node reports: the bulk of a rollout's deletes, made a few requests per
    /// pass (one per image and operation, naming the nodes) rather than one per pod.
    pub sweep: BTreeSet<Finished>,
    /// Annotations whose work is done, to remove.
    pub done_annotations: Vec<&'static str>,
    /// Every image that left the spec is gone from the nodes (or failed to go): the status may record the spec as
    /// applied.
    pub removals_settled: bool,
    /// An annotation asks for work that is not done yet.
    pub asked_undone: bool,
    /// When to look again even if nothing changes (a retry or a deadline falls due, a slot may free up).
    pub wake_after: Option<Duration>,
}

impl Plan {
    /// Whether work is under way: pulls or deletes running or waiting for a slot.
    pub(crate) fn processing(&self) -> bool {
        let pulling = self.mode != Mode::Purged
            && self.pairs.values().flatten().any(|(_, s)| {
                matches!(s, PairState::Pulling)
                    || (self.mode == Mode::Caching && matches!(s, PairState::Missing))
            });
        let deleting = self
            .removals
            .iter()
            .any(|(_, _, s)| *s == RemovalState::Deleting);
        pulling || deleting || self.asked_undone
    }
}
