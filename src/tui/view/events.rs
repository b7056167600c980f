//! Rows of the Events pane and of a Module's recent events.

use std::collections::HashSet;

use k8s_openapi::api::events::v1::Event;

use crate::tui::data::{ClusterData, event_time};
use kmm_api::kmm::labels;
use kmm_engine::runtime::object_names;

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

/// The events about a Module and the work done for it, newest first, at most `limit`: events regarding the Module,
/// its ModuleImagesConfig and ModuleBuildSignConfig (same namespace and name), its pull, build, sign and worker pods
/// (including pods already gone), and node events that name it (`Module ns/name loaded into the kernel`). The engine
/// reports on those objects rather than on the Module itself, so a Module's own events alone are mostly empty.
pub fn rows_about_module(
    data: &ClusterData,
    namespace: &str,
    name: &str,
    now: jiff::Timestamp,
    limit: usize,
) -> Vec<EventRow> {
    let pods: HashSet<&str> = data
        .pods
        .iter()
        .filter(|pod| pod.metadata.namespace.as_deref() == Some(namespace))
        .filter(|pod| {
            pod.metadata.labels.as_ref().is_some_and(|l| {
                l.get(labels::MODULE_NAME).map(String::as_str) == Some(name)
                    || l.get(labels::IMAGE_OWNER).map(String::as_str) == Some(name)
            })
        })
        .filter_map(|pod| pod.metadata.name.as_deref())
        .collect();
    let pod_prefixes = [
        object_names::pull_pod_generate_name(name),
        object_names::build_pod_name(name, ""),
        object_names::sign_pod_name(name, ""),
    ];
    let worker_suffix = format!("-{name}");
    let mention = format!("Module {namespace}/{name} ");
    data.events
        .iter()
        .filter(|event| {
            let Some(regarding) = event.regarding.as_ref() else {
                return false;
            };
            let object = regarding.name.as_deref().unwrap_or_default();
            let same_namespace = regarding.namespace.as_deref().unwrap_or_default() == namespace;
            match regarding.kind.as_deref().unwrap_or_default() {
                "Module" | "ModuleImagesConfig" | "ModuleBuildSignConfig" => {
                    same_namespace && object == name
                }
                "Pod" => {
                    same_namespace
                        && (pods.contains(object)
                            || pod_prefixes.iter().any(|p| object.starts_with(p.as_str()))
                            || (object.starts_with("kmm-worker-")
                                && object.ends_with(&worker_suffix)))
                }
                "Node" | "NodeModulesConfig" => event
                    .note
                    .as_deref()
                    .is_some_and(|note| note.contains(&mention)),
                _ => false,
            }
        })
        .take(limit)
        .map(|event| EventRow::of(event, now))
        .collect()
}
