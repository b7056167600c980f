//! One pass over one Module: finalizer and namespace label, the plan, the MIC, the NMC entries, ordered-upgrade
//! labels, then the status with its reasons.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Secret};
use kube::ResourceExt;
use kube::api::{Api, Patch};
use kube::runtime::controller::Action;
use serde_json::json;

use super::entries;
use super::plan::{self, Plan};
use super::report::{self, Observed};
use super::{ModuleContext, finalize, images};
use crate::kmm::dra::gate;
use crate::kmm::mbsc::recipe;
use crate::runtime::attention;
use crate::runtime::context::{Error, KubeResultExt, retry_on_error};
use crate::runtime::finalizers;
use crate::runtime::writes::patch_params;
use kmm_api::conditions::DEGRADED;
use kmm_api::kmm::labels;
use kmm_api::kmm::{BuildSignAction, DaemonSetCounts, ImageState, Module, ModuleStatus};

/// The longest pause [`paced`] makes after a pass.
const MAX_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// How soon a pass held by a missing reference looks again for it.
const RECHECK_REFERENCES: std::time::Duration = std::time::Duration::from_secs(10);

/// How soon a pass whose NMC writes lost races looks again: by then the watch cache has caught up with the NMCs.
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(2);

/// [`reconcile`], then a pause of twice what the pass took (at most [`MAX_PAUSE`]) before the Module's next pass
/// may start. A pass covers every node, and during a rollout every NMC and worker pod change asks for another: the
/// pause lets those requests gather into one pass, so the reconciler takes at most a third of a core however busy
/// the cluster is, while on a small cluster a pass of a millisecond waits a couple more.
///
/// A pass that fails for a reason a person must fix is told on the Module (see [`attention`]).
pub(super) async fn paced(
    module: Arc<Module>,
    context: Arc<ModuleContext>,
) -> Result<Action, Error> {
    let started = std::time::Instant::now();
    let result = reconcile(module.clone(), context.clone()).await;
    attention::conclude_with_condition(&context.engine, module.as_ref(), &result).await;
    tokio::time::sleep((started.elapsed() * 2).min(MAX_PAUSE)).await;
    result
}

/// Reconcile one Module.
pub(super) async fn reconcile(
    module: Arc<Module>,
    context: Arc<ModuleContext>,
) -> Result<Action, Error> {
    if module.metadata.deletion_timestamp.is_some() {
        return finalize::finalize(&module, &context).await;
    }
    let namespace = module
        .namespace()
        .ok_or_else(|| Error::Invalid(format!("Module {} has no namespace", module.name_any())))?;
    label_namespace(&context, &namespace).await?;
    if !finalizers::has(module.as_ref(), labels::MODULE_FINALIZER) {
        add_finalizer(&context, &module, &namespace).await?;
        // The write triggers the next pass; the resync stands in should its event be missed.
        return Ok(context.engine.resync());
    }
    let Some(loader) = &module.spec.module_loader else {
        write_status(
            &context,
            &module,
            None,
            &Plan::default(),
            &Observed::default(),
        )
        .await?;
        return Ok(context.engine.resync());
    };
    // The shared node watch may not have listed yet: an empty cache would read as a Module targeting nothing.
    context
        .nodes
        .listed()
        .await
        .map_err(|stopped| Error::Invalid(format!("node cache: {stopped}")))?;
    let all_nodes = context.nodes.state();
    let node_refs: Vec<&Node> = all_nodes.iter().map(Arc::as_ref).collect();
    let plugin_nodes = plugin_nodes(&context, &namespace, &module.name_any());
    let mut plan = plan::plan_with_plugins(&module, &loader.container, &node_refs, &plugin_nodes);
    apply_version_labels(&context, &plan).await?;
    let missing_references = missing_references(&context, &module, &namespace).await?;
    let mic = if missing_references.is_empty() {
        Some(images::ensure_mic(&context.engine, &module, &loader.container, &plan).await?)
    } else {
        // Nothing is written from a spec that names a missing object: every node keeps its entry, and the MIC
        // keeps checking the images it had (its pull pods would lack the missing pull secret).
        plan.hold_targets();
        images::current_mic(&context.engine, &module).await?
    };
    let image_states: BTreeMap<String, _> = mic
        .iter()
        .flat_map(|mic| &mic.status)
        .flat_map(|s| &s.images_states)
        .map(|s| (s.image.clone(), s.status))
        .collect();
    let counts = entries::sync(
        &context.engine,
        &module,
        loader,
        &plan,
        &image_states,
        &context.nmcs.state(),
    )
    .await?;
    let mut observed = observe(&context, &module, &namespace);
    observed.image_states = image_states;
    observed.desired = counts.desired;
    observed.available = counts.available;
    observed.held = counts.held;
    observed.mic_name = mic
        .as_ref()
        .map_or_else(|| module.name_any(), |mic| mic.name_any());
    observed.missing_inputs = missing_inputs(&context, &namespace, &plan, &observed).await?;
    observed.missing_references = missing_references;
    let trigger = mic
        .as_ref()
        .and_then(|mic| mic.status.as_ref())
        .and_then(|s| s.image_rebuild_trigger_generation);
    write_status(&context, &module, trigger, &plan, &observed).await?;
    if !observed.missing_references.is_empty() {
        // Nothing watches Secrets: look again soon, so a Secret created to fix the spec is acted on.
        return Ok(context.engine.resync_within(RECHECK_REFERENCES));
    }
    if counts.conflicts > 0 {
        // The cache was behind the NMCs: look again once it has caught up.
        tracing::debug!(module = %module.name_any(), conflicts = counts.conflicts, "NMC writes lost races");
        return Ok(context.engine.resync_within(CATCH_UP));
    }
    Ok(context.engine.resync())
}

