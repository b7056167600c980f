//! One pass over a node's NodeModulesConfig: settle the status from finished workers, start or replace the worker
//! each module needs, collect what no longer belongs, label the node, and delete the NMC once nothing is left in it.
//! Every step reads what it acts on first, so a pass cut short anywhere is finished by the next one.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, Preconditions};
use serde_json::{Map, Value, json};

use super::ModuleKey;
use super::garbage;
use super::node_labels;
use super::plan::{self, Next, NodeFacts};
use super::settle::settle;
use super::template::{self, WorkerRequest};
use super::workers::{self, Worker};
use crate::runtime::context::{Context, Error, KubeResultExt};
use crate::runtime::nodes;
use crate::runtime::writes::patch_params;
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::kmm::{NodeModuleSpec, NodeModuleStatus, NodeModulesConfig};

/// Reconcile `nmc` with its `node` and the node's worker pods.
pub(super) async fn reconcile_node(
    ctx: &Context,
    mut nmc: NodeModulesConfig,
    node: &Node,
) -> Result<(), Error> {
    let name = nmc.name_any();
    let pods = workers::list_on_node(ctx, &name).await?;
    let all_workers: Vec<Worker> = pods.iter().filter_map(Worker::read).collect();
    let facts = NodeFacts::of(node);
    let spec = nmc.spec.modules.clone();
    let recorded = nmc
        .status
        .as_ref()
        .map(|s| s.modules.clone())
        .unwrap_or_default();

    let settled = settle(&spec, &recorded, &all_workers, facts.boot_id.as_deref());
    if settled.modules != recorded {
        nmc = write_status(ctx, &name, &settled.modules).await?;
    }
    for (pod, why) in &settled.unreadable {
        let note = format!(
            "Worker pod {}/{} succeeded but {why}; it is removed without recording its outcome",
            pod.namespace().unwrap_or_default(),
            pod.name_any()
        );
        ctx.event(&nmc, true, "WorkerPodUnreadable", note).await;
    }
    let mut errors = Errors::default();
    for pod in &settled.finished {
        errors.keep(workers::remove(ctx, pod).await);
    }
    let status = settled.modules;
    let live: Vec<Worker> = all_workers
        .iter()
        .filter(|w| !settled.finished.iter().any(|p| std::ptr::eq(*p, w.pod)))
        .copied()
        .collect();

    let targets = Targets {
        ctx,
        nmc: &nmc,
        node: &name,
        facts: &facts,
        status: &status,
        live: &live,
    };
    let mut blocked = BTreeSet::new();
    for entry in &spec {
        let tolerations = nodes::with_internal_tolerations(&entry.tolerations);
        if nodes::blocking_taint(node, &tolerations).is_some() {
            blocked.insert(ModuleKey::of_spec(entry));
        } else {
            errors.keep(targets.configured(entry).await);
        }
    }
    let configured: BTreeSet<ModuleKey> = spec.iter().map(ModuleKey::of_spec).collect();
    for entry in status
        .iter()
        .filter(|s| !configured.contains(&ModuleKey::of_status(s)))
    {
        errors.keep(targets.unconfigured(entry).await);
    }

    let wanted: BTreeSet<ModuleKey> = configured
        .iter()
        .cloned()
        .chain(status.iter().map(ModuleKey::of_status))
        .collect();
    let backed: BTreeSet<ModuleKey> = wanted
        .iter()
        .cloned()
        .chain(all_workers.iter().map(Worker::key))
        .collect();
    match drop_stale_in_use_labels(ctx, &nmc, &backed).await {
        Ok(Some(updated)) => nmc = updated,
        Ok(None) => {}
        Err(error) => errors.keep(Err(error)),
    }
    for orphan in garbage::orphans(&live, &wanted) {
        errors.keep(workers::remove(ctx, orphan.pod).await);
    }

    let loaded = loaded_modules(&spec, &status, &blocked, &facts);
    errors.keep(label_node(ctx, node, &loaded, &wanted).await);

    if spec.is_empty() && status.is_empty() && all_workers.is_empty() {
        errors.keep(delete_if_unchanged(ctx, &nmc).await);
    }
    errors.into_result()
}

/// The first error of a pass; the pass goes on after a failed step when later steps do not depend on it (a module
/// that cannot start must not hold back the labels of the others).
#[derive(Default)]
struct Errors(Option<Error>);

impl Errors {
    fn keep(&mut self, result: Result<(), Error>) {
        if let Err(error) = result {
            tracing::debug!(%error, "NodeModulesConfig pass step failed");
            self.0.get_or_insert(error);
        }
    }

