//! The ModuleImagesConfig reconciler: proves with pull pods whether each image exists, hands the missing images
//! that have a build or sign recipe to the MIC's ModuleBuildSignConfig, and records each image's state, stamped
//! with the image generation it answers (an existing image with the digest it was pulled or pushed at), with a
//! Ready condition saying why images are not there yet.
//!
//! A pass: a new `imageRebuildTriggerGeneration` restarts every check; pull pods are read and judged; the MBSC's
//! outcomes move images on; the status is written; only then are answered pull pods deleted, new ones created
//! (one fixed name per image and generation, so a restart never starts a second check) and the MBSC updated.

mod build_sign;
mod checks;
mod cluster;
pub mod pods;
mod progress;
mod pull_pod;
mod ready;
pub(crate) mod stage;
mod wanted;

pub use cluster::{put_mic, read_mic};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use self::cluster::MicApi;
use self::progress::Known;
use self::ready::ImageProgress;
use self::wanted::Wanted;
use crate::runtime::context::{Context, Error, retry_on_error};
use crate::runtime::family::Family;
use crate::runtime::wiring::{Metered, Wiring};
use crate::{runtime::attention, runtime::status};
use kmm_api::conditions::READY;
use kmm_api::kmm::labels;
use kmm_api::kmm::{
    ImageState, ModuleBuildSignConfig, ModuleImagesConfig, ModuleImagesConfigStatus,
};

pub use self::pull_pod::pull_pod_name;
pub use self::ready::IMAGE_MISSING;

