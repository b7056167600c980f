//! The pod that reads an OS image's kernel: it runs the image with `ls /usr/lib/modules`, which a real RHCOS image
//! answers with its kernel's directory, on any node (the image's filesystem answers, not the node's). One name per
//! image, so a restarted engine never starts a second pod for the same image.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Capabilities, Container, Pod, PodSpec, SecurityContext};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

use crate::kmm::mic::pods::{PullAnswer, pull_answer};
use crate::runtime::digest::sha256_hex;
use crate::runtime::nodes;
use kmm_api::kmm::os_image_kernels::{IMAGE_ANNOTATION, NAMESPACE, POD_LABEL};

/// The container that lists the kernels.
const CONTAINER: &str = "kernel";

/// Where an OS image keeps one directory per kernel.
const MODULES_DIRECTORY: &str = "/usr/lib/modules";

/// The first ten hexadecimal digits of the SHA-256 of the image reference: the pod's label value and name suffix.
pub(crate) fn image_hash(image: &str) -> String {
    sha256_hex(image.as_bytes())[..10].to_owned()
}

/// The name of the pod reading `image`.
pub(crate) fn pod_name(image: &str) -> String {
    format!("os-image-kernel-{}", image_hash(image))
}

/// The pod reading `image`'s kernel.
pub(crate) fn pod(image: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(image)),
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some(BTreeMap::from([(POD_LABEL.to_owned(), image_hash(image))])),
            annotations: Some(BTreeMap::from([(
                IMAGE_ANNOTATION.to_owned(),
                image.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: CONTAINER.to_owned(),
                image: Some(image.to_owned()),
                command: Some(vec!["ls".to_owned(), MODULES_DIRECTORY.to_owned()]),
                security_context: Some(SecurityContext {
                    allow_privilege_escalation: Some(false),
                    capabilities: Some(Capabilities {
                        drop: Some(vec!["ALL".to_owned()]),
                        ..Capabilities::default()
                    }),
                    ..SecurityContext::default()
                }),
                ..Container::default()
            }],
            restart_policy: Some("Never".to_owned()),
            tolerations: Some(nodes::internal_tolerations()),
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// The image a reading pod runs, from its annotation.
pub(crate) fn pod_image(pod: &Pod) -> Option<&str> {
    pod.annotations().get(IMAGE_ANNOTATION).map(String::as_str)
}

/// Where a reading pod is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Progress {
    /// The listing ran: its log holds the kernel.
    Listed,
    /// The image cannot be read: why.
    Failed(String),
    /// Not done yet.
    Running,
    /// The pod failed before its container ran (evicted, rejected): it must be run again.
    Lost,
}

/// Where `pod` is.
pub(crate) fn progress(pod: &Pod) -> Progress {
    match pull_answer(pod) {
        PullAnswer::Pulled if succeeded(pod) => Progress::Listed,
        PullAnswer::Pulled => Progress::Failed(format!(
            "listing {MODULES_DIRECTORY} failed: {}",
            termination(pod)
        )),
        PullAnswer::NotPulled(error) => Progress::Failed(error),
        PullAnswer::Pending(_) => Progress::Running,
        PullAnswer::Lost(_) => Progress::Lost,
    }
}

fn succeeded(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")
}

/// How the container ended: its exit code and last words.
fn termination(pod: &Pod) -> String {
    let terminated = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find_map(|c| c.state.as_ref()?.terminated.as_ref()));
    match terminated {
        Some(t) => match t
            .message
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
        {
            Some(message) => format!("exit code {}: {message}", t.exit_code),
            None => format!("exit code {}", t.exit_code),
        },
        None => "the container failed".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_status(status: serde_json::Value) -> Pod {
        let mut pod = pod("quay.io/os@sha256:415");
        pod.status = Some(serde_json::from_value(status).expect("a status"));
        pod
    }

    #[test]
    fn one_name_per_image() {
        assert_eq!(pod_name("a"), pod_name("a"));
        assert_ne!(pod_name("a"), pod_name("b"));
        let pod = pod("quay.io/os@sha256:415");
        assert_eq!(pod_image(&pod), Some("quay.io/os@sha256:415"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some(NAMESPACE));
    }

    #[test]
    fn progress_follows_the_pod() {
        assert_eq!(
            progress(&with_status(serde_json::json!({"phase": "Succeeded"}))),
            Progress::Listed
        );
        assert_eq!(
            progress(&with_status(serde_json::json!({"phase": "Running"}))),
            Progress::Running
        );
        let not_pulled = with_status(
            serde_json::json!({"phase": "Pending", "containerStatuses": [{
            "name": "kernel", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}]}),
        );
        assert_eq!(
            progress(&not_pulled),
            Progress::Failed("ErrImagePull: not found".into())
        );
        let exited = with_status(
            serde_json::json!({"phase": "Failed", "containerStatuses": [{
            "name": "kernel", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 2, "message": "ls: cannot access '/usr/lib/modules'"}}}]}),
        );
        assert_eq!(
            progress(&exited),
            Progress::Failed(
                "listing /usr/lib/modules failed: exit code 2: ls: cannot access '/usr/lib/modules'".into()
            )
        );
        assert_eq!(
            progress(&with_status(
                serde_json::json!({"phase": "Failed", "reason": "Evicted"})
            )),
            Progress::Lost
        );
    }
}
