//! The ModuleImagesConfig reconciler: proves with pull pods whether each image exists, hands the missing images
//! that have a build or sign recipe to the MIC's ModuleBuildSignConfig, and records each image's state, stamped
//! with the image generation it answers, with a Ready condition saying why images are not there yet.
//!
//! A pass: a new `imageRebuildTriggerGeneration` restarts every check; pull pods are read and judged; the MBSC's
//! outcomes move images on; the status is written; only then are answered pull pods deleted, new ones created
//! (one fixed name per image and generation, so a restart never starts a second check) and the MBSC updated.

mod build_sign;
mod checks;
mod cluster;
mod pods;
mod progress;
mod pull_pod;
mod ready;
mod wanted;

pub use cluster::{put_mic, read_mic};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use self::cluster::MicApi;
use self::progress::Known;
use self::ready::ImageProgress;
use self::wanted::Wanted;
use super::context::{Context, Error, retry_on_error};
use super::{labels, status};
use crate::api::conditions::READY;
use crate::api::kmm::{
    ImageState, ModuleBuildSignConfig, ModuleImagesConfig, ModuleImagesConfigStatus,
};

pub use self::pull_pod::pull_pod_name;
pub use self::ready::IMAGE_MISSING;

/// How often a MIC is looked at when nothing it watches changes.
const RESYNC: Duration = Duration::from_secs(300);

/// Run the reconciler until `stop` is cancelled.
pub async fn run(context: Arc<Context>, stop: CancellationToken) {
    let client = context.client.clone();
    Controller::new(
        Api::<ModuleImagesConfig>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(labels::IMAGE_OWNER),
    )
    .owns(
        Api::<ModuleBuildSignConfig>::all(client.clone()),
        watcher::Config::default(),
    )
    .watches(
        Api::<Pod>::all(client),
        watcher::Config::default().labels(labels::RESOURCE_TYPE),
        mic_of_build_pod,
    )
    .graceful_shutdown_on(stop.cancelled_owned())
    .run(reconcile, retry_on_error, context)
    .for_each(|result| async move {
        if let Err(error) = result {
            tracing::debug!(%error, "ModuleImagesConfig pass did not complete");
        }
    })
    .await;
}

/// The MIC whose MBSC runs a build or sign pod (an MBSC is named after its MIC), so the Ready message follows the
/// pod's progress.
fn mic_of_build_pod(pod: Pod) -> Option<ObjectRef<ModuleImagesConfig>> {
    let namespace = pod.namespace()?;
    let owner = pod
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == ModuleBuildSignConfig::kind(&()))?;
    Some(ObjectRef::new(&owner.name).within(&namespace))
}

