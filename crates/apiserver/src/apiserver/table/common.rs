//! The Name and Age columns every printer family shares.

use serde_json::Value;

use super::column::{CellSource, Column, ColumnType};
use super::read::{age, text, timestamp};

pub(super) const NAME_DESCRIPTION: &str = "The name of the object, unique within its namespace.";
pub(super) const AGE_DESCRIPTION: &str = "How long ago the object was created.";

pub(super) fn name_column() -> Column {
    Column {
        name: "Name".to_owned(),
        column_type: ColumnType::String,
        format: "name".to_owned(),
        description: NAME_DESCRIPTION.to_owned(),
        priority: 0,
        cell: CellSource::Computed(|object, _| {
            Value::String(text(object, &["metadata", "name"]).to_owned())
        }),
    }
}

pub(super) fn age_column() -> Column {
    Column::computed("Age", ColumnType::String, 0, AGE_DESCRIPTION, |o, now| {
        Value::String(age(timestamp(o, &["metadata", "creationTimestamp"]), now))
    })
}
