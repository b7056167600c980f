//! One pass over a ManagedClusterModule: select its clusters, put the images they need in the hub's
//! ModuleImagesConfig, write each cluster's ManifestWork once it can be served, delete the works of clusters that
//! left the selector, and write the status (counts, each cluster's state, `Delivered`) with an Event for each
//! cluster whose state newly needs a person or newly is served.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::api::{Api, DeleteParams, ListParams, Patch};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use super::HubContext;
use super::manifest::{self, AVAILABLE, DESIRED};
use super::plan::{self, ClusterPlan, Delivery, Mappings};
use crate::kmm::mic::{put_mic, read_mic};
use crate::runtime::attention;
use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::status::{merge_patch, set_condition};
use crate::runtime::writes::{patch_params, post_params};
use kmm_api::errors::is_not_found;
use kmm_api::hub::{
    CONDITION_DELIVERED, ClusterDelivery, ManagedClusterModule, ManagedClusterModuleStatus,
    NAME_LABEL, images_config_name, reasons,
};
use kmm_api::kmm::{
    ImagePullPolicy, ModuleImagesConfig, ModuleImagesConfigImage, ModuleImagesConfigSpec,
};
use kmm_api::ocm::cluster::ManagedCluster;
use kmm_api::ocm::names::{WORK_APPLIED, WORK_DEGRADED};
use kmm_api::ocm::work::ManifestWork;

/// The pass, then what it found told to a person when they must act.
pub(super) async fn reconcile(
    mcm: Arc<ManagedClusterModule>,
    context: Arc<HubContext>,
) -> Result<Action, Error> {
    let outcome = pass(&mcm, &context).await;
    attention::conclude_with_condition(&context.engine, mcm.as_ref(), &outcome).await;
    outcome
}

/// Retry a failed pass with the engine's back-off.
pub(super) fn error_policy(
    mcm: Arc<ManagedClusterModule>,
    error: &Error,
    context: Arc<HubContext>,
) -> Action {
    crate::runtime::context::retry_on_error(mcm, error, context.engine.clone())
}

async fn pass(mcm: &ManagedClusterModule, context: &HubContext) -> Result<Action, Error> {
    if mcm.meta().deletion_timestamp.is_some() {
        // Its ManifestWorks and ModuleImagesConfig are its dependents: the garbage collector takes them.
        return Ok(context.engine.resync());
    }
    let name = mcm.name_any();
    let client = &context.engine.client;
    let all_clusters = context.clusters.state();
    let mut selected: Vec<&ManagedCluster> = all_clusters
        .iter()
        .map(AsRef::as_ref)
        .filter(|cluster| plan::selects(&mcm.spec.selector, cluster))
        .collect();
    selected.sort_by_key(|cluster| cluster.name_any());
    let works_api: Api<ManifestWork> = Api::all(client.clone());
    let stored = works_api
        .list(&ListParams::default().labels(&format!("{NAME_LABEL}={name}")))
        .await
        .doing(|| format!("listing the ManifestWorks of ManagedClusterModule {name}"))?;
    let mut works: BTreeMap<String, ManifestWork> = stored
        .items
        .into_iter()
        .filter_map(|work| Some((work.namespace()?, work)))
        .collect();
    let delivered: BTreeMap<String, Mappings> = works
        .iter()
        .map(|(cluster, work)| (cluster.clone(), manifest::delivered(work)))
        .collect();

    let namespace = &context.engine.settings.hub_namespace;
    let mics: Api<ModuleImagesConfig> = Api::namespaced(client.clone(), namespace);
    let mic_name = images_config_name(&name);
    let current_mic = read_mic(&mics, namespace, &mic_name).await?;
    let plan = plan::plan(mcm, &selected, &delivered, current_mic.as_ref());
    if let Some(images) = &plan.images {
        put_images(mcm, &mics, namespace, &mic_name, current_mic, images).await?;
    }

    for cluster in &plan.clusters {
        let Delivery::Deliver(mappings) = &cluster.delivery else {
            continue;
        };
        let wanted = manifest::work(mcm, &cluster.name, mappings);
        let written = write_work(client, works.remove(&cluster.name), wanted).await?;
        works.insert(cluster.name.clone(), written);
    }
    let chosen: BTreeSet<&str> = plan.clusters.iter().map(|c| c.name.as_str()).collect();
    let leaving: Vec<String> = works
        .keys()
        .filter(|cluster| !chosen.contains(cluster.as_str()))
        .cloned()
        .collect();
    for cluster in leaving {
        let api: Api<ManifestWork> = Api::namespaced(client.clone(), &cluster);
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(error) if is_not_found(&error) => {}
            Err(error) => {
                return Err(error).doing(|| {
                    format!("deleting ManifestWork {cluster}/{name}: the cluster left the selector")
                });
            }
        }
        works.remove(&cluster);
        tracing::info!(mcm = %name, %cluster, "cluster left the selector: its ManifestWork is deleted");
    }

    let status = status(mcm, &plan.clusters, &selected, &works);
    tell(context, mcm, &status).await;
    write_status(client, mcm, status).await?;
    Ok(context.engine.resync())
}

