//! Rows of the fleet view: one per cluster, with whether it answers (and why not), its version, its nodes, the
//! header's counts of Modules, Shims, ImageCaches and ModuleDay0s, the rollouts awaiting approval, the degraded
//! objects and who acts. Sorted so the clusters that need a person come first, then by name.

use crate::tui::fleet::reach::Reach;
use crate::tui::fleet::state::{Cluster, Fleet};

use super::engine::{Place, family_label};
use super::summary::Summary;
use super::{age, matches_filter};

/// How much a cluster needs a person, most first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Attention {
    /// It does not answer.
    Unreachable,
    /// Something failed: a degraded object, or a watch the cluster refuses.
    Degraded,
    /// A rollout waits for approval.
    Approval,
    /// Objects waiting, nodes not ready, or objects with nobody acting on them.
    Waiting,
    /// Not answered or not listed yet.
    Connecting,
    /// All well.
    Fine,
}

/// One cluster as the fleet view shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetRow {
    /// The kubeconfig context.
    pub context: String,
    /// Whether it is the context the console's panes show.
    pub current: bool,
    /// `ok`, `connecting`, `loading`, `watch failing`, or why it cannot be reached in a word (`refused`, `TLS`,
    /// `unauthorized`, `timeout` …).
    pub state: String,
    /// The Kubernetes version, `-` until known.
    pub version: String,
    /// `ready/total` nodes, `-` until counted.
    pub nodes: String,
    /// Whether some counted node is not ready.
    pub nodes_short: bool,
    /// The header's counts.
    pub summary: Summary,
    /// Which families have been listed (Modules, Shims, ImageCaches, ModuleDay0s), so an unlisted one shows `-`.
    pub listed: [bool; 4],
    /// Shim rollouts awaiting approval.
    pub approvals: usize,
    /// Degraded objects.
    pub degraded: usize,
    /// Who acts (the engine Lease holder and where it runs, upstream operators), or, for a cluster that does not
    /// answer or a failing watch, what went wrong and for how long.
    pub detail: String,
    /// How much it needs a person.
    pub attention: Attention,
}

impl FleetRow {
    /// The row of the cluster `context`; `own` is this console's engine identity.
    pub fn of(
        context: &str,
        cluster: &Cluster,
        current: &str,
        own: Option<&str>,
        now: jiff::Timestamp,
    ) -> FleetRow {
        use crate::tui::data::Kind;
        let summary = cluster.summary.clone();
        let listed = [Kind::Module, Kind::Shim, Kind::ImageCache, Kind::ModuleDay0]
            .map(|kind| cluster.data.revision(kind) > 0);
        let failure = cluster.data.failure();
        let acts = who_acts(cluster, own, now);
        let (state, detail) = match (&cluster.reach, failure) {
            (Reach::Connecting, _) => ("connecting".to_owned(), "-".to_owned()),
            (Reach::Unreachable(why), _) => (
                why.word.to_owned(),
                format!("{} (for {})", why.detail, age(Some(cluster.since), now)),
            ),
            (Reach::Reachable { .. }, Some((kind, message))) => (
                "watch failing".to_owned(),
                format!("{kind} watch failing: {message}"),
            ),
            (Reach::Reachable { .. }, None) if !cluster.loaded() => {
                ("loading".to_owned(), acts.clone())
            }
            (Reach::Reachable { .. }, None) => ("ok".to_owned(), acts.clone()),
        };
        let approvals = summary.awaiting_approval();
        let degraded = summary.degraded();
        let nodes_short = summary.nodes_ready < summary.nodes_total;
        let objects = summary.modules.total
            + summary.shims.total
            + summary.caches.total
            + summary.day0s.total;
        let nobody_acts = cluster.data.engine_holder(now).is_none() && cluster.upstream.is_empty();
        let attention = match &cluster.reach {
            Reach::Unreachable(_) => Attention::Unreachable,
            _ if failure.is_some() || degraded > 0 => Attention::Degraded,
            _ if approvals > 0 => Attention::Approval,
            Reach::Connecting => Attention::Connecting,
            _ if !cluster.loaded() => Attention::Connecting,
            _ if summary.waiting() > 0 || nodes_short || (objects > 0 && nobody_acts) => {
                Attention::Waiting
            }
            _ => Attention::Fine,
        };
        FleetRow {
            context: context.to_owned(),
            current: context == current,
            state,
            version: match &cluster.reach {
                Reach::Reachable { version } => version.clone(),
                _ => "-".to_owned(),
            },
            nodes: if cluster.nodes_counted {
                format!("{}/{}", summary.nodes_ready, summary.nodes_total)
            } else {
                "-".to_owned()
            },
            nodes_short,
            summary,
            listed,
            approvals,
            degraded,
            detail,
            attention,
        }
    }

    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(needle, &[&self.context, &self.state, &self.detail])
    }
}

/// `engine: in cluster (pod x); shims: runtime-class-manager`, or `nobody acts`.
fn who_acts(cluster: &Cluster, own: Option<&str>, now: jiff::Timestamp) -> String {
    let mut parts = Vec::new();
    if let Some(holder) = cluster.data.engine_holder(now) {
        parts.push(format!("engine: {}", Place::of(holder, own).describe()));
    }
    for (family, upstream) in &cluster.upstream {
        parts.push(format!("{}: {}", family_label(*family), upstream.operator));
    }
    if parts.is_empty() {
        "nobody acts".to_owned()
    } else {
        parts.join("; ")
    }
}

/// Every cluster's row, those that need a person first, then by context name.
pub fn rows(
    fleet: &Fleet,
    current: &str,
    own: Option<&str>,
    now: jiff::Timestamp,
) -> Vec<FleetRow> {
    let mut rows: Vec<FleetRow> = fleet
        .members
        .iter()
        .map(|(context, cluster)| FleetRow::of(context, cluster, current, own, now))
        .collect();
    rows.sort_by(|a, b| (a.attention, &a.context).cmp(&(b.attention, &b.context)));
    rows
}
