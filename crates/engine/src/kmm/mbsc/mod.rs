//! The ModuleBuildSignConfig reconciler: one build or sign pod per (MBSC, kernel, action), how each ended recorded
//! in the MBSC status, then pods that succeeded or are out of date removed.
//!
//! A pod's name is fixed by its MBSC, kernel and action, so a restarted engine never starts a second one. A pod
//! carries the hash of what it is made of and the image generation it answers: a pod with another hash is
//! replaced, a failed pod with the same hash stays failed (no retry loop) until the MIC asks for a new generation.

mod build_pod;
mod kaniko;
pub(crate) mod outcomes;
pub mod recipe;
mod sign_pod;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, Patch, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use self::kaniko::action_name;
use self::recipe::{Blocked, Template};
use crate::runtime::context::{Context, Error, KubeResultExt, retry_on_error};
use crate::runtime::family::Family;
use crate::runtime::wiring::{Metered, Wiring};
use crate::runtime::writes::patch_params;
use crate::{kmm::kernel, runtime::attention};
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::kmm::labels;
use kmm_api::kmm::{
    BuildSignAction, BuildSignImageStatus, BuildSignOutcome, ModuleBuildSignConfig,
    ModuleBuildSignImage,
};

pub(crate) use self::kaniko::pod_name;

/// How soon a pass blocked by a missing Dockerfile ConfigMap or signing secret looks again (those are not watched).
const BLOCKED_RETRY: Duration = Duration::from_secs(60);

/// The image generation an entry asks for; unset means 1.
pub(crate) fn entry_generation(entry: &ModuleBuildSignImage) -> i64 {
    entry.generation.unwrap_or(1)
}

