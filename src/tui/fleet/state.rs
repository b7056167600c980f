//! What the UI task knows of each cluster of the fleet: whether it answers, its version, the lists the header
//! counts, its nodes, and who acts on it. Background tasks only send [`FleetChange`]s; the UI task applies them.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;

use super::reach::Reach;
use crate::tui::data::{ClusterData, FeedState, Kind, KindSnapshot};
use crate::tui::view::summary::{Summary, Tally};
use crate::tui::view::{caches, day0, modules, shims};
use kmm_engine::Family;
use kmm_engine::runtime::operators::Upstream;

/// One piece of news about one cluster of the fleet.
#[derive(Clone, Debug)]
pub enum FleetChange {
    /// It answered, or stopped answering.
    Reach(Reach),
    /// A new list of one counted kind.
    Data(KindSnapshot),
    /// A watch failed or recovered.
    Feed(Kind, FeedState),
    /// How many nodes it has, and how many are ready.
    Nodes {
        /// Ready nodes.
        ready: usize,
        /// Every node.
        total: usize,
    },
    /// The engine Lease changed.
    EngineLease(Option<Arc<Lease>>),
    /// The families upstream operators act on.
    Upstream(BTreeMap<Family, Upstream>),
}

/// One cluster of the fleet.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// Whether it answers.
    pub reach: Reach,
    /// Since when `reach` says what it says.
    pub since: jiff::Timestamp,
    /// The counted lists (Modules, Shims, ImageCaches, ModuleDay0s, pools, MachineConfigs) and the engine Lease.
    pub data: ClusterData,
    /// The header's counts of those lists, and the nodes.
    pub summary: Summary,
    /// Whether the nodes have been counted yet.
    pub nodes_counted: bool,
    /// Families an upstream operator acts on.
    pub upstream: BTreeMap<Family, Upstream>,
}

impl Cluster {
    fn new(now: jiff::Timestamp) -> Cluster {
        Cluster {
            reach: Reach::Connecting,
            since: now,
            data: ClusterData::default(),
            summary: Summary::default(),
            nodes_counted: false,
            upstream: BTreeMap::new(),
        }
    }

    /// Apply one change, at `now`.
    fn apply(&mut self, change: FleetChange, now: jiff::Timestamp) {
        match change {
            FleetChange::Reach(reach) => {
                if reach != self.reach {
                    // The word stays the same across retries; `since` says how long it has been so.
                    let same_kind = matches!(
                        (&reach, &self.reach),
                        (Reach::Unreachable(a), Reach::Unreachable(b)) if a.word == b.word
                    );
                    if !same_kind {
                        self.since = now;
                    }
                    self.reach = reach;
                }
            }
            FleetChange::Data(snapshot) => {
                let kind = snapshot.kind();
                self.data.apply(snapshot);
                self.recount(kind);
            }
            FleetChange::Feed(kind, state) => self.data.set_feed(kind, state),
            FleetChange::Nodes { ready, total } => {
                self.summary.nodes_ready = ready;
                self.summary.nodes_total = total;
                self.nodes_counted = true;
                self.data.set_feed(Kind::Node, FeedState::Live);
            }
            FleetChange::EngineLease(lease) => self.data.engine_lease = lease,
            FleetChange::Upstream(found) => self.upstream = found,
        }
    }

    /// Count again the family a new list of `kind` changes, with the rows the panes use.
    fn recount(&mut self, kind: Kind) {
        let data = &self.data;
        match kind {
            Kind::Module => {
                self.summary.modules = Tally::of(modules::rows(data).iter().map(|r| r.health));
            }
            Kind::Shim => {
                self.summary.shims = Tally::of(shims::rows(data).iter().map(|r| r.state));
            }
            Kind::ImageCache => {
                self.summary.caches = Tally::of(caches::rows(data).iter().map(|r| r.health));
            }
            Kind::ModuleDay0 | Kind::MachineConfigPool | Kind::MachineConfig => {
                self.summary.day0s = Tally::of(day0::rows(data).iter().map(|r| r.state));
            }
            _ => {}
        }
    }

    /// Whether every counted kind has been listed and the nodes counted.
    pub fn loaded(&self) -> bool {
        self.nodes_counted
            && [
                Kind::Module,
                Kind::Shim,
                Kind::ImageCache,
                Kind::ModuleDay0,
                Kind::MachineConfigPool,
                Kind::MachineConfig,
            ]
            .iter()
            .all(|kind| self.data.revision(*kind) > 0)
    }
}

/// Every cluster of the fleet, by context name.
#[derive(Clone, Debug, Default)]
pub struct Fleet {
    /// The members.
    pub members: BTreeMap<String, Cluster>,
}

impl Fleet {
    /// Add these contexts (connecting), keeping what is known of those already there.
    pub fn add(&mut self, contexts: &[String], now: jiff::Timestamp) {
        for context in contexts {
            self.members
                .entry(context.clone())
                .or_insert_with(|| Cluster::new(now));
        }
    }

    /// Apply a change of one member.
    pub fn apply(&mut self, context: &str, change: FleetChange, now: jiff::Timestamp) {
        self.members
            .entry(context.to_owned())
            .or_insert_with(|| Cluster::new(now))
            .apply(change, now);
    }
}
