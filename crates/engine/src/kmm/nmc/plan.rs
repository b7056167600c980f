//! What one module needs next on one node, from its NMC spec entry, its status entry, its worker pod and the node:
//! the decision table of the reconciler, kept free of I/O so that every row is tested.

use k8s_openapi::api::core::v1::Node;

use super::template::WorkerAction;
use super::workers::Worker;
use crate::{kmm::kernel, runtime::nodes};
use kmm_api::kmm::{NodeModuleSpec, NodeModuleStatus};

/// The next step for one module on one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Nothing to do now: in sync, or a worker is under way.
    Wait,
    /// Start a loader from the spec entry.
    Load,
    /// Start an unloader from the status entry.
    Unload,
    /// Delete the worker pod; the next pass decides afresh.
    Replace,
}

/// What the decisions need to know about the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct NodeFacts {
    /// Whether the node is `Ready`.
    pub ready: bool,
    /// The node's current boot.
    pub boot_id: Option<String>,
    /// The kernel the node runs now.
    pub kernel: Option<String>,
}

impl NodeFacts {
    /// The facts of `node`.
    pub(super) fn of(node: &Node) -> Self {
        Self {
            ready: nodes::is_ready(node),
            boot_id: kernel::node_boot_id(node).map(str::to_owned),
            kernel: kernel::node_kernel(node).map(str::to_owned),
        }
    }

    /// Whether the node says it runs a kernel other than the one `entry` was written for (a node that does not
    /// say which kernel it runs never does).
    fn runs_other_kernel_than(&self, entry: &NodeModuleSpec) -> bool {
        self.kernel
            .as_deref()
            .is_some_and(|kernel| kernel != entry.config.kernel_version)
    }
}

/// The next step for a module the NMC spec wants on the node. `loader_hash` is the hash of the loader the entry
/// makes now.
pub(super) fn for_configured(
    entry: &NodeModuleSpec,
    status: Option<&NodeModuleStatus>,
    worker: Option<&Worker>,
    node: &NodeFacts,
    loader_hash: &str,
) -> Next {
    if let Some(worker) = worker {
        let outdated_crash_loop = worker.action == WorkerAction::Load
            && worker.restarts() > 0
            && worker.hash() != Some(loader_hash);
        return if outdated_crash_loop {
            Next::Replace
        } else {
            Next::Wait
        };
    }
    let Some(config) = status.and_then(|s| s.config.as_ref()) else {
        // Nothing is loaded on this boot (a reboot takes the status entry with it, see `settle`). A loader waits
        // for the node to be Ready, and a node that rebooted into another kernel waits for its entry to be written
        // for that kernel (the entry changing starts the next pass): a loader from the entry as it stands would
        // load for the kernel the node left, and a second loader would follow as soon as the entry changes.
        return if node.ready && !node.runs_other_kernel_than(entry) {
            Next::Load
        } else {
            Next::Wait
        };
    };
    if config.kernel_version != entry.config.kernel_version {
        // The node runs another kernel now: the old module cannot be loaded there, so there is nothing to unload.
        Next::Load
    } else if *config != entry.config {
        Next::Unload
    } else {
        Next::Wait
    }
}

