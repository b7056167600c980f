//! The printers of what the server reports about itself and its clients: CertificateSigningRequests (signer,
//! requester, the decision so far) and ComponentStatuses.

use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::age_column;
use super::read::{array, get, text};
use kmm_api::age::human_duration;

/// `kubectl get csr`: Age comes before the request's own columns there.
pub(super) fn signing_request_columns() -> Vec<Column> {
    vec![
        age_column(),
        Column::computed(
            "SignerName",
            ColumnType::String,
            0,
            "Who is asked to sign.",
            |o, _| Value::String(text(o, &["spec", "signerName"]).to_owned()),
        ),
        Column::computed("Requestor", ColumnType::String, 0, "Who asked.", |o, _| {
            Value::String(text(o, &["spec", "username"]).to_owned())
        }),
        Column::computed(
            "RequestedDuration",
            ColumnType::String,
            0,
            "The lifetime asked for.",
            |o, _| {
                let seconds = get(o, &["spec", "expirationSeconds"]).and_then(Value::as_i64);
                Value::String(seconds.map_or("<none>".to_owned(), |s| {
                    human_duration(jiff::SignedDuration::from_secs(s))
                }))
            },
        ),
        Column::computed(
            "Condition",
            ColumnType::String,
            0,
            "The decision and whether it was issued.",
            |o, _| Value::String(condition(o)),
        ),
    ]
}

/// `Pending`, `Approved`, `Denied`, with `Failed` and `Issued` after, comma-separated, as kubectl shows them.
fn condition(o: &Value) -> String {
    let mut shown: Vec<&str> = Vec::new();
    for kind in ["Approved", "Denied", "Failed"] {
        if array(o, &["status", "conditions"])
            .iter()
            .any(|c| text(c, &["type"]) == kind)
        {
            shown.push(kind);
        }
    }
    if !shown.contains(&"Approved") && !shown.contains(&"Denied") {
        shown.insert(0, "Pending");
    }
    if !text(o, &["status", "certificate"]).is_empty() {
        shown.push("Issued");
    }
    shown.join(",")
}

/// `kubectl get componentstatuses`: no age, as the statuses are reported, not stored.
pub(super) fn component_status_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Status",
            ColumnType::String,
            0,
            "Whether the component is healthy.",
            |o, _| {
                let healthy = health(o, "status") == "True";
                Value::String(if healthy { "Healthy" } else { "Unhealthy" }.to_owned())
            },
        ),
        Column::computed(
            "Message",
            ColumnType::String,
            0,
            "What the component said.",
            |o, _| Value::String(health(o, "message")),
        ),
        Column::computed(
            "Error",
            ColumnType::String,
            0,
            "What went wrong asking it.",
            |o, _| Value::String(health(o, "error")),
        ),
    ]
}

/// A field of the `Healthy` condition of a ComponentStatus.
fn health(o: &Value, field: &str) -> String {
    array(o, &["conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == "Healthy")
        .map(|c| text(c, &[field]).to_owned())
        .unwrap_or_default()
}
