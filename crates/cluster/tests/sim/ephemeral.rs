//! Ephemeral containers on a running pod, as `kubectl debug POD --image=… --target=…` adds them through kube-rs's
//! `patch_ephemeral_containers`: the simulated kubelet starts the container once, reports it in
//! `status.ephemeralContainerStatuses`, and its output is the log `kubectl logs POD -c debugger` reads.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::api::{Api, LogParams, Patch, PatchParams};
use serde_json::json;

use crate::common_kubelet::{ONE_WORKER as SCENARIO, container, pod, start};

/// The status of the pod's ephemeral container called `name`.
fn ephemeral_status<'a>(pod: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    pod.status
        .as_ref()?
        .ephemeral_container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)
}

#[tokio::test]
async fn a_debug_container_runs_once_and_leaves_its_log() {
    let sim = start(SCENARIO).await;
    sim.create_pod(pod(
        "app",
        "worker-0",
        json!({"name": "main", "image": "quay.io/org/app:1"}),
    ))
    .await;
    sim.pod_until("app", "its container runs", |p| {
        container(p, "main").is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
    })
    .await;
    let pods: Api<Pod> = sim.pods();
    let debugger = json!({"spec": {"ephemeralContainers": [{
        "name": "debugger", "image": "quay.io/org/app:1", "targetContainerName": "main",
        "command": ["echo", "debugging"], "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"
    }]}});
    pods.patch_ephemeral_containers("app", &PatchParams::default(), &Patch::Strategic(&debugger))
        .await
        .expect("the ephemeral container is added");

    let done = sim
        .pod_until("app", "the debug container has run", |p| {
            ephemeral_status(p, "debugger")
                .and_then(|c| c.state.as_ref()?.terminated.as_ref())
                .is_some()
        })
        .await;
    let terminated = ephemeral_status(&done, "debugger")
        .and_then(|c| c.state.clone()?.terminated)
        .expect("terminated");
    assert_eq!(terminated.exit_code, 0);
    assert!(
        container(&done, "main")
            .is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some())),
        "the pod's own container goes on running"
    );
    let logs = pods
        .logs(
            "app",
            &LogParams {
                container: Some("debugger".into()),
                ..LogParams::default()
            },
        )
        .await
        .expect("the debug container's log");
    assert_eq!(logs, "debugging\n");
    sim.stop().await;
}