/// The next step for a module the node has loaded but the NMC spec no longer wants. `unloader_hash` is the hash of
/// the unloader the status entry makes now (`None` when it records no configuration).
pub(super) fn for_unconfigured(
    status: &NodeModuleStatus,
    worker: Option<&Worker>,
    unloader_hash: Option<&str>,
) -> Next {
    match worker {
        None if status.config.is_some() => Next::Unload,
        None => Next::Wait,
        Some(worker) if worker.action == WorkerAction::Load => Next::Replace,
        Some(worker) if worker.restarts() > 0 && worker.hash() != unloader_hash => Next::Replace,
        Some(_) => Next::Wait,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus};

    use super::*;
    use crate::kmm::nmc::template::{WORKER_CONTAINER, WorkerRequest, hash_of, worker_pod};
    use crate::kmm::nmc::testing::{spec_entry, status_entry};

    const BOOT: &str = "boot-1";

    fn node(ready: bool) -> NodeFacts {
        NodeFacts {
            ready,
            boot_id: Some(BOOT.into()),
            kernel: Some("5.14.0".into()),
        }
    }

    fn with_restarts(mut pod: Pod, restarts: i32) -> Pod {
        pod.status = Some(PodStatus {
            phase: Some("Running".into()),
            container_statuses: Some(vec![ContainerStatus {
                name: WORKER_CONTAINER.into(),
                restart_count: restarts,
                ..Default::default()
            }]),
            ..Default::default()
        });
        pod
    }

    fn loader(entry: &NodeModuleSpec, restarts: i32) -> Pod {
        with_restarts(
            worker_pod("n", "w", &WorkerRequest::load(entry)).expect("pod"),
            restarts,
        )
    }

    fn hash(pod: &Pod) -> String {
        hash_of(pod).expect("hash").to_owned()
    }

    #[test]
    fn without_pod_the_status_decides() {
        let entry = spec_entry("ns", "a", "img:2");
        let current = hash(&loader(&entry, 0));
        let decide = |status: Option<&NodeModuleStatus>, ready: bool| {
            for_configured(&entry, status, None, &node(ready), &current)
        };
        assert_eq!(decide(None, true), Next::Load, "never loaded");
        let same = status_entry("ns", "a", "img:2", BOOT);
        assert_eq!(decide(Some(&same), true), Next::Wait, "in sync");
        let older = status_entry("ns", "a", "img:1", BOOT);
        assert_eq!(decide(Some(&older), true), Next::Unload, "unload first");
        let mut other_kernel = older.clone();
        if let Some(c) = other_kernel.config.as_mut() {
            c.kernel_version = "6.0.0".into();
        }
        assert_eq!(decide(Some(&other_kernel), true), Next::Load, "upgraded");
        let upgraded_node = NodeFacts {
            kernel: Some("6.0.0".into()),
            ..node(true)
        };
        assert_eq!(
            for_configured(&entry, None, None, &upgraded_node, &current),
            Next::Wait,
            "a node rebooted into another kernel waits for an entry for that kernel"
        );
        assert_eq!(
            decide(None, false),
            Next::Wait,
            "a node that is not Ready gets no loader"
        );
        let unknown = NodeModuleStatus {
            config: None,
            ..same
        };
        assert_eq!(decide(Some(&unknown), true), Next::Load);
    }

    #[test]
    fn a_loader_is_replaced_only_when_it_crash_loops_on_an_outdated_template() {
        let old = spec_entry("ns", "a", "img:1");
        let new = spec_entry("ns", "a", "img:2");
        let current = hash(&loader(&new, 0));
        let decide = |pod: &Pod| {
            let worker = Worker::read(pod).expect("worker");
            for_configured(&new, None, Some(&worker), &node(true), &current)
        };
        assert_eq!(decide(&loader(&old, 0)), Next::Wait, "not failing yet");
        assert_eq!(decide(&loader(&old, 3)), Next::Replace);
        assert_eq!(decide(&loader(&new, 3)), Next::Wait, "same template");
        let status = status_entry("ns", "a", "img:1", BOOT);
        let unloader = with_restarts(
            worker_pod("n", "w", &WorkerRequest::unload(&status).expect("unload")).expect("pod"),
            3,
        );
        assert_eq!(decide(&unloader), Next::Wait, "an unloader finishes first");
    }

    #[test]
    fn an_unconfigured_module_is_unloaded_and_its_loader_stopped() {
        let status = status_entry("ns", "a", "img:1", BOOT);
        let unloader =
            worker_pod("n", "w", &WorkerRequest::unload(&status).expect("u")).expect("p");
        let current = hash(&unloader);
        assert_eq!(
            for_unconfigured(&status, None, Some(&current)),
            Next::Unload
        );
        let load = loader(&spec_entry("ns", "a", "img:1"), 0);
        let worker = Worker::read(&load).expect("worker");
        assert_eq!(
            for_unconfigured(&status, Some(&worker), Some(&current)),
            Next::Replace
        );
        let failing = with_restarts(unloader.clone(), 2);
        let worker = Worker::read(&failing).expect("worker");
        assert_eq!(
            for_unconfigured(&status, Some(&worker), Some(&current)),
            Next::Wait
        );
        assert_eq!(
            for_unconfigured(&status, Some(&worker), Some("0000000000000000")),
            Next::Replace
        );
        let nothing_known = NodeModuleStatus {
            config: None,
            ..status
        };
        assert_eq!(for_unconfigured(&nothing_known, None, None), Next::Wait);
    }
}
