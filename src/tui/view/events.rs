//! Rows of the Events pane and of a Module's recent events.

use k8s_openapi::api::events::v1::Event;

use crate::tui::data::{ClusterData, event_time};

use super::{Health, age, matches_filter};

/// One event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRow {
    /// How long ago it last happened.
    pub age: String,
    /// `Normal` or `Warning`.
    pub type_: String,
    /// The reason (`ModuleLoaded`, `BuildFailed`).
    pub reason: String,
    /// The object it is about, as `Kind namespace/name`.
    pub object: String,
    /// What happened.
    pub note: String,
    /// How many times it happened.
    pub count: i32,
    /// Warning or not.
    pub health: Health,
}

impl EventRow {
    /// The row of one event.
    pub fn of(event: &Event, now: jiff::Timestamp) -> EventRow {
        let regarding = event.regarding.as_ref();
        let object = regarding.map_or_else(String::new, |r| {
            let kind = r.kind.as_deref().unwrap_or_default();
            let name = r.name.as_deref().unwrap_or_default();
            match r.namespace.as_deref() {
                Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
                _ => format!("{kind} {name}"),
            }
        });
        let type_ = event.type_.clone().unwrap_or_else(|| "Normal".to_owned());
        EventRow {
            age: age(event_time(event), now),
            health: if type_ == "Warning" {
                Health::Warning
            } else {
                Health::Ok
            },
            type_,
            reason: event.reason.clone().unwrap_or_default(),
            object,
            note: event.note.clone().unwrap_or_default().replace('\n', " "),
            count: event
                .series
                .as_ref()
                .map_or(event.deprecated_count.unwrap_or(1), |s| s.count),
        }
    }

    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[&self.type_, &self.reason, &self.object, &self.note],
        )
    }
}

/// Every event, newest first.
pub fn rows(data: &ClusterData, now: jiff::Timestamp) -> Vec<EventRow> {
    data.events
        .iter()
        .map(|event| EventRow::of(event, now))
        .collect()
}

/// The events about one object, newest first, at most `limit`.
pub fn rows_about(
    data: &ClusterData,
    kind: &str,
    namespace: &str,
    name: &str,
    now: jiff::Timestamp,
    limit: usize,
) -> Vec<EventRow> {
    data.events
        .iter()
        .filter(|event| {
            event.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some(kind)
                    && r.name.as_deref() == Some(name)
                    && r.namespace.as_deref().unwrap_or_default() == namespace
            })
        })
        .take(limit)
        .map(|event| EventRow::of(event, now))
        .collect()
}
