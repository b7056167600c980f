//! The Module's entries in NodeModulesConfigs: written for targeted nodes whose image exists, removed for nodes
//! and kernels no longer targeted. Each write carries the resourceVersion it was computed from, so two Modules
//! editing one node's NMC at once never lose each other's entry (the loser gets 409 and retries).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, ObjectMeta, Patch};
use serde_json::json;

use super::plan::{Plan, Target};
use crate::api::kmm::{
    ImagePullPolicy, ImageState, Module, ModuleConfig, ModuleLoaderSpec, NodeModuleSpec,
    NodeModulesConfig, NodeModulesConfigSpec,
};
use crate::engine::context::{Error, KubeResultExt, patch_params, post_params};
use crate::engine::{Context, labels, nodes};

/// Counts for the Module status.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EntryCounts {
    /// NMCs that carry an entry of the Module after this pass.
    pub desired: i32,
    /// Of those, NMCs whose loaded configuration equals the entry.
    pub available: i32,
}

/// The NMC entry a target gets.
pub fn entry_for(module: &Module, loader: &ModuleLoaderSpec, target: &Target) -> NodeModuleSpec {
    let container = &loader.container;
    let tls = target.mapping.registry_tls.clone().unwrap_or_default();
    NodeModuleSpec {
        name: module.name_any(),
        namespace: module.namespace().unwrap_or_default(),
        service_account_name: loader
            .service_account_name
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".to_owned()),
        image_repo_secret: module.spec.image_repo_secret.clone(),
        tolerations: nodes::with_internal_tolerations(&module.spec.tolerations),
        version: container.version.clone().filter(|v| !v.is_empty()),
        config: ModuleConfig {
            kernel_version: target.mapping.kernel.clone(),
            container_image: target.mapping.image.clone(),
            image_pull_policy: container
                .image_pull_policy
                .unwrap_or(ImagePullPolicy::IfNotPresent),
            insecure_pull: tls.insecure || tls.insecure_skip_tls_verify,
            in_tree_modules_to_remove: target.mapping.in_tree_modules_to_remove.clone(),
            in_tree_module_to_remove: target.mapping.in_tree_module_to_remove.clone(),
            modprobe: container.modprobe.clone(),
        },
    }
}

/// Bring every NMC in line with the plan: an entry for each target whose image exists, none for nodes no longer
/// targeted, and none for a node whose kernel changed before its new image exists (the old module cannot load on
/// the new kernel anyway).
pub async fn sync(
    context: &Context,
    module: &Module,
    loader: &ModuleLoaderSpec,
    plan: &Plan,
    image_states: &BTreeMap<String, ImageState>,
    current: &[std::sync::Arc<NodeModulesConfig>],
) -> Result<EntryCounts, Error> {
    let namespace = module.namespace().unwrap_or_default();
    let name = module.name_any();
    let configured_label = labels::module_configured(&namespace, &name);
    let by_node: BTreeMap<&str, &NodeModulesConfig> = current
        .iter()
        .map(|nmc| {
            (
                nmc.metadata.name.as_deref().unwrap_or_default(),
                nmc.as_ref(),
            )
        })
        .collect();
    let mut handled = BTreeSet::new();
    let mut counts = EntryCounts::default();
    let mut errors = Vec::new();
    for target in &plan.targets {
        handled.insert(target.node.as_str());
        let nmc = by_node.get(target.node.as_str()).copied();
        let existing = nmc.and_then(|n| entry_of(n, &namespace, &name));
        let wanted = entry_for(module, loader, target);
        let image_exists = image_states.get(&target.mapping.image) == Some(&ImageState::Exists);
        let desired = if image_exists {
            Some(wanted)
        } else {
            // Keep an entry for the node's current kernel (e.g. an image being re-checked); drop one for another
            // kernel.
            existing
                .filter(|e| e.config.kernel_version == target.mapping.kernel)
                .cloned()
        };
        if let Some(entry) = &desired {
            counts.desired += 1;
            if nmc.is_some_and(|n| loaded_config_matches(n, entry)) {
                counts.available += 1;
            }
        }
        if let Err(error) = write_entry(
            context,
            nmc,
            &target.node,
            &target.node_uid,
            &namespace,
            &name,
            desired,
        )
        .await
        {
            errors.push(error);
        }
    }
    for node in &plan.keep {
        handled.insert(node.as_str());
        if let Some(nmc) = by_node.get(node.as_str())
            && let Some(entry) = entry_of(nmc, &namespace, &name)
        {
            counts.desired += 1;
            if loaded_config_matches(nmc, entry) {
                counts.available += 1;
            }
        }
    }
    for nmc in current {
        let node = nmc.metadata.name.as_deref().unwrap_or_default();
        let carries = nmc.labels().contains_key(&configured_label)
            || entry_of(nmc, &namespace, &name).is_some();
        if carries
            && !handled.contains(node)
            && let Err(error) =
                write_entry(context, Some(nmc), node, "", &namespace, &name, None).await
        {
            errors.push(error);
        }
    }
    match errors.into_iter().next() {
        Some(error) => Err(error),
        None => Ok(counts),
    }
}

