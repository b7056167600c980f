//! Server-side `meta.k8s.io/v1` Table responses.
//!
//! `kubectl get` does not format objects itself: it asks the server for a Table
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) and prints the columns it receives. So the
//! embedded API server has to know, per resource, which columns exist and how each cell is computed:
//! custom resources use the printer columns of their CRD version, built-in resources the columns a real
//! cluster shows, and everything else falls back to Name and Age.

mod autoscaling;
mod builtin;
mod certificates;
mod column;
mod common;
mod custom;
mod events;
mod networking;
mod nodes;
mod pods;
mod read;
mod resource;
mod services;
mod storage;
mod workloads;

use jiff::Timestamp;
use serde_json::{Value, json};

pub(crate) use builtin::builtin_columns;
pub(crate) use column::{Column, IncludeObject};
pub(crate) use custom::crd_columns;

/// Builds the Table for `objects`. `include_object` is the `includeObject` option (validate it with
/// [`IncludeObject::parse`] first; anything unknown is treated as the default), `list_metadata` becomes
/// the table's metadata (resourceVersion, continue, ...), and `now` is what ages are measured from.
pub(crate) fn to_table(
    columns: &[Column],
    objects: &[&Value],
    include_object: &str,
    list_metadata: Value,
    now: Timestamp,
) -> Value {
    let include_object = IncludeObject::parse(include_object).unwrap_or_default();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let cells: Vec<Value> = columns.iter().map(|c| c.cell(object, now)).collect();
            json!({"cells": cells, "object": include_object.row_object(object)})
        })
        .collect();
    let metadata = if list_metadata.is_null() {
        json!({})
    } else {
        list_metadata
    };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns.iter().map(Column::definition).collect::<Vec<_>>(),
        "rows": rows,
    })
}

#[cfg(test)]
mod tests;
