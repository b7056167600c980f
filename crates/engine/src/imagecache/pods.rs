//! The pods that pull images onto a node and delete them from it, in kube-fledged's shape (so the console and the
//! simulation read both engines' pods alike), and what a pod says about its work.
//!
//! A pull pod is pinned to its node by the hostname label and tolerates every taint; a busybox init container
//! copies `echo` into an `emptyDir` and the main container runs the cached image with `/tmp/bin/echo`, so images
//! without a shell pull too. A delete pod runs `crictl rmi` against the node's runtime socket. Names are fixed by
//! (cache, node, image, operation, attempt), so a restarted engine finds its pods instead of starting new ones.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, EmptyDirVolumeSource, HostPathVolumeSource, Node, Pod, PodSpec,
    Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};

use crate::runtime::context::Error;
use crate::runtime::digest::sha256_hex;
use kmm_api::imagecache::ImageCache;
use kmm_api::imagecache::names::{
    APP_LABEL, ATTEMPT_ANNOTATION, CACHE_LABEL, CONTROLLER_LABEL, IMAGE_ANNOTATION,
    IMAGE_HASH_LABEL, LAST_FAILURE_ANNOTATION, MANAGER_LABEL, NODE_ANNOTATION, NODE_LABEL,
    OPERATION_LABEL,
};

/// Name of the pull container, as kube-fledged names it.
const PULL_CONTAINER: &str = "imagepuller";
/// Name of the delete container, as kube-fledged names it.
const DELETE_CONTAINER: &str = "docker-cri-client";

/// What a pod does for its (node, image).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Operation {
    /// Pull when absent (`IfNotPresent`).
    Pull,
    /// Pull again even when present (`Always`), for a refresh or a re-pull.
    Refresh,
    /// Delete the image from the node.
    Delete,
}

impl Operation {
    /// The value of [`OPERATION_LABEL`].
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Operation::Pull => "pull",
            Operation::Refresh => "refresh",
            Operation::Delete => "delete",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [Operation::Pull, Operation::Refresh, Operation::Delete]
            .into_iter()
            .find(|o| o.as_str() == text)
    }

    /// One letter in the pod name, so the operations of one pair never share a name.
    fn letter(self) -> char {
        match self {
            Operation::Pull => 'p',
            Operation::Refresh => 'r',
            Operation::Delete => 'd',
        }
    }
}

/// The first 16 hexadecimal digits of the SHA-256 of `image`: a label value for any reference.
pub fn image_hash(image: &str) -> String {
    sha256_hex(image.as_bytes())[..16].to_owned()
}

/// The pod name of `operation`'s `attempt` on (`node`, `image`) for `cache`: the cache name (cut to 40 characters),
/// ten hexadecimal digits of the SHA-256 of `"<node>\n<image>"`, the operation's letter and the attempt, at most
/// 63 characters.
pub(super) fn pod_name(
    cache: &str,
    node: &str,
    image: &str,
    operation: Operation,
    attempt: u32,
) -> String {
    let prefix: String = cache.chars().take(40).collect();
    let prefix = prefix.trim_end_matches(['-', '.']);
    let digest = sha256_hex(format!("{node}\n{image}").as_bytes());
    format!("{prefix}-{}-{}{attempt}", &digest[..10], operation.letter())
}

/// What a new pod is for.
pub(super) struct Work<'a> {
    /// The node it runs on.
    pub node: &'a Node,
    /// The image it pulls or deletes.
    pub image: &'a str,
    /// Pull, refresh or delete.
    pub operation: Operation,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// Why the previous attempt failed.
    pub last_failure: Option<String>,
}

