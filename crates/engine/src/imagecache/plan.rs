//! One pass's decisions, as a pure function of what the cluster shows: the cache (spec, annotations, status), the
//! nodes (labels, `status.images`) and the cache's pods. Nothing is remembered between passes, so a pass after a
//! restart decides what the pass before the crash would have.

use crate::runtime::settings::{DEFAULT_CLUSTER_PULLS, DEFAULT_FIRST_RETRY};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;

use super::pods::{Operation, PodView, Verdict};
use super::reference::{NodeImages, canonical};
use super::wanted::{self, NodeImages as Pairs};
use kmm_api::imagecache::{
    ImageCache, ImageCacheActionStatus, PURGE_ANNOTATION, PURGE_REASON, REFRESH_ANNOTATION,
    REPULL_ANNOTATION,
};

mod outcome;

pub(super) use outcome::{Finished, Mode, NewPod, PairState, Plan, RemovalState};

/// Bounds on the work in flight and on each pull.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// Pods working on one node at once (all caches together): a node pulls a few images at a time, as a kubelet
    /// pulling serially would anyway.
    pub per_node: usize,
    /// Pods working at once in the whole cluster (all caches together), so a cache of thousands of nodes never
    /// floods the registry or the API server.
    pub cluster: usize,
    /// How long one pull or delete may take before it counts as failed (`DeadlineExceeded`).
    pub deadline: Duration,
    /// How long after a failed pull the first retry starts (see [`backoff`]).
    pub first_retry: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            per_node: 2,
            cluster: DEFAULT_CLUSTER_PULLS,
            deadline: Duration::from_secs(300),
            first_retry: DEFAULT_FIRST_RETRY,
        }
    }
}

/// How long after a pull pod succeeded its image may still be missing from the node's `status.images` (the kubelet
/// reports node status every few seconds) before the image counts as removed since.
pub(super) const CONFIRM_GRACE: Duration = Duration::from_secs(30);

/// How often a cache with work waiting for a slot looks again.
const SLOT_POLL: Duration = Duration::from_secs(5);

/// How long after failed attempt `attempt` the next one starts: `first` (30 s by default), doubling per attempt, at
/// most twenty times `first` (10 minutes by default), so a registry down for hours is asked a few times an hour.
pub fn backoff(attempt: u32, first: Duration) -> Duration {
    let doublings = attempt.saturating_sub(1).min(5);
    (first * (1 << doublings)).min(first * 20)
}

/// Pods working now, across every cache.
#[derive(Clone, Debug, Default)]
pub(super) struct Busy {
    /// In the whole cluster.
    pub total: usize,
    /// Per node name.
    pub per_node: HashMap<String, usize>,
}

/// What a pass reads.
pub(super) struct Observed<'a> {
    /// The cache, read afresh.
    pub cache: &'a ImageCache,
    /// Every node.
    pub nodes: &'a [Arc<Node>],
    /// What every node holds, by node name (see [`NodeImagesMemo`](super::reference::NodeImagesMemo)).
    pub images: &'a HashMap<String, Arc<NodeImages>>,
    /// The cache's pods that are not being deleted.
    pub pods: Vec<PodView>,
    /// The (node, image) pairs with a pod still on its way out: nothing new starts for them until it has left.
    pub leaving: BTreeSet<(String, String)>,
    /// Pods working now across every cache, this one's included.
    pub busy: Busy,
    /// The time of the pass.
    pub now: Timestamp,
    /// The bounds.
    pub limits: Limits,
}

/// One image on one node: (node name, image).
type NodeImage = (String, String);

/// Decide one pass.
pub(super) fn plan(observed: Observed) -> Plan {
    Planner::new(observed).run()
}

struct Planner<'a> {
    cache: &'a ImageCache,
    nodes: HashMap<String, Arc<Node>>,
    images: &'a HashMap<String, Arc<NodeImages>>,
    /// The canonical form of every image the spec lists now or listed when last applied.
    canonical: HashMap<String, String>,
    pods: BTreeMap<(String, String), Vec<PodView>>,
    leaving: BTreeSet<(String, String)>,
    busy: Busy,
    now: Timestamp,
    limits: Limits,
    plan: Plan,
    wanted: Pairs,
    removed: Pairs,
}

