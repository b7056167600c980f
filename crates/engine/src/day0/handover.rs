//! The hand-over of a MachineConfig to kmm-tui: a MachineConfig labelled
//! `machineconfiguration.openshift.io/kmm-managed: "true"` gets one ModuleDay0, named after it, describing what the
//! pool it feeds runs today; removing the label deletes that ModuleDay0 and leaves the MachineConfig as it is.
//!
//! The ModuleDay0 is tied to its MachineConfig by a label, not an owner reference, so deleting the MachineConfig by
//! mistake does not take the ModuleDay0 (and the record of what it built) with it. A ModuleDay0 that exists is never
//! rewritten here: from then on it is the user's to edit.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DeleteParams, ListParams, ObjectMeta};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use super::pools;
use super::reconcile::Day0Context;
use crate::runtime::attention;
use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::writes::post_params;
use kmm_api::day0::{MachineConfig, MachineConfigPool, ModuleDay0, ModuleDay0Spec, OsMapping};
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::kmm::labels;

/// Namespace of the ModuleDay0s created for MachineConfigs: where KMM runs on OpenShift, and where their
/// Dockerfile ConfigMaps and signing Secrets go.
pub const NAMESPACE: &str = "openshift-kmm";

/// How long to wait before looking again at a labelled MachineConfig that cannot be handed over yet.
const RETRY: Duration = Duration::from_secs(10);

/// One pass over a MachineConfig. A hand-over that fails for a reason a person must fix (the namespace
/// [`NAMESPACE`] missing, a grant missing) is told as an Event on the MachineConfig: it has no status of kmm-tui's
/// to write, and the console's Day-0 pane shows the MachineConfig with that Event's reason until its ModuleDay0
/// exists.
pub async fn reconcile(
    config: Arc<MachineConfig>,
    context: Arc<Day0Context>,
) -> Result<Action, Error> {
    let outcome = hand_over(&config, &context).await;
    attention::conclude(&context.engine, config.as_ref(), &outcome).await;
    outcome
}

/// Hand a kmm-managed MachineConfig over, or take the hand-over back from one no longer kmm-managed.
async fn hand_over(config: &MachineConfig, context: &Day0Context) -> Result<Action, Error> {
    if is_rendered(config) {
        return Ok(Action::await_change());
    }
    if pools::is_kmm_managed(config) && config.metadata.deletion_timestamp.is_none() {
        adopt(config, context).await
    } else {
        release(config, context).await?;
        Ok(context.engine.resync())
    }
}

/// Whether the Machine Config Operator rendered it for a pool (those are never handed over).
fn is_rendered(config: &MachineConfig) -> bool {
    config
        .owner_references()
        .iter()
        .any(|o| o.kind == MachineConfigPool::kind(&()))
}

