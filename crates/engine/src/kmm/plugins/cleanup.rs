//! Taking a Module's device plugin or DRA driver away: when the Module is deleted (before its module is unloaded,
//! so nothing holds a device whose kernel driver goes) or stops asking for it. Read straight from the API, so it
//! works the same from the Module reconciler's finalizer and from the workload's own reconciler.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams};

use super::Role;
use super::node_labels::{ready_nodes, set_label};
use crate::runtime::context::{Error, KubeResultExt};
use kmm_api::errors::is_not_found;
use kmm_api::kmm::labels;

/// The selector of the Module's DaemonSets and pods of `role`.
fn plugin_selector(module: &str, role: Role) -> String {
    format!("{}={module},{}", labels::MODULE_NAME, role.selector())
}

/// Delete the Module's DaemonSets of `role` and take its target label off every node, and its ready label off
/// every node without a ready pod. Returns whether pods are still there (they stop once their DaemonSet is gone;
/// the caller looks again).
pub(crate) async fn remove(
    client: &kube::Client,
    namespace: &str,
    module: &str,
    role: Role,
) -> Result<bool, Error> {
    let noun = role.noun();
    let selector = ListParams::default().labels(&plugin_selector(module, role));
    let daemon_sets: Api<DaemonSet> = Api::namespaced(client.clone(), namespace);
    let existing = daemon_sets
        .list_metadata(&selector)
        .await
        .doing(|| format!("listing the {noun} DaemonSets of Module {namespace}/{module}"))?;
    for daemon_set in &existing.items {
        let name = daemon_set.name_any();
        match daemon_sets.delete(&name, &DeleteParams::background()).await {
            Err(error) if is_not_found(&error) => {}
            result => {
                result.doing(|| format!("deleting {noun} DaemonSet {namespace}/{name}"))?;
            }
        }
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let target = role.target_label(namespace, module);
    for node in nodes
        .list_metadata(&ListParams::default().labels(&target))
        .await
        .doing(|| format!("listing the {noun} targets of Module {namespace}/{module}"))?
        .items
    {
        set_label(client, &node.name_any(), &target, false).await?;
    }
    let pods: Vec<std::sync::Arc<Pod>> = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&selector)
        .await
        .doing(|| format!("listing the {noun} pods of Module {namespace}/{module}"))?
        .items
        .into_iter()
        .map(std::sync::Arc::new)
        .collect();
    let still_ready = ready_nodes(&pods, namespace, module, role);
    let ready = role.ready_label(namespace, module);
    for node in nodes
        .list_metadata(&ListParams::default().labels(&ready))
        .await
        .doing(|| {
            format!("listing the nodes where Module {namespace}/{module}'s {noun} was ready")
        })?
        .items
    {
        let name = node.name_any();
        if !still_ready.contains(&name) {
            set_label(client, &name, &ready, false).await?;
        }
    }
    Ok(!pods.is_empty())
}
