//! One pass over one of a Module's workloads (its device plugin or its DRA driver): target labels, the DaemonSet
//! of the current module version, the DaemonSets of earlier versions once they run nowhere, ready labels, and the
//! counts in the Module's status; or, when the Module no longer asks for the workload, taking it all away.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use kube::api::{Api, Patch};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::daemonset::{self, Desired};
use super::node_labels::{is_target, keep_label, ready_nodes};
use super::{PluginContext, cleanup};
use crate::runtime::context::{Error, KubeResultExt, retry_on_error};
use crate::runtime::finalizers;
use crate::runtime::writes::patch_params;
use crate::runtime::writes::post_params;
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::kmm::labels;
use kmm_api::kmm::{DaemonSetCounts, Module};

/// How soon a Module whose workload is being taken away looks again for its pods to be gone.
const REMOVAL_POLL: std::time::Duration = std::time::Duration::from_secs(3);

/// The Module's namespace, or why a pass cannot act on it.
pub(crate) fn namespace_of(module: &Module) -> Result<String, Error> {
    module
        .namespace()
        .ok_or_else(|| Error::Invalid(format!("Module {} has no namespace", module.name_any())))
}

/// Take the workload of a Module that is deleted, or no longer asks for it, away: DaemonSets, pods and node
/// labels, and its status counts (while the Module stays).
pub(crate) async fn take_away(module: &Module, context: &PluginContext) -> Result<Action, Error> {
    let namespace = namespace_of(module)?;
    let name = module.name_any();
    // Most Modules never had the workload: the caches say whether there is anything to take away.
    let pods_left = if has_leftovers(context, module, &namespace, &name) {
        cleanup::remove(&context.engine.client, &namespace, &name, context.role).await?
    } else {
        false
    };
    if module.metadata.deletion_timestamp.is_none() {
        write_status(context, module, None).await?;
    }
    Ok(if pods_left {
        Action::requeue(REMOVAL_POLL)
    } else {
        Action::await_change()
    })
}

/// Whether the Module's finalizer is on: until the Module reconciler has put it there, a deletion could outrun
/// the clean-up of node labels (and of DeviceClasses), so nothing is created before.
pub(crate) fn finalizer_in_place(module: &Module) -> bool {
    finalizers::has(module, labels::MODULE_FINALIZER)
}

/// Run `desired` on the nodes where the Module's module is loaded and the workload may run; label where it is
/// ready; count it in the Module's status.
pub(crate) async fn roll_out(
    module: &Module,
    context: &PluginContext,
    desired: &Desired,
) -> Result<Action, Error> {
    let engine = &context.engine;
    let role = context.role;
    let namespace = namespace_of(module)?;
    let name = module.name_any();
    if !finalizer_in_place(module) {
        return Ok(Action::await_change());
    }
    context
        .nodes
        .listed()
        .await
        .map_err(|stopped| Error::Invalid(format!("node cache: {stopped}")))?;
    let nodes = context.nodes.state();
    let target = role.target_label(&namespace, &name);
    let targeted = keep_label(&engine.client, &nodes, &target, |node| {
        is_target(module, node)
    })
    .await?;
    let owned = owned_daemon_sets(context, module, &namespace);
    let version = daemonset::module_version(module);
    let current = owned
        .iter()
        .find(|ds| daemonset::daemon_set_version(ds, &namespace, &name) == version);
    ensure_daemon_set(
        context,
        module,
        &namespace,
        current.map(Arc::as_ref),
        desired,
    )
    .await?;
    if module.spec.module_loader.is_some() {
        collect_old_versions(context, &namespace, &name, version, &owned).await?;
    }
    let ready = ready_nodes(&context.pods.state(), &namespace, &name, role);
    let ready_label = role.ready_label(&namespace, &name);
    keep_label(&engine.client, &nodes, &ready_label, |node| {
        node.metadata
            .name
            .as_ref()
            .is_some_and(|n| ready.contains(n))
    })
    .await?;
    let available: i32 = owned
        .iter()
        .filter_map(|ds| ds.status.as_ref()?.number_available)
        .sum();
    let targeted = i32::try_from(targeted).unwrap_or(i32::MAX);
    let counts = DaemonSetCounts {
        nodes_matching_selector_number: targeted,
        desired_number: targeted,
        available_number: available,
    };
    write_status(context, module, Some(counts)).await?;
    Ok(engine.resync())
}

/// Whether the caches show a DaemonSet, pod or node label of the Module's workload.
fn has_leftovers(context: &PluginContext, module: &Module, namespace: &str, name: &str) -> bool {
    let target = context.role.target_label(namespace, name);
    let ready = context.role.ready_label(namespace, name);
    !owned_daemon_sets(context, module, namespace).is_empty()
        || context.pods.state().iter().any(|pod| {
            pod.namespace().as_deref() == Some(namespace)
                && pod.labels().get(labels::MODULE_NAME).map(String::as_str) == Some(name)
        })
        || context.nodes.state().iter().any(|node| {
            let labels = node.labels();
            labels.contains_key(&target) || labels.contains_key(&ready)
        })
}

/// The engine's retry policy: the Module's next backoff step.
pub(super) fn error_policy(
    module: Arc<Module>,
    error: &Error,
    context: Arc<PluginContext>,
) -> Action {
    retry_on_error(module, error, context.engine.clone())
}