/// Create the MachineConfig's ModuleDay0 when it has none.
async fn adopt(config: &MachineConfig, context: &Day0Context) -> Result<Action, Error> {
    let engine = &context.engine;
    let name = config.name_any();
    let api: Api<ModuleDay0> = Api::namespaced(engine.client.clone(), NAMESPACE);
    if api
        .get_opt(&name)
        .await
        .doing(|| format!("reading ModuleDay0 {NAMESPACE}/{name}"))?
        .is_some()
    {
        return Ok(engine.resync());
    }
    let Some(image) = config.spec.os_image_url.clone() else {
        let note = format!(
            "MachineConfig {name} sets no osImageURL: there is no layered image to hand over"
        );
        engine.event(config, true, "NothingToHandOver", note).await;
        return Ok(engine.resync());
    };
    let pools: Vec<MachineConfigPool> = Api::all(engine.client.clone())
        .list(&ListParams::default())
        .await
        .doing(|| "listing MachineConfigPools".to_owned())?
        .items;
    let Some(pool) = pools::pool_fed_by(config, &pools) else {
        let note = format!("no MachineConfigPool selects MachineConfig {name}; waiting for one");
        engine
            .event(config, true, "NoMachineConfigPool", note)
            .await;
        return Ok(crate::runtime::metrics::requeue(RETRY));
    };
    let Some(selector) = pool
        .spec
        .node_selector
        .as_ref()
        .filter(|s| s.match_expressions.as_ref().is_none_or(Vec::is_empty))
        .and_then(|s| s.match_labels.clone())
    else {
        let note = format!(
            "pool {} selects its nodes by expressions; a ModuleDay0 needs labels",
            pool.name_any()
        );
        engine
            .event(config, true, "NoMachineConfigPool", note)
            .await;
        return Ok(engine.resync());
    };
    let _ = context.nodes.listed().await;
    let members = pools::members(pool, &context.nodes.state(), &pools);
    let Some(literal) = most_common(members.iter().filter_map(|n| pools::os_image(n))) else {
        let note = format!(
            "pool {} has no nodes yet: the OS it runs is unknown",
            pool.name_any()
        );
        engine.event(config, true, "NoNodes", note).await;
        return Ok(crate::runtime::metrics::requeue(RETRY));
    };
    let day0 = ModuleDay0 {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some(BTreeMap::from([(
                labels::MACHINE_CONFIG.to_owned(),
                name.clone(),
            )])),
            ..Default::default()
        },
        spec: ModuleDay0Spec {
            os_mapping: OsMapping {
                literal,
                container_image: image,
                build: None,
                sign: None,
                cluster_upgrade_trigger_node_upgrade: false,
            },
            machine_config_pool_selector: selector,
        },
        status: None,
    };
    match api.create(&post_params(), &day0).await {
        Ok(_) => {
            let note = format!(
                "ModuleDay0 {NAMESPACE}/{name} now manages the osImageURL of pool {}",
                pool.name_any()
            );
            engine.event(config, false, "ModuleDay0Created", note).await;
        }
        Err(error) if is_conflict(&error) => {}
        Err(error) => {
            return Err(error).doing(|| format!("creating ModuleDay0 {NAMESPACE}/{name}"));
        }
    }
    Ok(engine.resync())
}

/// Delete every ModuleDay0 created for the MachineConfig.
async fn release(config: &MachineConfig, context: &Day0Context) -> Result<(), Error> {
    let engine = &context.engine;
    let name = config.name_any();
    let api: Api<ModuleDay0> = Api::all(engine.client.clone());
    let created = api
        .list(&ListParams::default().labels(&format!("{}={name}", labels::MACHINE_CONFIG)))
        .await
        .doing(|| format!("listing the ModuleDay0s of MachineConfig {name}"))?;
    for day0 in created.items {
        let namespace = day0.namespace().unwrap_or_default();
        let day0_name = day0.name_any();
        let namespaced: Api<ModuleDay0> = Api::namespaced(engine.client.clone(), &namespace);
        match namespaced
            .delete(&day0_name, &DeleteParams::background())
            .await
        {
            Ok(_) => {
                let note = format!(
                    "ModuleDay0 {namespace}/{day0_name} deleted: MachineConfig {name} is no longer kmm-managed; its osImageURL stays as it is"
                );
                engine.event(config, false, "ModuleDay0Deleted", note).await;
            }
            Err(error) if is_not_found(&error) => {}
            Err(error) => {
                return Err(error).doing(|| format!("deleting ModuleDay0 {namespace}/{day0_name}"));
            }
        }
    }
    Ok(())
}

/// The value seen most often (the first of equals, in sorted order).
fn most_common<'a>(values: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for value in values {
        *counts.entry(value).or_default() += 1;
    }
    let most = counts.values().copied().max()?;
    counts
        .into_iter()
        .find(|(_, n)| *n == most)
        .map(|(v, _)| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_runs_the_os_most_of_its_nodes_run() {
        assert_eq!(
            most_common(["b", "a", "b"].into_iter()).as_deref(),
            Some("b")
        );
        assert_eq!(most_common(["b", "a"].into_iter()).as_deref(), Some("a"));
        assert_eq!(most_common(std::iter::empty()), None);
    }
}
