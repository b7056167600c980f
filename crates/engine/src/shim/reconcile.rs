//! One pass over a Shim: read it, its installer pods (listed afresh, so the `maxUpdate` bound holds even right
//! after a restart) and the nodes; plan; write node labels, delete finished pods, start new ones; keep the
//! RuntimeClass; publish events; write the status; and, for a deleting Shim with nothing left on any node, release
//! its finalizer.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch};
use kube::runtime::controller::Action;
use serde_json::json;

use super::plan::{self, Inputs, NewPod, NodeWrite, Plan};
use super::pods::{self, InstallSpec};
use super::{ShimContext, report, runtime_class, spec_hash};
use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::finalizers::{self, Guard};
use crate::runtime::writes::patch_params;
use crate::runtime::writes::post_params;
use crate::{runtime::attention, runtime::status};
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::shim::names::{self, Operation};
use kmm_api::shim::{Shim, ShimStatus};

/// One pass over the Shim; a failure a person must act on is told on it (see [`attention`]).
pub(super) async fn reconcile(
    object: Arc<Shim>,
    context: Arc<ShimContext>,
) -> Result<Action, Error> {
    let outcome = reconcile_shim(&object, &context).await;
    attention::conclude_with_condition(&context.engine, object.as_ref(), &outcome).await;
    outcome
}

/// One pass over the Shim, read afresh (the controller's copy may predate this reconciler's last status write).
async fn reconcile_shim(object: &Shim, context: &ShimContext) -> Result<Action, Error> {
    let engine = &context.engine;
    let name = object.name_any();
    let api = Api::<Shim>::all(engine.client.clone());
    let Some(shim) = api
        .get_opt(&name)
        .await
        .doing(|| format!("reading Shim {name}"))?
    else {
        return Ok(Action::await_change());
    };
    let has_finalizer = finalizers::has(&shim, names::FINALIZER);
    let deleting = shim.metadata.deletion_timestamp.is_some();
    if deleting && !has_finalizer {
        return Ok(Action::await_change());
    }
    if !has_finalizer {
        finalizers::add(&api, &shim, names::FINALIZER)
            .await
            .doing(|| format!("adding the finalizer of Shim {name}"))?;
        return Ok(engine.resync());
    }
    context
        .nodes
        .listed()
        .await
        .map_err(|stopped| Error::Invalid(format!("node cache: {stopped}")))?;
    let pod_api = Api::<Pod>::namespaced(engine.client.clone(), names::INSTALLER_NAMESPACE);
    let pods = pod_api
        .list(&ListParams::default().labels(&format!("{}={name}", names::SHIM_NAME)))
        .await
        .doing(|| format!("listing the installer pods of Shim {name}"))?
        .items;
    let nodes = context.nodes.state();
    let hash = spec_hash(&shim);
    let plan = plan::plan(&Inputs {
        shim: &shim,
        hash: &hash,
        nodes: &nodes,
        pods: &pods,
    });

    for write in &plan.node_writes {
        write_node(context, &name, write).await?;
    }
    for pod in &plan.delete {
        delete_pod(&pod_api, pod).await?;
    }
    for new in &plan.create {
        create_pod(context, &shim, &hash, new, &pod_api).await?;
    }
    if !deleting {
        runtime_class::ensure(engine, &shim).await?;
    }
    for notice in &plan.notices {
        if notice.reason == "BatchStarted" {
            engine
                .metrics
                .rollout_batch_started(crate::runtime::family::Family::Shims);
        }
        engine
            .event(&shim, notice.warning, notice.reason, notice.note.clone())
            .await;
    }
    write_status(&api, &shim, report::status(&shim, &plan, &hash)).await?;
    if deleting && nothing_left(&plan, pods.len()) {
        runtime_class::remove_owned(engine, &shim, None).await?;
        // The status was written since the Shim was read: the removal cannot be guarded by its resourceVersion.
        finalizers::remove(&api, &shim, names::FINALIZER, Guard::None)
            .await
            .doing(|| format!("removing the finalizer of Shim {name}"))?;
        engine
            .event(
                &shim,
                false,
                "Uninstalled",
                "the shim is off every node and its RuntimeClass is deleted".to_owned(),
            )
            .await;
        return Ok(Action::await_change());
    }
    Ok(engine.resync())
}

