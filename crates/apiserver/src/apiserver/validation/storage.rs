//! PersistentVolumeClaims and PersistentVolumes: the essentials kube-apiserver insists on, access modes it knows,
//! a storage size greater than zero, and (for a volume) exactly one kind of backing storage.

use serde_json::{Value, json};

use super::field::{Errors, child, index, items, text};
use super::meta;
use super::quantity;

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];

const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];

/// The fields of a PersistentVolume's spec that each name a kind of backing storage.
const VOLUME_SOURCES: &[&str] = &[
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "csi",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "glusterfs",
    "hostPath",
    "iscsi",
    "local",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
];

/// A PersistentVolumeClaim.
pub(super) fn persistent_volume_claim(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    access_modes(&mut errors, spec);
    volume_mode(&mut errors, spec);
    let requests = spec.pointer("/resources/requests").unwrap_or(&Value::Null);
    let from_source = spec.get("dataSource").is_some() || spec.get("dataSourceRef").is_some();
    match requests.get("storage") {
        Some(size) => positive_size(&mut errors, size, "spec.resources[storage]"),
        None if !from_source => errors.required("spec.resources[storage]", ""),
        None => {}
    }
    errors
}

/// A PersistentVolume.
pub(super) fn persistent_volume(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    access_modes(&mut errors, spec);
    volume_mode(&mut errors, spec);
    match spec.pointer("/capacity/storage") {
        Some(size) => positive_size(&mut errors, size, "spec.capacity[storage]"),
        None => errors.required("spec.capacity", ""),
    }
    let policy = text(spec, "persistentVolumeReclaimPolicy");
    if !policy.is_empty() && !RECLAIM_POLICIES.contains(&policy) {
        errors.not_supported(
            "spec.persistentVolumeReclaimPolicy",
            &json!(policy),
            RECLAIM_POLICIES,
        );
    }
    let sources: Vec<&str> = VOLUME_SOURCES
        .iter()
        .copied()
        .filter(|source| spec.get(*source).is_some_and(|s| !s.is_null()))
        .collect();
    match sources.as_slice() {
        [] => errors.required("spec", "must specify a volume type"),
        [_] => {}
        [_, more @ ..] => {
            for source in more {
                errors.forbidden(
                    &child("spec", source),
                    "may not specify more than 1 volume type",
                );
            }
        }
    }
    if sources.contains(&"local") && spec.get("nodeAffinity").is_none() {
        errors.required("spec.nodeAffinity", "Local volume requires node affinity");
    }
    if sources.contains(&"hostPath")
        && text(spec.get("hostPath").unwrap_or(&Value::Null), "path").is_empty()
    {
        errors.required("spec.hostPath.path", "");
    }
    errors
}

fn access_modes(errors: &mut Errors, spec: &Value) {
    let modes = items(spec, "accessModes");
    if modes.is_empty() {
        errors.required("spec.accessModes", "at least 1 access mode is required");
    }
    for (i, mode) in modes.iter().enumerate() {
        if !mode.as_str().is_some_and(|m| ACCESS_MODES.contains(&m)) {
            errors.not_supported(&index("spec.accessModes", i), mode, ACCESS_MODES);
        }
    }
}

fn volume_mode(errors: &mut Errors, spec: &Value) {
    let mode = text(spec, "volumeMode");
    if !mode.is_empty() && !VOLUME_MODES.contains(&mode) {
        errors.not_supported("spec.volumeMode", &json!(mode), VOLUME_MODES);
    }
}

/// A storage size: a quantity greater than zero.
fn positive_size(errors: &mut Errors, size: &Value, field: &str) {
    match size.as_str().and_then(quantity::nanos) {
        Some(n) if n > 0 => {}
        Some(_) => errors.invalid(field, size, "must be greater than zero"),
        None => errors.invalid(field, size, "must be a quantity such as 10Gi"),
    }
}
