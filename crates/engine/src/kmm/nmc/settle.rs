//! What finished worker pods proved, turned into the NMC status: a succeeded loader records the module as loaded
//! (with the node's boot, so a reboot shows it is gone), a succeeded unloader forgets it. The status is written
//! before any of these pods is deleted, so no outcome is ever lost.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Pod, Toleration};

use super::ModuleKey;
use super::template::WorkerAction;
use super::workers::Worker;
use kmm_api::kmm::labels;
use kmm_api::kmm::{ModuleConfig, NodeModuleSpec, NodeModuleStatus};

/// The status the worker pods prove, and the pods whose part is over.
#[derive(Debug, Default)]
pub(super) struct Settled<'p> {
    /// The NMC status entries, in their previous order, new ones last.
    pub modules: Vec<NodeModuleStatus>,
    /// Pods to remove once `modules` is written: succeeded or failed, or already being deleted.
    pub finished: Vec<&'p Pod>,
    /// Succeeded loaders whose annotations cannot be read, with why; they are removed too (when the module is
    /// still in the spec, a new loader built from it takes their place), and reported.
    pub unreadable: Vec<(&'p Pod, String)>,
}

/// Settle the `status` of an NMC with `spec` from its node's `workers`, on a node now in boot `boot_id`.
///
/// Status entries are dropped when the node has booted since they were recorded (the module went with the reboot,
/// and the status must not claim it loaded), and entries without a spec entry when they record no configuration
/// (there is nothing known to unload).
pub(super) fn settle<'p>(
    spec: &[NodeModuleSpec],
    status: &[NodeModuleStatus],
    workers: &[Worker<'p>],
    boot_id: Option<&str>,
) -> Settled<'p> {
    let mut settled = Settled {
        modules: status.to_vec(),
        ..Default::default()
    };
    for worker in workers {
        match (worker.phase(), worker.action) {
            ("Succeeded", WorkerAction::Load) => match loaded(worker, boot_id) {
                Ok(entry) => record(&mut settled.modules, entry),
                Err(why) => settled.unreadable.push((worker.pod, why)),
            },
            ("Succeeded", WorkerAction::Unload) => {
                let key = worker.key();
                settled.modules.retain(|m| ModuleKey::of_status(m) != key);
            }
            ("Failed", _) => {}
            _ if worker.is_terminating() => {}
            _ => continue,
        }
        settled.finished.push(worker.pod);
    }
    let configured: BTreeSet<ModuleKey> = spec.iter().map(ModuleKey::of_spec).collect();
    settled.modules.retain(|entry| {
        let this_boot = boot_id.is_none_or(|boot| entry.boot_id.as_deref() == Some(boot));
        this_boot && (entry.config.is_some() || configured.contains(&ModuleKey::of_status(entry)))
    });
    settled
}

/// The status entry a succeeded loader proves.
fn loaded(worker: &Worker, boot_id: Option<&str>) -> Result<NodeModuleStatus, String> {
    let config_text = worker
        .annotation(labels::WORKER_CONFIG)
        .ok_or_else(|| format!("it has no {} annotation", labels::WORKER_CONFIG))?;
    let config: ModuleConfig = serde_saphyr::from_str(config_text).map_err(|e| {
        format!(
            "its {} annotation is not a module config: {e}",
            labels::WORKER_CONFIG
        )
    })?;
    let tolerations: Vec<Toleration> = match worker
        .annotation(labels::WORKER_TOLERATIONS)
        .filter(|text| !text.trim().is_empty())
    {
        Some(text) => serde_saphyr::from_str(text).map_err(|e| {
            format!(
                "its {} annotation is not a list of tolerations: {e}",
                labels::WORKER_TOLERATIONS
            )
        })?,
        None => Vec::new(),
    };
    let key = worker.key();
    let spec = worker.pod.spec.as_ref();
    Ok(NodeModuleStatus {
        name: key.name,
        namespace: key.namespace,
        service_account_name: spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        image_repo_secret: spec
            .and_then(|s| s.image_pull_secrets.as_ref())
            .and_then(|secrets| secrets.first().cloned()),
        tolerations,
        version: worker
            .annotation(labels::WORKER_MODULE_VERSION)
            .map(str::to_owned),
        config: Some(config),
        boot_id: boot_id.map(str::to_owned),
    })
}

