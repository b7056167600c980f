//! What build and sign pods share: a kaniko container, its push and pull flags, the registry secret as its docker
//! configuration, and the labels by which upstream tools, the console and the simulation know what the pod does.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, KeyToPath, Pod, PodSpec, SecretVolumeSource, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};

use crate::runtime::context::Error;
use crate::runtime::object_names;
use crate::{kmm::kernel, runtime::nodes};
use kmm_api::kmm::labels;
use kmm_api::kmm::{BuildSignAction, ModuleBuildSignConfig, ModuleBuildSignImage, TlsOptions};

/// Name of the container that builds or signs.
pub(super) const CONTAINER: &str = "kaniko";

/// Where the pod's Dockerfile is mounted; it is also the build context.
pub(super) const WORKSPACE: &str = "/workspace";

/// Where the kubelet reads a container's termination message by default.
const TERMINATION_LOG: &str = "/dev/termination-log";

/// Where kaniko reads registry credentials.
const DOCKER_CONFIG_DIR: &str = "/kaniko/.docker";

/// The label value (and event prefix) of an action.
pub(super) fn action_name(action: BuildSignAction) -> &'static str {
    match action {
        BuildSignAction::BuildImage => "BuildImage",
        BuildSignAction::SignImage => "SignImage",
    }
}

/// The name of the pod doing `action` for the entry's kernel: one name per (MBSC, kernel, action), so a restarted
/// engine never starts a second pod for the same work.
pub(crate) fn pod_name(mbsc: &str, action: BuildSignAction, kernel_version: &str) -> String {
    let kernel = kernel::dns_safe(kernel_version);
    match action {
        BuildSignAction::BuildImage => object_names::build_pod_name(mbsc, &kernel),
        BuildSignAction::SignImage => object_names::sign_pod_name(mbsc, &kernel),
    }
}

/// The labels that find the pod of one (MBSC, action, kernel), plus the `app.kubernetes.io` ones upstream sets.
pub(super) fn pod_labels(
    mbsc: &str,
    action: BuildSignAction,
    kernel_version: &str,
) -> BTreeMap<String, String> {
    let action = action_name(action);
    [
        (labels::MODULE_NAME, mbsc.to_owned()),
        (labels::RESOURCE_TYPE, action.to_owned()),
        (labels::TARGET_KERNEL, kernel::dns_safe(kernel_version)),
        ("app.kubernetes.io/name", "kmm".to_owned()),
        ("app.kubernetes.io/component", action.to_owned()),
        ("app.kubernetes.io/part-of", "kmm".to_owned()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect()
}

/// `image` with its tag (and digest) replaced by `tag`.
pub(super) fn with_tag(image: &str, tag: &str) -> String {
    let repository = image.split_once('@').map_or(image, |(name, _)| name);
    let repository = match repository.rsplit_once(':') {
        Some((name, old_tag)) if !old_tag.contains('/') => name,
        _ => repository,
    };
    format!("{repository}:{tag}")
}

/// Where the result goes: `--destination <image>` and the registry's TLS flags when pushing, else `--no-push`.
pub(super) fn destination_args(image: &str, push: bool, tls: Option<&TlsOptions>) -> Vec<String> {
    if !push {
        return vec!["--no-push".to_owned()];
    }
    // kaniko writes the digest it pushed to the termination log, where the kubelet reports it as the container's
    // termination message: the MBSC records it, and a hub pins the image it delivers to it.
    let mut args = vec![
        "--destination".to_owned(),
        image.to_owned(),
        format!("--digest-file={TERMINATION_LOG}"),
    ];
    if let Some(tls) = tls {
        if tls.insecure {
            args.push("--insecure".to_owned());
        }
        if tls.insecure_skip_tls_verify {
            args.push("--skip-tls-verify".to_owned());
        }
    }
    args
}

/// How to reach the registry of the images the Dockerfile starts from.
pub(super) fn pull_args(tls: Option<&TlsOptions>) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(tls) = tls {
        if tls.insecure {
            args.push("--insecure-pull".to_owned());
        }
        if tls.insecure_skip_tls_verify {
            args.push("--skip-tls-verify-pull".to_owned());
        }
    }
    args
}

/// The Dockerfile and build context arguments every kaniko pod starts with.
pub(super) fn workspace_args() -> Vec<String> {
    vec![
        "--dockerfile".to_owned(),
        format!("{WORKSPACE}/Dockerfile"),
        "--context".to_owned(),
        format!("dir://{WORKSPACE}"),
    ]
}

/// A secret volume and where it is mounted.
pub(super) fn secret_mount(
    volume: &str,
    secret: &str,
    items: Option<Vec<KeyToPath>>,
    path: &str,
) -> (Volume, VolumeMount) {
    (
        Volume {
            name: volume.to_owned(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.to_owned()),
                items,
                ..Default::default()
            }),
            ..Default::default()
        },
        VolumeMount {
            name: volume.to_owned(),
            mount_path: path.to_owned(),
            read_only: Some(true),
            ..Default::default()
        },
    )
}

