//! The `:engine` view model: who holds the engine Lease and where that engine runs, since when, the last renewal,
//! the candidates seen, a hand-off in progress, who acts on each family (kmm-tui or an upstream operator), and what
//! the acting engine did lately, read from the activity it publishes on the Lease (see
//! [`kmm_engine::runtime::metrics::activity`]) — so it shows wherever that engine runs.

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::Lease;

use kmm_api::lease::{ANYONE, HANDOFF_ANNOTATION};
use kmm_engine::Family;
use kmm_engine::runtime::metrics::activity::Activity;
use kmm_engine::runtime::operators::Upstream;

use super::age;

/// Prefix of the identities consoles hold the engine Lease under.
pub const CONSOLE_PREFIX: &str = "kmm-tui-console-";

/// The identity `kmm-tui serve --with-engine` holds the Lease under.
const EMBEDDED_IDENTITY: &str = "embedded";

/// Where an engine runs, judged from its identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// This console's foreground engine.
    ThisConsole,
    /// The foreground engine of another console.
    AnotherConsole(String),
    /// The engine of `kmm-tui serve --with-engine`, beside the cluster.
    Embedded,
    /// A controller in the cluster; its identity is the pod's name.
    Pod(String),
}

impl Place {
    /// Where `identity` runs, `own` being this console's identity.
    pub fn of(identity: &str, own: Option<&str>) -> Place {
        if Some(identity) == own {
            Place::ThisConsole
        } else if identity.starts_with(CONSOLE_PREFIX) {
            Place::AnotherConsole(identity.to_owned())
        } else if identity == EMBEDDED_IDENTITY {
            Place::Embedded
        } else {
            Place::Pod(identity.to_owned())
        }
    }

    /// The place in a few words: `this console`, `in cluster (pod x)`.
    pub fn describe(&self) -> String {
        match self {
            Place::ThisConsole => "this console".to_owned(),
            Place::AnotherConsole(identity) => format!("another console ({identity})"),
            Place::Embedded => "beside the embedded cluster (kmm-tui serve)".to_owned(),
            Place::Pod(pod) => format!("in cluster (pod {pod})"),
        }
    }
}

/// One identity seen holding the Lease or asked for, and when last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CandidateRow {
    /// The identity.
    pub identity: String,
    /// Where it runs.
    pub place: String,
    /// Whether it holds the Lease now.
    pub holds: bool,
    /// How long ago it was last seen (`12s`).
    pub seen: String,
}

/// Who acts on one family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyRow {
    /// The family's name.
    pub family: &'static str,
    /// Who acts: `kmm-tui in cluster (pod x)`, `upstream KMM operator (Lease …)`, `nobody`.
    pub acts: String,
}

/// What the acting engine did lately for one family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActivityRow {
    /// The family's name.
    pub family: &'static str,
    /// Passes that ended in the last minute.
    pub per_minute: String,
    /// Passes that failed over the window.
    pub errors: String,
    /// Objects waiting for a pass.
    pub waiting: String,
    /// How long the object waiting longest has waited (`-` when none waits).
    pub oldest: String,
}

/// What the acting engine did lately.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActivityView {
    /// What the counts cover: `last 5m`, `last 40s`.
    pub window: String,
    /// One row per family the engine runs.
    pub rows: Vec<ActivityRow>,
    /// The engine holds the Lease yet finished no pass over the whole window while objects wait.
    pub stalled: Option<String>,
}

/// Everything the `:engine` view shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineView {
    /// The holder's identity, or `none`.
    pub holder: String,
    /// Where the holder runs.
    pub place: String,
    /// When the holder acquired the Lease, with its age.
    pub since: String,
    /// When the Lease was last renewed, with its age.
    pub renewed: String,
    /// How many times the Lease changed hands.
    pub transitions: String,
    /// The lease duration.
    pub duration: String,
    /// A hand-off request waiting on the Lease.
    pub request: Option<String>,
    /// What this console's engine does.
    pub this_console: String,
    /// A notice about a hand-off nobody answered.
    pub notice: Option<String>,
    /// The identities seen.
    pub candidates: Vec<CandidateRow>,
    /// Who acts on each family.
    pub families: Vec<FamilyRow>,
    /// What the holder did lately, when it publishes that.
    pub activity: Option<ActivityView>,
}

/// What the view model is made from: the console's engine state and the cluster's.
pub struct EngineFacts<'a> {
    /// The engine Lease.
    pub lease: Option<&'a Lease>,
    /// Its holder, if held and not expired.
    pub holder: Option<&'a str>,
    /// This console's engine identity.
    pub own: Option<&'a str>,
    /// What this console's engine does, in words.
    pub this_console: String,
    /// A hand-off nobody answered.
    pub notice: Option<String>,
    /// Identities seen, with when last.
    pub seen: &'a BTreeMap<String, jiff::Timestamp>,
    /// Families an upstream operator acts on.
    pub upstream: &'a BTreeMap<Family, Upstream>,
    /// The time ages are measured from.
    pub now: jiff::Timestamp,
}