impl<'a> Planner<'a> {
    fn new(observed: Observed<'a>) -> Self {
        let cache = observed.cache;
        let wanted = wanted::targets(&cache.spec.cache_spec, observed.nodes);
        let applied = cache
            .status
            .as_ref()
            .map(|s| s.applied_cache_spec.as_slice())
            .filter(|a| !a.is_empty())
            .unwrap_or(&cache.spec.cache_spec);
        let removed = wanted::removed(applied, &wanted, observed.nodes);
        let nodes: HashMap<String, Arc<Node>> = observed
            .nodes
            .iter()
            .filter_map(|n| Some((n.metadata.name.clone()?, n.clone())))
            .collect();
        let canonical = cache
            .spec
            .cache_spec
            .iter()
            .chain(applied)
            .flat_map(|list| &list.images)
            .map(|image| (image.clone(), canonical(image)))
            .collect();
        let mut pods: BTreeMap<(String, String), Vec<PodView>> = BTreeMap::new();
        for pod in observed.pods {
            pods.entry((pod.node.clone(), pod.image.clone()))
                .or_default()
                .push(pod);
        }
        for list in pods.values_mut() {
            list.sort_by_key(|p| (p.attempt, p.created));
        }
        Self {
            cache,
            nodes,
            images: observed.images,
            canonical,
            pods,
            leaving: observed.leaving,
            busy: observed.busy,
            now: observed.now,
            limits: observed.limits,
            plan: Plan {
                mode: Mode::Caching,
                pairs: BTreeMap::new(),
                removals: Vec::new(),
                create: Vec::new(),
                delete: BTreeSet::new(),
                sweep: BTreeSet::new(),
                done_annotations: Vec::new(),
                removals_settled: true,
                asked_undone: false,
                wake_after: None,
            },
            wanted,
            removed,
        }
    }

    fn run(mut self) -> Plan {
        let annotations = self.cache.annotations();
        let refresh = annotations.contains_key(REFRESH_ANNOTATION);
        let repull = annotations.get(REPULL_ANNOTATION).cloned();
        self.plan.mode = self.mode();
        let mut pods = std::mem::take(&mut self.pods);
        match self.plan.mode {
            Mode::Purging => self.purge(&mut pods),
            Mode::Purged => self.passive_pairs(),
            Mode::Caching => self.cache(&mut pods, refresh, repull.as_deref()),
        }
        // Pods of pairs the cache no longer has: an image or node that left, or work of another mode.
        for list in pods.into_values() {
            self.plan.delete.extend(list.into_iter().map(|p| p.name));
        }
        self.plan
    }

    /// The mode from the annotations and the status: a purge asked for purges; a purge that ran keeps the cache
    /// purged until the spec changes or a refresh or re-pull asks for the images again.
    fn mode(&self) -> Mode {
        let annotations = self.cache.annotations();
        let purge = annotations.contains_key(PURGE_ANNOTATION);
        let asks_again = annotations.contains_key(REFRESH_ANNOTATION)
            || annotations.contains_key(REPULL_ANNOTATION);
        let purged = !purge
            && !asks_again
            && self.cache.status.as_ref().is_some_and(|s| {
                s.reason == PURGE_REASON
                    && s.status != ImageCacheActionStatus::Processing
                    && s.observed_generation == self.cache.metadata.generation
            });
        if purge {
            Mode::Purging
        } else if purged {
            Mode::Purged
        } else {
            Mode::Caching
        }
    }

    /// Purging: every image, wanted or removed, leaves every node; the purge annotation is done once all removals
    /// settled.
    fn purge(&mut self, pods: &mut BTreeMap<NodeImage, Vec<PodView>>) {
        let mut targets = self.removed.clone();
        for (node, images) in &self.wanted {
            let list = targets.entry(node.clone()).or_default();
            list.extend(images.iter().cloned());
        }
        self.remove_all(&targets, pods);
        self.passive_pairs();
        if self.plan.removals_settled {
            self.plan.done_annotations.push(PURGE_ANNOTATION);
        } else {
            self.plan.asked_undone = true;
            self.wake_at(self.now + SLOT_POLL);
        }
    }

    /// Remove every pair of `targets`, each with the pods found for it.
    fn remove_all(&mut self, targets: &Pairs, pods: &mut BTreeMap<NodeImage, Vec<PodView>>) {
        for (node, images) in targets {
            for image in images {
                let found = pods
                    .remove(&(node.clone(), image.clone()))
                    .unwrap_or_default();
                self.removal(node, image, found);
            }
        }
    }