/// Replace the entry of the same module, or add it last.
fn record(modules: &mut Vec<NodeModuleStatus>, entry: NodeModuleStatus) {
    let key = ModuleKey::of_status(&entry);
    match modules.iter_mut().find(|m| ModuleKey::of_status(m) == key) {
        Some(existing) => *existing = entry,
        None => modules.push(entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmm::nmc::template::{WorkerRequest, worker_pod};
    use crate::kmm::nmc::testing::{spec_entry, status_entry};

    fn pod_in_phase(request: &WorkerRequest, phase: &str) -> Pod {
        let mut pod = worker_pod("n", "w", request).expect("pod");
        pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        });
        pod
    }

    fn workers(pods: &[Pod]) -> Vec<Worker<'_>> {
        pods.iter().filter_map(Worker::read).collect()
    }

    #[test]
    fn a_succeeded_loader_records_what_it_loaded_on_this_boot() {
        let entry = spec_entry("kmods", "a", "img:2");
        let pods = [pod_in_phase(&WorkerRequest::load(&entry), "Succeeded")];
        let old = status_entry("kmods", "a", "img:1", "boot-0");
        let settled = settle(
            std::slice::from_ref(&entry),
            &[old],
            &workers(&pods),
            Some("boot-1"),
        );
        assert_eq!(settled.finished.len(), 1);
        let [recorded] = settled.modules.as_slice() else {
            panic!("one entry: {:?}", settled.modules);
        };
        assert_eq!(recorded.config.as_ref(), Some(&entry.config));
        assert_eq!(recorded.boot_id.as_deref(), Some("boot-1"));
        assert_eq!(recorded.tolerations, entry.tolerations);
        assert_eq!(recorded.service_account_name, entry.service_account_name);
        assert_eq!(recorded.image_repo_secret, entry.image_repo_secret);
        assert_eq!(recorded.version, entry.version);
    }

    #[test]
    fn a_succeeded_unloader_forgets_and_a_failed_pod_changes_nothing() {
        let a = status_entry("kmods", "a", "img:1", "boot");
        let b = status_entry("kmods", "b", "img:1", "boot");
        let pods = [
            pod_in_phase(&WorkerRequest::unload(&a).expect("a"), "Succeeded"),
            pod_in_phase(&WorkerRequest::unload(&b).expect("b"), "Failed"),
        ];
        let settled = settle(&[], &[a, b.clone()], &workers(&pods), Some("boot"));
        assert_eq!(settled.modules, [b]);
        assert_eq!(settled.finished.len(), 2);
    }

    #[test]
    fn running_pods_wait_and_terminating_ones_are_let_go() {
        let entry = spec_entry("kmods", "a", "img:1");
        let mut pods = [
            pod_in_phase(&WorkerRequest::load(&entry), "Running"),
            pod_in_phase(&WorkerRequest::load(&entry), "Running"),
        ];
        pods[1].metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        let settled = settle(
            std::slice::from_ref(&entry),
            &[],
            &workers(&pods),
            Some("boot"),
        );
        assert!(settled.modules.is_empty());
        assert_eq!(settled.finished, [&pods[1]]);
    }

    #[test]
    fn an_unreadable_loader_is_reported_and_removed_never_recorded() {
        let entry = spec_entry("kmods", "a", "img:1");
        let mut pod = pod_in_phase(&WorkerRequest::load(&entry), "Succeeded");
        if let Some(a) = pod.metadata.annotations.as_mut() {
            a.insert(
                labels::WORKER_CONFIG.into(),
                "kernelVersion: [unclosed".into(),
            );
        }
        let pods = [pod];
        let settled = settle(&[entry], &[], &workers(&pods), Some("boot"));
        assert!(settled.modules.is_empty());
        assert_eq!(settled.finished.len(), 1);
        assert_eq!(settled.unreadable.len(), 1);
        assert!(
            settled.unreadable[0].1.contains(labels::WORKER_CONFIG),
            "{}",
            settled.unreadable[0].1
        );
    }

    #[test]
    fn every_entry_goes_with_a_reboot() {
        let configured = status_entry("kmods", "a", "img:1", "boot-0");
        let unconfigured = status_entry("kmods", "b", "img:1", "boot-0");
        let spec = [spec_entry("kmods", "a", "img:1")];
        let status = [configured.clone(), unconfigured.clone()];
        let same_boot = settle(&spec, &status, &[], Some("boot-0"));
        assert_eq!(same_boot.modules, status);
        let rebooted = settle(&spec, &status, &[], Some("boot-1"));
        assert!(rebooted.modules.is_empty(), "{:?}", rebooted.modules);
        let unknown_boot = settle(&spec, &status, &[], None);
        assert_eq!(unknown_boot.modules.len(), 2);
        let no_config = NodeModuleStatus {
            config: None,
            ..unconfigured
        };
        assert!(
            settle(&[], &[no_config], &[], Some("boot-0"))
                .modules
                .is_empty()
        );
    }
}
