//! Getting a container's image onto the node as the kubelet and containerd do: the pull policy decides whether to
//! pull; a pull reaches the registry (latency), transfers the image (bandwidth) and fails for missing images,
//! missing pull secrets, registry outages and injected pull failures — then the container waits in
//! `ErrImagePull` and `ImagePullBackOff` while the kubelet backs off. A successful pull may trigger image
//! garbage collection. An image that is no reference never reaches the runtime: the container waits in
//! `InvalidImageName`.

use std::time::Duration;

use k8s_openapi::api::core::v1::Container;
use kmm_api::image_ref::{ImageRef, InvalidImageRef};

use super::backoff::Backoff;
use super::events::Kind;
use super::gc;
use super::pod_run::PodRun;
use super::status::{self, Which};
use crate::World;
use crate::registry::PullError;

/// How soon after a failed pull the kubelet's next pod sync reports `ImagePullBackOff`.
const SYNC_DELAY: Duration = Duration::from_secs(1);

/// The container's waiting reason for an image that is no reference.
const INVALID_IMAGE_NAME: &str = "InvalidImageName";

/// The event reason the kubelet records when it cannot read (or inspect) a container's image.
const INSPECT_FAILED: &str = "InspectFailed";

/// The pull policy in effect: the container's, or what the API server defaults it to (`Always` for the tag
/// `latest`, named or implied).
fn pull_policy(container: &Container, image: &ImageRef) -> String {
    if let Some(policy) = &container.image_pull_policy {
        return policy.clone();
    }
    let latest = image
        .tag()
        .map_or(image.digest().is_none(), |tag| tag == "latest");
    if latest {
        "Always".into()
    } else {
        "IfNotPresent".into()
    }
}

/// Wait until the container's image is on the node, pulling it as its pull policy says. The container's status
/// then names the image as the runtime does (its normalised reference). An image that is no reference is never
/// pulled: the container waits for good, as the kubelet's every sync finds it the same.
pub(super) async fn ensure_image(run: &PodRun, which: Which, container: &Container, field: &str) {
    let world = &run.kubelet.world;
    let image = container.image.clone().unwrap_or_default();
    let reference = match ImageRef::parse(&image) {
        Ok(reference) => reference,
        Err(invalid) => return refuse(run, which, &invalid, field).await,
    };
    let key = reference.normalized();
    let policy = pull_policy(container, &reference);
    let secrets: Vec<String> = run
        .pod
        .spec
        .as_ref()
        .and_then(|s| s.image_pull_secrets.as_ref())
        .map(|refs| refs.iter().map(|r| r.name.clone()).collect())
        .unwrap_or_default();
    let mut backoff = Backoff::default();
    loop {
        let present = world
            .machines
            .with(&run.node, |m| m.images.contains(&key))
            .unwrap_or(false);
        if present && policy != "Always" {
            let message = format!("Container image \"{image}\" already present on machine");
            run.events
                .record(Kind::Normal, "Pulled", &message, Some(field))
                .await;
            run.update(which, |s| s.image = key.clone());
            return;
        }
        if policy == "Never" {
            let message =
                format!("Container image \"{image}\" is not present with pull policy of Never");
            run.update(which, |s| {
                status::wait(s, "ErrImageNeverPull", Some(message.clone()))
            });
            run.report().await;
            run.events
                .record(Kind::Warning, "ErrImageNeverPull", &message, Some(field))
                .await;
            world.clock.sleep(backoff.after_failure()).await;
            continue;
        }
        run.update(which, |s| status::wait(s, "ContainerCreating", None));
        run.report().await;
        run.events
            .record(
                Kind::Normal,
                "Pulling",
                &format!("Pulling image \"{image}\""),
                Some(field),
            )
            .await;
        match pull(world, &run.node, &image, &key, &secrets, present).await {
            Ok((size, took)) => {
                store(run, &key, size);
                run.update(which, |s| s.image = key.clone());
                let took = super::backoff::go_duration(took);
                let message = format!(
                    "Successfully pulled image \"{image}\" in {took} ({took} including waiting). Image size: {size} bytes."
                );
                run.events
                    .record(Kind::Normal, "Pulled", &message, Some(field))
                    .await;
                return;
            }
            Err(error) => {
                run.events
                    .record(
                        Kind::Warning,
                        "Failed",
                        &format!("Failed to pull image \"{image}\": {error}"),
                        Some(field),
                    )
                    .await;
                run.events
                    .record(Kind::Warning, "Failed", "Error: ErrImagePull", Some(field))
                    .await;
                run.update(which, |s| {
                    status::wait(s, "ErrImagePull", Some(error.clone()))
                });
                run.report().await;
                let delay = backoff.after_failure();
                let first = delay.min(SYNC_DELAY);
                world.clock.sleep(first).await;
                let message = format!("Back-off pulling image \"{image}\": ErrImagePull: {error}");
                run.update(which, |s| {
                    status::wait(s, "ImagePullBackOff", Some(message))
                });
                run.report().await;
                run.events
                    .record(
                        Kind::Normal,
                        "BackOff",
                        &format!("Back-off pulling image \"{image}\""),
                        Some(field),
                    )
                    .await;
                run.events
                    .record(
                        Kind::Warning,
                        "Failed",
                        "Error: ImagePullBackOff",
                        Some(field),
                    )
                    .await;
                world.clock.sleep(delay - first).await;
            }
        }
    }
}

