//! How a kernel mapping's `build` and `sign` combine with the Module-level ones, as upstream KMM combines them: the
//! Module-level section is the base and the mapping's refines it, so a mapping that only names its own Dockerfile
//! still gets the build arguments, secrets and signing files every kernel shares.
//!
//! - **build**: the mapping's Dockerfile ConfigMap wins; a build argument of the mapping replaces the Module's of
//!   the same name, and the mapping's other arguments follow the Module's (by name); the secrets of both are
//!   mounted (the Module's first); base-image TLS, kaniko parameters and the build node selector are the mapping's
//!   when it sets them, else the Module's.
//! - **sign**: the mapping's unsigned image, key and certificate win (the Module's unsigned image stays when the
//!   mapping names none); `filesToSign` is the Module's list followed by the mapping's.

use kmm_api::kmm::{Build, BuildArg, Sign};

/// The build recipe of a mapping on top of the Module-level one; either alone stands as it is.
pub(super) fn build(module: Option<&Build>, mapping: Option<&Build>) -> Option<Build> {
    let (module, mapping) = match (module, mapping) {
        (None, None) => return None,
        (Some(only), None) | (None, Some(only)) => return Some(only.clone()),
        (Some(module), Some(mapping)) => (module, mapping),
    };
    let mut merged = module.clone();
    merged.dockerfile_config_map = mapping.dockerfile_config_map.clone();
    merged.build_args = build_args(&module.build_args, &mapping.build_args);
    merged.secrets.extend(mapping.secrets.iter().cloned());
    if mapping.base_image_registry_tls.is_some() {
        merged.base_image_registry_tls = mapping.base_image_registry_tls.clone();
    }
    if mapping.kaniko_params.is_some() {
        merged.kaniko_params = mapping.kaniko_params.clone();
    }
    if !mapping.selector.is_empty() {
        merged.selector = mapping.selector.clone();
    }
    Some(merged)
}

/// The Module's build arguments with the mapping's of the same name in their place, then the mapping's others in
/// name order.
fn build_args(module: &[BuildArg], mapping: &[BuildArg]) -> Vec<BuildArg> {
    let mut merged: Vec<BuildArg> = module
        .iter()
        .map(|arg| {
            mapping
                .iter()
                .rev()
                .find(|o| o.name == arg.name)
                .unwrap_or(arg)
                .clone()
        })
        .collect();
    let mut added: Vec<&BuildArg> = mapping
        .iter()
        .filter(|o| !module.iter().any(|arg| arg.name == o.name))
        .collect();
    added.sort_by(|a, b| a.name.cmp(&b.name));
    added.dedup_by(|a, b| a.name == b.name);
    merged.extend(added.into_iter().cloned());
    merged
}

/// The signing recipe of a mapping on top of the Module-level one; either alone stands as it is.
pub(super) fn sign(module: Option<&Sign>, mapping: Option<&Sign>) -> Option<Sign> {
    let (module, mapping) = match (module, mapping) {
        (None, None) => return None,
        (Some(only), None) | (None, Some(only)) => return Some(only.clone()),
        (Some(module), Some(mapping)) => (module, mapping),
    };
    let mut merged = module.clone();
    if let Some(image) = mapping.unsigned_image.as_ref().filter(|i| !i.is_empty()) {
        merged.unsigned_image = Some(image.clone());
    }
    merged.key_secret = mapping.key_secret.clone();
    merged.cert_secret = mapping.cert_secret.clone();
    merged
        .files_to_sign
        .extend(mapping.files_to_sign.iter().cloned());
    Some(merged)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn build_of(value: serde_json::Value) -> Build {
        serde_json::from_value(value).expect("a build")
    }

    fn sign_of(value: serde_json::Value) -> Sign {
        serde_json::from_value(value).expect("a sign")
    }

    #[test]
    fn a_mapping_build_refines_the_module_build() {
        let module = build_of(json!({
            "dockerfileConfigMap": {"name": "shared"},
            "buildArgs": [{"name": "A", "value": "module"}, {"name": "B", "value": "module"}],
            "secrets": [{"name": "module-secret"}],
        }));
        let mapping = build_of(json!({
            "dockerfileConfigMap": {"name": "el9"},
            "buildArgs": [{"name": "Z", "value": "mapping"}, {"name": "B", "value": "mapping"}, {"name": "C", "value": "mapping"}],
            "secrets": [{"name": "mapping-secret"}],
        }));
        let merged = build(Some(&module), Some(&mapping)).expect("a build");
        assert_eq!(merged.dockerfile_config_map.name, "el9");
        let args: Vec<(&str, &str)> = merged
            .build_args
            .iter()
            .map(|a| (a.name.as_str(), a.value.as_str()))
            .collect();
        assert_eq!(
            args,
            [
                ("A", "module"),
                ("B", "mapping"),
                ("C", "mapping"),
                ("Z", "mapping")
            ]
        );
        let secrets: Vec<&str> = merged.secrets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(secrets, ["module-secret", "mapping-secret"]);
        assert_eq!(build(None, Some(&mapping)), Some(mapping.clone()));
        assert_eq!(build(Some(&module), None), Some(module));
        assert_eq!(build(None, None), None);
    }

    #[test]
    fn a_mapping_sign_appends_its_files_and_wins_on_keys() {
        let module = sign_of(json!({
            "unsignedImage": "r/unsigned:${KERNEL_FULL_VERSION}",
            "keySecret": {"name": "module-key"}, "certSecret": {"name": "module-cert"},
            "filesToSign": ["/opt/lib/modules/${KERNEL_FULL_VERSION}/a.ko"],
        }));
        let mapping = sign_of(json!({
            "keySecret": {"name": "el9-key"}, "certSecret": {"name": "el9-cert"},
            "filesToSign": ["/opt/lib/modules/${KERNEL_FULL_VERSION}/b.ko"],
        }));
        let merged = sign(Some(&module), Some(&mapping)).expect("a sign");
        assert_eq!(merged.unsigned_image, module.unsigned_image);
        assert_eq!(
            (
                merged.key_secret.name.as_str(),
                merged.cert_secret.name.as_str()
            ),
            ("el9-key", "el9-cert")
        );
        assert_eq!(
            merged.files_to_sign,
            [
                "/opt/lib/modules/${KERNEL_FULL_VERSION}/a.ko",
                "/opt/lib/modules/${KERNEL_FULL_VERSION}/b.ko"
            ]
        );
    }
}