    fn into_result(self) -> Result<(), Error> {
        self.0.map_or(Ok(()), Err)
    }
}

/// What deciding and starting the worker of one module needs.
struct Targets<'a, 'p> {
    ctx: &'a Context,
    nmc: &'a NodeModulesConfig,
    node: &'a str,
    facts: &'a NodeFacts,
    status: &'a [NodeModuleStatus],
    live: &'a [Worker<'p>],
}

impl Targets<'_, '_> {
    fn status_of(&self, key: &ModuleKey) -> Option<&NodeModuleStatus> {
        self.status.iter().find(|s| ModuleKey::of_status(s) == *key)
    }

    fn worker_of(&self, key: &ModuleKey) -> Option<&Worker<'_>> {
        self.live.iter().find(|w| w.key() == *key)
    }

    /// Move a module of the spec one step towards loaded with the spec's configuration.
    async fn configured(&self, entry: &NodeModuleSpec) -> Result<(), Error> {
        let key = ModuleKey::of_spec(entry);
        let status = self.status_of(&key);
        let worker = self.worker_of(&key);
        let loader = template::worker_pod(
            self.node,
            &self.ctx.images.worker,
            &WorkerRequest::load(entry),
        )?;
        let hash = template::hash_of(&loader).unwrap_or_default();
        match plan::for_configured(entry, status, worker, self.facts, hash) {
            Next::Wait => Ok(()),
            Next::Load => workers::create(self.ctx, self.nmc, loader).await,
            Next::Unload => match status.and_then(WorkerRequest::unload) {
                Some(request) => self.start(&request).await,
                None => Ok(()),
            },
            Next::Replace => self.replace(worker).await,
        }
    }

    /// Move a module that is loaded but no longer in the spec one step towards unloaded.
    async fn unconfigured(&self, status: &NodeModuleStatus) -> Result<(), Error> {
        let worker = self.worker_of(&ModuleKey::of_status(status));
        let unloader = WorkerRequest::unload(status)
            .map(|request| template::worker_pod(self.node, &self.ctx.images.worker, &request))
            .transpose()?;
        match plan::for_unconfigured(
            status,
            worker,
            unloader.as_ref().and_then(template::hash_of),
        ) {
            Next::Unload => match unloader {
                Some(pod) => workers::create(self.ctx, self.nmc, pod).await,
                None => Ok(()),
            },
            Next::Replace => self.replace(worker).await,
            Next::Wait | Next::Load => Ok(()),
        }
    }

    async fn start(&self, request: &WorkerRequest<'_>) -> Result<(), Error> {
        let pod = template::worker_pod(self.node, &self.ctx.images.worker, request)?;
        workers::create(self.ctx, self.nmc, pod).await
    }

    async fn replace(&self, worker: Option<&Worker<'_>>) -> Result<(), Error> {
        match worker {
            Some(worker) => {
                tracing::info!(pod = %worker.describe(), "replacing a failing worker built from an outdated template");
                workers::remove(self.ctx, worker.pod).await
            }
            None => Ok(()),
        }
    }
}

/// The modules the node runs as the spec wants them, with their versions: the status records the spec's
/// configuration, loaded in the node's current boot, and the module may run there (no untolerated taint).
fn loaded_modules(
    spec: &[NodeModuleSpec],
    status: &[NodeModuleStatus],
    blocked: &BTreeSet<ModuleKey>,
    facts: &NodeFacts,
) -> BTreeMap<ModuleKey, Option<String>> {
    spec.iter()
        .filter_map(|entry| {
            let key = ModuleKey::of_spec(entry);
            let recorded = status.iter().find(|s| ModuleKey::of_status(s) == key)?;
            let in_sync = !blocked.contains(&key)
                && recorded.config.as_ref() == Some(&entry.config)
                && recorded.boot_id.is_some()
                && recorded.boot_id == facts.boot_id;
            in_sync.then(|| (key, recorded.version.clone()))
        })
        .collect()
}

/// Write the status entries (the whole list: this reconciler is its only writer).
async fn write_status(
    ctx: &Context,
    name: &str,
    modules: &[NodeModuleStatus],
) -> Result<NodeModulesConfig, Error> {
    let patch = json!({ "status": { "modules": modules } });
    Api::<NodeModulesConfig>::all(ctx.client.clone())
        .patch_status(name, &patch_params(), &Patch::Merge(patch))
        .await
        .doing(|| format!("writing the status of NodeModulesConfig {name}"))
}

