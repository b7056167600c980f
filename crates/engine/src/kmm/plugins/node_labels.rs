//! The two node labels of a Module's device plugin or DRA driver: `…-target` on the nodes the workload may run on,
//! and `…-ready` on the nodes where it runs and is ready. Both are decided from the caches and written only where a
//! node's label differs.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;
use kube::api::{Api, Patch};
use serde_json::json;

use super::Role;
use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::nodes;
use crate::runtime::writes::patch_params;
use kmm_api::errors::is_not_found;
use kmm_api::kmm::Module;
use kmm_api::kmm::labels;

/// Whether the device plugin or DRA driver of `module` may run on `node`: the Module selects it, it is not cordoned, and no taint
/// keeps the Module's pods out (with the pressure taints the engine always tolerates). A cordoned or newly tainted
/// node loses the label, so the workload leaves it before a drain.
pub(super) fn is_target(module: &Module, node: &Node) -> bool {
    let cordoned = node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
    let tolerations = nodes::with_internal_tolerations(&module.spec.tolerations);
    nodes::matches_selector(node, &module.spec.selector)
        && !cordoned
        && nodes::blocking_taint(node, &tolerations).is_none()
}

/// Whether the pod is one of the Module's pods of `role`, alive and ready.
fn is_ready_plugin(pod: &Pod, namespace: &str, module: &str, role: Role) -> bool {
    let labels = pod.labels();
    pod.namespace().as_deref() == Some(namespace)
        && labels.get(labels::MODULE_NAME).map(String::as_str) == Some(module)
        && labels.get(labels::DAEMONSET_ROLE).map(String::as_str) == Some(role.label_value())
        && pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The nodes where a ready pod of the Module's `role` workload runs.
pub(super) fn ready_nodes(
    pods: &[Arc<Pod>],
    namespace: &str,
    module: &str,
    role: Role,
) -> BTreeSet<String> {
    pods.iter()
        .filter(|p| is_ready_plugin(p, namespace, module, role))
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .collect()
}

/// Give `label` (with an empty value) to exactly the nodes in `wanted`, among `all`; returns how many nodes carry it.
pub(super) async fn keep_label(
    client: &kube::Client,
    all: &[Arc<Node>],
    label: &str,
    wanted: impl Fn(&Node) -> bool,
) -> Result<usize, Error> {
    let mut carrying = 0;
    for node in all {
        let want = wanted(node);
        carrying += usize::from(want);
        if node.labels().contains_key(label) != want {
            set_label(client, &node.name_any(), label, want).await?;
        }
    }
    Ok(carrying)
}

/// Add or remove one label of one node; a node that is gone needs nothing.
pub(super) async fn set_label(
    client: &kube::Client,
    node: &str,
    label: &str,
    present: bool,
) -> Result<(), Error> {
    let value = if present { json!("") } else { json!(null) };
    let patch = json!({"metadata": {"labels": {label: value}}});
    match Api::<Node>::all(client.clone())
        .patch(node, &patch_params(), &Patch::Merge(&patch))
        .await
    {
        Err(error) if is_not_found(&error) => Ok(()),
        result => result
            .map(drop)
            .doing(|| format!("setting label {label} of node {node}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module() -> Module {
        serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": "gpu", "namespace": "acme"},
            "spec": {"selector": {"gpu": "yes"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]},
        }))
        .expect("a Module")
    }

    fn node(labels: serde_json::Value, spec: serde_json::Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": "n", "labels": labels}, "spec": spec}))
            .expect("a node")
    }

    #[test]
    fn targets_are_selected_uncordoned_and_tolerated() {
        let module = module();
        assert!(is_target(&module, &node(json!({"gpu": "yes"}), json!({}))));
        assert!(!is_target(&module, &node(json!({"gpu": "no"}), json!({}))));
        assert!(!is_target(
            &module,
            &node(json!({"gpu": "yes"}), json!({"unschedulable": true}))
        ));
        let tolerated = json!({"taints": [{"key": "dedicated", "effect": "NoSchedule"}]});
        assert!(is_target(&module, &node(json!({"gpu": "yes"}), tolerated)));
        let foreign = json!({"taints": [{"key": "other", "effect": "NoExecute"}]});
        assert!(!is_target(&module, &node(json!({"gpu": "yes"}), foreign)));
    }

    #[test]
    fn ready_nodes_count_only_ready_live_pods_of_the_module_and_role() {
        let pod = |name: &str, module: &str, ready: &str, deleting: bool| -> Arc<Pod> {
            let role = if name == "e" {
                labels::DRA_ROLE
            } else {
                labels::DEVICE_PLUGIN_ROLE
            };
            Arc::new(
                serde_json::from_value(json!({
                    "metadata": {
                        "name": name, "namespace": "acme",
                        "labels": {labels::MODULE_NAME: module, labels::DAEMONSET_ROLE: role},
                        "deletionTimestamp": deleting.then_some("2026-01-01T00:00:00Z"),
                    },
                    "spec": {"nodeName": name, "containers": []},
                    "status": {"conditions": [{"type": "Ready", "status": ready}]},
                }))
                .expect("a pod"),
            )
        };
        let pods = [
            pod("a", "gpu", "True", false),
            pod("b", "gpu", "False", false),
            pod("c", "gpu", "True", true),
            pod("d", "other", "True", false),
            pod("e", "gpu", "True", false),
        ];
        assert_eq!(
            ready_nodes(&pods, "acme", "gpu", Role::DevicePlugin),
            BTreeSet::from(["a".to_owned()])
        );
        assert_eq!(
            ready_nodes(&pods, "acme", "gpu", Role::Dra),
            BTreeSet::from(["e".to_owned()])
        );
    }
}
