//! Pull pods: a pod whose only job is to make the kubelet pull an image, so that the cluster's own runtime (its
//! mirrors, credentials, CAs and cache) answers "does this image exist?". One name per (MIC, image, generation):
//! a restarted engine never starts a second check of the same question.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, LocalObjectReference, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};
use serde::Serialize;

use super::wanted::Wanted;
use crate::runtime::context::Error;
use crate::runtime::digest::sha256_hex;
use crate::runtime::nodes;
use crate::runtime::object_names;
use kmm_api::kmm::ModuleImagesConfig;
use kmm_api::kmm::labels;
use kmm_api::kmm::labels::IMAGE_GENERATION;

/// Name of the container that pulls.
const CONTAINER: &str = "puller";

/// The name of the pod checking `image` at `generation` for the MIC `mic`: upstream's `generateName` prefix and the
/// first ten hexadecimal digits of the SHA-256 of `"<image>\n<generation>"`.
pub fn pull_pod_name(mic: &str, image: &str, generation: i64) -> String {
    let digest = sha256_hex(format!("{image}\n{generation}").as_bytes());
    format!(
        "{}{}",
        object_names::pull_pod_generate_name(mic),
        &digest[..10]
    )
}

/// The pod checking one image of the MIC.
pub(super) fn pull_pod(mic: &ModuleImagesConfig, wanted: &Wanted) -> Result<Pod, Error> {
    let name = mic.name_any();
    let owner = mic.controller_owner_ref(&()).ok_or_else(|| {
        Error::Invalid(format!(
            "ModuleImagesConfig {}/{name} has no uid to own its pull pods",
            mic.namespace().unwrap_or_default()
        ))
    })?;
    let pull_policy = enum_text(&mic.spec.image_pull_policy)?;
    let labels = BTreeMap::from([
        (labels::IMAGE_OWNER.to_owned(), name.clone()),
        (
            labels::PULL_POD_TYPE.to_owned(),
            wanted.pull_pod_type().to_owned(),
        ),
    ]);
    let annotations =
        BTreeMap::from([(IMAGE_GENERATION.to_owned(), wanted.generation.to_string())]);
    Ok(Pod {
        metadata: ObjectMeta {
            name: Some(pull_pod_name(&name, wanted.image(), wanted.generation)),
            namespace: mic.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: CONTAINER.to_owned(),
                image: Some(wanted.image().to_owned()),
                command: Some(["/bin/sh", "-c", "exit 0"].map(str::to_owned).to_vec()),
                image_pull_policy: Some(pull_policy),
                ..Default::default()
            }],
            restart_policy: Some("Never".to_owned()),
            image_pull_secrets: mic.spec.image_repo_secret.as_ref().map(|secret| {
                vec![LocalObjectReference {
                    name: secret.name.clone(),
                }]
            }),
            tolerations: Some(nodes::with_internal_tolerations(&mic.spec.tolerations)),
            ..Default::default()
        }),
        status: None,
    })
}

/// The image a pull pod pulls.
pub(super) fn pod_image(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.containers.first()?.image.as_deref()
}

/// The pull pod type a pod was made as.
pub(super) fn pod_type(pod: &Pod) -> Option<&str> {
    pod.labels().get(labels::PULL_POD_TYPE).map(String::as_str)
}

/// A unit enum's serialized name (`IfNotPresent`, ...).
fn enum_text(value: &impl Serialize) -> Result<String, Error> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => Ok(text),
        other => Err(Error::Invalid(format!(
            "imagePullPolicy does not serialise to a name: {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmm::mbsc::outcomes::pod_generation;
    use crate::kmm::mic::wanted::{ONE_TIME_PULL, wanted};

    fn mic() -> ModuleImagesConfig {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
            "kind": "ModuleImagesConfig",
            "metadata": {"name": "acme", "namespace": "ns", "uid": "u-1"},
            "spec": {
                "images": [{"image": "quay.io/acme/kmod:5.14", "kernelVersion": "5.14", "generation": 3,
                            "skipWaitMissingImage": true}],
                "imageRepoSecret": {"name": "pull-secret"},
                "imagePullPolicy": "Always",
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            },
        }))
        .expect("mic")
    }

    #[test]
    fn names_are_fixed_by_image_and_generation() {
        let first = pull_pod_name("acme", "quay.io/acme/kmod:5.14", 1);
        assert_eq!(first, pull_pod_name("acme", "quay.io/acme/kmod:5.14", 1));
        assert_ne!(first, pull_pod_name("acme", "quay.io/acme/kmod:5.14", 2));
        assert_ne!(first, pull_pod_name("acme", "quay.io/acme/kmod:6.0", 1));
        assert!(first.starts_with("acme-pull-pod-"));
        assert_eq!(first.len(), "acme-pull-pod-".len() + 10);
    }

    #[test]
    fn the_pull_pod_runs_the_image_once_with_the_mic_settings() {
        let mic = mic();
        let wanted = wanted(&mic.spec);
        let pod = pull_pod(&mic, &wanted[0]).expect("pod");
        assert_eq!(pod_image(&pod), Some("quay.io/acme/kmod:5.14"));
        assert_eq!(pod_generation(&pod), Some(3));
        assert_eq!(pod_type(&pod), Some(ONE_TIME_PULL));
        assert_eq!(pod.labels()[labels::IMAGE_OWNER], "acme");
        let spec = pod.spec.expect("spec");
        let container = &spec.containers[0];
        assert_eq!(container.name, "puller");
        assert_eq!(
            container.command.as_deref(),
            Some(&["/bin/sh".to_owned(), "-c".into(), "exit 0".into()][..])
        );
        assert_eq!(container.image_pull_policy.as_deref(), Some("Always"));
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(
            spec.image_pull_secrets.expect("secrets")[0].name,
            "pull-secret"
        );
        let tolerations = spec.tolerations.expect("tolerations");
        assert_eq!(tolerations[0].key.as_deref(), Some("dedicated"));
        assert_eq!(tolerations.len(), 1 + nodes::internal_tolerations().len());
        assert!(spec.node_name.is_none() && spec.node_selector.is_none());
        let owner = &pod.metadata.owner_references.expect("owner")[0];
        assert_eq!((owner.uid.as_str(), owner.controller), ("u-1", Some(true)));
    }
}