/// Whether a deleting Shim is off every node: no node left to clean and every pod finished and deleted now.
fn nothing_left(plan: &Plan, pods: usize) -> bool {
    plan.views.is_empty()
        && plan.create.is_empty()
        && plan.node_writes.is_empty()
        && plan.delete.len() == pods
}

/// Write the Shim's label and spec hash on a node (a merge patch: other labels stay as they are).
async fn write_node(context: &ShimContext, shim: &str, write: &NodeWrite) -> Result<(), Error> {
    let mut metadata = serde_json::Map::new();
    if let Some(label) = &write.label {
        metadata.insert("labels".to_owned(), json!({names::node_label(shim): label}));
    }
    let mut annotations = serde_json::Map::new();
    if let Some(hash) = &write.hash {
        annotations.insert(names::node_hash_annotation(shim), json!(hash));
        if hash.is_none() {
            annotations.insert(names::node_batch_annotation(shim), serde_json::Value::Null);
        }
    }
    if let Some(batch) = write.batch {
        annotations.insert(names::node_batch_annotation(shim), json!(batch.to_string()));
    }
    if let Some(failed_batch) = &write.failed_batch {
        annotations.insert(
            names::node_failed_batch_annotation(shim),
            json!(failed_batch),
        );
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".to_owned(), annotations.into());
    }
    let patch = json!({"metadata": metadata});
    let node = &write.node;
    match Api::<Node>::all(context.engine.client.clone())
        .patch(node, &patch_params(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        // The node left: its pods are dropped on a later pass.
        Err(error) if is_not_found(&error) => Ok(()),
        Err(error) => Err(error).doing(|| format!("labelling node {node} for Shim {shim}")),
    }
}

/// Delete a finished installer pod; one already gone is fine.
async fn delete_pod(api: &Api<Pod>, name: &str) -> Result<(), Error> {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(error) => Err(error).doing(|| format!("deleting installer pod {name}")),
    }
}

/// Start one installer pod. A pod of that name that exists already is this very pod from a pass whose outcome the
/// caches had not shown yet: fine.
async fn create_pod(
    context: &ShimContext,
    shim: &Shim,
    hash: &str,
    new: &NewPod,
    api: &Api<Pod>,
) -> Result<(), Error> {
    let install = new.artifact.as_ref().map(|artifact| InstallSpec {
        artifact,
        hash,
        batch: new.batch,
    });
    let pod = pods::pod(
        shim,
        &new.node,
        new.operation,
        install,
        &context.engine.images,
    );
    match api.create(&post_params(), &pod).await {
        Ok(_) => Ok(()),
        Err(error) if is_conflict(&error) => Ok(()),
        Err(error) => Err(error).doing(|| {
            let verb = match new.operation {
                Operation::Install => "install",
                Operation::Uninstall => "uninstall",
            };
            format!(
                "starting the {verb} pod of Shim {} on {}",
                shim.name_any(),
                new.node
            )
        }),
    }
}

/// Write the status when it differs from what is stored, guarded by the resourceVersion the pass read: a 409 means
/// the Shim changed meanwhile, and the retry plans from the new state. The patch clears every field, at any depth,
/// that the new status leaves out (a rollout no longer awaiting approval drops `awaitingApproval`).
async fn write_status(api: &Api<Shim>, shim: &Shim, new: ShimStatus) -> Result<(), Error> {
    if shim.status.as_ref() == Some(&new) {
        return Ok(());
    }
    let stored = serde_json::to_value(&shim.status).unwrap_or_default();
    let value = status::merge_patch(&stored, &serde_json::to_value(&new).unwrap_or_default());
    let name = shim.name_any();
    let patch = json!({"metadata": {"resourceVersion": shim.resource_version()}, "status": value});
    api.patch_status(&name, &patch_params(), &Patch::Merge(&patch))
        .await
        .doing(|| format!("writing the status of Shim {name}"))?;
    Ok(())
}
