//! The `resource.k8s.io` printers: a claim's state in one word or a few (`pending`, `allocated,reserved`), and
//! the node, driver and pool of a slice.

use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::age_column;
use super::read::{array, get, or_none, str_cell, text};

/// `kubectl get resourceclaims`: state and age.
pub(super) fn claim_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "State",
            ColumnType::String,
            0,
            "A summary of the current state (allocated, pending, reserved, etc.).",
            |o, _| Value::String(claim_state(o)),
        ),
        age_column(),
    ]
}

/// `kubectl get resourceslices`: the node the devices are on (if one), the driver and the pool.
pub(super) fn slice_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Node",
            ColumnType::String,
            0,
            "The node providing the resources, if the slice is for one node.",
            |o, _| or_none(text(o, &["spec", "nodeName"])),
        ),
        Column::computed(
            "Driver",
            ColumnType::String,
            0,
            "The driver providing the resources.",
            |o, _| str_cell(o, &["spec", "driver"]),
        ),
        Column::computed(
            "Pool",
            ColumnType::String,
            0,
            "The pool the slice belongs to.",
            |o, _| str_cell(o, &["spec", "pool", "name"]),
        ),
        age_column(),
    ]
}

/// What a claim is going through: `deleted` while it is being deleted, then `pending` until it is allocated, then
/// `allocated` with `reserved` while pods use it (or `deallocating` when none does and it is being deleted).
fn claim_state(claim: &Value) -> String {
    let deleted = get(claim, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null());
    let allocated = get(claim, &["status", "allocation"]).is_some_and(|a| !a.is_null());
    let reserved = !array(claim, &["status", "reservedFor"]).is_empty();
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    match (allocated, reserved, deleted) {
        (false, _, false) => states.push("pending"),
        (false, _, true) => {}
        (true, true, _) => states.extend(["allocated", "reserved"]),
        (true, false, true) => states.extend(["allocated", "deallocating"]),
        (true, false, false) => states.push("allocated"),
    }
    states.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claim_state_reads_as_kubectl_prints_it() {
        let allocation = json!({"devices": {"results": []}});
        let reserved = json!([{"resource": "pods", "name": "p", "uid": "u"}]);
        for (claim, state) in [
            (json!({}), "pending"),
            (json!({"status": {"allocation": allocation}}), "allocated"),
            (
                json!({"status": {"allocation": allocation, "reservedFor": reserved}}),
                "allocated,reserved",
            ),
            (
                json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
                "deleted",
            ),
            (
                json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
                    "status": {"allocation": allocation}}),
                "deleted,allocated,deallocating",
            ),
        ] {
            assert_eq!(claim_state(&claim), state, "{claim}");
        }
    }
}
