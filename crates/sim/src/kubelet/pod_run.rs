//! A pod the kubelet runs, and the status bookkeeping every stage of running it shares (the worker's
//! container lifecycle, the image pulls).

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Container, Pod, PodStatus};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::events::PodEvents;
use super::status::{PodState, Which};
use super::{Kubelet, locked};

/// A pod the kubelet runs.
pub(super) struct PodRun {
    /// The kubelet running it.
    pub(super) kubelet: Arc<Kubelet>,
    /// The pod as it was bound (its spec does not change).
    pub(super) pod: Pod,
    /// The node it is bound to.
    pub(super) node: String,
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: String,
    /// What the kubelet knows of it; the source of every status it writes.
    pub(super) state: Mutex<PodState>,
    /// Its events.
    pub(super) events: PodEvents,
    /// The status last written, so that only changes are written.
    pub(super) last_written: tokio::sync::Mutex<Option<PodStatus>>,
}

impl PodRun {
    /// The spec of a container.
    pub(super) fn container(&self, which: Which) -> Option<&Container> {
        let spec = self.pod.spec.as_ref()?;
        if which.init {
            spec.init_containers.as_ref()?.get(which.index)
        } else {
            spec.containers.get(which.index)
        }
    }

    /// Change a container's status.
    pub(super) fn update(
        &self,
        which: Which,
        change: impl FnOnce(&mut k8s_openapi::api::core::v1::ContainerStatus),
    ) {
        if let Some(status) = locked(&self.state).container(which) {
            change(status);
        }
    }

    /// Write the pod's status if it says something new.
    pub(super) async fn report(&self) {
        let mut last = self.last_written.lock().await;
        let status = locked(&self.state).status();
        if last.as_ref() == Some(&status) {
            return;
        }
        let api: Api<Pod> = Api::namespaced(self.kubelet.world.client.clone(), &self.namespace);
        match api
            .patch_status(
                &self.name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
        {
            Ok(_) => *last = Some(status),
            Err(e) => tracing::debug!(pod = %self.name, error = %e, "writing pod status"),
        }
    }
}