/// Store the MCM's images in its MIC on the hub, keeping each image's `generation` (a rebuild's ask).
async fn put_images(
    mcm: &ManagedClusterModule,
    api: &Api<ModuleImagesConfig>,
    namespace: &str,
    name: &str,
    current: Option<ModuleImagesConfig>,
    images: &[kmm_api::kmm::ModuleImageSpec],
) -> Result<(), Error> {
    let generations: BTreeMap<&str, i64> = current
        .iter()
        .flat_map(|mic| &mic.spec.images)
        .filter_map(|i| Some((i.spec.image.as_str(), i.generation?)))
        .collect();
    let spec = &mcm.spec.module_spec;
    let pull_policy = spec
        .module_loader
        .as_ref()
        .and_then(|loader| loader.container.image_pull_policy)
        .unwrap_or(ImagePullPolicy::IfNotPresent);
    let wanted = ModuleImagesConfigSpec {
        images: images
            .iter()
            .map(|image| ModuleImagesConfigImage {
                spec: image.clone(),
                generation: generations.get(image.image.as_str()).copied(),
            })
            .collect(),
        image_repo_secret: spec.image_repo_secret.clone(),
        image_pull_policy: pull_policy,
        push_built_image: true,
        image_rebuild_trigger_generation: spec.image_rebuild_trigger_generation,
        tolerations: spec.tolerations.clone(),
    };
    put_mic(api, namespace, name, manifest::owner(mcm), current, wanted).await?;
    Ok(())
}

/// Create `wanted`, or replace `stored` with it when it carries something else; returns the work as stored.
async fn write_work(
    client: &kube::Client,
    stored: Option<ManifestWork>,
    wanted: ManifestWork,
) -> Result<ManifestWork, Error> {
    let namespace = wanted.namespace().unwrap_or_default();
    let name = wanted.name_any();
    let api: Api<ManifestWork> = Api::namespaced(client.clone(), &namespace);
    match stored {
        Some(stored) if manifest::carries(&stored, &wanted) => Ok(stored),
        Some(mut stored) => {
            stored.spec = wanted.spec;
            stored.metadata.labels = wanted.metadata.labels;
            stored.metadata.owner_references = wanted.metadata.owner_references;
            api.replace(&name, &post_params(), &stored)
                .await
                .doing(|| format!("updating ManifestWork {namespace}/{name}"))
        }
        None => api
            .create(&post_params(), &wanted)
            .await
            .doing(|| format!("creating ManifestWork {namespace}/{name}")),
    }
}

/// The status the pass found: upstream's counts over the works, each selected cluster's state and `Delivered`.
fn status(
    mcm: &ManagedClusterModule,
    plans: &[ClusterPlan],
    selected: &[&ManagedCluster],
    works: &BTreeMap<String, ManifestWork>,
) -> ManagedClusterModuleStatus {
    let holds = |work: &ManifestWork, type_: &str| {
        work.condition(type_).is_some_and(|c| c.status == "True")
    };
    let clusters: Vec<ClusterDelivery> = plans
        .iter()
        .map(|plan| {
            let cluster = selected
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(plan.name.as_str()));
            delivery(plan, cluster.copied(), works.get(&plan.name))
        })
        .collect();
    let count = |type_: &str| works.values().filter(|w| holds(w, type_)).count();
    let mut conditions = mcm
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let generation = mcm.meta().generation;
    let applied = clusters
        .iter()
        .filter(|c| c.reason == reasons::APPLIED)
        .count();
    if clusters.is_empty() {
        let selector: Vec<String> = mcm
            .spec
            .selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        set_condition(
            &mut conditions,
            CONDITION_DELIVERED,
            false,
            reasons::NO_CLUSTER,
            format!(
                "the selector {{{}}} picks no ManagedCluster",
                selector.join(",")
            ),
            generation,
        );
    } else if applied == clusters.len() {
        set_condition(
            &mut conditions,
            CONDITION_DELIVERED,
            true,
            reasons::DELIVERED,
            format!("every selected cluster applied the Module ({applied})"),
            generation,
        );
    } else if let Some(worst) = clusters.iter().max_by_key(|c| severity(&c.reason)) {
        set_condition(
            &mut conditions,
            CONDITION_DELIVERED,
            false,
            &worst.reason,
            format!(
                "{applied} of {} clusters applied the Module; {}: {}",
                clusters.len(),
                worst.name,
                worst.message
            ),
            generation,
        );
    }
    ManagedClusterModuleStatus {
        number_desired: works.len() as i32,
        number_applied: count(WORK_APPLIED) as i32,
        number_degraded: count(WORK_DEGRADED) as i32,
        observed_generation: generation,
        conditions,
        clusters,
    }
}