/// Remove the `module-in-use` labels nothing backs, guarded by the resourceVersion the decision was made on (so a
/// label the Module reconciler sets with a new entry is never lost). Returns the updated NMC when it changed.
async fn drop_stale_in_use_labels(
    ctx: &Context,
    nmc: &NodeModulesConfig,
    backed: &BTreeSet<ModuleKey>,
) -> Result<Option<NodeModulesConfig>, Error> {
    let stale = garbage::stale_in_use_labels(nmc.labels(), backed);
    if stale.is_empty() {
        return Ok(None);
    }
    let name = nmc.name_any();
    let removals: Map<String, Value> = stale
        .iter()
        .map(|key| ((*key).to_owned(), Value::Null))
        .collect();
    let patch = json!({
        "metadata": { "resourceVersion": nmc.resource_version(), "labels": removals }
    });
    Api::<NodeModulesConfig>::all(ctx.client.clone())
        .patch(&name, &patch_params(), &Patch::Merge(patch))
        .await
        .map(Some)
        .doing(|| format!("removing in-use labels {stale:?} of NodeModulesConfig {name}"))
}

/// Bring the node's ready labels in line with the `loaded` modules in one patch.
async fn label_node(
    ctx: &Context,
    node: &Node,
    loaded: &BTreeMap<ModuleKey, Option<String>>,
    known: &BTreeSet<ModuleKey>,
) -> Result<(), Error> {
    let changes = node_labels::changes(node.labels(), loaded, known);
    if changes.patch.is_empty() {
        return Ok(());
    }
    let name = node.name_any();
    let patch = json!({ "metadata": { "labels": changes.patch } });
    Api::<Node>::all(ctx.client.clone())
        .patch(&name, &patch_params(), &Patch::Merge(patch))
        .await
        .doing(|| format!("updating the module ready labels of node {name}"))?;
    // Loads are logged, not recorded as Events: an Event per node would be one more write per node, thousands in
    // one rollout, each saying what the label says; the Module reconciler records one per rollout. An unload is
    // recorded on the node, as upstream records it (`ModuleUnloaded`): the kernel module is gone from that node,
    // and the Module that named it may be gone too, so the node is where the record can stay.
    for module in &changes.loaded {
        tracing::info!(node = %name, %module, "module loaded into the kernel");
    }
    for module in &changes.unloaded {
        tracing::info!(node = %name, %module, "module unloaded from the kernel");
        ctx.event(
            node,
            false,
            "ModuleUnloaded",
            format!("Module {module} unloaded from the kernel"),
        )
        .await;
    }
    Ok(())
}

/// Delete an NMC with nothing left in it, unless it changed since it was read (a new entry is never lost).
async fn delete_if_unchanged(ctx: &Context, nmc: &NodeModulesConfig) -> Result<(), Error> {
    let name = nmc.name_any();
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: nmc.resource_version(),
            uid: nmc.uid(),
        }),
        ..Default::default()
    };
    match Api::<NodeModulesConfig>::all(ctx.client.clone())
        .delete(&name, &params)
        .await
    {
        Ok(_) => {
            tracing::info!(nmc = %name, "empty NodeModulesConfig deleted");
            Ok(())
        }
        Err(error) if is_not_found(&error) || is_conflict(&error) => Ok(()),
        Err(error) => Err(error).doing(|| format!("deleting empty NodeModulesConfig {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmm::nmc::testing::{spec_entry, status_entry};

    #[test]
    fn only_modules_in_sync_on_this_boot_and_schedulable_count_as_loaded() {
        let facts = NodeFacts {
            ready: true,
            boot_id: Some("boot-1".into()),
            kernel: Some("5.14.0".into()),
        };
        let spec = [
            spec_entry("ns", "synced", "img:1"),
            spec_entry("ns", "stale", "img:2"),
            spec_entry("ns", "rebooted", "img:1"),
            spec_entry("ns", "tainted", "img:1"),
            spec_entry("ns", "new", "img:1"),
        ];
        let mut synced = status_entry("ns", "synced", "img:1", "boot-1");
        synced.version = Some("v1".into());
        let status = [
            synced,
            status_entry("ns", "stale", "img:1", "boot-1"),
            status_entry("ns", "rebooted", "img:1", "boot-0"),
            status_entry("ns", "tainted", "img:1", "boot-1"),
            status_entry("ns", "gone", "img:1", "boot-1"),
        ];
        let blocked = BTreeSet::from([ModuleKey::new("ns", "tainted")]);
        let loaded = loaded_modules(&spec, &status, &blocked, &facts);
        assert_eq!(
            loaded,
            BTreeMap::from([(ModuleKey::new("ns", "synced"), Some("v1".to_owned()))])
        );
    }
}
