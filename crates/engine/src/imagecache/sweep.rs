//! How a pass's finished pods leave: a rollout's pods end by the thousand, and one DELETE each would double the
//! engine's writes per (node, image). Succeeded pods whose image their node reports are removed by a
//! delete-collection per image and operation that names their nodes (`kmm-tui.io/node in (…)`) and selects only
//! succeeded pods, so it takes exactly the pods the pass decided on and never a pod still at work. A pod whose cache
//! or node name cannot be a label value carries no such label and is deleted by name.

use std::collections::{BTreeMap, BTreeSet};

use super::plan::Finished;
use super::pods::{Operation, image_hash};
use kmm_api::imagecache::names::{
    CACHE_LABEL, IMAGE_HASH_LABEL, MANAGER_LABEL, NODE_LABEL, OPERATION_LABEL,
};

/// Nodes named by one request: keeps the query string a few kilobytes long.
const NODES_PER_REQUEST: usize = 100;

/// The longest label value.
const LABEL_VALUE_MAX: usize = 63;

/// The field selector of every sweep: a pod that is not done is never taken.
pub(super) const SUCCEEDED: &str = "status.phase=Succeeded";

/// What removes the finished pods of one pass of `cache`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Sweep {
    /// Label selectors of delete-collection requests (each used with [`SUCCEEDED`]).
    pub selectors: Vec<String>,
    /// Pods deleted one by one.
    pub by_name: Vec<String>,
}

/// The requests that remove `finished` pods of `cache`.
pub(super) fn sweep(cache: &str, finished: &BTreeSet<Finished>) -> Sweep {
    let mut out = Sweep::default();
    let mut groups: BTreeMap<(&str, Operation), Vec<&str>> = BTreeMap::new();
    for pod in finished {
        if cache.len() > LABEL_VALUE_MAX || pod.node.len() > LABEL_VALUE_MAX {
            out.by_name.push(pod.name.clone());
        } else {
            groups
                .entry((&pod.image, pod.operation))
                .or_default()
                .push(&pod.node);
        }
    }
    for ((image, operation), mut nodes) in groups {
        nodes.dedup();
        for chunk in nodes.chunks(NODES_PER_REQUEST) {
            out.selectors.push(format!(
                "{}={},{CACHE_LABEL}={cache},{IMAGE_HASH_LABEL}={},{OPERATION_LABEL}={},{NODE_LABEL} in ({})",
                MANAGER_LABEL.0,
                MANAGER_LABEL.1,
                image_hash(image),
                operation.as_str(),
                chunk.join(",")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(image: &str, operation: Operation, node: &str) -> Finished {
        Finished {
            image: image.to_owned(),
            operation,
            node: node.to_owned(),
            name: format!("{node}-{}", operation.as_str()),
        }
    }

    #[test]
    fn one_request_per_image_and_operation_names_its_nodes() {
        let pods = BTreeSet::from([
            finished("nginx:1", Operation::Pull, "w-2"),
            finished("nginx:1", Operation::Pull, "w-1"),
            finished("nginx:1", Operation::Refresh, "w-3"),
            finished("redis:7", Operation::Pull, "w-1"),
        ]);
        let sweep = sweep("warm", &pods);
        assert!(sweep.by_name.is_empty());
        let nginx = image_hash("nginx:1");
        assert_eq!(
            sweep.selectors,
            [
                format!(
                    "kubefledged=kubefledged-image-manager,imagecache=warm,kmm-tui.io/image-hash={nginx},\
                     kmm-tui.io/cache-operation=pull,kmm-tui.io/node in (w-1,w-2)"
                ),
                format!(
                    "kubefledged=kubefledged-image-manager,imagecache=warm,kmm-tui.io/image-hash={nginx},\
                     kmm-tui.io/cache-operation=refresh,kmm-tui.io/node in (w-3)"
                ),
                format!(
                    "kubefledged=kubefledged-image-manager,imagecache=warm,kmm-tui.io/image-hash={},\
                     kmm-tui.io/cache-operation=pull,kmm-tui.io/node in (w-1)",
                    image_hash("redis:7")
                ),
            ]
        );
    }

    #[test]
    fn many_nodes_are_named_a_hundred_at_a_time() {
        let pods: BTreeSet<_> = (0..250)
            .map(|i| finished("nginx:1", Operation::Pull, &format!("w-{i:03}")))
            .collect();
        let sweep = sweep("warm", &pods);
        assert_eq!(sweep.selectors.len(), 3);
        assert!(sweep.selectors[0].contains("in (w-000,w-001,"));
        assert!(
            sweep.selectors[1].contains("in (w-100,") && sweep.selectors[1].ends_with(",w-199)")
        );
        assert!(
            sweep.selectors[2].contains("in (w-200,") && sweep.selectors[2].ends_with(",w-249)")
        );
    }

    #[test]
    fn names_too_long_for_a_label_are_deleted_by_name() {
        let long = "n".repeat(64);
        let pods = BTreeSet::from([finished("nginx:1", Operation::Pull, &long)]);
        assert_eq!(
            sweep("warm", &pods),
            Sweep {
                selectors: Vec::new(),
                by_name: vec![format!("{long}-pull")],
            }
        );
        let pods = BTreeSet::from([finished("nginx:1", Operation::Pull, "w-1")]);
        assert_eq!(sweep(&"c".repeat(64), &pods).by_name, ["w-1-pull"]);
    }
}