/// Leave the container waiting in `InvalidImageName` with the kubelet's message and event, for as long as the pod
/// runs.
async fn refuse(run: &PodRun, which: Which, invalid: &InvalidImageRef, field: &str) {
    let message = invalid.to_string();
    run.update(which, |s| {
        status::wait(s, INVALID_IMAGE_NAME, Some(message.clone()))
    });
    run.report().await;
    run.events
        .record(Kind::Warning, INSPECT_FAILED, &message, Some(field))
        .await;
    std::future::pending::<()>().await;
}

/// Put a pulled image into the node's store (keeping a pin it had) and collect garbage if the disk is full. The
/// machine is republished only when its store changed: pulling an image that is there already (pull policy
/// `Always`) only refreshes its last use.
fn store(run: &PodRun, key: &str, size: u64) {
    let world = &run.kubelet.world;
    let mut in_use = run.kubelet.images_in_use(&run.node);
    in_use.insert(key.to_string());
    let kubelet = &world.scenario.kubelet;
    let now = world.clock.now();
    let stored = world.machines.with(&run.node, |m| {
        let before = m
            .images
            .iter()
            .find(|(n, _)| *n == key)
            .map(|(_, i)| i.clone());
        let pinned = before.as_ref().is_some_and(|i| i.pinned);
        m.images.insert(key, size, now, pinned);
        let collected = gc::collect(
            m,
            kubelet.image_gc_high_threshold_percent,
            kubelet.image_gc_low_threshold_percent,
            &in_use,
        );
        let new = before.is_none_or(|i| i.size_bytes != size);
        (new, collected)
    });
    let Some((new, collected)) = stored else {
        return;
    };
    let collected_any = !collected.removed.is_empty();
    if collected_any || collected.short_bytes > 0 {
        tracing::info!(
            node = %run.node,
            removed = ?collected.removed,
            short_bytes = collected.short_bytes,
            "image garbage collection"
        );
    }
    if new || collected_any {
        run.kubelet.publisher.mark(&run.node);
    }
}

/// The error text the kubelet shows for a failed pull: containerd's error wrapped in the CRI's gRPC status.
fn rpc_error(error: &PullError) -> String {
    let code = match error {
        PullError::NotFound(_) => "NotFound",
        _ => "Unknown",
    };
    format!("rpc error: code = {code} desc = {error}")
}

/// Pull `image` (normalised: `key`) onto `node`: its size and how long it took, or why it failed. An image already
/// present is only checked against the registry. containerd's errors name the normalised reference.
async fn pull(
    world: &World,
    node: &str,
    image: &str,
    key: &str,
    secrets: &[String],
    present: bool,
) -> Result<(u64, Duration), String> {
    let clock = &world.clock;
    let start = clock.now();
    let latency = world.registry.pull_duration(0);
    clock.sleep(latency).await;
    if world.faults.registry_down(clock.now()) {
        return Err(rpc_error(&PullError::Unavailable(key.into())));
    }
    if world.faults.pull_fails(image, node) || world.faults.pull_fails(key, node) {
        return Err(format!(
            "rpc error: code = Unknown desc = failed to pull and unpack image \"{key}\": failed to copy: httpReadSeeker: failed open: unexpected status code {key}: 500 Internal Server Error"
        ));
    }
    let size = world
        .registry
        .resolve(image, secrets)
        .map_err(|e| rpc_error(&e))?;
    if !present {
        clock
            .sleep(world.registry.pull_duration(size).saturating_sub(latency))
            .await;
        if world.faults.registry_down(clock.now()) {
            return Err(rpc_error(&PullError::Unavailable(key.into())));
        }
    }
    Ok((size, clock.now().saturating_sub(start)))
}
