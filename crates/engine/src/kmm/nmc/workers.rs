//! Worker pods through the API: read fresh before every decision, created under their deterministic name (so an
//! existing pod means the work is already under way), and removed once their outcome is recorded (releasing the
//! finalizer first on workers that upstream KMM created with one).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::{Resource, ResourceExt};

use super::ModuleKey;
use super::template::{self, WORKER_CONTAINER, WorkerAction};
use crate::runtime::context::{Context, Error, KubeResultExt};
use crate::runtime::finalizers::{self, Guard};
use crate::runtime::writes::MANAGER;
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::kmm::NodeModulesConfig;
use kmm_api::kmm::labels;

/// A worker pod as the reconciler reads it: the module it works for and what it does.
#[derive(Clone, Copy, Debug)]
pub(super) struct Worker<'p> {
    /// The pod.
    pub pod: &'p Pod,
    /// What it works on.
    pub action: WorkerAction,
}

impl<'p> Worker<'p> {
    /// The worker `pod` is; `None` for a pod that carries the worker label but not a module and a known action,
    /// which this reconciler did not create and leaves alone.
    pub(super) fn read(pod: &'p Pod) -> Option<Self> {
        let labels = pod.metadata.labels.as_ref()?;
        labels.get(labels::MODULE_NAME)?;
        pod.metadata.namespace.as_ref()?;
        let action = WorkerAction::from_label(labels.get(labels::WORKER_ACTION)?)?;
        Some(Self { pod, action })
    }

    /// The module: the pod's namespace and its `module.name` label.
    pub(super) fn key(&self) -> ModuleKey {
        ModuleKey::new(
            self.pod.metadata.namespace.as_deref().unwrap_or_default(),
            self.label(labels::MODULE_NAME).unwrap_or_default(),
        )
    }

    fn label(&self, key: &str) -> Option<&'p str> {
        self.pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str)
    }

    /// One of the pod's annotations.
    pub(super) fn annotation(&self, key: &str) -> Option<&'p str> {
        self.pod
            .metadata
            .annotations
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    /// The pod's phase (`Pending` until the kubelet says otherwise).
    pub(super) fn phase(&self) -> &'p str {
        self.pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending")
    }

    /// Whether the pod is being deleted (by the garbage collector or a user).
    pub(super) fn is_terminating(&self) -> bool {
        self.pod.metadata.deletion_timestamp.is_some()
    }

    /// How often the `worker` container restarted: a worker that keeps failing restarts in place.
    pub(super) fn restarts(&self) -> i32 {
        self.pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.iter().find(|c| c.name == WORKER_CONTAINER))
            .map_or(0, |c| c.restart_count)
    }

    /// The hash of the template the pod was built from.
    pub(super) fn hash(&self) -> Option<&'p str> {
        template::hash_of(self.pod)
    }

    /// `namespace/name`, for messages.
    pub(super) fn describe(&self) -> String {
        describe(self.pod)
    }
}

fn describe(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.name_any()
    )
}

/// Every pod with the worker label bound to `node`, read from the API (never a cache: a stale list would start a
/// second worker).
pub(super) async fn list_on_node(ctx: &Context, node: &str) -> Result<Vec<Pod>, Error> {
    let params = ListParams::default()
        .labels(labels::WORKER_ACTION)
        .fields(&format!("spec.nodeName={node}"));
    Ok(Api::<Pod>::all(ctx.client.clone())
        .list(&params)
        .await
        .doing(|| format!("listing the worker pods of node {node}"))?
        .items)
}

/// Create a worker pod owned by `nmc`. A pod of that name that already exists is the same work under way.
pub(super) async fn create(
    ctx: &Context,
    nmc: &NodeModulesConfig,
    mut pod: Pod,
) -> Result<(), Error> {
    let what = describe(&pod);
    let owner = nmc.controller_owner_ref(&()).ok_or_else(|| {
        Error::Invalid(format!(
            "creating worker pod {what}: NodeModulesConfig {} has no uid to own it",
            nmc.name_any()
        ))
    })?;
    pod.metadata.owner_references = Some(vec![owner]);
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let params = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..Default::default()
    };
    match Api::<Pod>::namespaced(ctx.client.clone(), &namespace)
        .create(&params, &pod)
        .await
    {
        Ok(_) => {
            tracing::info!(pod = %what, "worker pod created");
            Ok(())
        }
        Err(error) if is_conflict(&error) => Ok(()),
        Err(error) => Err(error).doing(|| format!("creating worker pod {what}")),
    }
}

/// Remove a worker pod: release the worker finalizer if it has one, then delete it (unless it is already being
/// deleted, when the release alone lets it go).
pub(super) async fn remove(ctx: &Context, pod: &Pod) -> Result<(), Error> {
    release(ctx, pod).await?;
    if pod.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let what = describe(pod);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api_of(ctx, pod).delete(&pod.name_any(), &params).await {
        Ok(_) => {
            tracing::info!(pod = %what, "worker pod deleted");
            Ok(())
        }
        // Gone already, or the name now belongs to a newer pod that the next pass looks at.
        Err(error) if is_not_found(&error) || is_conflict(&error) => Ok(()),
        Err(error) => Err(error).doing(|| format!("deleting worker pod {what}")),
    }
}

/// Drop the worker finalizer of a pod (keeping any other finalizer), guarded by its resourceVersion.
async fn release(ctx: &Context, pod: &Pod) -> Result<(), Error> {
    let api = api_of(ctx, pod);
    match finalizers::remove(&api, pod, labels::WORKER_FINALIZER, Guard::ResourceVersion).await {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(error) => {
            Err(error).doing(|| format!("removing the worker finalizer of pod {}", describe(pod)))
        }
    }
}

/// The NodeModulesConfig of `node` is gone: release every worker pod left on the node, so that the garbage
/// collector can delete them. While the NMC exists its passes handle its pods, so nothing is done then.
pub(super) async fn release_orphans(ctx: &Context, node: &str) -> Result<(), Error> {
    let pods = list_on_node(ctx, node).await?;
    let held: Vec<&Pod> = pods
        .iter()
        .filter(|p| finalizers::has(*p, labels::WORKER_FINALIZER))
        .collect();
    if held.is_empty() {
        return Ok(());
    }
    let nmc = Api::<NodeModulesConfig>::all(ctx.client.clone())
        .get_opt(node)
        .await
        .doing(|| format!("reading NodeModulesConfig {node}"))?;
    if nmc.is_some() {
        return Ok(());
    }
    for pod in held {
        release(ctx, pod).await?;
        tracing::info!(pod = %describe(pod), "worker pod released: its NodeModulesConfig is gone");
    }
    Ok(())
}

fn api_of(ctx: &Context, pod: &Pod) -> Api<Pod> {
    Api::namespaced(
        ctx.client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
    )
}
