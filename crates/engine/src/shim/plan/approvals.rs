//! Who approved a batch, and when, read from the Shim itself: `metadata.managedFields` names the field manager whose
//! write last set `spec.rolloutStrategy.rolling.approvedBatch` and the time of that write. The engine records it in
//! the `BatchApproved` Event and in `status.rollout.approvals`, so the rollout's history says who let each batch
//! start.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, Time};

use kmm_api::shim::{BatchApproval, Shim};

/// Who is named when no managed-fields entry owns `approvedBatch` (a cluster that does not track field owners).
const UNKNOWN: &str = "an unrecorded writer";

/// The approval of `batch` as the Shim records it now.
pub(super) fn approval(shim: &Shim, batch: usize) -> BatchApproval {
    let owner = shim
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| owns_approved_batch(entry))
        .max_by_key(|entry| entry.time.as_ref().map(|t| t.0));
    BatchApproval {
        batch: i32::try_from(batch).unwrap_or(i32::MAX),
        approved_by: owner
            .and_then(|entry| entry.manager.clone())
            .unwrap_or_else(|| UNKNOWN.to_owned()),
        approved_at: Some(
            owner
                .and_then(|entry| entry.time.clone())
                .unwrap_or_else(|| Time(jiff::Timestamp::now())),
        ),
    }
}

/// Whether a managed-fields entry owns `spec.rolloutStrategy.rolling.approvedBatch`.
fn owns_approved_batch(entry: &ManagedFieldsEntry) -> bool {
    entry
        .fields_v1
        .as_ref()
        .and_then(|fields| {
            fields
                .0
                .pointer("/f:spec/f:rolloutStrategy/f:rolling/f:approvedBatch")
        })
        .is_some()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn shim(managed: serde_json::Value) -> Shim {
        serde_json::from_value(json!({
            "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
            "metadata": {"name": "spin", "managedFields": managed},
            "spec": {"fetchStrategy": {"anonHttp": {"location": "https://example.com/s.tar.gz"}},
                "runtimeClass": {"name": "spin", "handler": "spin"},
                "rolloutStrategy": {"type": "rolling", "rolling": {"maxUpdate": 1, "approval": "Manual", "approvedBatch": 3}}},
        }))
        .expect("a Shim")
    }

    #[test]
    fn the_latest_writer_of_approved_batch_approved() {
        let owns = json!({"f:spec": {"f:rolloutStrategy": {"f:rolling": {"f:approvedBatch": {}}}}});
        let approval = approval(
            &shim(json!([
                {"manager": "kubectl-create", "operation": "Update", "time": "2026-01-01T00:00:00Z",
                    "fieldsType": "FieldsV1", "fieldsV1": owns},
                {"manager": "kmm-tui-engine", "operation": "Update", "time": "2026-01-01T00:09:00Z",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}},
                {"manager": "kmm-tui-console", "operation": "Update", "time": "2026-01-01T00:05:00Z",
                    "fieldsType": "FieldsV1", "fieldsV1": owns},
            ])),
            3,
        );
        assert_eq!(approval.batch, 3);
        assert_eq!(approval.approved_by, "kmm-tui-console");
        assert_eq!(
            approval.approved_at.map(|t| t.0.to_string()),
            Some("2026-01-01T00:05:00Z".to_owned())
        );
    }

    #[test]
    fn an_untracked_write_is_named_as_such() {
        assert_eq!(approval(&shim(json!([])), 1).approved_by, UNKNOWN);
    }
}
