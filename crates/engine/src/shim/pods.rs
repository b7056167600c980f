//! The installer pods, in runtime-class-manager's shape: a privileged `downloader` init container that fetches the
//! archive into an `emptyDir` (`SHIM_NAME`, `SHIM_LOCATION`, `SHIM_SHA256`), and a privileged `provisioner` that runs
//! `install|uninstall -H /mnt/node-root -r <shim>` against the node's root filesystem (`RUNTIME_OPTIONS` carries
//! `containerdRuntimeOptions` as JSON). Plain pods pinned to their node with `nodeName`, as the KMM engine's
//! workers; `restartPolicy: Never`, so a failure stays visible until a person retries it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::artifact::Artifact;
use super::pod_names::pod_name;
use crate::runtime::context::PodImages;
use kmm_api::shim::Shim;
use kmm_api::shim::names::{self, Operation};

/// Where the node's root filesystem is mounted in the provisioner.
const HOST_ROOT: &str = "/mnt/node-root";

/// What an install pod carries besides its node.
pub(super) struct InstallSpec<'a> {
    /// The archive to download.
    pub artifact: &'a Artifact,
    /// The spec hash the pod installs.
    pub hash: &'a str,
    /// The rollout batch, for rolling rollouts.
    pub batch: Option<i32>,
}

/// The pod doing `operation` for `shim` on `node`; `install` is set for installs.
pub(super) fn pod(
    shim: &Shim,
    node: &str,
    operation: Operation,
    install: Option<InstallSpec<'_>>,
    images: &PodImages,
) -> Pod {
    let shim_name = shim.name_any();
    let name = pod_name(node, &shim_name, operation);
    let mut annotations = BTreeMap::from([
        (names::NODE_NAME.to_owned(), node.to_owned()),
        (names::SHIM_NAME.to_owned(), shim_name.clone()),
        (names::OPERATION.to_owned(), operation.as_str().to_owned()),
    ]);
    let mut init_containers = Vec::new();
    let mut provisioner_env = vec![json!({"name": "HOST_ROOT", "value": HOST_ROOT})];
    if let Some(install) = &install {
        annotations.insert(names::POD_SPEC_HASH.to_owned(), install.hash.to_owned());
        if let Some(batch) = install.batch {
            annotations.insert(names::POD_BATCH.to_owned(), batch.to_string());
        }
        let mut env = vec![
            json!({"name": "SHIM_NAME", "value": shim_name}),
            json!({"name": "SHIM_LOCATION", "value": install.artifact.location}),
        ];
        if let Some(sha) = &install.artifact.sha256 {
            env.push(json!({"name": "SHIM_SHA256", "value": sha}));
        }
        init_containers.push(json!({
            "name": "downloader",
            "image": images.shim_downloader,
            "securityContext": {"privileged": true},
            "env": env,
            "volumeMounts": [{"name": "shim-download", "mountPath": "/assets"}],
        }));
        if let Some(options) = shim
            .spec
            .containerd_runtime_options
            .as_ref()
            .filter(|o| !o.is_empty())
        {
            provisioner_env.push(json!({
                "name": "RUNTIME_OPTIONS",
                "value": serde_json::to_string(options).unwrap_or_default(),
            }));
        }
    }
    let owner = shim.controller_owner_ref(&());
    let value = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": names::INSTALLER_NAMESPACE,
            "labels": {
                names::SHIM_NAME: shim_name,
                names::OPERATION: operation.as_str(),
                names::JOB: "true",
            },
            "annotations": annotations,
            "ownerReferences": owner.into_iter().collect::<Vec<_>>(),
        },
        "spec": {
            "nodeName": node,
            "hostPID": true,
            "restartPolicy": "Never",
            // Pinned to a node the Shim targets: whatever keeps other pods away must not keep its runtime away.
            "tolerations": [{"operator": "Exists"}],
            "volumes": [
                {"name": "shim-download", "emptyDir": {}},
                {"name": "root-mount", "hostPath": {"path": "/"}},
            ],
            "initContainers": init_containers,
            "containers": [{
                "name": "provisioner",
                "image": images.shim_installer,
                "args": [operation.as_str(), "-H", HOST_ROOT, "-r", shim.name_any()],
                "securityContext": {"privileged": true},
                "env": provisioner_env,
                "volumeMounts": [
                    {"name": "root-mount", "mountPath": HOST_ROOT},
                    {"name": "shim-download", "mountPath": "/assets"},
                ],
            }],
        },
    });
    serde_json::from_value(value).expect("the installer pod is a valid Pod")
}

/// The node an installer pod works on.
pub(super) fn node_of(pod: &Pod) -> Option<&str> {
    pod.annotations()
        .get(names::NODE_NAME)
        .map(String::as_str)
        .or_else(|| pod.spec.as_ref()?.node_name.as_deref())
}

