//! The event printer, reading `v1` and `events.k8s.io/v1` Events through one accessor.

use jiff::Timestamp;
use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::name_column;
use super::read::{age, get, int, str_cell, text};

/// Events are shown newest-information first, with Name as a wide column rather than the first one.
pub(super) fn event_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Last Seen",
            ColumnType::String,
            0,
            "How long ago the event was last observed.",
            |o, now| Value::String(age(EventView(o).last_seen(), now)),
        ),
        Column::computed(
            "Type",
            ColumnType::String,
            0,
            "Normal or Warning.",
            |o, _| str_cell(o, &["type"]),
        ),
        Column::computed(
            "Reason",
            ColumnType::String,
            0,
            "Why the event was emitted, in CamelCase.",
            |o, _| str_cell(o, &["reason"]),
        ),
        Column::computed(
            "Object",
            ColumnType::String,
            0,
            "The object the event is about.",
            |o, _| {
                let involved = EventView(o).involved_object();
                let kind = text(involved, &["kind"]).to_lowercase();
                let name = text(involved, &["name"]);
                Value::String(if name.is_empty() {
                    kind
                } else {
                    format!("{kind}/{name}")
                })
            },
        ),
        Column::computed(
            "Subobject",
            ColumnType::String,
            1,
            "The part of the object the event is about.",
            |o, _| str_cell(EventView(o).involved_object(), &["fieldPath"]),
        ),
        Column::computed(
            "Source",
            ColumnType::String,
            1,
            "The component, and instance, that emitted the event.",
            |o, _| Value::String(EventView(o).source()),
        ),
        Column::computed(
            "Message",
            ColumnType::String,
            0,
            "A human-readable description of the event.",
            |o, _| Value::String(EventView(o).message().trim().to_owned()),
        ),
        Column::computed(
            "First Seen",
            ColumnType::String,
            1,
            "How long ago the event was first observed.",
            |o, now| Value::String(age(EventView(o).first_seen(), now)),
        ),
        Column::computed(
            "Count",
            ColumnType::Integer,
            1,
            "How many times the event was observed.",
            |o, _| Value::from(EventView(o).count()),
        ),
        Column {
            priority: 1,
            ..name_column()
        },
    ]
}

/// Reads a `v1` or `events.k8s.io/v1` Event through the same accessors, as both are listed as events.
struct EventView<'a>(&'a Value);

impl<'a> EventView<'a> {
    fn first_of(&self, paths: &[&[&str]]) -> Option<&'a Value> {
        paths
            .iter()
            .find_map(|path| get(self.0, path).filter(|v| !v.is_null()))
    }

    fn time_of(&self, paths: &[&[&str]]) -> Option<Timestamp> {
        self.first_of(paths)
            .and_then(Value::as_str)
            .and_then(|t| t.parse().ok())
    }

    fn involved_object(&self) -> &'a Value {
        self.first_of(&[&["involvedObject"], &["regarding"]])
            .unwrap_or(&Value::Null)
    }

    fn message(&self) -> &'a str {
        self.first_of(&[&["message"], &["note"]])
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    fn first_seen(&self) -> Option<Timestamp> {
        self.time_of(&[&["firstTimestamp"], &["deprecatedFirstTimestamp"]])
            .or_else(|| self.time_of(&[&["eventTime"]]))
    }

    fn last_seen(&self) -> Option<Timestamp> {
        if self.first_of(&[&["series"]]).is_some() {
            return self.time_of(&[&["series", "lastObservedTime"]]);
        }
        self.time_of(&[&["lastTimestamp"], &["deprecatedLastTimestamp"]])
            .or_else(|| self.first_seen())
    }

    fn count(&self) -> i64 {
        if self.first_of(&[&["series"]]).is_some() {
            return int(self.0, &["series", "count"]);
        }
        match self
            .first_of(&[&["count"], &["deprecatedCount"]])
            .and_then(Value::as_i64)
        {
            Some(count) if count != 0 => count,
            _ => 1,
        }
    }

    /// `component, host`, from the legacy source or the reporting controller and instance.
    fn source(&self) -> String {
        let pick = |paths: &[&[&str]]| {
            paths
                .iter()
                .map(|path| text(self.0, path))
                .find(|s| !s.is_empty())
                .unwrap_or_default()
        };
        let component = pick(&[
            &["source", "component"],
            &["deprecatedSource", "component"],
            &["reportingComponent"],
            &["reportingController"],
        ]);
        let instance = pick(&[
            &["source", "host"],
            &["deprecatedSource", "host"],
            &["reportingInstance"],
        ]);
        if instance.is_empty() {
            component.to_owned()
        } else {
            format!("{component}, {instance}")
        }
    }
}