/// One pass over a MIC.
async fn reconcile(mic: Arc<ModuleImagesConfig>, context: Arc<Context>) -> Result<Action, Error> {
    if mic.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let api = MicApi::new(&context.client, &mic)?;

    let mut recorded = mic.status.clone();
    let mut stored = recorded.clone().unwrap_or_default();
    if mic.spec.image_rebuild_trigger_generation != stored.image_rebuild_trigger_generation {
        api.restart_checks(&mic).await?;
        stored.images_states.clear();
        stored.image_rebuild_trigger_generation = mic.spec.image_rebuild_trigger_generation;
        recorded = Some(stored.clone());
    }
    let wanted = wanted::wanted(&mic.spec);
    let before = wanted::current_states(&wanted, &stored.images_states);
    let mut states = before.clone();

    let pull_pods = api.pull_pods().await?;
    let findings = checks::judge_all(&pull_pods, mic.uid().as_deref(), &wanted, &mut states);

    let mbsc = api.mbsc().await?;
    let outcomes = mbsc
        .as_ref()
        .and_then(|m| m.status.as_ref())
        .map(|s| s.images.as_slice())
        .unwrap_or_default();
    for w in &wanted {
        if let Some(state) = states.get_mut(w.image()) {
            *state = build_sign::after_build_sign(w, *state, outcomes);
        }
    }
    let build_pods = if states.values().any(|s| *s != ImageState::Exists) {
        api.build_pods().await?
    } else {
        Vec::new()
    };
    let known = Known {
        mic: &api.name,
        outcomes,
        build_pods: &build_pods,
    };
    let progress: Vec<(&str, ImageProgress)> = wanted
        .iter()
        .map(|w| {
            let state = states.get(w.image()).copied();
            (
                w.image(),
                known.progress(w, state, findings.waiting.get(w.image())),
            )
        })
        .collect();

    let status = new_status(&mic, &stored, &wanted, &states, &progress);
    if Some(&status) != recorded.as_ref() {
        api.write_status(&status).await?;
    }
    for (w, (_, progress)) in wanted.iter().zip(&progress) {
        let (state, previous) = (states.get(w.image()), before.get(w.image()));
        if let Some(state) = state
            && Some(state) != previous
        {
            announce(
                &context,
                &mic,
                w,
                *state,
                progress,
                findings.pull_errors.get(w.image()),
            )
            .await;
        }
    }
    for pod in &findings.doomed {
        api.delete_pod(pod).await?;
    }
    let alive: BTreeSet<String> = pull_pods
        .iter()
        .map(ResourceExt::name_any)
        .filter(|name| !findings.doomed.contains(name))
        .collect();
    for w in wanted.iter().filter(|w| !states.contains_key(w.image())) {
        if !alive.contains(&pull_pod_name(&api.name, w.image(), w.generation)) {
            api.create_pod(&pull_pod::pull_pod(&mic, w)?).await?;
        }
    }
    api.update_mbsc(&mic, mbsc.as_ref(), &wanted, &states)
        .await?;
    Ok(Action::requeue(RESYNC))
}

/// The status after this pass: the states, the counts, the trigger acted upon, and the Ready condition.
fn new_status(
    mic: &ModuleImagesConfig,
    stored: &ModuleImagesConfigStatus,
    wanted: &[Wanted],
    states: &BTreeMap<String, ImageState>,
    progress: &[(&str, ImageProgress)],
) -> ModuleImagesConfigStatus {
    let readiness = ready::readiness(progress);
    let mut status = stored.clone();
    status.images_states = wanted::to_record(wanted, states);
    status.image_rebuild_trigger_generation = mic.spec.image_rebuild_trigger_generation;
    status.observed_generation = mic.metadata.generation;
    let existing = progress
        .iter()
        .filter(|(_, p)| *p == ImageProgress::Exists)
        .count();
    status.existing_images = Some(i32::try_from(existing).unwrap_or(i32::MAX));
    status.total_images = Some(i32::try_from(wanted.len()).unwrap_or(i32::MAX));
    status::set_condition(
        &mut status.conditions,
        READY,
        readiness.ready,
        readiness.reason,
        readiness.message,
        mic.metadata.generation,
    );
    status
}

/// The event of an image's new state: `ImageExists`, `ImageMissing` (a warning), `BuildRequested`,
/// `SignRequested`.
async fn announce(
    context: &Context,
    mic: &ModuleImagesConfig,
    wanted: &Wanted<'_>,
    state: ImageState,
    progress: &ImageProgress,
    pull_error: Option<&String>,
) {
    let image = wanted.image();
    let kernel = &wanted.spec.spec.kernel_version;
    let (warning, reason, note) = match state {
        ImageState::Exists => (
            false,
            "ImageExists",
            format!("image {image} exists (generation {})", wanted.generation),
        ),
        ImageState::DoesNotExist => {
            let why = match (progress, pull_error) {
                (ImageProgress::Failed(failure), _) => failure.clone(),
                (_, Some(error)) => format!("not in the registry ({error})"),
                _ => "not in the registry".to_owned(),
            };
            (
                true,
                "ImageMissing",
                format!("image {image} for kernel {kernel} does not exist: {why}"),
            )
        }
        ImageState::NeedsBuilding => (
            false,
            "BuildRequested",
            format!("image {image} is not in the registry; building it for kernel {kernel}"),
        ),
        ImageState::NeedsSigning => (
            false,
            "SignRequested",
            format!("image {image} needs signing for kernel {kernel}"),
        ),
    };
    context.event(mic, warning, reason, note).await;
}
