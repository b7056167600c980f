//! A pod's volumes: unique DNS-label names, exactly one source each, and the fields each source needs.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::field::{Errors, child, index, items, text};
use kmm_api::validation::names;

/// Every field of a `VolumeSource`: a volume sets exactly one.
const SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];

/// The volumes at `path`; returns their names, which mounts must refer to.
pub(super) fn volumes<'a>(errors: &mut Errors, list: &'a [Value], path: &str) -> HashSet<&'a str> {
    let mut seen = HashSet::new();
    for (i, volume) in list.iter().enumerate() {
        let at = index(path, i);
        let name = text(volume, "name");
        if name.is_empty() {
            errors.required(&child(&at, "name"), "");
        } else {
            errors.invalid_each(&child(&at, "name"), name, names::dns1123_label_errors(name));
            if !seen.insert(name) {
                errors.duplicate(&child(&at, "name"), &json!(name));
            }
        }
        let present: Vec<&str> = SOURCES
            .iter()
            .copied()
            .filter(|s| volume.get(*s).is_some())
            .collect();
        match present.as_slice() {
            [] => errors.required(&at, "must specify a volume type"),
            [_] => {}
            [_, extra, ..] => errors.forbidden(
                &child(&at, extra),
                "may not specify more than 1 volume type",
            ),
        }
        source(errors, volume, &at);
    }
    seen
}

fn source(errors: &mut Errors, volume: &Value, at: &str) {
    let required = |errors: &mut Errors, source: &str, field: &str| {
        if let Some(s) = volume.get(source)
            && text(s, field).is_empty()
        {
            errors.required(&child(&child(at, source), field), "");
        }
    };
    required(errors, "hostPath", "path");
    required(errors, "secret", "secretName");
    required(errors, "configMap", "name");
    required(errors, "persistentVolumeClaim", "claimName");
    required(errors, "nfs", "server");
    required(errors, "nfs", "path");
    required(errors, "csi", "driver");
    if let Some(host_path) = volume.get("hostPath") {
        let kind = text(host_path, "type");
        if !HOST_PATH_TYPES.contains(&kind) {
            errors.not_supported(
                &child(&child(at, "hostPath"), "type"),
                &json!(kind),
                &HOST_PATH_TYPES[1..],
            );
        }
    }
    for projection in ["secret", "configMap", "downwardAPI"] {
        if let Some(projected) = volume.get(projection) {
            let projected_at = child(at, projection);
            mode(errors, projected, "defaultMode", &projected_at);
            key_items(errors, projected, &projected_at);
        }
    }
    if let Some(projected) = volume.get("projected") {
        let sources_at = child(&child(at, "projected"), "sources");
        for (i, source) in items(projected, "sources").iter().enumerate() {
            let kinds = [
                "secret",
                "configMap",
                "downwardAPI",
                "serviceAccountToken",
                "clusterTrustBundle",
            ];
            let at = index(&sources_at, i);
            let present: Vec<&str> = kinds
                .into_iter()
                .filter(|k| source.get(*k).is_some())
                .collect();
            if let [_, extra, ..] = present.as_slice() {
                errors.forbidden(
                    &child(&at, extra),
                    "may not specify more than 1 volume type per source",
                );
            }
            if let Some(token) = source.get("serviceAccountToken") {
                let token_at = child(&at, "serviceAccountToken");
                if text(token, "path").is_empty() {
                    errors.required(&child(&token_at, "path"), "");
                }
                if let Some(seconds) = token.get("expirationSeconds").and_then(Value::as_i64)
                    && seconds < 600
                {
                    errors.invalid(
                        &child(&token_at, "expirationSeconds"),
                        &json!(seconds),
                        "may not specify a duration less than 10 minutes",
                    );
                }
            }
        }
    }
}

/// A file mode: between 0 and 0777.
fn mode(errors: &mut Errors, obj: &Value, field: &str, at: &str) {
    if let Some(mode) = obj.get(field).and_then(Value::as_i64)
        && !(0..=0o777).contains(&mode)
    {
        errors.invalid(
            &child(at, field),
            &json!(mode),
            "must be a number between 0 and 0777 (octal), both inclusive",
        );
    }
}

/// The `items` of a secret, config map or downward API volume: each names a key (or field) and a relative path.
fn key_items(errors: &mut Errors, source: &Value, at: &str) {
    for (i, item) in items(source, "items").iter().enumerate() {
        let at = index(&child(at, "items"), i);
        if item.get("fieldRef").is_none() && text(item, "key").is_empty() {
            errors.required(&child(&at, "key"), "");
        }
        let path = text(item, "path");
        if path.is_empty() {
            errors.required(&child(&at, "path"), "");
        } else if path.starts_with('/') {
            errors.invalid(&child(&at, "path"), &json!(path), "must be a relative path");
        } else if path.split('/').any(|p| p == "..") {
            errors.invalid(&child(&at, "path"), &json!(path), "must not contain '..'");
        }
        mode(errors, item, "mode", &at);
    }
}