/// The engine's retry policy: the Module's next backoff step.
pub(super) fn error_policy(
    module: Arc<Module>,
    error: &Error,
    context: Arc<ModuleContext>,
) -> Action {
    retry_on_error(module, error, context.engine.clone())
}

async fn label_namespace(context: &ModuleContext, namespace: &str) -> Result<(), Error> {
    let api: Api<Namespace> = Api::all(context.engine.client.clone());
    let labelled = api
        .get(namespace)
        .await
        .doing(|| format!("reading namespace {namespace}"))?
        .labels()
        .contains_key(labels::NAMESPACE_CONTAINS_MODULES);
    if !labelled {
        let patch = json!({"metadata": {"labels": {labels::NAMESPACE_CONTAINS_MODULES: ""}}});
        api.patch(namespace, &patch_params(), &Patch::Merge(&patch))
            .await
            .doing(|| format!("labelling namespace {namespace}"))?;
    }
    Ok(())
}

async fn add_finalizer(
    context: &ModuleContext,
    module: &Module,
    namespace: &str,
) -> Result<(), Error> {
    let api = Api::<Module>::namespaced(context.engine.client.clone(), namespace);
    finalizers::add(&api, module, labels::MODULE_FINALIZER)
        .await
        .doing(|| {
            format!(
                "adding the finalizer of Module {namespace}/{}",
                module.name_any()
            )
        })?;
    Ok(())
}

/// The nodes where a device plugin or DRA driver pod of the Module still is (running or going).
fn plugin_nodes(context: &ModuleContext, namespace: &str, name: &str) -> BTreeSet<String> {
    context
        .plugin_pods
        .state()
        .iter()
        .filter(|pod| pod.metadata.namespace.as_deref() == Some(namespace))
        .filter(|pod| pod.labels().get(labels::MODULE_NAME).map(String::as_str) == Some(name))
        .filter_map(|pod| pod.spec.as_ref()?.node_name.clone())
        .collect()
}

/// Move the ordered-upgrade worker and schedule labels one step.
async fn apply_version_labels(context: &ModuleContext, plan: &Plan) -> Result<(), Error> {
    let api: Api<Node> = Api::all(context.engine.client.clone());
    for (node, changes) in &plan.version_labels {
        let patch = json!({"metadata": {"labels": changes}});
        api.patch(node, &patch_params(), &Patch::Merge(&patch))
            .await
            .doing(|| format!("moving the module version label of node {node}"))?;
    }
    Ok(())
}

