//! What every reconciler shares: the client, the images its pods run, the event recorder, and one error type whose
//! messages say what failed on which object.

use std::time::Duration;

use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource};

/// Images of the pods the engine creates. The defaults are the upstream projects' published images, so the engine
/// works on a real cluster as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodImages {
    /// Runs `kmod load|unload` on a node.
    pub worker: String,
    /// Builds kmod images (kaniko-style arguments).
    pub build: String,
    /// Holds `sign-file`; the sign pod's generated Dockerfile copies it in.
    pub sign: String,
}

impl Default for PodImages {
    fn default() -> Self {
        Self {
            worker: "gcr.io/k8s-staging-kmm/kernel-module-management-worker:latest".to_owned(),
            build: "gcr.io/kaniko-project/executor:latest".to_owned(),
            sign: "gcr.io/k8s-staging-kmm/kernel-module-management-signimage:latest".to_owned(),
        }
    }
}

/// Shared state of the reconcilers; cheap to clone behind an `Arc`.
#[derive(Clone)]
pub struct Context {
    /// The cluster.
    pub client: Client,
    /// Images of the pods the engine creates.
    pub images: PodImages,
    /// Publishes events on the objects the engine acts on.
    pub recorder: Recorder,
}

/// Name the engine reports events and field ownership under.
pub const MANAGER: &str = "kmm-tui-engine";

impl Context {
    /// A context reporting events as `kmm-tui-engine` (with `instance` telling engines apart).
    pub fn new(client: Client, images: PodImages, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: MANAGER.to_owned(),
            instance,
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            images,
        }
    }

    /// Publish an event on `object`; a failure to publish is logged, never fatal (events are advice).
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_owned(),
            note: Some(note),
            action: reason.to_owned(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, &object.object_ref(&())).await {
            tracing::debug!(%error, reason, "event not published");
        }
    }
}

/// Why a reconcile pass failed; the controller retries it with back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API refused or failed a call.
    #[error("{action}: {}", describe(source))]
    Kube {
        /// What the engine was doing.
        action: String,
        /// What the API said.
        #[source]
        source: kube::Error,
    },
    /// An object the engine reads holds something it cannot act on.
    #[error("{0}")]
    Invalid(String),
}

/// A kube error in one line: the API's own message and reason, without the debug dump of its `Status`.
pub fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => {
            format!("{} ({} {})", status.message, status.code, status.reason)
        }
        other => other.to_string(),
    }
}

impl Error {
    /// Whether the failure is a write that lost a race (409): routine for level-triggered passes, not worth a
    /// warning.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Kube { source, .. } if is_conflict(source))
    }
}

/// Attach what the engine was doing to a kube error.
pub trait KubeResultExt<T> {
    /// `Err(kube)` becomes `Error::Kube { action, .. }`.
    fn doing(self, action: impl FnOnce() -> String) -> Result<T, Error>;
}

impl<T> KubeResultExt<T> for Result<T, kube::Error> {
    fn doing(self, action: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|source| Error::Kube {
            action: action(),
            source,
        })
    }
}

/// Whether a kube error is the API's 404.
pub fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// Whether a kube error is the API's 409 `AlreadyExists` or `Conflict`.
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

/// How long a failed pass waits before its retry: short, because most failures are conflicts with a concurrent
/// writer, and level-triggered passes are cheap.
pub const RETRY_AFTER: Duration = Duration::from_secs(2);

/// The error policy every reconciler uses: log and retry after [`RETRY_AFTER`].
pub fn retry_on_error<K>(
    _object: std::sync::Arc<K>,
    error: &Error,
    _ctx: std::sync::Arc<Context>,
) -> Action {
    if error.is_conflict() {
        tracing::debug!(%error, "reconcile lost a race; retrying");
    } else {
        tracing::warn!(%error, "reconcile failed; retrying");
    }
    Action::requeue(RETRY_AFTER)
}

/// Create/replace parameters that record the engine as the writer.
pub fn post_params() -> kube::api::PostParams {
    kube::api::PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..Default::default()
    }
}

/// Patch parameters that record the engine as the writer.
pub fn patch_params() -> kube::api::PatchParams {
    kube::api::PatchParams {
        field_manager: Some(MANAGER.to_owned()),
        ..Default::default()
    }
}
