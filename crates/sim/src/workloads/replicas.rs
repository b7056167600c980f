//! Keeping a number of pods from one template: what the ReplicaSet and ReplicationController controllers of
//! kube-controller-manager share. Both kinds are driven by the same pass ([`sync`]), told apart only by where their
//! count and template live ([`Replicated`]).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec, ReplicationController};
use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{controlled_by, controller_ref, params, record};
use crate::scheduler::events::Recorder;

/// A kind that keeps `replicas` pods of a template, and reports on them in its status.
pub(crate) trait Replicated:
    Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + std::fmt::Debug
{
    /// How many pods it wants (`spec.replicas`, 1 when unset).
    fn desired(&self) -> i32;
    /// The template of its pods.
    fn template(&self) -> PodTemplateSpec;
    /// Its status as JSON, to compare with what a pass would write.
    fn status_value(&self) -> Value;
}

/// Both kinds spell `replicas`, `template` and `status` alike, in types of their own.
macro_rules! replicated {
    ($($kind:ty),+) => {$(
        impl Replicated for $kind {
            fn desired(&self) -> i32 {
                self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
            }

            fn template(&self) -> PodTemplateSpec {
                self.spec
                    .as_ref()
                    .and_then(|s| s.template.clone())
                    .unwrap_or_default()
            }

            fn status_value(&self) -> Value {
                serde_json::to_value(&self.status).unwrap_or(Value::Null)
            }
        }
    )+};
}

replicated!(ReplicaSet, ReplicationController);

/// Whether a ReplicaSet or a ReplicationController controls the pod (only those pods are counted or replaced here).
pub(crate) fn has_replicating_controller(pod: &Pod) -> bool {
    pod.owner_references().iter().any(|r| {
        r.controller == Some(true)
            && matches!(r.kind.as_str(), "ReplicaSet" | "ReplicationController")
    })
}

/// Whether the pod counts toward its controller's replicas: not terminating, not finished.
pub(crate) fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// Whether the pod's `Ready` condition is true.
pub(crate) fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// Keep the owner's active pods at its desired count, and report.
pub(crate) async fn sync<K: Replicated>(
    client: &kube::Client,
    recorder: &Recorder,
    owner: &K,
    pods: &[Arc<Pod>],
) -> kube::Result<()> {
    let (Some(namespace), Some(uid)) = (owner.namespace(), owner.uid()) else {
        return Ok(());
    };
    let desired = usize::try_from(owner.desired()).unwrap_or(0);
    let mut active: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|p| controlled_by(p.meta(), &uid) && is_active(p))
        .collect();
    let api = Api::<Pod>::namespaced(client.clone(), &namespace);
    if active.len() < desired {
        let pod = new_pod(owner);
        for _ in active.len()..desired {
            let created = api.create(&params(), &pod).await?;
            let message = format!("Created pod: {}", created.name_any());
            record(recorder, owner, "SuccessfulCreate", &message).await;
        }
    } else if active.len() > desired {
        // Unscheduled, then not ready, then the newest go first.
        active.sort_by_key(|p| {
            let scheduled = p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
            (
                scheduled,
                is_ready(p),
                std::cmp::Reverse(p.creation_timestamp().map(|t| t.0)),
            )
        });
        for pod in &active[..active.len() - desired] {
            match api.delete(&pod.name_any(), &DeleteParams::default()).await {
                Ok(_) => {
                    let message = format!("Deleted pod: {}", pod.name_any());
                    record(recorder, owner, "SuccessfulDelete", &message).await;
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        active.drain(..active.len() - desired);
    }
    let replicas = i32::try_from(active.len()).unwrap_or(i32::MAX);
    let ready = i32::try_from(active.iter().filter(|p| is_ready(p)).count()).unwrap_or(0);
    let status = json!({
        "replicas": replicas,
        "fullyLabeledReplicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": owner.meta().generation,
    });
    let old = owner.status_value();
    super::patch_status_if_changed(client, owner, &old, status)
        .await
        .map(drop)
}

/// A pod of the owner's template, controlled by it.
fn new_pod<K: Replicated>(owner: &K) -> Pod {
    let template = owner.template();
    let template_meta = template.metadata.unwrap_or_default();
    Pod {
        metadata: kube::api::ObjectMeta {
            generate_name: Some(format!("{}-", owner.name_any())),
            namespace: owner.namespace(),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            owner_references: controller_ref(owner).map(|r| vec![r]),
            ..Default::default()
        },
        spec: template.spec,
        status: None,
    }
}
