//! The build pod: kaniko building a kmod image from the Module's Dockerfile ConfigMap for one kernel, with the
//! build arguments every KMM Dockerfile may rely on.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, KeyToPath, Pod, Volume, VolumeMount};
use kube::ResourceExt;

use super::kaniko::{self, PodParts};
use crate::runtime::context::Error;
use kmm_api::kmm::{Build, BuildSignAction, ModuleBuildSignConfig, ModuleBuildSignImage};

/// The ConfigMap key holding the Dockerfile.
pub(super) const DOCKERFILE_KEY: &str = "dockerfile";

/// Where build secrets are mounted: `/run/secrets/<secret name>`.
const BUILD_SECRETS_DIR: &str = "/run/secrets";

/// The `--build-arg` pairs: the recipe's own, then `KERNEL_VERSION`, `KERNEL_FULL_VERSION`, `MOD_NAME` and
/// `MOD_NAMESPACE` unless the recipe sets them itself.
pub(super) fn build_args(
    build: &Build,
    kernel_version: &str,
    module: &str,
    namespace: &str,
) -> Vec<(String, String)> {
    let mut args: Vec<(String, String)> = build
        .build_args
        .iter()
        .map(|arg| (arg.name.clone(), arg.value.clone()))
        .collect();
    for (name, value) in [
        ("KERNEL_VERSION", kernel_version),
        ("KERNEL_FULL_VERSION", kernel_version),
        ("MOD_NAME", module),
        ("MOD_NAMESPACE", namespace),
    ] {
        if !args.iter().any(|(existing, _)| existing == name) {
            args.push((name.to_owned(), value.to_owned()));
        }
    }
    args
}

/// The pod building `entry`'s image with `build`, running `builder_image` (its tag replaced by the recipe's
/// kaniko tag, when set).
pub(super) fn build_pod(
    mbsc: &ModuleBuildSignConfig,
    entry: &ModuleBuildSignImage,
    build: &Build,
    builder_image: &str,
) -> Result<Pod, Error> {
    let module = mbsc.name_any();
    let namespace = mbsc.namespace().unwrap_or_default();
    let mut args = kaniko::workspace_args();
    args.extend(kaniko::destination_args(
        &entry.spec.image,
        mbsc.spec.push_built_image,
        entry.spec.registry_tls.as_ref(),
    ));
    args.extend(kaniko::pull_args(build.base_image_registry_tls.as_ref()));
    for (name, value) in build_args(build, &entry.spec.kernel_version, &module, &namespace) {
        args.push("--build-arg".to_owned());
        args.push(format!("{name}={value}"));
    }
    let builder_image = match build.kaniko_params.as_ref().and_then(|p| p.tag.as_deref()) {
        Some(tag) if !tag.is_empty() => kaniko::with_tag(builder_image, tag),
        _ => builder_image.to_owned(),
    };
    let mut volumes = vec![dockerfile_volume(&build.dockerfile_config_map.name)];
    volumes.extend(build.secrets.iter().enumerate().map(|(index, secret)| {
        kaniko::secret_mount(
            &format!("build-secret-{index}"),
            &secret.name,
            None,
            &format!("{BUILD_SECRETS_DIR}/{}", secret.name),
        )
    }));
    kaniko::pod(
        mbsc,
        entry,
        PodParts {
            name: kaniko::pod_name(
                &module,
                BuildSignAction::BuildImage,
                &entry.spec.kernel_version,
            ),
            builder_image,
            args,
            annotations: BTreeMap::new(),
            volumes,
            node_selector: build.selector.clone(),
        },
    )
}

/// The Dockerfile ConfigMap's `dockerfile` key as `/workspace/Dockerfile`.
fn dockerfile_volume(config_map: &str) -> (Volume, VolumeMount) {
    (
        Volume {
            name: "dockerfile".to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_map.to_owned(),
                items: Some(vec![KeyToPath {
                    key: DOCKERFILE_KEY.to_owned(),
                    path: "Dockerfile".to_owned(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        },
        VolumeMount {
            name: "dockerfile".to_owned(),
            mount_path: kaniko::WORKSPACE.to_owned(),
            read_only: Some(true),
            ..Default::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(args: &[(&str, &str)]) -> Build {
        serde_json::from_value(serde_json::json!({
            "dockerfileConfigMap": {"name": "kmod-dockerfile"},
            "buildArgs": args.iter().map(|(n, v)| serde_json::json!({"name": n, "value": v})).collect::<Vec<_>>(),
        }))
        .expect("build")
    }

    #[test]
    fn defaults_follow_the_recipe_args_unless_overridden() {
        let args = build_args(
            &build(&[("EXTRA", "1"), ("MOD_NAME", "custom")]),
            "5.14.0",
            "kmod",
            "acme",
        );
        assert_eq!(
            args,
            [
                ("EXTRA", "1"),
                ("MOD_NAME", "custom"),
                ("KERNEL_VERSION", "5.14.0"),
                ("KERNEL_FULL_VERSION", "5.14.0"),
                ("MOD_NAMESPACE", "acme"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
    }
}