/// Run the reconciler until `stop` is cancelled.
pub async fn run(context: Arc<Context>, stop: CancellationToken) {
    let client = context.client.clone();
    Wiring::new(
        &context,
        Metered::new("modulebuildsignconfig", Family::Kmm),
        watcher(
            Api::<ModuleBuildSignConfig>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .with(|controller| {
        controller.owns(
            Api::<Pod>::all(client),
            watcher::Config::default().labels(labels::RESOURCE_TYPE),
        )
    })
    .drive(
        reconcile,
        retry_on_error,
        context,
        &stop,
        "ModuleBuildSignConfig",
    )
    .await;
}

/// What one pass decided, before it acts.
#[derive(Default)]
struct Plan<'p> {
    /// The status to record.
    outcomes: Vec<BuildSignImageStatus>,
    /// Pods whose outcome is recorded for the first time: their events follow the status write.
    finished: Vec<(&'p Pod, &'p ModuleBuildSignImage, BuildSignOutcome)>,
    /// Pods to delete once the status is written: succeeded and recorded, out of date, or of no entry.
    doomed: Vec<&'p Pod>,
    /// Pods to create.
    create: Vec<(Template, &'p ModuleBuildSignImage)>,
    /// Entries that cannot get a pod until the user fixes an input, with why.
    blocked: Vec<(&'p ModuleBuildSignImage, String)>,
}

/// One pass over an MBSC; a failure a person must act on is told on it (see [`attention`]).
async fn reconcile(
    mbsc: Arc<ModuleBuildSignConfig>,
    context: Arc<Context>,
) -> Result<Action, Error> {
    let outcome = reconcile_mbsc(&mbsc, &context).await;
    attention::conclude(&context, mbsc.as_ref(), &outcome).await;
    outcome
}

/// One pass over an MBSC. The resync looks again at one that nothing it watches changed (a changed Dockerfile,
/// for instance).
async fn reconcile_mbsc(mbsc: &ModuleBuildSignConfig, context: &Context) -> Result<Action, Error> {
    if mbsc.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let name = mbsc.name_any();
    let namespace = mbsc
        .namespace()
        .ok_or_else(|| Error::Invalid(format!("ModuleBuildSignConfig {name} has no namespace")))?;
    let pods_api = Api::<Pod>::namespaced(context.client.clone(), &namespace);
    let selector = format!("{}={name},{}", labels::MODULE_NAME, labels::RESOURCE_TYPE);
    let pods: Vec<Pod> = pods_api
        .list(&ListParams::default().labels(&selector))
        .await
        .doing(|| format!("listing build and sign pods of {}", describe(mbsc)))?
        .items
        .into_iter()
        .filter(|pod| controlled_by(pod, mbsc.uid().as_deref()))
        .collect();

    let stored = mbsc
        .status
        .as_ref()
        .map(|s| s.images.clone())
        .unwrap_or_default();
    let plan = plan(context, mbsc, &pods, &stored).await?;

    if plan.outcomes != stored {
        record_outcomes(context, mbsc, &plan.outcomes).await?;
    }
    for (pod, entry, outcome) in &plan.finished {
        announce_outcome(context, mbsc, pod, entry, *outcome).await;
    }
    for pod in &plan.doomed {
        delete_pod(&pods_api, mbsc, pod).await?;
    }
    for (template, entry) in &plan.create {
        create_pod(context, &pods_api, mbsc, template, entry).await?;
    }
    for (entry, why) in &plan.blocked {
        tracing::warn!(mbsc = %format!("{namespace}/{name}"), image = %entry.spec.image, "{why}");
        let reason = format!("{}Failed", action_prefix(entry.action));
        context.event(mbsc, true, &reason, why.clone()).await;
    }
    Ok(if plan.blocked.is_empty() {
        context.resync()
    } else {
        context.resync_within(BLOCKED_RETRY)
    })
}

/// `ModuleBuildSignConfig <namespace>/<name>`, for messages.
fn describe(mbsc: &ModuleBuildSignConfig) -> String {
    format!(
        "ModuleBuildSignConfig {}/{}",
        mbsc.namespace().unwrap_or_default(),
        mbsc.name_any()
    )
}

/// Merge-patch the outcomes into the status.
async fn record_outcomes(
    context: &Context,
    mbsc: &ModuleBuildSignConfig,
    outcomes: &[BuildSignImageStatus],
) -> Result<(), Error> {
    let images = serde_json::to_value(outcomes).map_err(|error| {
        Error::Invalid(format!(
            "the outcomes of {} do not serialise: {error}",
            describe(mbsc)
        ))
    })?;
    let status = Map::from_iter([("images".to_owned(), images)]);
    let patch = Value::Object(Map::from_iter([(
        "status".to_owned(),
        Value::Object(status),
    )]));
    Api::<ModuleBuildSignConfig>::namespaced(
        context.client.clone(),
        &mbsc.namespace().unwrap_or_default(),
    )
    .patch_status(&mbsc.name_any(), &patch_params(), &Patch::Merge(&patch))
    .await
    .doing(|| format!("recording build and sign outcomes in {}", describe(mbsc)))?;
    Ok(())
}

/// Delete a build or sign pod; one already gone is fine.
async fn delete_pod(pods: &Api<Pod>, mbsc: &ModuleBuildSignConfig, pod: &Pod) -> Result<(), Error> {
    let pod_name = pod.name_any();
    match pods.delete(&pod_name, &DeleteParams::default()).await {
        Ok(_) => {
            tracing::debug!(pod = %pod_name, "build or sign pod removed");
            Ok(())
        }
        Err(error) if is_not_found(&error) => Ok(()),
        Err(source) => Err(Error::Kube {
            action: format!("deleting pod {pod_name} of {}", describe(mbsc)),
            source,
        }),
    }
}

/// Create a build or sign pod and announce it; one already there under its name is fine (the name says what it
/// does, and it was announced when it was created).
async fn create_pod(
    context: &Context,
    pods: &Api<Pod>,
    mbsc: &ModuleBuildSignConfig,
    template: &Template,
    entry: &ModuleBuildSignImage,
) -> Result<(), Error> {
    let pod_name = template.pod.name_any();
    match pods.create(&PostParams::default(), &template.pod).await {
        Ok(_) => {
            let note = format!(
                "{} pod {pod_name} started for image {} (kernel {})",
                action_verb(entry.action),
                entry.spec.image,
                entry.spec.kernel_version
            );
            let reason = format!("{}Created", action_prefix(entry.action));
            context.event(mbsc, false, &reason, note).await;
            Ok(())
        }
        Err(error) if is_conflict(&error) => Ok(()),
        Err(source) => Err(Error::Kube {
            action: format!("creating pod {pod_name} of {}", describe(mbsc)),
            source,
        }),
    }
}

/// Decide, for every entry, what its pod proves, and whether a pod must be created or removed.
async fn plan<'p>(
    context: &Context,
    mbsc: &'p ModuleBuildSignConfig,
    pods: &'p [Pod],
    stored: &[BuildSignImageStatus],
) -> Result<Plan<'p>, Error> {
    let entries = &mbsc.spec.images;
    let mut plan = Plan {
        outcomes: stored
            .iter()
            .filter(|o| entries.iter().any(|e| e.spec.image == o.image))
            .cloned()
            .collect(),
        ..Plan::default()
    };
    let mut claimed = BTreeSet::new();
    for (index, entry) in entries.iter().enumerate() {
        let image = entry.spec.image.as_str();
        if let Some(first) = same_pod_as_earlier(entries, index) {
            plan.blocked.push((
                entry,
                format!(
                    "images {} and {image} would share the {} pod of kernel {}; only {} gets one",
                    first.spec.image,
                    action_verb(entry.action),
                    entry.spec.kernel_version,
                    first.spec.image
                ),
            ));
            continue;
        }
        let generation = entry_generation(entry);
        let matching: Vec<&Pod> = pods.iter().filter(|p| is_pod_of(p, entry)).collect();
        claimed.extend(matching.iter().map(|p| p.name_any()));
        let pod = match matching.as_slice() {
            [] => None,
            [pod] => Some(*pod),
            several => {
                let names: Vec<String> = several.iter().map(|p| p.name_any()).collect();
                tracing::warn!(
                    mbsc = %mbsc.name_any(),
                    image,
                    pods = ?names,
                    "several {} pods for one kernel; leaving them for a person to sort out",
                    action_name(entry.action)
                );
                continue;
            }
        };
        if let Some(pod) = pod
            && let Some(outcome) = outcomes::proven(pod, generation)
            && outcomes::record(
                &mut plan.outcomes,
                image,
                entry.action,
                outcome,
                generation,
                outcomes::pushed_digest(pod),
            )
        {
            plan.finished.push((pod, entry, outcome));
        }
        if outcomes::succeeded_at(&plan.outcomes, image, entry.action, generation) {
            plan.doomed
                .extend(pod.filter(|p| outcomes::phase(p) == "Succeeded"));
            continue;
        }
        let template = match recipe::template(context, mbsc, entry).await {
            Ok(template) => template,
            Err(Blocked::Input(why)) => {
                plan.blocked.push((entry, why));
                continue;
            }
            Err(Blocked::Api(error)) => return Err(error),
        };
        match pod {
            None => {
                outcomes::forget(&mut plan.outcomes, image, entry.action);
                plan.create.push((template, entry));
            }
            Some(pod) if pod.annotations().get(labels::LAST_HASH) != Some(&template.hash) => {
                plan.doomed.push(pod);
            }
            // Running, pending, or failed with this very recipe: a failure is retried only when asked.
            Some(_) => {}
        }
    }
    plan.doomed
        .extend(pods.iter().filter(|p| !claimed.contains(&p.name_any())));
    Ok(plan)
}

/// The earlier entry whose pod has the name entry `index`'s pod would have (same kernel and action), if any: pod
/// names are per kernel, so two such entries would replace each other's pod forever.
fn same_pod_as_earlier(
    entries: &[ModuleBuildSignImage],
    index: usize,
) -> Option<&ModuleBuildSignImage> {
    let entry = entries.get(index)?;
    let kernel = kernel::dns_safe(&entry.spec.kernel_version);
    entries[..index]
        .iter()
        .find(|e| e.action == entry.action && kernel::dns_safe(&e.spec.kernel_version) == kernel)
}

/// Whether `pod` is the pod doing `entry`'s action for its kernel.
fn is_pod_of(pod: &Pod, entry: &ModuleBuildSignImage) -> bool {
    let labels = pod.labels();
    labels.get(labels::RESOURCE_TYPE).map(String::as_str) == Some(action_name(entry.action))
        && labels.get(labels::TARGET_KERNEL) == Some(&kernel::dns_safe(&entry.spec.kernel_version))
}

/// Whether the pod's controller is the object with `uid`.
pub(crate) fn controlled_by(pod: &Pod, uid: Option<&str>) -> bool {
    uid.is_some_and(|uid| {
        pod.owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.uid == uid)
    })
}