/// The pod doing `work` for `cache`, owned by the cache so that deleting the cache deletes its pods.
pub(super) fn pod(
    cache: &ImageCache,
    work: &Work,
    images: &crate::runtime::context::PodImages,
) -> Result<Pod, Error> {
    let cache_name = cache.name_any();
    let node_name = work.node.name_any();
    let owner = cache.controller_owner_ref(&()).ok_or_else(|| {
        Error::Invalid(format!(
            "ImageCache {}/{cache_name} has no uid to own its pods",
            cache.namespace().unwrap_or_default()
        ))
    })?;
    let mut labels = BTreeMap::from([
        (APP_LABEL.0.to_owned(), APP_LABEL.1.to_owned()),
        (MANAGER_LABEL.0.to_owned(), MANAGER_LABEL.1.to_owned()),
        (CONTROLLER_LABEL.0.to_owned(), CONTROLLER_LABEL.1.to_owned()),
        (IMAGE_HASH_LABEL.to_owned(), image_hash(work.image)),
        (
            OPERATION_LABEL.to_owned(),
            work.operation.as_str().to_owned(),
        ),
    ]);
    if cache_name.len() <= 63 {
        labels.insert(CACHE_LABEL.to_owned(), cache_name.clone());
    }
    if node_name.len() <= 63 {
        labels.insert(NODE_LABEL.to_owned(), node_name.clone());
    }
    let mut annotations = BTreeMap::from([
        (IMAGE_ANNOTATION.to_owned(), work.image.to_owned()),
        (NODE_ANNOTATION.to_owned(), node_name.clone()),
        (ATTEMPT_ANNOTATION.to_owned(), work.attempt.to_string()),
    ]);
    if let Some(failure) = &work.last_failure {
        annotations.insert(LAST_FAILURE_ANNOTATION.to_owned(), failure.clone());
    }
    let hostname = work
        .node
        .labels()
        .get("kubernetes.io/hostname")
        .cloned()
        .unwrap_or_else(|| node_name.clone());
    let mut spec = match work.operation {
        Operation::Pull | Operation::Refresh => pull_spec(work, &images.cache_busybox),
        Operation::Delete => delete_spec(work, &images.cache_cri_client),
    };
    spec.node_selector = Some(BTreeMap::from([(
        "kubernetes.io/hostname".to_owned(),
        hostname,
    )]));
    spec.tolerations = Some(vec![Toleration {
        operator: Some("Exists".to_owned()),
        ..Default::default()
    }]);
    spec.restart_policy = Some("Never".to_owned());
    spec.image_pull_secrets =
        (!cache.spec.image_pull_secrets.is_empty()).then(|| cache.spec.image_pull_secrets.clone());
    Ok(Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(
                &cache_name,
                &node_name,
                work.image,
                work.operation,
                work.attempt,
            )),
            namespace: cache.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// kube-fledged's pull pod: busybox copies `echo`, the image runs it.
fn pull_spec(work: &Work, busybox: &str) -> PodSpec {
    let mount = VolumeMount {
        name: "tmp-bin".to_owned(),
        mount_path: "/tmp/bin".to_owned(),
        ..Default::default()
    };
    let policy = if work.operation == Operation::Refresh {
        "Always"
    } else {
        "IfNotPresent"
    };
    PodSpec {
        init_containers: Some(vec![Container {
            name: "busybox".to_owned(),
            image: Some(busybox.to_owned()),
            command: Some(["cp", "/bin/echo", "/tmp/bin"].map(str::to_owned).to_vec()),
            volume_mounts: Some(vec![mount.clone()]),
            image_pull_policy: Some("IfNotPresent".to_owned()),
            ..Default::default()
        }]),
        containers: vec![Container {
            name: PULL_CONTAINER.to_owned(),
            image: Some(work.image.to_owned()),
            command: Some(
                ["/tmp/bin/echo", "Image pulled successfully!"]
                    .map(str::to_owned)
                    .to_vec(),
            ),
            volume_mounts: Some(vec![mount]),
            image_pull_policy: Some(policy.to_owned()),
            ..Default::default()
        }],
        volumes: Some(vec![Volume {
            name: "tmp-bin".to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

/// kube-fledged's delete pod: `crictl rmi` on the node's CRI socket (or `docker image rm` on a Docker node).
fn delete_spec(work: &Work, cri_client: &str) -> PodSpec {
    let runtime = work
        .node
        .status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.container_runtime_version.as_str())
        .unwrap_or_default();
    let (socket, command) = if runtime.contains("docker") {
        (
            "/var/run/docker.sock",
            vec!["docker", "image", "rm", "-f", work.image],
        )
    } else {
        let socket = if runtime.contains("crio") || runtime.contains("cri-o") {
            "/var/run/crio/crio.sock"
        } else {
            "/run/containerd/containerd.sock"
        };
        let endpoint = format!("unix://{socket}");
        return delete_spec_with(
            cri_client,
            socket,
            vec![
                "crictl".to_owned(),
                format!("--runtime-endpoint={endpoint}"),
                format!("--image-endpoint={endpoint}"),
                "rmi".to_owned(),
                work.image.to_owned(),
            ],
        );
    };
    delete_spec_with(
        cri_client,
        socket,
        command.into_iter().map(str::to_owned).collect(),
    )
}

fn delete_spec_with(cri_client: &str, socket: &str, command: Vec<String>) -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: DELETE_CONTAINER.to_owned(),
            image: Some(cri_client.to_owned()),
            command: Some(command),
            volume_mounts: Some(vec![VolumeMount {
                name: "runtime-sock".to_owned(),
                mount_path: socket.to_owned(),
                ..Default::default()
            }]),
            termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
            ..Default::default()
        }],
        volumes: Some(vec![Volume {
            name: "runtime-sock".to_owned(),
            host_path: Some(HostPathVolumeSource {
                path: socket.to_owned(),
                type_: Some("Socket".to_owned()),
            }),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

/// Where a pod's work stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Still working.
    Working,
    /// Done; when its last container finished, if the pod says.
    Succeeded(Option<Timestamp>),
    /// Failed, or will not finish: a short reason and the runtime's or registry's words.
    Failed {
        /// `ErrImagePull`, `ImagePullBackOff`, `DeadlineExceeded`, `Error`, ...
        reason: String,
        /// What was said.
        message: String,
    },
}

/// Waiting reasons that mean a container will not start without someone changing something.
const STUCK_REASONS: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// One image cache pod, read.
#[derive(Clone, Debug)]
pub(super) struct PodView {
    /// Pod name.
    pub name: String,
    /// The node it works on.
    pub node: String,
    /// The image it pulls or deletes.
    pub image: String,
    /// What it does.
    pub operation: Operation,
    /// Its attempt number (1 for the first).
    pub attempt: u32,
    /// Why the attempt before it failed.
    pub last_failure: Option<String>,
    /// When it was created.
    pub created: Timestamp,
    /// Where its work stands.
    pub verdict: Verdict,
}

impl PodView {
    /// Read `pod`, judging a pod still pending after `deadline` as failed; `None` for a pod this engine did not
    /// make (no node or image annotation).
    pub(super) fn read(pod: &Pod, now: Timestamp, deadline: Duration) -> Option<Self> {
        let annotations = pod.annotations();
        let image = annotations.get(IMAGE_ANNOTATION)?.clone();
        let node = annotations.get(NODE_ANNOTATION)?.clone();
        let operation = pod
            .labels()
            .get(OPERATION_LABEL)
            .and_then(|o| Operation::parse(o))?;
        let attempt = annotations
            .get(ATTEMPT_ANNOTATION)
            .and_then(|a| a.parse().ok())
            .unwrap_or(1);
        let created = pod
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(now, |t| t.0);
        Some(Self {
            name: pod.name_any(),
            node,
            image,
            operation,
            attempt,
            last_failure: annotations.get(LAST_FAILURE_ANNOTATION).cloned(),
            created,
            verdict: verdict(pod, now, created, deadline),
        })
    }
}

/// Whether a pod (of any image cache engine) is still working, for the in-flight bounds.
pub(super) fn in_flight(pod: &Pod, now: Timestamp, deadline: Duration) -> bool {
    let created = pod
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0);
    pod.metadata.deletion_timestamp.is_none()
        && verdict(pod, now, created, deadline) == Verdict::Working
}

/// The node a pod works on: the engine's annotation, else where it was bound.
pub(super) fn pod_node(pod: &Pod) -> Option<&str> {
    pod.annotations()
        .get(NODE_ANNOTATION)
        .map(String::as_str)
        .or_else(|| pod.spec.as_ref()?.node_name.as_deref())
}

fn verdict(pod: &Pod, now: Timestamp, created: Timestamp, deadline: Duration) -> Verdict {
    let status = pod.status.as_ref();
    let statuses: Vec<&ContainerStatus> = status
        .into_iter()
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        })
        .collect();
    match status.and_then(|s| s.phase.as_deref()) {
        Some("Succeeded") => {
            let finished = statuses
                .iter()
                .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
                .map(|t| t.0)
                .max();
            return Verdict::Succeeded(finished);
        }
        Some("Failed") => {
            let terminated = statuses
                .iter()
                .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
                .find(|t| t.exit_code != 0);
            let (reason, message) = match terminated {
                Some(t) => (
                    t.reason.clone().unwrap_or_else(|| "Error".to_owned()),
                    t.message
                        .clone()
                        .unwrap_or_else(|| format!("exited with code {}", t.exit_code)),
                ),
                None => (
                    status
                        .and_then(|s| s.reason.clone())
                        .unwrap_or_else(|| "Failed".to_owned()),
                    status.and_then(|s| s.message.clone()).unwrap_or_default(),
                ),
            };
            return Verdict::Failed { reason, message };
        }
        _ => {}
    }
    if let Some(waiting) = statuses
        .iter()
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref())
        .find(|w| STUCK_REASONS.contains(&w.reason.as_deref().unwrap_or_default()))
    {
        return Verdict::Failed {
            reason: waiting.reason.clone().unwrap_or_default(),
            message: waiting.message.clone().unwrap_or_default(),
        };
    }
    let age = now.duration_since(created);
    if age.is_positive() && age.unsigned_abs() > deadline {
        let phase = status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Pending".to_owned());
        return Verdict::Failed {
            reason: "DeadlineExceeded".to_owned(),
            message: format!(
                "not done within {} (pod still {phase})",
                humantime(deadline)
            ),
        };
    }
    Verdict::Working
}

/// `5m`, `90s`: a duration as a person reads it.
pub(super) fn humantime(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 && seconds.is_multiple_of(60) {
        format!("{}m", seconds / 60)
    } else {
        format!("{seconds}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::context::PodImages;

    fn cache() -> ImageCache {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubefledged.io/v1alpha2",
            "kind": "ImageCache",
            "metadata": {"name": "warm-web", "namespace": "caches", "uid": "u-1"},
            "spec": {"cacheSpec": [{"images": ["nginx:1.27"]}], "imagePullSecrets": [{"name": "key"}]},
        }))
        .expect("cache")
    }

    fn node() -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "worker-0", "labels": {"kubernetes.io/hostname": "worker-0"}},
            "status": {"nodeInfo": {"containerRuntimeVersion": "containerd://1.7.13", "architecture": "amd64",
                "bootID": "", "kernelVersion": "", "kubeProxyVersion": "", "kubeletVersion": "", "machineID": "",
                "operatingSystem": "linux", "osImage": "", "systemUUID": ""}},
        }))
        .expect("node")
    }

    #[test]
    fn names_are_fixed_short_and_distinct() {
        let long = "c".repeat(200);
        let name = pod_name(&long, "worker-0", "nginx:1.27", Operation::Pull, 12);
        assert!(name.len() <= 63, "{name}");
        assert_eq!(
            name,
            pod_name(&long, "worker-0", "nginx:1.27", Operation::Pull, 12)
        );
        let others = [
            pod_name(&long, "worker-1", "nginx:1.27", Operation::Pull, 12),
            pod_name(&long, "worker-0", "nginx:1.2", Operation::Pull, 12),
            pod_name(&long, "worker-0", "nginx:1.27", Operation::Refresh, 12),
            pod_name(&long, "worker-0", "nginx:1.27", Operation::Pull, 1),
        ];
        assert!(others.iter().all(|o| *o != name));
    }

    #[test]
    fn the_pull_pod_has_kube_fledged_shape() {
        let node = node();
        let work = Work {
            node: &node,
            image: "nginx:1.27",
            operation: Operation::Pull,
            attempt: 2,
            last_failure: Some("ErrImagePull: gone".to_owned()),
        };
        let pod = pod(&cache(), &work, &PodImages::default()).expect("pod");
        let labels = pod.labels();
        assert_eq!(labels["app"], "kubefledged");
        assert_eq!(labels["kubefledged"], "kubefledged-image-manager");
        assert_eq!(labels["controller"], "fledged");
        assert_eq!(labels["imagecache"], "warm-web");
        assert_eq!(labels[NODE_LABEL], "worker-0");
        assert_eq!(labels[IMAGE_HASH_LABEL], image_hash("nginx:1.27"));
        let spec = pod.spec.as_ref().expect("spec");
        let init = &spec.init_containers.as_ref().expect("init")[0];
        assert_eq!(init.image.as_deref(), Some("senthilrch/busybox:1.35.0"));
        assert_eq!(
            init.command.as_deref(),
            Some(&["cp".to_owned(), "/bin/echo".into(), "/tmp/bin".into()][..])
        );
        let main = &spec.containers[0];
        assert_eq!(main.image.as_deref(), Some("nginx:1.27"));
        assert_eq!(main.command.as_ref().expect("command")[0], "/tmp/bin/echo");
        assert_eq!(main.image_pull_policy.as_deref(), Some("IfNotPresent"));
        assert_eq!(
            spec.node_selector.as_ref().expect("selector")["kubernetes.io/hostname"],
            "worker-0"
        );
        assert_eq!(
            spec.image_pull_secrets.as_ref().expect("secrets")[0].name,
            "key"
        );
        assert_eq!(
            spec.tolerations.as_ref().expect("tolerations")[0]
                .operator
                .as_deref(),
            Some("Exists")
        );
        let view = PodView::read(&pod, Timestamp::now(), Duration::from_secs(300)).expect("view");
        assert_eq!((view.attempt, view.operation), (2, Operation::Pull));
        assert_eq!(view.last_failure.as_deref(), Some("ErrImagePull: gone"));
        assert_eq!(view.verdict, Verdict::Working);
    }

    #[test]
    fn the_delete_pod_runs_crictl_rmi_on_the_containerd_socket() {
        let node = node();
        let work = Work {
            node: &node,
            image: "nginx:1.27",
            operation: Operation::Delete,
            attempt: 1,
            last_failure: None,
        };
        let pod = pod(&cache(), &work, &PodImages::default()).expect("pod");
        assert_eq!(pod.labels()["controller"], "fledged");
        assert_eq!(pod.labels()["app"], "kubefledged");
        let container = &pod.spec.as_ref().expect("spec").containers[0];
        let command = container.command.as_ref().expect("command").join(" ");
        assert_eq!(
            command,
            "crictl --runtime-endpoint=unix:///run/containerd/containerd.sock \
             --image-endpoint=unix:///run/containerd/containerd.sock rmi nginx:1.27"
        );
    }

    fn with_status(status: serde_json::Value, age_secs: i64) -> Pod {
        let created = Timestamp::now() - jiff::SignedDuration::from_secs(age_secs);
        let mut pod = pod(
            &cache(),
            &Work {
                node: &node(),
                image: "nginx:1.27",
                operation: Operation::Pull,
                attempt: 1,
                last_failure: None,
            },
            &PodImages::default(),
        )
        .expect("pod");
        pod.metadata.creation_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(created),
        );
        pod.status = Some(serde_json::from_value(status).expect("status"));
        pod
    }

    #[test]
    fn pull_errors_and_deadlines_are_failures_with_reasons() {
        let deadline = Duration::from_secs(300);
        let stuck = with_status(
            serde_json::json!({"phase": "Pending", "containerStatuses": [{"name": "imagepuller", "image": "x",
                "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ErrImagePull", "message": "x: not found"}}}]}),
            5,
        );
        let view = PodView::read(&stuck, Timestamp::now(), deadline).expect("view");
        assert_eq!(
            view.verdict,
            Verdict::Failed {
                reason: "ErrImagePull".into(),
                message: "x: not found".into()
            }
        );
        let slow = with_status(serde_json::json!({"phase": "Pending"}), 301);
        let view = PodView::read(&slow, Timestamp::now(), deadline).expect("view");
        assert!(
            matches!(&view.verdict, Verdict::Failed { reason, message } if reason == "DeadlineExceeded" && message.contains("5m"))
        );
        let young = with_status(serde_json::json!({"phase": "Pending"}), 10);
        assert!(in_flight(&young, Timestamp::now(), deadline));
        let done = with_status(serde_json::json!({"phase": "Succeeded"}), 10);
        assert!(!in_flight(&done, Timestamp::now(), deadline));
    }
}