    /// Caching: images the spec no longer lists leave their nodes, wanted images are pulled (again, where a refresh
    /// or re-pull asks), and the requests answered in full are marked done.
    fn cache(
        &mut self,
        pods: &mut BTreeMap<NodeImage, Vec<PodView>>,
        refresh: bool,
        repull: Option<&str>,
    ) {
        let removed = std::mem::take(&mut self.removed);
        self.remove_all(&removed, pods);
        let mut refreshing: BTreeSet<NodeImage> = BTreeSet::new();
        if refresh {
            for (node, images) in &self.wanted {
                refreshing.extend(images.iter().map(|i| (node.clone(), i.clone())));
            }
        }
        let repulling = repull
            .map(|value| wanted::repull_pairs(value, &self.wanted))
            .unwrap_or_default();
        refreshing.extend(repulling.iter().cloned());
        let (unsatisfied, answers) = self.pull_all(pods, &refreshing);
        let refresh_done = refresh && unsatisfied.is_empty();
        let repull_done = repull.is_some() && repulling.is_disjoint(&unsatisfied);
        if refresh_done {
            self.plan.done_annotations.push(REFRESH_ANNOTATION);
        }
        if repull_done {
            self.plan.done_annotations.push(REPULL_ANNOTATION);
        }
        // The pods that answered a request go with its annotation, so that the next request of the same kind is
        // answered by new pulls. A pair another pending request names keeps its answer.
        let pending: BTreeSet<&NodeImage> = if refresh && !refresh_done {
            refreshing.iter().collect()
        } else if repull.is_some() && !repull_done {
            repulling.iter().collect()
        } else {
            BTreeSet::new()
        };
        for (pair, pod) in answers {
            if !pending.contains(&pair) {
                self.plan.delete.insert(pod);
            }
        }
        self.plan.asked_undone = !unsatisfied.is_empty();
        let waiting = self
            .plan
            .pairs
            .values()
            .flatten()
            .any(|(_, s)| *s == PairState::Missing);
        if waiting
            || self
                .plan
                .removals
                .iter()
                .any(|r| r.2 == RemovalState::Deleting)
        {
            // A slot another cache frees does not wake this one.
            self.wake_at(self.now + SLOT_POLL);
        }
    }

    /// Pull every wanted pair, `refreshing` ones anew. Returns the refreshed pairs not answered yet, and the pods
    /// that answered the others.
    fn pull_all(
        &mut self,
        pods: &mut BTreeMap<NodeImage, Vec<PodView>>,
        refreshing: &BTreeSet<NodeImage>,
    ) -> (BTreeSet<NodeImage>, BTreeMap<NodeImage, String>) {
        let mut unsatisfied: BTreeSet<NodeImage> = BTreeSet::new();
        let mut answers: BTreeMap<NodeImage, String> = BTreeMap::new();
        let wanted = std::mem::take(&mut self.wanted);
        for (node, images) in &wanted {
            for image in images {
                let key = (node.clone(), image.clone());
                let found = pods.remove(&key).unwrap_or_default();
                let again = refreshing.contains(&key);
                let (state, satisfied) = self.pull(node, image, found, again);
                match satisfied {
                    Answer::Pending if again => {
                        unsatisfied.insert(key);
                    }
                    Answer::By(pod) => {
                        answers.insert(key, pod);
                    }
                    _ => {}
                }
                self.plan
                    .pairs
                    .entry(node.clone())
                    .or_default()
                    .push((image.clone(), state));
            }
        }
        (unsatisfied, answers)
    }

    /// Pairs seen without acting on them (purging or purged): cached or not.
    fn passive_pairs(&mut self) {
        for (node, images) in &self.wanted {
            let states = images
                .iter()
                .map(|image| {
                    let state = if self.holds(node, image) {
                        PairState::Cached
                    } else {
                        PairState::Missing
                    };
                    (image.clone(), state)
                })
                .collect();
            self.plan.pairs.insert(node.clone(), states);
        }
    }

    /// Whether `node` reports holding `image`.
    fn holds(&self, node: &str, image: &str) -> bool {
        let Some(held) = self.images.get(node) else {
            return false;
        };
        match self.canonical.get(image) {
            Some(reference) => held.holds_canonical(reference),
            None => held.holds(image),
        }
    }