/// The Module's entry in an NMC's spec.
fn entry_of<'n>(
    nmc: &'n NodeModulesConfig,
    namespace: &str,
    name: &str,
) -> Option<&'n NodeModuleSpec> {
    nmc.spec
        .modules
        .iter()
        .find(|m| m.namespace == namespace && m.name == name)
}

/// Whether the node reports the entry's configuration as loaded.
fn loaded_config_matches(nmc: &NodeModulesConfig, entry: &NodeModuleSpec) -> bool {
    nmc.status.as_ref().is_some_and(|status| {
        status.modules.iter().any(|m| {
            m.namespace == entry.namespace
                && m.name == entry.name
                && m.config.as_ref() == Some(&entry.config)
        })
    })
}

/// Set (or, with `None`, remove) the Module's entry in the NMC of `node`, creating the NMC when needed.
pub async fn write_entry(
    context: &Context,
    nmc: Option<&NodeModulesConfig>,
    node: &str,
    node_uid: &str,
    namespace: &str,
    name: &str,
    entry: Option<NodeModuleSpec>,
) -> Result<(), Error> {
    let api: Api<NodeModulesConfig> = Api::all(context.client.clone());
    let configured = labels::module_configured(namespace, name);
    let in_use = labels::module_in_use(namespace, name);
    let Some(nmc) = nmc else {
        let Some(entry) = entry else {
            return Ok(());
        };
        let object = NodeModulesConfig {
            metadata: ObjectMeta {
                name: Some(node.to_owned()),
                labels: Some([(configured, String::new()), (in_use, String::new())].into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".to_owned(),
                    kind: "Node".to_owned(),
                    name: node.to_owned(),
                    uid: node_uid.to_owned(),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            spec: NodeModulesConfigSpec {
                modules: vec![entry],
            },
            status: None,
        };
        api.create(&post_params(), &object)
            .await
            .doing(|| format!("creating NodeModulesConfig {node} for Module {namespace}/{name}"))?;
        return Ok(());
    };
    let mut modules = nmc.spec.modules.clone();
    let position = modules
        .iter()
        .position(|m| m.namespace == namespace && m.name == name);
    match (&entry, position) {
        (Some(entry), Some(at)) => modules[at] = entry.clone(),
        (Some(entry), None) => modules.push(entry.clone()),
        (None, Some(at)) => {
            modules.remove(at);
        }
        (None, None) => {}
    }
    let labels = nmc.labels();
    let labels_ok = if entry.is_some() {
        labels.contains_key(&configured) && labels.contains_key(&in_use)
    } else {
        !labels.contains_key(&configured)
    };
    if modules == nmc.spec.modules && labels_ok {
        return Ok(());
    }
    let label_patch = if entry.is_some() {
        json!({ configured: "", in_use: "" })
    } else {
        json!({ configured: null })
    };
    let patch = json!({
        "metadata": {"resourceVersion": nmc.resource_version(), "labels": label_patch},
        "spec": {"modules": modules},
    });
    api.patch(node, &patch_params(), &Patch::Merge(&patch))
        .await
        .doing(|| {
            let verb = if entry.is_some() {
                "setting"
            } else {
                "removing"
            };
            format!("{verb} the entry of Module {namespace}/{name} in NodeModulesConfig {node}")
        })?;
    Ok(())
}
