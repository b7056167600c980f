//! No engine writes outside its term.
//!
//! The Lease's revisions say who held it when: the holder at any resourceVersion is the holder of the last Lease
//! revision before it (resourceVersions are one sequence over every object). The objects say who wrote them: a
//! write through an engine's fenced client is recorded under the field manager `kmm-tui-engine@<identity>`, so a
//! revision in which that manager's managedFields entry is new or newly stamped was written by that engine, and an
//! Event names its engine as `reportingInstance`. A revision seen on a watch is the write itself; an object seen
//! first in a relist was written somewhere between the last revision its watch saw and the revision listed, and
//! counts as in term when its engine held the Lease at any point of that span.
//!
//! A write is judged once the Lease watch has seen every Lease revision before it. Where the Lease watch itself
//! had to relist and a term may have come and gone unseen, the writes in that span are counted as unjudged rather
//! than guessed at.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::Violations;

/// The field manager prefix of engine writes (see `kmm_engine::runtime::leader::fence::field_manager`).
const MANAGER_PREFIX: &str = "kmm-tui-engine@";

/// The reporting controller of the engine's Events.
const REPORTING_CONTROLLER: &str = "kmm-tui-engine";

/// A revision of an object an engine wrote.
#[derive(Debug)]
struct Write {
    what: String,
    revision: u64,
    /// The write happened after this revision (the previous one its watch saw).
    after: u64,
    writer: String,
}

/// The Lease's terms and the engine writes waiting to be judged against them.
#[derive(Default)]
pub(super) struct Fencing {
    /// The Lease revisions at which its holder changed, with the new holder (none when released).
    holders: BTreeMap<u64, Option<String>>,
    /// The newest Lease revision seen, and its `leaseTransitions`.
    lease_seen: Option<(u64, i32)>,
    /// Spans of revisions in which the Lease watch may have missed a term.
    blind: Vec<(u64, u64)>,
    /// The managedFields entries of engines on each object (by uid): (manager, operation, subresource) → time.
    entries: HashMap<String, HashMap<(String, String, String), String>>,
    pending: Vec<Write>,
    /// Writes judged, by engine.
    pub judged: BTreeMap<String, u64>,
    /// Writes that fell where the Lease history is incomplete.
    pub unjudged: u64,
    /// Changes of holder seen.
    pub handovers: u64,
}

impl Fencing {
    /// A revision of the Lease. `relisted`: it came from a relist, so revisions before it may have been missed.
    pub(super) fn lease(
        &mut self,
        revision: u64,
        holder: Option<String>,
        transitions: i32,
        relisted: bool,
    ) {
        if let Some((seen, seen_transitions)) = self.lease_seen {
            if revision <= seen {
                return;
            }
            // Every new term counts one transition: a relist that finds the count moved may have skipped a term.
            if relisted && transitions != seen_transitions {
                self.blind.push((seen, revision));
            }
        }
        let current = self.holders.values().next_back().cloned().flatten();
        if self.holders.is_empty() || current != holder {
            if !self.holders.is_empty() {
                self.handovers += 1;
            }
            self.holders.insert(revision, holder);
        }
        self.lease_seen = Some((revision, transitions));
    }

    /// A revision of an object: record the engine writes it shows. `after`: the revision after which it was written
    /// (the one before it on a watch, the last one seen before a relist).
    pub(super) fn object(&mut self, kind: &str, meta: &ObjectMeta, revision: u64, after: u64) {
        let Some(uid) = meta.uid.clone() else {
            return;
        };
        let what = describe(kind, meta);
        let now: HashMap<(String, String, String), String> = meta
            .managed_fields
            .iter()
            .flatten()
            .filter(|entry| {
                entry
                    .manager
                    .as_deref()
                    .is_some_and(|m| m.starts_with(MANAGER_PREFIX))
            })
            .map(|entry| {
                (
                    (
                        entry.manager.clone().unwrap_or_default(),
                        entry.operation.clone().unwrap_or_default(),
                        entry.subresource.clone().unwrap_or_default(),
                    ),
                    entry
                        .time
                        .as_ref()
                        .map(|t| t.0.to_string())
                        .unwrap_or_default(),
                )
            })
            .collect();
        let before = self.entries.get(&uid);
        for (key, time) in &now {
            if before.and_then(|b| b.get(key)) == Some(time) {
                continue;
            }
            let writer = key.0.trim_start_matches(MANAGER_PREFIX).to_owned();
            self.pending.push(Write {
                what: what.clone(),
                revision,
                after,
                writer,
            });
        }
        if now.is_empty() {
            self.entries.remove(&uid);
        } else {
            self.entries.insert(uid, now);
        }
    }

