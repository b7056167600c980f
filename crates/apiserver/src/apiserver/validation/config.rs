//! ConfigMaps, Secrets and ServiceAccounts: keys that can be file names, a size the store and kubelet accept, the
//! keys each Secret type promises its consumers, and the `immutable` flag honoured on update.

use serde_json::{Value, json};

use super::field::{Errors, entries, key, text};
use super::meta;
use kmm_api::validation::names;

/// The largest ConfigMap or Secret payload (1 MiB).
const MAX_DATA_BYTES: usize = 1024 * 1024;

const CONFIG_KEY_RULE: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// A ConfigMap.
pub(super) fn config_map(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let mut size = 0;
    for (name, value) in entries(obj, "data") {
        config_key(&mut errors, &key("data", name), name);
        size += name.len() + value.as_str().map_or(0, str::len);
    }
    for (name, value) in entries(obj, "binaryData") {
        config_key(&mut errors, &key("binaryData", name), name);
        if obj.get("data").and_then(|d| d.get(name)).is_some() {
            errors.invalid(
                &key("binaryData", name),
                &json!(name),
                "duplicate of key present in data",
            );
        }
        size += name.len() + decoded_len(value);
    }
    if size > MAX_DATA_BYTES {
        errors.too_long("", MAX_DATA_BYTES);
    }
    errors
}

/// A Secret.
pub(super) fn secret(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let mut size = 0;
    for (name, value) in entries(obj, "data") {
        config_key(&mut errors, &key("data", name), name);
        size += decoded_len(value);
    }
    if size > MAX_DATA_BYTES {
        errors.too_long("data", MAX_DATA_BYTES);
    }
    let has = |k: &str| obj.get("data").and_then(|d| d.get(k)).is_some();
    let require = |errors: &mut Errors, k: &str| {
        if !has(k) {
            errors.required(&key("data", k), "");
        }
    };
    match text(obj, "type") {
        "" | "Opaque" => {}
        "kubernetes.io/service-account-token" => {
            let annotation = "kubernetes.io/service-account.name";
            if obj
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(annotation))
                .is_none()
            {
                errors.required(&key("metadata.annotations", annotation), "");
            }
        }
        "kubernetes.io/dockercfg" => docker_config(&mut errors, obj, ".dockercfg"),
        "kubernetes.io/dockerconfigjson" => docker_config(&mut errors, obj, ".dockerconfigjson"),
        "kubernetes.io/basic-auth" => {
            if !has("username") && !has("password") {
                require(&mut errors, "username");
                require(&mut errors, "password");
            }
        }
        "kubernetes.io/ssh-auth" => require(&mut errors, "ssh-privatekey"),
        "kubernetes.io/tls" => {
            require(&mut errors, "tls.crt");
            require(&mut errors, "tls.key");
        }
        other => errors.invalid_each("type", other, names::qualified_name_errors(other)),
    }
    errors
}

/// A Secret or ConfigMap update: an immutable one keeps its data and its flag, and a Secret keeps its type.
pub(super) fn immutable_data(mut errors: Errors, new: &Value, old: &Value) -> Errors {
    if old.get("type") != new.get("type")
        && old.get("kind").and_then(Value::as_str) == Some("Secret")
    {
        errors.invalid(
            "type",
            new.get("type").unwrap_or(&Value::Null),
            "field is immutable",
        );
    }
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return errors;
    }
    for field in ["immutable", "data", "binaryData"] {
        if old.get(field) != new.get(field) {
            errors.forbidden(field, "field is immutable when `immutable` is set");
        }
    }
    errors
}

/// A ServiceAccount: only its metadata has rules.
pub(super) fn service_account(obj: &Value) -> Errors {
    meta::object_meta(obj.get("metadata"), "metadata")
}

fn config_key(errors: &mut Errors, at: &str, name: &str) {
    if name.len() > 253 {
        errors.invalid(at, &json!(name), "must be no more than 253 characters");
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        errors.invalid(at, &json!(name), CONFIG_KEY_RULE);
    }
    match name {
        "." => errors.invalid(at, &json!(name), "must not be '.'"),
        ".." => errors.invalid(at, &json!(name), "must not be '..'"),
        _ if name.starts_with("..") => errors.invalid(at, &json!(name), "must not start with '..'"),
        _ => {}
    }
}

/// A docker config Secret: the key its type names, holding JSON.
fn docker_config(errors: &mut Errors, obj: &Value, name: &str) {
    let Some(encoded) = obj
        .get("data")
        .and_then(|d| d.get(name))
        .and_then(Value::as_str)
    else {
        errors.required(&key("data", name), "");
        return;
    };
    use base64::Engine;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap_or_default();
    if let Err(e) = serde_json::from_slice::<Value>(&decoded) {
        errors.invalid(
            &key("data", name),
            &json!("<secret contents redacted>"),
            &e.to_string(),
        );
    }
}

/// The size of a base64 value once decoded.
fn decoded_len(value: &Value) -> usize {
    let encoded = value.as_str().unwrap_or("");
    (encoded.len() / 4 * 3).saturating_sub(encoded.bytes().rev().take_while(|b| *b == b'=').count())
}