    /// Take a slot on `node` for a new pod, if the bounds allow one.
    fn take_slot(&mut self, node: &str) -> bool {
        let on_node = self.busy.per_node.get(node).copied().unwrap_or(0);
        if self.busy.total >= self.limits.cluster || on_node >= self.limits.per_node {
            return false;
        }
        self.busy.total += 1;
        *self.busy.per_node.entry(node.to_owned()).or_default() += 1;
        true
    }

    /// Start a pod when a slot is free; whether it started.
    fn start(
        &mut self,
        node: &str,
        image: &str,
        operation: Operation,
        attempt: u32,
        last_failure: Option<String>,
    ) -> bool {
        let Some(node_object) = self.nodes.get(node).cloned() else {
            return false;
        };
        if !self.take_slot(node) {
            return false;
        }
        self.plan.create.push(NewPod {
            node: node_object,
            image: image.to_owned(),
            operation,
            attempt,
            last_failure,
            replaces: None,
        });
        true
    }

    /// Start a pod in place of `predecessor`, a failed pod of the same pair that may still be pulling (the kubelet
    /// retries a pod in `ImagePullBackOff`), when a slot is free: the predecessor goes first, and the new pod is
    /// created only once it has left (see [`NewPod::replaces`]).
    fn start_after(
        &mut self,
        predecessor: String,
        node: &str,
        image: &str,
        operation: Operation,
        attempt: u32,
        last_failure: Option<String>,
    ) {
        if self.start(node, image, operation, attempt, last_failure) {
            if let Some(new) = self.plan.create.last_mut() {
                new.replaces = Some(predecessor.clone());
            }
            self.plan.delete.insert(predecessor);
        }
    }

    fn wake_at(&mut self, at: Timestamp) {
        let after = at.duration_since(self.now);
        let after = if after.is_positive() {
            after.unsigned_abs()
        } else {
            Duration::ZERO
        } + Duration::from_secs(1);
        self.plan.wake_after = Some(self.plan.wake_after.map_or(after, |w| w.min(after)));
    }

    /// Decide one image on one node that should hold it; `again` when a refresh or re-pull asks for a new pull.
    /// Returns its state and whether what `again` asks is answered.
    fn pull(
        &mut self,
        node: &str,
        image: &str,
        mut pods: Vec<PodView>,
        again: bool,
    ) -> (PairState, Answer) {
        let cached = self.holds(node, image);
        // Delete pods of another operation and older attempts.
        let current = pods
            .iter()
            .rposition(|p| p.operation != Operation::Delete)
            .map(|i| pods.remove(i));
        self.plan.delete.extend(pods.into_iter().map(|p| p.name));
        let Some(pod) = current else {
            return self.first_pull(node, image, cached, again);
        };
        match pod.verdict.clone() {
            Verdict::Working => {
                self.wake_at(pod.created + self.limits.deadline);
                let state = if cached && !again {
                    PairState::Cached
                } else if let Some(failure) = &pod.last_failure {
                    failed_from(failure)
                } else {
                    PairState::Pulling
                };
                (state, Answer::Pending)
            }
            Verdict::Succeeded(finished) => {
                self.after_success(node, image, pod, finished, cached, again)
            }
            Verdict::Failed { reason, message } => {
                self.after_failure(node, image, pod, (reason, message), cached, again)
            }
        }
    }

    /// A pair with no pod working on it: nothing to do when the node holds the image and nothing new is asked;
    /// else a pull starts, once the pair's last pod has left.
    fn first_pull(
        &mut self,
        node: &str,
        image: &str,
        cached: bool,
        again: bool,
    ) -> (PairState, Answer) {
        if cached && !again {
            return (PairState::Cached, Answer::Done);
        }
        if self.leaving.contains(&(node.to_owned(), image.to_owned())) {
            // Its pod leaving wakes the cache.
            return (PairState::Pulling, Answer::Pending);
        }
        let operation = if again {
            Operation::Refresh
        } else {
            Operation::Pull
        };
        let started = self.start(node, image, operation, 1, None);
        (
            if started {
                PairState::Pulling
            } else {
                PairState::Missing
            },
            Answer::Pending,
        )
    }

