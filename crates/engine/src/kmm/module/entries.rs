//! The Module's entries in NodeModulesConfigs: written for targeted nodes whose image exists, removed for nodes
//! and kernels no longer targeted. Each write carries the resourceVersion it was computed from, so two Modules
//! editing one node's NMC at once never lose each other's entry (the loser gets 409 and retries).

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, ObjectMeta, Patch};
use serde_json::json;

use super::plan::{Plan, Target};
use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::writes::patch_params;
use crate::runtime::writes::post_params;
use crate::{runtime::context::Context, runtime::nodes};
use kmm_api::kmm::labels;
use kmm_api::kmm::{
    ImagePullPolicy, ImageState, Module, ModuleConfig, ModuleLoaderSpec, NodeModuleSpec,
    NodeModulesConfig, NodeModulesConfigSpec,
};

/// How many NMC writes of one pass are in flight at once: a first rollout writes one NMC per node, and one write
/// after the other would take as long as the API's round trips add up to.
const CONCURRENT_WRITES: usize = 32;

/// Counts for the Module status, and how the pass's writes went.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct EntryCounts {
    /// NMCs that carry an entry of the Module after this pass.
    pub desired: i32,
    /// Of those, NMCs whose loaded configuration equals the entry.
    pub available: i32,
    /// Held nodes (see [`Plan::held`]) that carry an entry, kept as it was.
    pub held: i32,
    /// Writes refused because the cached NMC was older than the stored one (409): the pass must run again.
    pub conflicts: usize,
}

/// The NMC entry a target gets.
pub(super) fn entry_for(
    module: &Module,
    loader: &ModuleLoaderSpec,
    target: &Target,
) -> NodeModuleSpec {
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
            // Folded into the list when the mapping was resolved.
            in_tree_module_to_remove: None,
            modprobe: container.modprobe.clone(),
        },
    }
}

/// One NMC write a pass decided on: the Module's entry set (`Some`) or removed (`None`).
struct Write<'a> {
    nmc: Option<&'a NodeModulesConfig>,
    node: &'a str,
    node_uid: &'a str,
    entry: Option<NodeModuleSpec>,
}

/// Bring every NMC in line with the plan: an entry for each target whose image exists, none for nodes no longer
/// targeted, and none for a node whose kernel changed before its new image exists (the old module cannot load on
/// the new kernel anyway). Kept and held nodes are left as they are. `current` is the cache of NMCs; only NMCs whose cached state differs from what the
/// plan wants are written, [`CONCURRENT_WRITES`] at a time.
pub(super) async fn sync(
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
    let mut writes = Vec::new();
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
        writes.push(Write {
            nmc,
            node: &target.node,
            node_uid: &target.node_uid,
            entry: desired,
        });
    }
    for node in plan.keep.iter().chain(&plan.held) {
        handled.insert(node.as_str());
        if let Some(nmc) = by_node.get(node.as_str())
            && let Some(entry) = entry_of(nmc, &namespace, &name)
        {
            counts.desired += 1;
            counts.held += i32::from(plan.held.contains(node));
            if loaded_config_matches(nmc, entry) {
                counts.available += 1;
            }
        }
    }
    for nmc in current {
        let node = nmc.metadata.name.as_deref().unwrap_or_default();
        let carries = nmc.labels().contains_key(&configured_label)
            || entry_of(nmc, &namespace, &name).is_some();
        if carries && !handled.contains(node) {
            writes.push(Write {
                nmc: Some(nmc),
                node,
                node_uid: "",
                entry: None,
            });
        }
    }
    writes.retain(|w| !w.is_noop(&namespace, &name));
    let pending: Vec<_> = writes
        .into_iter()
        .map(|w| {
            write_entry(
                context, w.nmc, w.node, w.node_uid, &namespace, &name, w.entry,
            )
        })
        .collect();
    let mut results = futures::stream::iter(pending).buffer_unordered(CONCURRENT_WRITES);
    let mut first_error = None;
    while let Some(result) = results.next().await {
        match result {
            Ok(()) => {}
            Err(error) if error.is_conflict() => counts.conflicts += 1,
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(counts),
    }
}

impl Write<'_> {
    /// Whether the cached NMC already says what the write would (so it is not sent at all).
    fn is_noop(&self, namespace: &str, name: &str) -> bool {
        match (self.nmc, &self.entry) {
            (None, entry) => entry.is_none(),
            (Some(nmc), entry) => {
                entry_of(nmc, namespace, name) == entry.as_ref()
                    && labels_settled(nmc, namespace, name, entry.is_some())
            }
        }
    }
}

/// Whether the NMC's `module-configured` and `module-in-use` labels are as an entry being there (or not) needs.
fn labels_settled(nmc: &NodeModulesConfig, namespace: &str, name: &str, has_entry: bool) -> bool {
    let labels = nmc.labels();
    if has_entry {
        labels.contains_key(&labels::module_configured(namespace, name))
            && labels.contains_key(&labels::module_in_use(namespace, name))
    } else {
        !labels.contains_key(&labels::module_configured(namespace, name))
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
pub(super) async fn write_entry(
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
    if modules == nmc.spec.modules && labels_settled(nmc, namespace, name, entry.is_some()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(image: &str) -> NodeModuleSpec {
        serde_json::from_value(json!({
            "name": "m", "namespace": "ns", "serviceAccountName": "default",
            "config": {"kernelVersion": "5.14", "containerImage": image, "insecurePull": false,
                       "modprobe": {"moduleName": "m"}},
        }))
        .expect("an entry")
    }

    fn nmc(entries: Vec<NodeModuleSpec>, labelled: bool) -> NodeModulesConfig {
        let labels = labelled.then(|| {
            [
                (labels::module_configured("ns", "m"), String::new()),
                (labels::module_in_use("ns", "m"), String::new()),
            ]
            .into()
        });
        NodeModulesConfig {
            metadata: ObjectMeta {
                name: Some("n".into()),
                labels,
                ..Default::default()
            },
            spec: NodeModulesConfigSpec { modules: entries },
            status: None,
        }
    }

    fn write<'a>(nmc: Option<&'a NodeModulesConfig>, entry: Option<NodeModuleSpec>) -> Write<'a> {
        Write {
            nmc,
            node: "n",
            node_uid: "",
            entry,
        }
    }

    #[test]
    fn only_writes_that_change_the_cached_nmc_are_sent() {
        let settled = nmc(vec![entry("img:1")], true);
        let unlabelled = nmc(vec![entry("img:1")], false);
        let empty = nmc(Vec::new(), false);
        assert!(write(Some(&settled), Some(entry("img:1"))).is_noop("ns", "m"));
        assert!(write(Some(&empty), None).is_noop("ns", "m"));
        assert!(write(None, None).is_noop("ns", "m"));
        assert!(!write(Some(&settled), Some(entry("img:2"))).is_noop("ns", "m"));
        assert!(!write(Some(&unlabelled), Some(entry("img:1"))).is_noop("ns", "m"));
        assert!(!write(Some(&settled), None).is_noop("ns", "m"));
        assert!(!write(None, Some(entry("img:1"))).is_noop("ns", "m"));
    }
}