/// `Build` or `Sign`, the prefix of the action's event reasons.
fn action_prefix(action: BuildSignAction) -> &'static str {
    match action {
        BuildSignAction::BuildImage => "Build",
        BuildSignAction::SignImage => "Sign",
    }
}

/// `build` or `sign`, as notes say it.
pub(crate) fn action_verb(action: BuildSignAction) -> &'static str {
    match action {
        BuildSignAction::BuildImage => "build",
        BuildSignAction::SignImage => "sign",
    }
}

/// The event of a newly recorded outcome: `BuildSucceeded`, `BuildFailed` (with the pod's last words), and so on.
async fn announce_outcome(
    context: &Context,
    mbsc: &ModuleBuildSignConfig,
    pod: &Pod,
    entry: &ModuleBuildSignImage,
    outcome: BuildSignOutcome,
) {
    let subject = format!(
        "{} pod {} of image {} (kernel {})",
        action_verb(entry.action),
        pod.name_any(),
        entry.spec.image,
        entry.spec.kernel_version
    );
    let (warning, what, note) = match outcome {
        BuildSignOutcome::Success => (false, "Succeeded", format!("{subject} succeeded")),
        BuildSignOutcome::Failure => {
            let why = outcomes::termination_message(pod).unwrap_or("no termination message");
            (true, "Failed", format!("{subject} failed: {why}"))
        }
    };
    let reason = format!("{}{what}", action_prefix(entry.action));
    context.event(mbsc, warning, &reason, note).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(image: &str, kernel: &str, action: &str) -> ModuleBuildSignImage {
        serde_json::from_value(
            serde_json::json!({"image": image, "kernelVersion": kernel, "action": action}),
        )
        .expect("entry")
    }

    #[test]
    fn entries_sharing_a_pod_name_are_caught() {
        let entries = [
            entry("a", "5.14.0_x", "BuildImage"),
            entry("b", "5.14.0-x", "BuildImage"),
            entry("c", "5.14.0-x", "SignImage"),
            entry("d", "6.1.0", "BuildImage"),
        ];
        let earlier: Vec<Option<&str>> = (0..entries.len())
            .map(|i| same_pod_as_earlier(&entries, i).map(|e| e.spec.image.as_str()))
            .collect();
        assert_eq!(earlier, [None, Some("a"), None, None]);
    }
}
