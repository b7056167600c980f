//! One pass: every named image's kernel read once and recorded, the record holding only the images still named,
//! and no reading pod left once its answer is recorded.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, LogParams, Patch};
use kube::runtime::controller::Action;
use serde_json::json;

use super::KernelsContext;
use super::named::named_images;
use super::pod::{self, Progress};
use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::writes::patch_params;
use crate::runtime::writes::post_params;
use kmm_api::day0::ClusterVersion;
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::kmm::os_image_kernels::{
    CONFIG_MAP, DATA_KEY, NAMESPACE, OsImageKernel, POD_LABEL, kernel_from_listing, parse, render,
};

/// How soon to look again while a reading pod runs, should no pod event come.
const WHILE_READING: Duration = Duration::from_secs(30);

/// How soon to look again for the namespace the pods run in, where it does not exist (KMM is not installed).
const WHILE_NO_NAMESPACE: Duration = Duration::from_secs(60);

/// Where the reading of one image is.
enum Reading {
    /// Its kernel, or why it cannot be read, is in its entry.
    Answered,
    /// Its pod runs, or was just started.
    Pending,
    /// No pod can start: the namespace does not exist.
    NoNamespace,
}

/// One pass over the cluster's OS images.
pub(super) async fn reconcile(
    _version: Arc<ClusterVersion>,
    context: Arc<KernelsContext>,
) -> Result<Action, Error> {
    if !context.machine_configs_listed.wait().await || !context.release_os_image_listed.wait().await
    {
        return Ok(Action::await_change());
    }
    let named = named_images(
        &context.machine_configs.state(),
        context.release_os_image.state().first().map(AsRef::as_ref),
    );
    let client = &context.engine.client;
    let records: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let record = records
        .get_opt(CONFIG_MAP)
        .await
        .doing(|| format!("reading ConfigMap {NAMESPACE}/{CONFIG_MAP}"))?;
    let recorded: BTreeMap<String, OsImageKernel> =
        parse(record.as_ref().and_then(|r| r.data.as_ref()))
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "the OS image kernel record is rewritten");
                Vec::new()
            })
            .into_iter()
            .map(|entry| (entry.image.clone(), entry))
            .collect();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let readers = pods
        .list(&ListParams::default().labels(POD_LABEL))
        .await
        .doing(|| format!("listing the OS image kernel pods in {NAMESPACE}"))?
        .items;
    let mut entries = Vec::new();
    let mut reading = false;
    let mut no_namespace = false;
    for (image, named_by) in named {
        let mut entry = recorded
            .get(&image)
            .filter(|entry| entry.resolved())
            .cloned()
            .unwrap_or_else(|| OsImageKernel {
                image: image.clone(),
                ..OsImageKernel::default()
            });
        entry.named_by = named_by;
        if !entry.resolved() {
            let reader = readers
                .iter()
                .find(|p| pod::pod_image(p) == Some(image.as_str()));
            match read(&pods, &image, reader, &mut entry).await? {
                Reading::Answered => {}
                Reading::Pending => reading = true,
                Reading::NoNamespace => no_namespace = true,
            }
        }
        entries.push(entry);
    }
    if no_namespace {
        // Optional, unlike what the day-0 family does there: nobody is asked to act, and the reading starts once
        // the namespace exists.
        tracing::debug!(
            "namespace {NAMESPACE} does not exist: the kernels of the OS images are not read"
        );
        return Ok(context.engine.resync_within(WHILE_NO_NAMESPACE));
    }
    write_record(&records, record.as_ref(), &entries).await?;
    for reader in &readers {
        let answered = pod::pod_image(reader).is_none_or(|image| {
            entries
                .iter()
                .find(|e| e.image == image)
                .is_none_or(OsImageKernel::resolved)
        });
        if answered {
            delete(&pods, &reader.name_any()).await?;
        }
    }
    Ok(if reading {
        context.engine.resync_within(WHILE_READING)
    } else {
        context.engine.resync()
    })
}

/// A failed pass is retried with the engine's backoff, and told once where a person must act (a grant missing).
pub(super) fn error_policy(
    version: Arc<ClusterVersion>,
    error: &Error,
    context: Arc<KernelsContext>,
) -> Action {
    crate::runtime::context::retry_on_error(version, error, context.engine.clone())
}

/// Move the reading of `image` on: start its pod, or take its answer into `entry`.
async fn read(
    pods: &Api<Pod>,
    image: &str,
    reader: Option<&Pod>,
    entry: &mut OsImageKernel,
) -> Result<Reading, Error> {
    let Some(reader) = reader else {
        let name = pod::pod_name(image);
        match pods.create(&post_params(), &pod::pod(image)).await {
            Ok(_) => {}
            // Started by an earlier pass whose list did not show it yet.
            Err(error) if is_conflict(&error) => {}
            // A pod is created in a namespace: only the namespace can be missing.
            Err(error) if is_not_found(&error) => return Ok(Reading::NoNamespace),
            Err(error) => {
                return Err(error).doing(|| {
                    format!("creating pod {NAMESPACE}/{name} to read the kernel of {image}")
                });
            }
        }
        return Ok(Reading::Pending);
    };
    match pod::progress(reader) {
        Progress::Listed => {
            let name = reader.name_any();
            let log = pods
                .logs(&name, &LogParams::default())
                .await
                .doing(|| format!("reading the log of pod {NAMESPACE}/{name}"))?;
            let lines: Vec<String> = log.lines().map(str::to_owned).collect();
            match kernel_from_listing(&lines) {
                Ok(kernel) => entry.kernel = Some(kernel),
                Err(why) => entry.failure = Some(why),
            }
            Ok(Reading::Answered)
        }
        Progress::Failed(why) => {
            entry.failure = Some(why);
            Ok(Reading::Answered)
        }
        Progress::Running => Ok(Reading::Pending),
        // Evicted or rejected before it ran: a new pod of the same name starts once this one is gone.
        Progress::Lost => {
            delete(pods, &reader.name_any()).await?;
            Ok(Reading::Pending)
        }
    }
}

/// Write the record when it changed; no record is written while no image was ever named.
async fn write_record(
    records: &Api<ConfigMap>,
    record: Option<&ConfigMap>,
    entries: &[OsImageKernel],
) -> Result<(), Error> {
    let text = render(entries);
    let current = record
        .and_then(|r| r.data.as_ref())
        .and_then(|d| d.get(DATA_KEY));
    if current == Some(&text) || (record.is_none() && entries.is_empty()) {
        return Ok(());
    }
    let action = || format!("writing ConfigMap {NAMESPACE}/{CONFIG_MAP}");
    if record.is_some() {
        let patch = json!({"data": {DATA_KEY: text}});
        records
            .patch(CONFIG_MAP, &patch_params(), &Patch::Merge(&patch))
            .await
            .doing(action)?;
    } else {
        let config_map: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
            "data": {DATA_KEY: text},
        }))
        .map_err(|error| Error::Invalid(format!("the OS image kernel record: {error}")))?;
        records
            .create(&post_params(), &config_map)
            .await
            .doing(action)?;
    }
    Ok(())
}

async fn delete(pods: &Api<Pod>, name: &str) -> Result<(), Error> {
    match pods.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(error) => Err(error).doing(|| format!("deleting pod {NAMESPACE}/{name}")),
    }
}