    /// A revision of an Event: one of the engine's was written by the engine it names.
    pub(super) fn event(
        &mut self,
        meta: &ObjectMeta,
        body: &serde_json::Value,
        revision: u64,
        after: u64,
    ) {
        if body.get("reportingController").and_then(|c| c.as_str()) != Some(REPORTING_CONTROLLER) {
            return;
        }
        let Some(writer) = body.get("reportingInstance").and_then(|i| i.as_str()) else {
            return;
        };
        self.pending.push(Write {
            what: describe("Event", meta),
            revision,
            after,
            writer: writer.to_owned(),
        });
    }

    /// An object is gone: forget its entries.
    pub(super) fn forget(&mut self, meta: &ObjectMeta) {
        if let Some(uid) = &meta.uid {
            self.entries.remove(uid);
        }
    }

    /// Judge the writes the Lease history now covers (all of them with `all`, once the Lease watch has seen the
    /// last revision there will be).
    pub(super) fn judge(&mut self, all: bool, violations: &mut Violations) {
        let Some((seen, _)) = self.lease_seen else {
            return;
        };
        let pending = std::mem::take(&mut self.pending);
        for write in pending {
            if !all && write.revision > seen + 1 {
                self.pending.push(write);
                continue;
            }
            if self
                .blind
                .iter()
                .any(|(from, to)| write.after < *to && *from < write.revision)
            {
                self.unjudged += 1;
                continue;
            }
            *self.judged.entry(write.writer.clone()).or_default() += 1;
            let holders = self.holders_between(write.after, write.revision);
            if !holders
                .iter()
                .any(|h| h.as_deref() == Some(write.writer.as_str()))
            {
                let held: Vec<String> = holders
                    .iter()
                    .map(|h| h.clone().unwrap_or_else(|| "nobody".to_owned()))
                    .collect();
                violations.record(
                    "write outside the writer's term",
                    format!(
                        "{} at revision {} (written after {}) by {} while the Lease was held by {}",
                        write.what,
                        write.revision,
                        write.after,
                        write.writer,
                        held.join(", then ")
                    ),
                );
            }
        }
    }

    /// Who held the Lease at some revision in `(after, revision]`: the holder of the last Lease revision at or
    /// before `after`, and of every Lease revision in between.
    fn holders_between(&self, after: u64, revision: u64) -> Vec<Option<String>> {
        let mut holders: Vec<Option<String>> = self
            .holders
            .range(..=after)
            .next_back()
            .map(|(_, h)| h.clone())
            .into_iter()
            .collect();
        if holders.is_empty() {
            holders.push(None);
        }
        holders.extend(
            self.holders
                .range(after + 1..revision)
                .map(|(_, h)| h.clone()),
        );
        holders
    }

    /// The newest Lease revision seen.
    pub(super) fn seen(&self) -> u64 {
        self.lease_seen.map_or(0, |(revision, _)| revision)
    }
}

fn describe(kind: &str, meta: &ObjectMeta) -> String {
    match &meta.namespace {
        Some(namespace) => format!(
            "{kind} {namespace}/{}",
            meta.name.as_deref().unwrap_or_default()
        ),
        None => format!("{kind} {}", meta.name.as_deref().unwrap_or_default()),
    }
}
