//! The Job controller of kube-controller-manager: pods run to completion.
//!
//! - A Job keeps up to `parallelism` (default 1) pods running until `completions` (default 1; an unset count is
//!   read as 1) of them have succeeded. Its pods are created with `generateName: <job>-`, owned by the Job, and
//!   labelled `batch.kubernetes.io/job-name` and `batch.kubernetes.io/controller-uid` (and the older `job-name` and
//!   `controller-uid`).
//! - Each failed pod counts; once more than `backoffLimit` (default 6) have failed the Job fails
//!   (`Failed=True`, reason `BackoffLimitExceeded`) and its running pods are deleted. A replacement is created at
//!   once (the exponential delay between retries is not simulated). With enough successes the Job is complete
//!   (`Complete=True`, `completionTime`). A suspended Job has its running pods deleted and starts none.
//! - Status: `active`, `ready`, `succeeded`, `failed`, `startTime`, the conditions, and events `SuccessfulCreate`,
//!   `SuccessfulDelete`, `Completed` and `BackoffLimitExceeded`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::replicas::is_ready;
use super::{controlled_by, controller_ref, params, patch_status_if_changed, record};
use crate::scheduler::events::Recorder;

/// How long a created pod may take to show in the pod cache before the controller stops counting it.
const EXPECTATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Pods created but not yet seen in the cache, by Job UID: counted as running, so a pass that runs before the pod
/// watch catches up does not create them twice.
#[derive(Default)]
pub struct Created(HashMap<String, Vec<(String, tokio::time::Instant)>>);

impl Created {
    /// How many pods created for the Job are still on their way (not among `owned`).
    fn unseen(&mut self, uid: &str, owned: &[&Arc<Pod>]) -> usize {
        let Some(created) = self.0.get_mut(uid) else {
            return 0;
        };
        created.retain(|(name, since)| {
            since.elapsed() <= EXPECTATION_TIMEOUT
                && !owned.iter().any(|p| p.metadata.name.as_ref() == Some(name))
        });
        created.len()
    }

    fn expect(&mut self, uid: &str, pod: String) {
        self.0
            .entry(uid.to_owned())
            .or_default()
            .push((pod, tokio::time::Instant::now()));
    }

    /// Forget the Jobs that are gone.
    pub fn retain(&mut self, uids: &std::collections::HashSet<String>) {
        self.0.retain(|uid, _| uids.contains(uid));
    }
}

/// Whether a Job controls the pod.
pub fn has_job_controller(pod: &Pod) -> bool {
    pod.owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.kind == "Job")
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.phase.as_deref())
}

/// Whether the Job has a true `Complete` or `Failed` condition: it is done, and nothing more happens to it.
fn is_finished(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        })
}

/// A pod of the Job's template, owned and labelled by it.
fn new_pod(job: &Job, uid: &str) -> Pod {
    let template = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let meta = template.metadata.unwrap_or_default();
    let mut labels: BTreeMap<String, String> = meta.labels.unwrap_or_default();
    for (key, value) in [
        ("batch.kubernetes.io/job-name", job.name_any()),
        ("job-name", job.name_any()),
        ("batch.kubernetes.io/controller-uid", uid.to_owned()),
        ("controller-uid", uid.to_owned()),
    ] {
        labels.insert(key.to_owned(), value);
    }
    Pod {
        metadata: kube::api::ObjectMeta {
            generate_name: Some(format!("{}-", job.name_any())),
            namespace: job.namespace(),
            labels: Some(labels),
            annotations: meta.annotations,
            owner_references: controller_ref(job).map(|r| vec![r]),
            ..Default::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// Run the Job's pods towards completion, and report.
pub async fn sync(
    client: &kube::Client,
    recorder: &Recorder,
    created: &mut Created,
    job: &Job,
    pods: &[Arc<Pod>],
) -> kube::Result<()> {
    let (Some(namespace), Some(uid), Some(spec)) = (job.namespace(), job.uid(), job.spec.as_ref())
    else {
        return Ok(());
    };
    if is_finished(job) {
        return Ok(());
    }
    let owned: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|p| controlled_by(p.meta(), &uid))
        .collect();
    let count = |wanted: &str| owned.iter().filter(|p| phase(p) == Some(wanted)).count();
    let succeeded = count("Succeeded");
    let failed = count("Failed");
    let active: Vec<&&Arc<Pod>> = owned
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| !matches!(phase(p), Some("Succeeded" | "Failed")))
        .collect();
    let completions = usize::try_from(spec.completions.unwrap_or(1)).unwrap_or(0);
    let parallelism = usize::try_from(spec.parallelism.unwrap_or(1)).unwrap_or(0);
    let backoff_limit = usize::try_from(spec.backoff_limit.unwrap_or(6)).unwrap_or(0);
    let now = jiff::Timestamp::now().to_string();
    let (finished, reason, message) = if succeeded >= completions {
        (Some("Complete"), "Completed", "Job completed".to_owned())
    } else if failed > backoff_limit {
        (
            Some("Failed"),
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit".to_owned(),
        )
    } else {
        (None, "", String::new())
    };
    let api = Api::<Pod>::namespaced(client.clone(), &namespace);
    let stop_all = finished.is_some() || spec.suspend == Some(true);
    let mut active_count = active.len();
    if stop_all {
        for pod in &active {
            match api.delete(&pod.name_any(), &DeleteParams::default()).await {
                Ok(_) => {
                    let message = format!("Deleted pod: {}", pod.name_any());
                    record(recorder, job, "SuccessfulDelete", &message).await;
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        active_count = 0;
    } else {
        let wanted = parallelism.min(completions.saturating_sub(succeeded));
        active_count += created.unseen(&uid, &owned);
        while active_count < wanted {
            let pod = api.create(&params(), &new_pod(job, &uid)).await?;
            let message = format!("Created pod: {}", pod.name_any());
            record(recorder, job, "SuccessfulCreate", &message).await;
            created.expect(&uid, pod.name_any());
            active_count += 1;
        }
    }
    let as_i32 = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let ready = if stop_all {
        0
    } else {
        active.iter().filter(|p| is_ready(p)).count()
    };
    let mut status = json!({
        "active": as_i32(active_count),
        "ready": as_i32(ready),
        "succeeded": as_i32(succeeded),
        "failed": as_i32(failed),
    });
    let old = serde_json::to_value(&job.status).unwrap_or(Value::Null);
    if old.get("startTime").is_none_or(Value::is_null) {
        status["startTime"] = json!(now);
    }
    if let Some(kind) = finished {
        status["conditions"] = json!([{
            "type": kind, "status": "True", "reason": reason, "message": message,
            "lastProbeTime": now, "lastTransitionTime": now,
        }]);
        if kind == "Complete" {
            status["completionTime"] = json!(now);
        }
    }
    if !patch_status_if_changed(client, job, &old, status).await? {
        return Ok(());
    }
    if finished.is_some() {
        record(recorder, job, reason, &message).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_carry_the_job_labels_and_owner() {
        let job: Job = serde_json::from_value(json!({
            "metadata": {"name": "backup", "namespace": "ns", "uid": "u1"},
            "spec": {"template": {"metadata": {"labels": {"app": "b"}}, "spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]
            }}}
        }))
        .expect("a Job");
        let pod = new_pod(&job, "u1");
        assert_eq!(pod.labels()["batch.kubernetes.io/job-name"], "backup");
        assert_eq!(pod.labels()["controller-uid"], "u1");
        assert_eq!(pod.labels()["app"], "b");
        assert!(has_job_controller(&pod));
        assert!(!is_finished(&job));
    }
}