/// What the pods of the Module show: pulls stuck in back-off and failing workers. Read from the watch caches: only
/// the status reports this, and a later pod change starts another pass.
fn observe(context: &ModuleContext, module: &Module, namespace: &str) -> Observed {
    let name = module.name_any();
    let of_module = |pod: &Pod, label: &str| {
        pod.metadata.namespace.as_deref() == Some(namespace)
            && pod.labels().get(label).map(String::as_str) == Some(name.as_str())
    };
    let mut observed = Observed::default();
    let pullers = context.pull_pods.state();
    for pod in pullers.iter().filter(|p| of_module(p, labels::IMAGE_OWNER)) {
        let Some(spec) = &pod.spec else { continue };
        let Some(image) = spec.containers.first().and_then(|c| c.image.clone()) else {
            continue;
        };
        let waiting = pod
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .filter_map(|c| c.state.as_ref()?.waiting.as_ref())
            .find(|w| {
                matches!(
                    w.reason.as_deref(),
                    Some("ErrImagePull" | "ImagePullBackOff")
                )
            });
        if let Some(waiting) = waiting {
            let reason = waiting.reason.clone().unwrap_or_default();
            let text = match waiting.message.as_deref().filter(|m| !m.is_empty()) {
                Some(message) => format!("{reason}: {message}"),
                None => reason,
            };
            observed.pull_waits.insert(image, text);
        }
    }
    let workers = context.worker_pods.state();
    for pod in workers.iter().filter(|p| of_module(p, labels::MODULE_NAME)) {
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        let failure = pod
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .filter(|c| c.restart_count > 0)
            .find_map(|c| {
                let last = c.last_state.as_ref()?.terminated.as_ref()?;
                Some(
                    last.message
                        .clone()
                        .filter(|m| !m.is_empty())
                        .or_else(|| last.reason.clone())
                        .unwrap_or_else(|| format!("exit code {}", last.exit_code)),
                )
            });
        if let Some(message) = failure {
            observed
                .worker_failures
                .insert(node, message.trim().to_owned());
        }
    }
    observed
}

/// Write counters, kernels and conditions when they differ from what is stored.
async fn write_status(
    context: &ModuleContext,
    module: &Module,
    rebuild_trigger: Option<i64>,
    plan: &Plan,
    observed: &Observed,
) -> Result<(), Error> {
    let current = module.status.clone().unwrap_or_default();
    let mut status = ModuleStatus {
        module_loader: None,
        device_plugin: current.device_plugin.clone(),
        dra: current.dra.clone(),
        image_rebuild_trigger_generation: rebuild_trigger,
        kernels: plan.kernels.clone(),
        conditions: current.conditions.clone(),
    };
    if module.spec.module_loader.is_some() {
        status.module_loader = Some(DaemonSetCounts {
            nodes_matching_selector_number: plan.targeted as i32,
            desired_number: observed.desired,
            available_number: observed.available,
        });
        report::set_conditions(
            &mut status.conditions,
            plan,
            observed,
            module.metadata.generation,
        );
    } else {
        report::set_no_loader_conditions(&mut status.conditions, module.metadata.generation);
    }
    let dra_version = match module.spec.dra {
        Some(_) => Some(gate::cluster_version(&context.engine.client).await?),
        None => None,
    };
    gate::apply(
        &mut status.conditions,
        dra_version,
        module.metadata.generation,
    );
    if status == current {
        return Ok(());
    }
    // Every field is spelled out (zeros and empty lists included), so the merge patch replaces what is stored
    // without racing other writers of the object (this reconciler is the status' only writer).
    let counts = status.module_loader.as_ref().map(|c| {
        json!({
            "nodesMatchingSelectorNumber": c.nodes_matching_selector_number,
            "desiredNumber": c.desired_number,
            "availableNumber": c.available_number,
        })
    });
    let patch = json!({"status": {
        "moduleLoader": counts,
        "imageRebuildTriggerGeneration": status.image_rebuild_trigger_generation,
        "kernels": status.kernels,
        "conditions": status.conditions,
    }});
    let namespace = module.namespace().unwrap_or_default();
    Api::<Module>::namespaced(context.engine.client.clone(), &namespace)
        .patch_status(&module.name_any(), &patch_params(), &Patch::Merge(&patch))
        .await
        .doing(|| {
            format!(
                "writing the status of Module {namespace}/{}",
                module.name_any()
            )
        })?;
    gate::announce(
        &context.engine,
        module,
        &current.conditions,
        &status.conditions,
    )
    .await;
    announce_completion(context, module, &current, &status).await;
    announce_degraded(context, module, &current, &status).await;
    Ok(())
}