/// The operation of an installer pod.
pub(super) fn operation_of(pod: &Pod) -> Option<Operation> {
    Operation::parse(pod.labels().get(names::OPERATION)?)
}

/// The spec hash an install pod installs.
pub(super) fn hash_of(pod: &Pod) -> Option<&str> {
    pod.annotations()
        .get(names::POD_SPEC_HASH)
        .map(String::as_str)
}

/// The batch of an install pod.
pub(super) fn batch_of(pod: &Pod) -> Option<i32> {
    pod.annotations().get(names::POD_BATCH)?.parse().ok()
}

/// How far an installer pod got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Not finished: it counts against `maxUpdate`.
    Running,
    /// Finished with success.
    Succeeded,
    /// Finished with a failure, and what the failing container said.
    Failed(String),
}

/// The phase of an installer pod.
pub(super) fn phase(pod: &Pod) -> Phase {
    let status = pod.status.as_ref();
    match status.and_then(|s| s.phase.as_deref()) {
        Some("Succeeded") => Phase::Succeeded,
        Some("Failed") => Phase::Failed(failure_message(pod)),
        _ => Phase::Running,
    }
}

/// What a failed pod's failing container said last, or how it ended.
fn failure_message(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let containers = status
        .into_iter()
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        })
        .collect::<Vec<&ContainerStatus>>();
    containers
        .iter()
        .find_map(|c| {
            let terminated = c.state.as_ref()?.terminated.as_ref()?;
            (terminated.exit_code != 0).then(|| {
                let said = terminated
                    .message
                    .as_deref()
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned)
                    .or_else(|| terminated.reason.clone())
                    .unwrap_or_else(|| format!("exit code {}", terminated.exit_code));
                format!("{}: {said}", c.name)
            })
        })
        .or_else(|| status.and_then(|s| s.message.clone()))
        .unwrap_or_else(|| "the installer pod failed".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shim() -> Shim {
        serde_json::from_value(json!({
            "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
            "metadata": {"name": "spin-v2", "uid": "u1"},
            "spec": {
                "fetchStrategy": {"anonHttp": {"location": "https://x/spin.tgz"}},
                "runtimeClass": {"name": "wasmtime-spin-v2", "handler": "spin-v2"},
                "rolloutStrategy": {"type": "recreate"},
                "containerdRuntimeOptions": {"SystemdCgroup": "true"},
            },
        }))
        .expect("a Shim")
    }

    #[test]
    fn an_install_pod_has_upstreams_shape() {
        let artifact = Artifact {
            location: "https://x/spin.tgz".to_owned(),
            sha256: Some("ab".to_owned()),
        };
        let pod = pod(
            &shim(),
            "worker-0",
            Operation::Install,
            Some(InstallSpec {
                artifact: &artifact,
                hash: "h1",
                batch: Some(2),
            }),
            &PodImages::default(),
        );
        let value = serde_json::to_value(&pod).expect("json");
        assert_eq!(value["metadata"]["name"], "worker-0-spin-v2-install");
        assert_eq!(value["spec"]["nodeName"], "worker-0");
        let init = &value["spec"]["initContainers"][0];
        assert_eq!(
            init["env"][1],
            json!({"name": "SHIM_LOCATION", "value": "https://x/spin.tgz"})
        );
        assert_eq!(
            init["env"][2],
            json!({"name": "SHIM_SHA256", "value": "ab"})
        );
        let main = &value["spec"]["containers"][0];
        assert_eq!(
            main["args"],
            json!(["install", "-H", "/mnt/node-root", "-r", "spin-v2"])
        );
        assert_eq!(main["securityContext"]["privileged"], true);
        assert_eq!(main["env"][1]["value"], r#"{"SystemdCgroup":"true"}"#);
        assert_eq!(value["metadata"]["ownerReferences"][0]["name"], "spin-v2");
        assert_eq!(hash_of(&pod), Some("h1"));
        assert_eq!(batch_of(&pod), Some(2));
        assert_eq!(node_of(&pod), Some("worker-0"));
        assert_eq!(operation_of(&pod), Some(Operation::Install));
    }

    #[test]
    fn a_failed_pod_says_which_container_failed_and_why() {
        let failed: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "status": {"phase": "Failed",
                "initContainerStatuses": [{"name": "downloader", "ready": false, "restartCount": 0, "image": "", "imageID": "",
                    "state": {"terminated": {"exitCode": 1, "message": "curl: (22) The requested URL returned error: 404"}}}]},
        }))
        .expect("a pod");
        assert_eq!(
            phase(&failed),
            Phase::Failed(
                "downloader: curl: (22) The requested URL returned error: 404".to_owned()
            )
        );
    }
}