/// Run the reconciler until `stop` is cancelled.
pub async fn run(context: Arc<Context>, stop: CancellationToken) {
    let client = context.client.clone();
    Wiring::new(
        &context,
        Metered::new("moduleimagesconfig", Family::Kmm),
        watcher(
            Api::<ModuleImagesConfig>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .with(|controller| {
        controller
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
    })
    .drive(
        reconcile,
        retry_on_error,
        context,
        &stop,
        "ModuleImagesConfig",
    )
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

/// How many times a pass starts again from the MIC as stored after its status write lost a race.
const ATTEMPTS: usize = 3;

/// One pass over a MIC; a failure a person must act on is told on it (see [`attention`]).
async fn reconcile(mic: Arc<ModuleImagesConfig>, context: Arc<Context>) -> Result<Action, Error> {
    let outcome = reconcile_mic(mic.clone(), &context).await;
    attention::conclude(&context, mic.as_ref(), &outcome).await;
    outcome
}

/// One pass over a MIC. The controller's copy may be older than the stored MIC (the console may just have forgotten
/// an image's state to have it checked again); the guarded status write then answers 409, and the pass starts
/// again from the MIC read afresh, so the newer status is built upon instead of overwritten.
async fn reconcile_mic(mic: Arc<ModuleImagesConfig>, context: &Context) -> Result<Action, Error> {
    let mut mic = mic;
    let mut attempt = 1;
    loop {
        if mic.metadata.deletion_timestamp.is_some() {
            return Ok(Action::await_change());
        }
        let api = MicApi::new(&context.client, &mic)?;
        match pass(&api, &mic, context).await {
            Err(error) if error.is_conflict() && attempt < ATTEMPTS => {
                attempt += 1;
                let namespace = mic.namespace().unwrap_or_default();
                let mics = Api::namespaced(context.client.clone(), &namespace);
                match read_mic(&mics, &namespace, &api.name).await? {
                    Some(fresh) => mic = Arc::new(fresh),
                    None => return Ok(Action::await_change()),
                }
            }
            outcome => return outcome,
        }
    }
}

/// One pass over `mic` as read: judge the checks, write the status, then act on pods and the MBSC.
async fn pass(api: &MicApi, mic: &ModuleImagesConfig, context: &Context) -> Result<Action, Error> {
    let mut mic = std::borrow::Cow::Borrowed(mic);
    let mut recorded = mic.status.clone();
    let mut stored = recorded.clone().unwrap_or_default();
    if mic.spec.image_rebuild_trigger_generation != stored.image_rebuild_trigger_generation {
        mic = std::borrow::Cow::Owned(api.restart_checks(&mic).await?);
        stored = mic.status.clone().unwrap_or_default();
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
    let mut digests = wanted::current_digests(&stored.images_states, &before);
    digests.extend(findings.digests.clone());
    for w in &wanted {
        if let Some(state) = states.get_mut(w.image()) {
            let was = *state;
            *state = build_sign::after_build_sign(w, was, outcomes);
            if *state == ImageState::Exists
                && was != ImageState::Exists
                && let Some(digest) = build_sign::pushed_digest(w, outcomes)
            {
                digests.insert(w.image().to_owned(), digest.to_owned());
            }
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

    let status = new_status(&mic, &stored, &wanted, (&states, &digests), &progress);
    if Some(&status) != recorded.as_ref() {
        api.write_status(&mic, &status).await?;
    }
    for (w, (_, progress)) in wanted.iter().zip(&progress) {
        let (state, previous) = (states.get(w.image()), before.get(w.image()));
        if let Some(state) = state
            && Some(state) != previous
        {
            announce(
                context,
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
    Ok(context.resync())
}

/// The status after this pass: the states (with the digests existing images are at), the counts, the trigger acted upon, and the Ready condition.
fn new_status(
    mic: &ModuleImagesConfig,
    stored: &ModuleImagesConfigStatus,
    wanted: &[Wanted],
    (states, digests): (&BTreeMap<String, ImageState>, &BTreeMap<String, String>),
    progress: &[(&str, ImageProgress)],
) -> ModuleImagesConfigStatus {
    let readiness = ready::readiness(progress);
    let mut status = stored.clone();
    status.images_states = wanted::to_record(wanted, states, digests);
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
    if state == ImageState::DoesNotExist {
        context.metrics.pull_failed(Family::Kmm);
    }
    context.event(mic, warning, reason, note).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::context::PodImages;
    use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
    use kube::api::{Patch, PatchParams, PostParams};
    use serde_json::json;

    const NS: &str = "default";
    const NAME: &str = "acme";
    const IMAGE: &str = "quay.io/acme/kmod:5.14.0-284.el9.x86_64";

    /// A pass that read the MIC before the console forgot an image's state (a recheck) must not write that state
    /// back: its status write is refused, and the pass done again from the stored MIC starts the check anew.
    #[tokio::test]
    async fn a_pass_on_an_older_copy_keeps_a_recheck_asked_for_since() {
        let cluster = EmbeddedCluster::start(EmbeddedOptions::default())
            .await
            .expect("the embedded cluster starts");
        let client = cluster.client();
        let mics: Api<ModuleImagesConfig> = Api::namespaced(client.clone(), NS);
        let mic: ModuleImagesConfig = serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
            "kind": "ModuleImagesConfig",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"images": [{"image": IMAGE, "kernelVersion": "5.14.0-284.el9.x86_64"}]},
        }))
        .expect("a MIC");
        mics.create(&PostParams::default(), &mic)
            .await
            .expect("the MIC is created");
        // An earlier pass proved the image exists but has not written its Ready condition yet.
        let proven = json!({"status": {"imagesStates": [
            {"image": IMAGE, "status": "Exists", "observedGeneration": 1}
        ]}});
        mics.patch_status(NAME, &PatchParams::default(), &Patch::Merge(&proven))
            .await
            .expect("the state is recorded");
        let older = mics.get(NAME).await.expect("the MIC is read");
        // The console's recheck: forget the state, guarded by the version it read.
        let recheck = json!({
            "metadata": {"resourceVersion": older.metadata.resource_version},
            "status": {"imagesStates": []},
        });
        mics.patch_status(NAME, &PatchParams::default(), &Patch::Merge(&recheck))
            .await
            .expect("the recheck is written");

        let context = Arc::new(Context::new(client.clone(), PodImages::default(), None));
        reconcile(Arc::new(older), context)
            .await
            .expect("the pass completes");

        let stored = mics.get(NAME).await.expect("the MIC is read");
        let states = stored.status.map(|s| s.images_states).unwrap_or_default();
        assert!(
            states.iter().all(|s| s.image != IMAGE),
            "the forgotten state was written back: {states:?}"
        );
        let pods: Api<Pod> = Api::namespaced(client, NS);
        assert!(
            pods.get_opt(&pull_pod_name(NAME, IMAGE, 1))
                .await
                .expect("pods are read")
                .is_some(),
            "a new pull check was started"
        );
        cluster.shutdown().await;
    }
}
