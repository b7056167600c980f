//! Objects as YAML for the YAML view and the editor, from the JSON the API server sends ([`super::live`]). Secret
//! data is masked wherever an object is shown, and `managedFields` is left out because nobody reads or edits it by
//! hand.

use serde_json::Value;

use super::data::Kind;
use super::target::Target;

/// What masked Secret values read as.
pub(super) const MASK: &str = "••••••••";

/// Drop `managedFields` and mask Secret data.
fn presentable(mut value: Value) -> Value {
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    mask_secret(&mut value);
    value
}

/// Replace every value of a Secret's `data` and `stringData` with [`MASK`], and drop the last-applied annotation
/// (which holds the data in clear). Objects of other kinds are left alone.
pub(super) fn mask_secret(value: &mut Value) {
    if value.get("kind").and_then(Value::as_str) != Some("Secret") {
        return;
    }
    for field in ["data", "stringData"] {
        if let Some(entries) = value.get_mut(field).and_then(Value::as_object_mut) {
            for entry in entries.values_mut() {
                *entry = Value::String(MASK.to_owned());
            }
        }
    }
    if let Some(annotations) = value
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
}

/// The lines of the YAML view of `object`, the JSON of `target` as the API server sent it.
pub(super) fn object_lines(target: &Target, object: Value) -> Result<Vec<String>, String> {
    let value = presentable(object);
    let text = serde_saphyr::to_string(&value)
        .map_err(|error| format!("cannot show {target}: {error}"))?;
    Ok(text.lines().map(str::to_owned).collect())
}

/// The YAML the editor opens of `object`, the JSON of `target` as the API server sent it: without its status,
/// which the API server ignores on update.
pub(super) fn editable_yaml(target: &Target, object: Value) -> Result<String, String> {
    if target.kind == Kind::Event {
        return Err("Events cannot be edited".to_owned());
    }
    let mut value = presentable(object);
    if let Some(object) = value.as_object_mut() {
        object.remove("status");
    }
    serde_saphyr::to_string(&value).map_err(|error| format!("cannot edit {target}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_values_are_masked_and_last_applied_is_dropped() {
        let mut secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "regcred", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"x\":\"c2VjcmV0\"}}",
                "team": "kmm"}},
            "data": {".dockerconfigjson": "c2VjcmV0"},
            "stringData": {"password": "hunter2"}
        });
        mask_secret(&mut secret);
        let text = secret.to_string();
        assert!(
            !text.contains("c2VjcmV0") && !text.contains("hunter2"),
            "{text}"
        );
        assert_eq!(secret["data"][".dockerconfigjson"], MASK);
        assert_eq!(secret["metadata"]["annotations"]["team"], "kmm");
    }

    #[test]
    fn other_kinds_are_left_alone() {
        let mut config_map = json!({"kind": "ConfigMap", "data": {"key": "value"}});
        mask_secret(&mut config_map);
        assert_eq!(config_map["data"]["key"], "value");
    }
}
