//! Deleting an object. Dependents go in the background, as `kubectl delete` does; an object that finalizers keep
//! (a Module stays until its kernel module is unloaded from every node) is reported as on its way out.

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};

use super::WriteError;
use super::errors::from_kube;
use super::resources::dynamic_api;
use crate::tui::data::Kind;
use crate::tui::target::Target;
use kmm_api::kmm::NodeModulesConfig;

/// Delete `target`.
pub(super) async fn delete(client: &Client, target: &Target) -> Result<String, WriteError> {
    let api = dynamic_api(client, target);
    let answer = api
        .delete(&target.name, &DeleteParams::background())
        .await
        .map_err(|error| from_kube(&error, target))?;
    let lingering = answer
        .left()
        .filter(|object| object.metadata.deletion_timestamp.is_some() && has_finalizers(object));
    let Some(object) = lingering else {
        return Ok(format!("Deleted {target}"));
    };
    if target.kind == Kind::Module {
        let nodes = nodes_with_module(client, target).await;
        let nodes = match nodes {
            Some(n) => kmm_api::plural::count(n, "node"),
            None => "its nodes".to_owned(),
        };
        return Ok(format!(
            "{target}: deletion requested; unloading from {nodes}"
        ));
    }
    Ok(format!(
        "{target}: deletion requested; waiting for {}",
        object.metadata.finalizers.unwrap_or_default().join(", ")
    ))
}

fn has_finalizers(object: &DynamicObject) -> bool {
    object
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|finalizers| !finalizers.is_empty())
}

/// On how many nodes the Module is wanted or loaded, by their NodeModulesConfigs; `None` when they cannot be read.
async fn nodes_with_module(client: &Client, module: &Target) -> Option<usize> {
    let namespace = module.namespace.as_deref().unwrap_or_default();
    let nmcs: Api<NodeModulesConfig> = Api::all(client.clone());
    let list = nmcs.list(&ListParams::default()).await.ok()?;
    let names = |name: &str, ns: &str| name == module.name && ns == namespace;
    Some(
        list.items
            .iter()
            .filter(|nmc| {
                nmc.spec
                    .modules
                    .iter()
                    .any(|m| names(&m.name, &m.namespace))
                    || nmc
                        .status
                        .iter()
                        .flat_map(|s| &s.modules)
                        .any(|m| names(&m.name, &m.namespace))
            })
            .count(),
    )
}