/// Build the view.
pub fn engine_view(facts: &EngineFacts<'_>) -> EngineView {
    let spec = facts.lease.and_then(|lease| lease.spec.as_ref());
    let stamp = |time: Option<jiff::Timestamp>| match time {
        Some(time) => format!(
            "{} ({} ago)",
            time.strftime("%Y-%m-%d %H:%M:%S UTC"),
            age(Some(time), facts.now)
        ),
        None => "-".to_owned(),
    };
    let place = facts.holder.map(|holder| Place::of(holder, facts.own));
    let request = facts
        .lease
        .and_then(|lease| lease.metadata.annotations.as_ref())
        .and_then(|annotations| annotations.get(HANDOFF_ANNOTATION))
        .filter(|target| !target.trim().is_empty())
        .map(|target| match target.as_str() {
            ANYONE => "the holder is asked to release the Lease to anyone".to_owned(),
            target => format!("the holder is asked to hand the Lease to {target}"),
        });
    let candidates = facts
        .seen
        .iter()
        .map(|(identity, seen)| CandidateRow {
            identity: identity.clone(),
            place: Place::of(identity, facts.own).describe(),
            holds: facts.holder == Some(identity.as_str()),
            seen: age(Some(*seen), facts.now),
        })
        .collect();
    let families = Family::ALL
        .iter()
        .map(|family| FamilyRow {
            family: family_label(*family),
            acts: match (facts.upstream.get(family), &place) {
                (Some(upstream), _) => format!("{} ({})", upstream.operator, upstream.evidence),
                (None, Some(place)) => format!("kmm-tui {}", place.describe()),
                (None, None) => "nobody".to_owned(),
            },
        })
        .collect();
    EngineView {
        holder: facts.holder.unwrap_or("none").to_owned(),
        place: place.map_or_else(|| "-".to_owned(), |p| p.describe()),
        since: stamp(spec.and_then(|s| s.acquire_time.as_ref()).map(|t| t.0)),
        renewed: stamp(spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0)),
        transitions: spec
            .and_then(|s| s.lease_transitions)
            .map_or_else(|| "-".to_owned(), |n| n.to_string()),
        duration: spec
            .and_then(|s| s.lease_duration_seconds)
            .map_or_else(|| "-".to_owned(), |n| format!("{n}s")),
        request,
        this_console: facts.this_console.clone(),
        notice: facts.notice.clone(),
        candidates,
        families,
        activity: facts
            .holder
            .and(facts.lease)
            .and_then(Activity::of)
            .map(|activity| activity_view(&activity)),
    }
}

/// The rows of `activity`, in the order the engine starts its families.
fn activity_view(activity: &Activity) -> ActivityView {
    let rows = Family::ALL
        .iter()
        .filter_map(|family| {
            let counts = activity.families.get(family.as_str())?;
            Some(ActivityRow {
                family: family_label(*family),
                per_minute: counts.last_minute.to_string(),
                errors: counts.errors.to_string(),
                waiting: counts.waiting.to_string(),
                oldest: if counts.waiting == 0 {
                    "-".to_owned()
                } else {
                    seconds(counts.oldest_waiting_seconds)
                },
            })
        })
        .collect();
    let stalled = activity.stalled().map(|waiting| {
        let objects = if waiting == 1 { "object" } else { "objects" };
        format!(
            "stalled: 0 reconciles in {}, {waiting} {objects} waiting",
            seconds(activity.window_seconds)
        )
    });
    ActivityView {
        window: format!("last {}", seconds(activity.window_seconds)),
        rows,
        stalled,
    }
}

/// `45s`, `5 min`, `2h`.
fn seconds(seconds: u64) -> String {
    match seconds {
        0..120 => format!("{seconds}s"),
        120..7200 => format!("{} min", seconds / 60),
        _ => format!("{}h", seconds / 3600),
    }
}

/// A family's name as people know it.
pub fn family_label(family: Family) -> &'static str {
    match family {
        Family::Kmm => "KMM",
        Family::Shims => "shims",
        Family::Caches => "caches",
        Family::Day0 => "day-0",
        Family::Hub => "hub",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_tell_where_an_engine_runs() {
        assert_eq!(Place::of("me", Some("me")), Place::ThisConsole);
        assert_eq!(
            Place::of("kmm-tui-console-42", Some("me")),
            Place::AnotherConsole("kmm-tui-console-42".to_owned())
        );
        assert_eq!(Place::of("embedded", None), Place::Embedded);
        assert_eq!(
            Place::of("kmm-tui-controller-7d9-x2", Some("me")).describe(),
            "in cluster (pod kmm-tui-controller-7d9-x2)"
        );
    }
}
