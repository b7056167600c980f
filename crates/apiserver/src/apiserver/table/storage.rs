//! The storage printers: PersistentVolumeClaims and PersistentVolumes, with access modes abbreviated as kubectl
//! abbreviates them (`RWO,ROX`).

use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::age_column;
use super::read::{array, text};

/// `kubectl get pvc`: phase, bound volume and what it gave (capacity, access modes), class.
pub(super) fn claim_columns() -> Vec<Column> {
    vec![
        string("Status", "The phase of the claim.", |o, _| {
            Value::String(text(o, &["status", "phase"]).to_owned())
        }),
        string("Volume", "The volume bound to the claim.", |o, _| {
            Value::String(text(o, &["spec", "volumeName"]).to_owned())
        }),
        string("Capacity", "The capacity of the bound volume.", |o, _| {
            let capacity = if bound(o) {
                text(o, &["status", "capacity", "storage"])
            } else {
                ""
            };
            Value::String(capacity.to_owned())
        }),
        string(
            "Access Modes",
            "The access modes of the bound volume.",
            |o, _| {
                let modes = if bound(o) {
                    access_modes(array(o, &["status", "accessModes"]))
                } else {
                    String::new()
                };
                Value::String(modes)
            },
        ),
        string(
            "StorageClass",
            "The storage class the claim asks for.",
            |o, _| Value::String(storage_class(o).to_owned()),
        ),
        string(
            "VolumeAttributesClass",
            "The volume attributes class the claim asks for.",
            |o, _| unset_or(text(o, &["spec", "volumeAttributesClassName"])),
        ),
        age_column(),
        wide(
            "VolumeMode",
            "Whether the volume is a filesystem or a block device.",
            |o, _| unset_or(text(o, &["spec", "volumeMode"])),
        ),
    ]
}

/// `kubectl get pv`: capacity, access modes, reclaim policy, phase and the claim bound to it.
pub(super) fn volume_columns() -> Vec<Column> {
    vec![
        string("Capacity", "The capacity of the volume.", |o, _| {
            Value::String(text(o, &["spec", "capacity", "storage"]).to_owned())
        }),
        string("Access Modes", "How the volume may be mounted.", |o, _| {
            Value::String(access_modes(array(o, &["spec", "accessModes"])))
        }),
        string(
            "Reclaim Policy",
            "What happens to the volume when its claim goes.",
            |o, _| Value::String(text(o, &["spec", "persistentVolumeReclaimPolicy"]).to_owned()),
        ),
        string("Status", "The phase of the volume.", |o, _| {
            Value::String(text(o, &["status", "phase"]).to_owned())
        }),
        string("Claim", "The claim bound to the volume.", |o, _| {
            let name = text(o, &["spec", "claimRef", "name"]);
            let claim = if name.is_empty() {
                String::new()
            } else {
                format!("{}/{name}", text(o, &["spec", "claimRef", "namespace"]))
            };
            Value::String(claim)
        }),
        string(
            "StorageClass",
            "The storage class of the volume.",
            |o, _| Value::String(storage_class(o).to_owned()),
        ),
        string(
            "VolumeAttributesClass",
            "The volume attributes class of the volume.",
            |o, _| unset_or(text(o, &["spec", "volumeAttributesClassName"])),
        ),
        string("Reason", "Why the volume is in its phase.", |o, _| {
            Value::String(text(o, &["status", "reason"]).to_owned())
        }),
        age_column(),
        wide(
            "VolumeMode",
            "Whether the volume is a filesystem or a block device.",
            |o, _| unset_or(text(o, &["spec", "volumeMode"])),
        ),
    ]
}

/// Whether a claim is bound: only then does it show what its volume gave.
fn bound(o: &Value) -> bool {
    !text(o, &["spec", "volumeName"]).is_empty()
}

fn string(name: &str, description: &str, cell: fn(&Value, jiff::Timestamp) -> Value) -> Column {
    Column::computed(name, ColumnType::String, 0, description, cell)
}

fn wide(name: &str, description: &str, cell: fn(&Value, jiff::Timestamp) -> Value) -> Column {
    Column::computed(name, ColumnType::String, 1, description, cell)
}

/// The storage class a claim or volume names, in its field or the annotation that preceded it.
fn storage_class(o: &Value) -> &str {
    let class = text(o, &["spec", "storageClassName"]);
    if class.is_empty() {
        text(
            o,
            &[
                "metadata",
                "annotations",
                "volume.beta.kubernetes.io/storage-class",
            ],
        )
    } else {
        class
    }
}

fn unset_or(s: &str) -> Value {
    Value::String(if s.is_empty() { "<unset>" } else { s }.to_owned())
}

/// Access modes as kubectl abbreviates them, in its order.
fn access_modes(modes: &[Value]) -> String {
    let has = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}