/// The objects the Module's spec refers to for every node that do not exist, each worded with its field: the
/// pull secret of its images (`spec.imageRepoSecret`). Workers and pull pods started without it would fail, so
/// while one is missing the pass holds every node as it is.
async fn missing_references(
    context: &ModuleContext,
    module: &Module,
    namespace: &str,
) -> Result<Vec<String>, Error> {
    let Some(secret) = module
        .spec
        .image_repo_secret
        .as_ref()
        .map(|s| s.name.as_str())
        .filter(|name| !name.is_empty())
    else {
        return Ok(Vec::new());
    };
    let api = Api::<Secret>::namespaced(context.engine.client.clone(), namespace);
    match api.get_metadata_opt(secret).await {
        Ok(Some(_)) => Ok(Vec::new()),
        Ok(None) => Ok(vec![format!(
            "spec.imageRepoSecret.name {secret:?}: Secret {namespace}/{secret} does not exist"
        )]),
        Err(source) => Err(source).doing(|| format!("reading Secret {namespace}/{secret}")),
    }
}

/// The images to build or sign whose recipe names a Dockerfile ConfigMap or signing Secret that is missing or
/// unusable, with what is wrong. Those builds never start, and nothing watches the inputs: the Module says so
/// rather than waiting on `NeedsBuilding` for ever.
async fn missing_inputs(
    context: &ModuleContext,
    namespace: &str,
    plan: &Plan,
    observed: &Observed,
) -> Result<BTreeMap<String, String>, Error> {
    let mut missing = BTreeMap::new();
    for image in &plan.images {
        let action = match observed.image_states.get(&image.image) {
            Some(ImageState::NeedsBuilding) => BuildSignAction::BuildImage,
            Some(ImageState::NeedsSigning) => BuildSignAction::SignImage,
            _ => continue,
        };
        if let Some(why) = recipe::missing_input(&context.engine, namespace, image, action).await? {
            missing.insert(image.image.clone(), why);
        }
    }
    Ok(missing)
}

/// An Event on the Module when it becomes loaded on every node that has an entry: one per rollout however many
/// nodes it covers, where an Event per node would be thousands of writes. Progress in between is in the
/// `Progressing` condition; each node's loads and unloads are in the engine's log and its NodeModulesConfig status.
/// The note names no count: a repeat is recorded as a series of the same Event.
async fn announce_completion(
    context: &ModuleContext,
    module: &Module,
    before: &ModuleStatus,
    after: &ModuleStatus,
) {
    let complete = |status: &ModuleStatus| {
        status
            .module_loader
            .as_ref()
            .is_some_and(|c| c.desired_number > 0 && c.available_number == c.desired_number)
    };
    if complete(after) && !complete(before) {
        let note = "Loaded into the kernel on every node that has an entry".to_owned();
        context
            .engine
            .event(module, false, "ModuleLoaded", note)
            .await;
    }
}

/// A Warning Event on the Module when it turns `Degraded` for a reason it did not have before: a person must act,
/// and Events are where `kubectl describe` and the console's event view look. Once per reason, not per pass.
async fn announce_degraded(
    context: &ModuleContext,
    module: &Module,
    before: &ModuleStatus,
    after: &ModuleStatus,
) {
    let degraded = |status: &ModuleStatus| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == DEGRADED && c.status == "True")
            .map(|c| (c.reason.clone(), c.message.clone()))
    };
    let Some((reason, message)) = degraded(after) else {
        return;
    };
    if degraded(before).is_some_and(|(was, _)| was == reason) {
        return;
    }
    context.engine.event(module, true, &reason, message).await;
}
