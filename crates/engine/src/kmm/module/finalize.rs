//! Deleting a Module: its device plugin, DRA driver and DeviceClasses go first, then its entries leave every NMC, and the finalizer holds the
//! Module until every node has unloaded it (no NMC is still labelled in use), so a Module never disappears while
//! its module is loaded.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch};
use kube::runtime::controller::Action;
use serde_json::json;

use super::entries::write_entry;
use super::{ModuleContext, report};
use crate::kmm::dra::device_classes;
use crate::kmm::plugins::{Role, cleanup};
use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::finalizers::{self, Guard};
use crate::runtime::writes::patch_params;
use kmm_api::kmm::labels;
use kmm_api::kmm::{Module, NodeModulesConfig};

/// How often a deleting Module looks again for nodes still unloading it (removing an in-use label triggers nothing
/// that names the Module).
const UNLOAD_POLL: Duration = Duration::from_secs(3);

/// One pass over a deleting Module.
pub(super) async fn finalize(module: &Module, context: &ModuleContext) -> Result<Action, Error> {
    let engine = &context.engine;
    let namespace = module.namespace().unwrap_or_default();
    let name = module.name_any();
    if !finalizers::has(module, labels::MODULE_FINALIZER) {
        return Ok(Action::await_change());
    }
    // The device plugin and DRA driver go first: nothing may hold a device whose kernel driver is being unloaded.
    device_classes::remove(&engine.client, &namespace, &name).await?;
    for role in [Role::DevicePlugin, Role::Dra] {
        if cleanup::remove(&engine.client, &namespace, &name, role).await? {
            let progress = format!(
                "being deleted: waiting for its {} pods to leave the nodes",
                role.noun()
            );
            tell_progress(context, module, &progress).await?;
            tracing::debug!(module = %name, role = role.noun(), "waiting for the pods to go");
            return Ok(Action::requeue(UNLOAD_POLL));
        }
    }
    let nmcs: Api<NodeModulesConfig> = Api::all(engine.client.clone());
    let configured = nmcs
        .list(&ListParams::default().labels(&labels::module_configured(&namespace, &name)))
        .await
        .doing(|| format!("listing the NodeModulesConfigs of Module {namespace}/{name}"))?;
    for nmc in &configured.items {
        let node = nmc.name_any();
        write_entry(engine, Some(nmc), &node, "", &namespace, &name, None).await?;
    }
    let in_use = nmcs
        .list(&ListParams::default().labels(&labels::module_in_use(&namespace, &name)))
        .await
        .doing(|| format!("listing the nodes still using Module {namespace}/{name}"))?;
    if !in_use.items.is_empty() {
        let nodes: Vec<String> = in_use.items.iter().map(|nmc| nmc.name_any()).collect();
        let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
        let progress = format!(
            "being deleted: waiting for {} to unload it",
            report::named(&nodes)
        );
        tell_progress(context, module, &progress).await?;
        tracing::debug!(module = %name, nodes = in_use.items.len(), "waiting for nodes to unload");
        return Ok(crate::runtime::metrics::requeue(UNLOAD_POLL));
    }
    release_namespace_label(module, context).await?;
    let api = Api::<Module>::namespaced(engine.client.clone(), &namespace);
    finalizers::remove(
        &api,
        module,
        labels::MODULE_FINALIZER,
        Guard::ResourceVersion,
    )
    .await
    .doing(|| format!("removing the finalizer of Module {namespace}/{name}"))?;
    Ok(Action::await_change())
}

/// Say in the Module's conditions what its deletion waits for, when that is news: a Module on its way out is no
/// longer available, whatever its last pass found.
async fn tell_progress(
    context: &ModuleContext,
    module: &Module,
    progress: &str,
) -> Result<(), Error> {
    let before = module
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut conditions = before.clone();
    report::set_deleting_conditions(&mut conditions, progress, module.metadata.generation);
    if conditions == before {
        return Ok(());
    }
    let namespace = module.namespace().unwrap_or_default();
    let name = module.name_any();
    let patch = json!({"status": {"conditions": conditions}});
    Api::<Module>::namespaced(context.engine.client.clone(), &namespace)
        .patch_status(&name, &patch_params(), &Patch::Merge(&patch))
        .await
        .doing(|| format!("writing the status of deleting Module {namespace}/{name}"))?;
    Ok(())
}

/// Remove the namespace's contains-modules label when this is its last Module.
async fn release_namespace_label(module: &Module, context: &ModuleContext) -> Result<(), Error> {
    let namespace = module.namespace().unwrap_or_default();
    let others = Api::<Module>::namespaced(context.engine.client.clone(), &namespace)
        .list(&ListParams::default())
        .await
        .doing(|| format!("listing the Modules of namespace {namespace}"))?;
    if others
        .items
        .iter()
        .any(|m| m.metadata.deletion_timestamp.is_none())
    {
        return Ok(());
    }
    let patch = json!({"metadata": {"labels": {labels::NAMESPACE_CONTAINS_MODULES: null}}});
    Api::<k8s_openapi::api::core::v1::Namespace>::all(context.engine.client.clone())
        .patch(&namespace, &patch_params(), &Patch::Merge(&patch))
        .await
        .doing(|| format!("unlabelling namespace {namespace}"))?;
    Ok(())
}