/// The DaemonSets of the role the Module controls, from the cache.
fn owned_daemon_sets(
    context: &PluginContext,
    module: &Module,
    namespace: &str,
) -> Vec<Arc<DaemonSet>> {
    let Some(uid) = module.uid() else {
        return Vec::new();
    };
    context
        .daemon_sets
        .state()
        .into_iter()
        .filter(|ds| ds.namespace().as_deref() == Some(namespace))
        .filter(|ds| {
            ds.owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && o.uid == uid)
        })
        .collect()
}

/// Create the DaemonSet of the current version, or rewrite it when the Module asks for something else.
async fn ensure_daemon_set(
    context: &PluginContext,
    module: &Module,
    namespace: &str,
    current: Option<&DaemonSet>,
    desired: &Desired,
) -> Result<(), Error> {
    let api: Api<DaemonSet> = Api::namespaced(context.engine.client.clone(), namespace);
    let noun = context.role.noun();
    let hash_annotation = context.role.hash_annotation();
    let Some(current) = current else {
        let object = daemonset::new_object(module, namespace, desired);
        let created = match api.create(&post_params(), &object).await {
            // Made by an earlier pass the cache does not show yet: the next pass, on the cached object, decides.
            Err(error) if is_conflict(&error) => return Ok(()),
            result => result.doing(|| {
                format!(
                    "creating the {noun} DaemonSet of Module {namespace}/{}",
                    module.name_any()
                )
            })?,
        };
        context
            .engine
            .event(
                module,
                false,
                context.role.created_reason(),
                format!("Created {noun} DaemonSet {}", created.name_any()),
            )
            .await;
        return Ok(());
    };
    if current.annotations().get(hash_annotation) == Some(&desired.hash) {
        return Ok(());
    }
    let mut updated = current.clone();
    updated.metadata.managed_fields = None;
    updated.labels_mut().extend(desired.labels.clone());
    updated
        .annotations_mut()
        .insert(hash_annotation.to_owned(), desired.hash.clone());
    updated.spec = Some(desired.spec.clone());
    match api
        .replace(&current.name_any(), &post_params(), &updated)
        .await
    {
        // The cache was behind: the next pass, on the newer object, decides again.
        Err(error) if is_conflict(&error) => Ok(()),
        result => result.map(drop).doing(|| {
            format!(
                "updating {noun} DaemonSet {namespace}/{}",
                current.name_any()
            )
        }),
    }
}

/// Delete the DaemonSets of earlier module versions once they place their workload on no node: the ordered
/// upgrade has moved every node on.
async fn collect_old_versions(
    context: &PluginContext,
    namespace: &str,
    module: &str,
    version: &str,
    owned: &[Arc<DaemonSet>],
) -> Result<(), Error> {
    let api: Api<DaemonSet> = Api::namespaced(context.engine.client.clone(), namespace);
    for old in owned {
        let unused = old
            .status
            .as_ref()
            .is_some_and(|s| s.desired_number_scheduled == 0);
        if daemonset::daemon_set_version(old, namespace, module) == version || !unused {
            continue;
        }
        match api.delete(&old.name_any(), &Default::default()).await {
            Err(error) if is_not_found(&error) => {}
            result => {
                result.doing(|| {
                    format!(
                        "deleting old {} DaemonSet {namespace}/{}",
                        context.role.noun(),
                        old.name_any()
                    )
                })?;
            }
        }
    }
    Ok(())
}

/// Write the role's counts (`status.devicePlugin` or `status.dra`) when they differ (None clears them).
pub(crate) async fn write_status(
    context: &PluginContext,
    module: &Module,
    counts: Option<DaemonSetCounts>,
) -> Result<(), Error> {
    let current = module.status.as_ref().and_then(|s| match context.role {
        super::Role::DevicePlugin => s.device_plugin.clone(),
        super::Role::Dra => s.dra.clone(),
    });
    let empty =
        |c: &Option<DaemonSetCounts>| c.as_ref().is_none_or(|c| *c == DaemonSetCounts::default());
    if current == counts || (empty(&current) && empty(&counts)) {
        return Ok(());
    }
    let value = counts.map(|c| {
        json!({
            "nodesMatchingSelectorNumber": c.nodes_matching_selector_number,
            "desiredNumber": c.desired_number,
            "availableNumber": c.available_number,
        })
    });
    let namespace = module.namespace().unwrap_or_default();
    let patch = json!({"status": {context.role.status_field(): value}});
    Api::<Module>::namespaced(context.engine.client.clone(), &namespace)
        .patch_status(&module.name_any(), &patch_params(), &Patch::Merge(&patch))
        .await
        .doing(|| {
            format!(
                "writing the {} status of Module {namespace}/{}",
                context.role.noun(),
                module.name_any()
            )
        })?;
    Ok(())
}

/// Whether the Module is the DaemonSet's controlling owner (for mapping DaemonSet changes to Modules).
pub(super) fn controlling_module(
    daemon_set: &DaemonSet,
) -> Option<kube::runtime::reflector::ObjectRef<Module>> {
    let owner = daemon_set
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == Module::kind(&()))?;
    Some(kube::runtime::reflector::ObjectRef::new(&owner.name).within(&daemon_set.namespace()?))
}