    /// A pull that succeeded. A request for a new pull is answered only by a refresh pod; the pod goes once the
    /// node reports the image, and a node that still lacks it after [`CONFIRM_GRACE`] lost it since and pulls
    /// again (a node whose image list is truncated is trusted).
    fn after_success(
        &mut self,
        node: &str,
        image: &str,
        pod: PodView,
        finished: Option<Timestamp>,
        cached: bool,
        again: bool,
    ) -> (PairState, Answer) {
        let truncated = self.images.get(node).is_some_and(|h| h.truncated);
        let is_refresh = pod.operation == Operation::Refresh;
        if again && !is_refresh {
            self.plan.delete.insert(pod.name);
            let started = self.start(node, image, Operation::Refresh, 1, None);
            return (
                if started {
                    PairState::Pulling
                } else if cached {
                    PairState::Cached
                } else {
                    PairState::Missing
                },
                Answer::Pending,
            );
        }
        if again {
            return (PairState::Cached, Answer::By(pod.name));
        }
        if cached {
            self.plan.sweep.insert(Finished {
                image: pod.image,
                operation: pod.operation,
                node: pod.node,
                name: pod.name,
            });
            return (PairState::Cached, Answer::Done);
        }
        if truncated {
            return (PairState::Cached, Answer::Done);
        }
        let confirm_by = finished.unwrap_or(pod.created) + CONFIRM_GRACE;
        if confirm_by > self.now {
            self.wake_at(confirm_by);
            return (PairState::Pulling, Answer::Done);
        }
        // Pulled, then removed from the node (garbage collection, crictl rmi): pull it again.
        self.plan.delete.insert(pod.name);
        let started = self.start(node, image, Operation::Pull, 1, None);
        (
            if started {
                PairState::Pulling
            } else {
                PairState::Missing
            },
            Answer::Done,
        )
    }

    /// A pull that failed: a refresh's failure is its answer; otherwise the pull is retried after [`backoff`]
    /// (at once for a new request), by a pod that replaces the failed one.
    fn after_failure(
        &mut self,
        node: &str,
        image: &str,
        pod: PodView,
        (reason, message): (String, String),
        cached: bool,
        again: bool,
    ) -> (PairState, Answer) {
        let is_refresh = pod.operation == Operation::Refresh;
        let last_failure = Some(format!("{reason}: {message}"));
        let failed = PairState::Failed { reason, message };
        if again && is_refresh {
            // The refresh's attempt is its answer; retries wait until the refresh is over.
            let state = if cached { PairState::Cached } else { failed };
            return (state, Answer::By(pod.name));
        }
        if cached && !again {
            self.plan.delete.insert(pod.name);
            return (PairState::Cached, Answer::Done);
        }
        if again {
            self.start_after(pod.name, node, image, Operation::Refresh, 1, last_failure);
            return (failed, Answer::Pending);
        }
        let due = pod.created + backoff(pod.attempt, self.limits.first_retry);
        if due <= self.now {
            let attempt = pod.attempt + 1;
            self.start_after(
                pod.name,
                node,
                image,
                Operation::Pull,
                attempt,
                last_failure,
            );
        } else {
            self.wake_at(due);
        }
        (failed, Answer::Done)
    }

    /// Decide one image on a node it must leave.
    fn removal(&mut self, node: &str, image: &str, mut pods: Vec<PodView>) {
        let present = self.holds(node, image);
        let current = pods
            .iter()
            .rposition(|p| p.operation == Operation::Delete)
            .map(|i| pods.remove(i));
        // Pulls of an image that must go stop at once.
        self.plan.delete.extend(pods.into_iter().map(|p| p.name));
        let state = match current {
            None if present => {
                self.start(node, image, Operation::Delete, 1, None);
                RemovalState::Deleting
            }
            None => RemovalState::Done,
            Some(pod) => match pod.verdict {
                Verdict::Working => {
                    self.wake_at(pod.created + self.limits.deadline);
                    RemovalState::Deleting
                }
                Verdict::Succeeded(_) => RemovalState::Done,
                Verdict::Failed { .. } if !present => RemovalState::Done,
                Verdict::Failed { reason, message } => RemovalState::Failed { reason, message },
            },
        };
        if state == RemovalState::Deleting {
            self.plan.removals_settled = false;
        }
        self.plan
            .removals
            .push((node.to_owned(), image.to_owned(), state));
    }
}

/// Whether a pair's pull answers a refresh or re-pull request.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// Not yet.
    Pending,
    /// Nothing new is asked of it, or it needs no pod to be done.
    Done,
    /// The named refresh pod answered it.
    By(String),
}

/// A retry's pair state from the failure its pod carries (`reason: message`).
fn failed_from(failure: &str) -> PairState {
    let (reason, message) = failure.split_once(": ").unwrap_or((failure, ""));
    PairState::Failed {
        reason: reason.to_owned(),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
