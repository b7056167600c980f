//! What no longer belongs to a node's NMC: `module-in-use` labels of modules with neither an entry, a status nor a
//! worker pod on the node (their absence lets a deleted Module finish), and worker pods of modules in neither the
//! spec nor the status. Both are keyed by namespace and name, so same-named Modules of two namespaces never count
//! for each other.

use std::collections::{BTreeMap, BTreeSet};

use super::ModuleKey;
use super::workers::Worker;
use kmm_api::kmm::labels;

/// The `module-in-use` labels among the NMC's `labels` that none of the `backed` modules accounts for.
pub(super) fn stale_in_use_labels<'l>(
    labels: &'l BTreeMap<String, String>,
    backed: &BTreeSet<ModuleKey>,
) -> Vec<&'l str> {
    let keep: BTreeSet<String> = backed
        .iter()
        .map(|m| labels::module_in_use(&m.namespace, &m.name))
        .collect();
    labels
        .keys()
        .filter(|key| is_in_use_label(key) && !keep.contains(*key))
        .map(String::as_str)
        .collect()
}

fn is_in_use_label(key: &str) -> bool {
    key.strip_prefix(labels::NMC_LABEL_PREFIX)
        .and_then(|body| body.strip_suffix(labels::MODULE_IN_USE_SUFFIX))
        .is_some_and(|body| body.contains('.'))
}

/// The workers whose module is not among the `wanted` ones.
pub(super) fn orphans<'w, 'p>(
    workers: impl IntoIterator<Item = &'w Worker<'p>>,
    wanted: &BTreeSet<ModuleKey>,
) -> Vec<&'w Worker<'p>>
where
    'p: 'w,
{
    workers
        .into_iter()
        .filter(|worker| !wanted.contains(&worker.key()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmm::nmc::template::{WorkerRequest, worker_pod};
    use crate::kmm::nmc::testing::spec_entry;

    #[test]
    fn in_use_labels_are_kept_only_for_backed_modules_of_the_same_namespace() {
        let labels: BTreeMap<String, String> = [
            labels::module_in_use("a", "m"),
            labels::module_in_use("b", "m"),
            labels::module_configured("b", "m"),
            "kubernetes.io/hostname".to_owned(),
        ]
        .into_iter()
        .map(|k| (k, String::new()))
        .collect();
        let backed = BTreeSet::from([ModuleKey::new("a", "m")]);
        assert_eq!(
            stale_in_use_labels(&labels, &backed),
            [labels::module_in_use("b", "m")]
        );
    }

    #[test]
    fn orphans_are_workers_of_unwanted_modules_by_namespace_too() {
        let pods: Vec<_> = [("a", "m"), ("b", "m")]
            .iter()
            .map(|(ns, name)| {
                worker_pod("n", "w", &WorkerRequest::load(&spec_entry(ns, name, "i"))).expect("pod")
            })
            .collect();
        let workers: Vec<Worker> = pods.iter().filter_map(Worker::read).collect();
        let wanted = BTreeSet::from([ModuleKey::new("a", "m")]);
        let orphans = orphans(&workers, &wanted);
        assert_eq!(orphans.len(), 1);
        assert_eq!(orphans[0].key(), ModuleKey::new("b", "m"));
    }
}
