//! The StatefulSet controller of kube-controller-manager, simplified: a StatefulSet of `n` replicas gets pods named
//! `<set>-0` to `<set>-<n-1>`, each with a stable name and hostname.
//!
//! - With the default `OrderedReady` policy a pod is created only once every lower ordinal is running and ready,
//!   and scaling down deletes the highest ordinal first, one at a time; with `Parallel` all are created or deleted
//!   at once.
//! - A pod that failed or succeeded is deleted, and created again under the same name on a later pass.
//! - Pods carry the template's labels plus `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`,
//!   and the `hostname` and `subdomain` (the set's `serviceName`) that give them stable DNS names.
//! - A new template is not rolled out to existing pods: pods deleted after the change are created from it.
//! - Status: `replicas`, `readyReplicas`, `availableReplicas`, `currentReplicas`, `updatedReplicas` and
//!   `observedGeneration`; events `SuccessfulCreate` and `SuccessfulDelete`.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::replicas::{is_active, is_ready};
use super::{controlled_by, controller_ref, params, patch_status_if_changed, record};
use crate::scheduler::events::Recorder;

/// The label naming a StatefulSet pod, which a per-pod Service can select.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label carrying a StatefulSet pod's ordinal.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// Whether a StatefulSet controls the pod (only those pods wake this controller).
pub fn has_stateful_controller(pod: &Pod) -> bool {
    pod.owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.kind == "StatefulSet")
}

/// Bring the set's pods to its ordinals, one step at a time unless it is `Parallel`, and report.
pub async fn sync(
    client: &kube::Client,
    recorder: &Recorder,
    set: &StatefulSet,
    pods: &[Arc<Pod>],
) -> kube::Result<()> {
    let (Some(namespace), Some(uid), Some(spec)) = (set.namespace(), set.uid(), set.spec.as_ref())
    else {
        return Ok(());
    };
    let name = set.name_any();
    let desired = usize::try_from(spec.replicas.unwrap_or(1)).unwrap_or(0);
    let parallel = spec.pod_management_policy.as_deref() == Some("Parallel");
    let prefix = format!("{name}-");
    let owned: BTreeMap<usize, &Arc<Pod>> = pods
        .iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|p| controlled_by(p.meta(), &uid))
        .filter_map(|p| {
            let ordinal = p.name_any().strip_prefix(&prefix)?.parse().ok()?;
            Some((ordinal, p))
        })
        .collect();
    let api = Api::<Pod>::namespaced(client.clone(), &namespace);
    for ordinal in 0..desired {
        match owned.get(&ordinal) {
            Some(pod) if is_active(pod) => {
                if !parallel && !is_ready(pod) {
                    break;
                }
            }
            Some(pod) => {
                if pod.metadata.deletion_timestamp.is_none() {
                    delete(&api, recorder, set, &pod.name_any()).await?;
                }
                if !parallel {
                    break;
                }
            }
            None => {
                match api.create(&params(), &new_pod(set, ordinal)).await {
                    Ok(created) => {
                        let message = format!(
                            "create Pod {} in StatefulSet {name} successful",
                            created.name_any()
                        );
                        record(recorder, set, "SuccessfulCreate", &message).await;
                    }
                    Err(kube::Error::Api(status)) if status.code == 409 => {}
                    Err(error) => return Err(error),
                }
                if !parallel {
                    break;
                }
            }
        }
    }
    let excess: Vec<&&Arc<Pod>> = owned
        .range(desired..)
        .rev()
        .map(|(_, pod)| pod)
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .collect();
    for pod in excess.iter().take(if parallel { excess.len() } else { 1 }) {
        delete(&api, recorder, set, &pod.name_any()).await?;
    }
    let active: Vec<&&Arc<Pod>> = owned.values().filter(|p| is_active(p)).collect();
    let replicas = i32::try_from(active.len()).unwrap_or(i32::MAX);
    let ready = i32::try_from(active.iter().filter(|p| is_ready(p)).count()).unwrap_or(0);
    let status = json!({
        "replicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "currentReplicas": replicas,
        "updatedReplicas": replicas,
        "observedGeneration": set.metadata.generation,
    });
    let old = serde_json::to_value(&set.status).unwrap_or(Value::Null);
    patch_status_if_changed(client, set, &old, status)
        .await
        .map(drop)
}

async fn delete(
    api: &Api<Pod>,
    recorder: &Recorder,
    set: &StatefulSet,
    pod: &str,
) -> kube::Result<()> {
    match api.delete(pod, &DeleteParams::default()).await {
        Ok(_) => {
            let message = format!(
                "delete Pod {pod} in StatefulSet {} successful",
                set.name_any()
            );
            record(recorder, set, "SuccessfulDelete", &message).await;
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// The set's pod of one ordinal, from its template.
fn new_pod(set: &StatefulSet, ordinal: usize) -> Pod {
    let spec = set.spec.clone().unwrap_or_default();
    let template = spec.template;
    let template_meta = template.metadata.unwrap_or_default();
    let name = format!("{}-{ordinal}", set.name_any());
    let mut labels = template_meta.labels.unwrap_or_default();
    labels.insert(POD_NAME_LABEL.to_owned(), name.clone());
    labels.insert(POD_INDEX_LABEL.to_owned(), ordinal.to_string());
    let mut pod_spec = template.spec.unwrap_or_default();
    pod_spec.hostname = Some(name.clone());
    pod_spec.subdomain = spec.service_name.filter(|s| !s.is_empty());
    Pod {
        metadata: kube::api::ObjectMeta {
            name: Some(name),
            namespace: set.namespace(),
            labels: Some(labels),
            annotations: template_meta.annotations,
            owner_references: controller_ref(set).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(pod_spec),
        status: None,
    }
}
