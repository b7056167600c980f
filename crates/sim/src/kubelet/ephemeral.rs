//! Ephemeral containers, which `kubectl debug` adds to a running pod: the kubelet starts each one once, beside the
//! pod's own containers, runs it as any container runs (its command in the simulated shell, or as the node effects
//! decide),
//! reports it in `status.ephemeralContainerStatuses` and its output in the pod's logs, and never restarts it.

use std::future::pending;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, EphemeralContainer, Pod};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Kubelet, ids, locked, process, status};
use crate::effects::{self, ContainerRun};

/// Start the ephemeral containers of `pod` (running on `node`) not started yet; they stop when `killed` is.
pub(super) fn start_new(kubelet: &Arc<Kubelet>, pod: &Pod, node: &str, killed: &CancellationToken) {
    let Some(uid) = pod.metadata.uid.clone() else {
        return;
    };
    let listed = pod
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.clone())
        .unwrap_or_default();
    let reported = pod
        .status
        .as_ref()
        .and_then(|s| s.ephemeral_container_statuses.clone())
        .unwrap_or_default();
    let mut started = locked(&kubelet.ephemeral);
    let started = started.entry(uid).or_default();
    for container in listed {
        let name = container.name.clone();
        // A container the API already reports was started before the simulation restarted: it is not run again.
        if reported.iter().any(|s| s.name == name) || !started.insert(name) {
            continue;
        }
        tokio::spawn(run(
            kubelet.clone(),
            pod.clone(),
            node.to_owned(),
            container,
            killed.clone(),
        ));
    }
}

/// The pod is gone: forget which of its ephemeral containers were started.
pub(super) fn forget(kubelet: &Kubelet, uid: &str) {
    locked(&kubelet.ephemeral).remove(uid);
}

/// Run one ephemeral container to its end, or until the pod is deleted or the simulation stops.
async fn run(
    kubelet: Arc<Kubelet>,
    pod: Pod,
    node: String,
    ephemeral: EphemeralContainer,
    killed: CancellationToken,
) {
    let world = kubelet.world.clone();
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    // The container's fields are a container's; the target it debugs plays no part in running it.
    let Ok(container) =
        serde_json::to_value(&ephemeral).and_then(serde_json::from_value::<Container>)
    else {
        return;
    };
    let image = container.image.clone().unwrap_or_default();
    let mut state = ContainerStatus {
        name: container.name.clone(),
        image: image.clone(),
        ..ContainerStatus::default()
    };
    let id = format!(
        "containerd://{}",
        ids::hex(&[uid.as_str(), container.name.as_str(), "ephemeral"], 64)
    );
    let image_id = ids::image_digest(&image, world.registry.digest(&image).as_deref());
    status::start(&mut state, &id, &image_id);
    state.ready = false;
    world
        .server
        .logs()
        .container_started(&namespace, &pod_name, &container.name);
    report(&world.client, &namespace, &pod_name, &state).await;

    let in_use = kubelet.images_in_use(&node);
    let run = ContainerRun {
        node: &node,
        pod: &pod,
        container: &container,
        init: false,
        images_in_use: &in_use,
    };
    let pod_ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone());
    let (env, _registration, main_stdin) = process::start(process::Starting {
        kubelet: &kubelet,
        pod: &pod,
        node: &node,
        pod_ip,
        container: &container,
    })
    .await;
    let ran = async {
        if effects::runs_its_command(&world, &run) {
            return match process::argv(&world, &container, &env) {
                Some(argv) => {
                    process::run_main(&world, &pod, &container, &env, &argv, main_stdin).await
                }
                None => pending().await,
            };
        }
        match effects::plan(&world, &run).runs_for {
            Some(time) => world.clock.sleep(time).await,
            None => pending::<()>().await,
        }
        effects::finish(&world, &run)
    };
    let outcome = tokio::select! {
        outcome = ran => outcome,
        () = killed.cancelled() => return,
        () = world.stop.cancelled() => return,
    };
    let logs = world.server.logs();
    for line in &outcome.logs {
        let timestamp = jiff::Timestamp::now().to_string();
        logs.append(&namespace, &pod_name, &container.name, &timestamp, line);
    }
    logs.container_exited(&namespace, &pod_name, &container.name);
    status::terminate(
        &mut state,
        outcome.exit_code,
        &outcome.reason,
        outcome.message,
    );
    report(&world.client, &namespace, &pod_name, &state).await;
}

/// Write one ephemeral container's status into the pod's, beside the others' (the list has no merge key, so it is
/// written whole, as read just before).
async fn report(client: &kube::Client, namespace: &str, pod: &str, state: &ContainerStatus) {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let Ok(current) = api.get_status(pod).await else {
        return;
    };
    let mut statuses = current
        .status
        .and_then(|s| s.ephemeral_container_statuses)
        .unwrap_or_default();
    statuses.retain(|s| s.name != state.name);
    statuses.push(state.clone());
    let patch = json!({"status": {"ephemeralContainerStatuses": statuses}});
    if let Err(e) = api
        .patch_status(pod, &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        tracing::debug!(pod, error = %e, "writing an ephemeral container's status");
    }
}
