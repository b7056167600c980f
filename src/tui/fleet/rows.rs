//! Rows of the fleet view: one per cluster, with whether it answers (and why not), its version, its nodes, the
//! header's counts of Modules, Shims, ImageCaches and ModuleDay0s, the rollouts awaiting approval, the degraded
//! objects and who acts. Sorted so the clusters that need a person come first, then by name.

use super::reach::Reach;
use super::state::{Cluster, Fleet};
use crate::tui::view::engine::{Place, family_label};
use crate::tui::view::summary::Summary;
use crate::tui::view::{age, matches_filter};

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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::tui::data::{FeedState, Kind, KindSnapshot};
    use crate::tui::fleet::reach::Why;
    use crate::tui::fleet::state::FleetChange;

    fn at(second: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000 + second).expect("a time")
    }

    /// A reachable cluster with every counted kind listed empty and `ready` of `total` nodes.
    fn listed(fleet: &mut Fleet, context: &str, ready: usize, total: usize) {
        let changes = [
            FleetChange::Reach(Reach::Reachable {
                version: "v1.31.0".to_owned(),
            }),
            FleetChange::Data(KindSnapshot::Modules(Vec::new())),
            FleetChange::Data(KindSnapshot::Shims(Vec::new())),
            FleetChange::Data(KindSnapshot::ImageCaches(Vec::new())),
            FleetChange::Data(KindSnapshot::ModuleDay0s(Vec::new())),
            FleetChange::Data(KindSnapshot::MachineConfigPools(Vec::new())),
            FleetChange::Data(KindSnapshot::MachineConfigs(Vec::new())),
            FleetChange::Nodes { ready, total },
        ];
        for change in changes {
            fleet.apply(context, change, at(0));
        }
    }

    fn row<'a>(rows: &'a [FleetRow], context: &str) -> &'a FleetRow {
        rows.iter()
            .find(|row| row.context == context)
            .expect("a row")
    }

    #[test]
    fn a_cluster_is_loading_until_every_kind_is_listed_and_its_nodes_counted() {
        let mut fleet = Fleet::default();
        fleet.add(&["a".to_owned()], at(0));
        let first = rows(&fleet, "a", None, at(0));
        assert_eq!(
            (first[0].state.as_str(), first[0].attention),
            ("connecting", Attention::Connecting)
        );
        fleet.apply(
            "a",
            FleetChange::Reach(Reach::Reachable {
                version: "v1.31.0".to_owned(),
            }),
            at(0),
        );
        assert_eq!(rows_of(&fleet)[0].state, "loading");
        listed(&mut fleet, "a", 3, 3);
        let rows = rows_of(&fleet);
        assert_eq!(
            (rows[0].state.as_str(), rows[0].attention),
            ("ok", Attention::Fine)
        );
        assert_eq!(rows[0].nodes, "3/3");
        assert!(rows[0].current);
    }

    fn rows_of(fleet: &Fleet) -> Vec<FleetRow> {
        rows(fleet, "a", None, at(0))
    }

    #[test]
    fn nodes_not_ready_and_objects_nobody_acts_on_wait_for_a_person() {
        let mut fleet = Fleet::default();
        listed(&mut fleet, "a", 3, 3);
        listed(&mut fleet, "short", 2, 3);
        listed(&mut fleet, "idle", 1, 1);
        let module = serde_json::from_value(serde_json::json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": "m", "namespace": "ns"},
            "spec": {"selector": {}, "moduleLoader": {"container": {
                "modprobe": {"moduleName": "m"}, "kernelMappings": []}}}
        }))
        .expect("a Module");
        fleet.apply(
            "idle",
            FleetChange::Data(KindSnapshot::Modules(vec![Arc::new(module)])),
            at(0),
        );
        let rows = rows_of(&fleet);
        assert_eq!(row(&rows, "short").attention, Attention::Waiting);
        assert!(row(&rows, "short").nodes_short);
        assert_eq!(row(&rows, "idle").attention, Attention::Waiting);
        assert_eq!(row(&rows, "idle").detail, "nobody acts");
        assert_eq!(row(&rows, "a").attention, Attention::Fine);
        assert_eq!(rows.last().map(|r| r.context.as_str()), Some("a"));
    }

    #[test]
    fn a_refused_list_is_a_failing_watch_and_an_outage_keeps_its_start() {
        let mut fleet = Fleet::default();
        listed(&mut fleet, "a", 1, 1);
        fleet.apply(
            "a",
            FleetChange::Feed(
                Kind::Shim,
                FeedState::Failing(Why {
                    word: "forbidden",
                    detail: "forbidden: shims is forbidden".to_owned(),
                }),
            ),
            at(0),
        );
        let failing = rows_of(&fleet);
        assert_eq!(failing[0].state, "watch failing");
        assert_eq!(failing[0].attention, Attention::Degraded);
        assert_eq!(
            failing[0].detail,
            "Shim watch failing: forbidden: shims is forbidden"
        );
        let refused = || {
            FleetChange::Reach(Reach::Unreachable(Why {
                word: "refused",
                detail: "connection refused at 10.0.0.1:6443".to_owned(),
            }))
        };
        fleet.apply("a", refused(), at(10));
        fleet.apply("a", refused(), at(70));
        let later = rows(&fleet, "a", None, at(130));
        assert_eq!(later[0].state, "refused");
        assert_eq!(later[0].attention, Attention::Unreachable);
        assert_eq!(
            later[0].detail,
            "connection refused at 10.0.0.1:6443 (for 2m)"
        );
    }
}