/// How much a cluster's state needs a person, to pick the one the condition names: refusals first, then what
/// waits on the hub, then what waits on the spoke.
fn severity(reason: &str) -> u8 {
    match reason {
        reasons::BAD_MAPPING => 7,
        reasons::APPLY_FAILED => 6,
        reasons::IMAGE_FAILED => 5,
        reasons::NO_KERNELS => 4,
        reasons::NO_MAPPING => 3,
        reasons::WAITING_FOR_IMAGES => 2,
        reasons::APPLYING => 1,
        _ => 0,
    }
}

/// One selected cluster's state: what the hub knows first, else what its work says.
fn delivery(
    plan: &ClusterPlan,
    cluster: Option<&ManagedCluster>,
    work: Option<&ManifestWork>,
) -> ClusterDelivery {
    let feedback = |name: &str| {
        work.and_then(|w| w.feedback(0, name))
            .and_then(|v| v.integer)
    };
    let applied = work.and_then(|w| w.condition(WORK_APPLIED));
    let (reason, mut message) = match (&plan.blocked, applied) {
        (Some((reason, message)), _) => ((*reason).to_owned(), message.clone()),
        (None, None) => (
            reasons::APPLYING.to_owned(),
            "waiting for the cluster's work agent to apply its ManifestWork".to_owned(),
        ),
        (None, Some(condition)) if condition.status == "True" => {
            let loaded = match (feedback(AVAILABLE), feedback(DESIRED)) {
                (Some(available), Some(desired)) => {
                    format!("; loaded on {available} of {desired} nodes")
                }
                _ => String::new(),
            };
            (
                reasons::APPLIED.to_owned(),
                format!("the spoke applied the Module{loaded}"),
            )
        }
        (None, Some(condition)) if condition.status == "False" => {
            (reasons::APPLY_FAILED.to_owned(), condition.message.clone())
        }
        (None, Some(_)) => (
            reasons::APPLYING.to_owned(),
            "the cluster's work agent is applying its ManifestWork".to_owned(),
        ),
    };
    if cluster.is_some_and(|c| !c.is_available()) {
        message.push_str(" (the cluster is unavailable: its agent stopped renewing its Lease)");
    }
    ClusterDelivery {
        name: plan.name.clone(),
        reason,
        message,
        available_number: feedback(AVAILABLE),
        desired_number: feedback(DESIRED),
        images: plan.images.clone(),
    }
}

/// Publish an Event for each cluster whose state changed since the stored status into one a person must act on
/// (a Warning) or into applied, and when the selector newly picks nothing.
async fn tell(
    context: &HubContext,
    mcm: &ManagedClusterModule,
    status: &ManagedClusterModuleStatus,
) {
    let before = mcm.status.as_ref();
    let previous = |cluster: &str| {
        before
            .into_iter()
            .flat_map(|s| &s.clusters)
            .find(|c| c.name == cluster)
            .map(|c| c.reason.as_str())
    };
    for cluster in &status.clusters {
        if previous(&cluster.name) == Some(cluster.reason.as_str()) {
            continue;
        }
        let warning = severity(&cluster.reason) >= severity(reasons::NO_MAPPING);
        if warning || cluster.reason == reasons::APPLIED {
            let note = format!("{}: {}", cluster.name, cluster.message);
            context
                .engine
                .event(mcm, warning, &cluster.reason, note)
                .await;
        }
    }
    let reason_of = |status: Option<&ManagedClusterModuleStatus>| {
        status
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == CONDITION_DELIVERED))
            .map(|c| c.reason.clone())
    };
    let now = reason_of(Some(status));
    if now.as_deref() == Some(reasons::NO_CLUSTER) && reason_of(before) != now {
        let message = status
            .conditions
            .iter()
            .find(|c| c.type_ == CONDITION_DELIVERED)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        context
            .engine
            .event(mcm, true, reasons::NO_CLUSTER, message)
            .await;
    }
}

/// Write `status` when it differs from the stored one, as a merge patch guarded by the resourceVersion read.
async fn write_status(
    client: &kube::Client,
    mcm: &ManagedClusterModule,
    status: ManagedClusterModuleStatus,
) -> Result<(), Error> {
    if mcm.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let name = mcm.name_any();
    let old = serde_json::to_value(&mcm.status).unwrap_or_default();
    let new = serde_json::to_value(&status).unwrap_or_default();
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": mcm.resource_version()},
        "status": merge_patch(&old, &new),
    });
    Api::<ManagedClusterModule>::all(client.clone())
        .patch_status(&name, &patch_params(), &Patch::Merge(&patch))
        .await
        .doing(|| format!("writing the status of ManagedClusterModule {name}"))?;
    Ok(())
}