/// What differs between a build pod and a sign pod.
pub(super) struct PodParts {
    /// The pod's name.
    pub name: String,
    /// The image the kaniko container runs.
    pub builder_image: String,
    /// kaniko's arguments.
    pub args: Vec<String>,
    /// Annotations besides the hash.
    pub annotations: BTreeMap<String, String>,
    /// Volumes with their mounts in the kaniko container (the registry secret is added here).
    pub volumes: Vec<(Volume, VolumeMount)>,
    /// Node labels the pod must run on.
    pub node_selector: BTreeMap<String, String>,
}

/// The pod of one entry, controlled by the MBSC, tolerating what the MBSC's tolerations and the engine's pressure
/// tolerations allow.
pub(super) fn pod(
    mbsc: &ModuleBuildSignConfig,
    entry: &ModuleBuildSignImage,
    mut parts: PodParts,
) -> Result<Pod, Error> {
    let owner = mbsc.controller_owner_ref(&()).ok_or_else(|| {
        Error::Invalid(format!(
            "ModuleBuildSignConfig {}/{} has no uid to own its pods",
            mbsc.namespace().unwrap_or_default(),
            mbsc.name_any()
        ))
    })?;
    if let Some(secret) = &mbsc.spec.image_repo_secret {
        parts.volumes.push(secret_mount(
            "docker-config",
            &secret.name,
            Some(vec![KeyToPath {
                key: ".dockerconfigjson".to_owned(),
                path: "config.json".to_owned(),
                ..Default::default()
            }]),
            DOCKER_CONFIG_DIR,
        ));
    }
    let (volumes, mounts): (Vec<Volume>, Vec<VolumeMount>) = parts.volumes.into_iter().unzip();
    Ok(Pod {
        metadata: ObjectMeta {
            name: Some(parts.name),
            namespace: mbsc.namespace(),
            labels: Some(pod_labels(
                &mbsc.name_any(),
                entry.action,
                &entry.spec.kernel_version,
            )),
            annotations: (!parts.annotations.is_empty()).then_some(parts.annotations),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: CONTAINER.to_owned(),
                image: Some(parts.builder_image),
                args: Some(parts.args),
                volume_mounts: (!mounts.is_empty()).then_some(mounts),
                ..Default::default()
            }],
            restart_policy: Some("Never".to_owned()),
            volumes: (!volumes.is_empty()).then_some(volumes),
            node_selector: (!parts.node_selector.is_empty()).then_some(parts.node_selector),
            tolerations: Some(nodes::with_internal_tolerations(&mbsc.spec.tolerations)),
            ..Default::default()
        }),
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_replace_tags_and_digests_but_not_registry_ports() {
        assert_eq!(
            with_tag("gcr.io/kaniko-project/executor:latest", "v1.23"),
            "gcr.io/kaniko-project/executor:v1.23"
        );
        assert_eq!(
            with_tag("localhost:5000/executor", "debug"),
            "localhost:5000/executor:debug"
        );
        assert_eq!(
            with_tag("quay.io/k/executor:1@sha256:abc", "2"),
            "quay.io/k/executor:2"
        );
    }

    #[test]
    fn push_and_pull_flags_follow_the_tls_options() {
        let tls = TlsOptions {
            insecure: true,
            insecure_skip_tls_verify: true,
        };
        assert_eq!(
            destination_args("r/i:1", true, Some(&tls)),
            [
                "--destination",
                "r/i:1",
                "--digest-file=/dev/termination-log",
                "--insecure",
                "--skip-tls-verify"
            ]
        );
        assert_eq!(destination_args("r/i:1", false, Some(&tls)), ["--no-push"]);
        assert_eq!(
            pull_args(Some(&tls)),
            ["--insecure-pull", "--skip-tls-verify-pull"]
        );
        assert!(pull_args(None).is_empty());
    }
}
