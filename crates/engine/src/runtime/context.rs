//! What every reconciler shares: the client, the images its pods run, the event recorder, the failing streaks of
//! the objects it retries, and one error type whose messages say what failed on which object and whose
//! [`Error::attention`] says whether a person must act on it.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use kube::{Client, Resource};

use crate::runtime::backoff::Failure;
use crate::runtime::causes::cause_chain;
use crate::runtime::events::{Record, Recorder};
use crate::runtime::failures::{Failures, ObjectKey};
use crate::runtime::metrics::{EngineMetrics, Listed, Meter};
use crate::runtime::writes::MANAGER;

use crate::runtime::family::Family;
use crate::runtime::settings::Settings;
use kmm_api::errors::is_conflict;
use kube::runtime::reflector::Store;

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
    /// Downloads a shim archive into the installer pod (runtime-class-manager's `shim-downloader`).
    pub shim_downloader: String,
    /// Installs or uninstalls a shim on its node and restarts containerd (runtime-class-manager's
    /// `node-installer`).
    pub shim_installer: String,
    /// Copies `echo` into a cache pull pod, so any image can be "run" to pull it (kube-fledged's busybox).
    pub cache_busybox: String,
    /// Runs `crictl rmi` to purge cached images from a node (kube-fledged's `cri-client`).
    pub cache_cri_client: String,
}

impl Default for PodImages {
    fn default() -> Self {
        Self {
            worker: "gcr.io/k8s-staging-kmm/kernel-module-management-worker:latest".to_owned(),
            build: "gcr.io/kaniko-project/executor:latest".to_owned(),
            sign: "gcr.io/k8s-staging-kmm/kernel-module-management-signimage:latest".to_owned(),
            shim_downloader: "ghcr.io/spinframework/shim-downloader:latest".to_owned(),
            shim_installer: "ghcr.io/spinframework/node-installer:latest".to_owned(),
            cache_busybox: "senthilrch/busybox:1.35.0".to_owned(),
            cache_cri_client: "senthilrch/kubefledged-cri-client:v0.10.0".to_owned(),
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
    pub recorder: Arc<Recorder>,
    /// Which families run, and their options.
    pub settings: Settings,
    /// The objects whose passes keep failing: how long their retries wait, and what was said about them.
    pub failures: Arc<Failures>,
    /// What the reconcilers do, for the metrics endpoint and the Lease.
    pub metrics: Arc<EngineMetrics>,
}

impl Context {
    /// A context reporting events as `kmm-tui-engine` (with `instance` telling engines apart).
    pub fn new(client: Client, images: PodImages, instance: Option<String>) -> Self {
        Self {
            recorder: Arc::new(Recorder::new(client.clone(), MANAGER, instance)),
            client,
            images,
            settings: Settings::default(),
            failures: Arc::default(),
            metrics: Arc::default(),
        }
    }

    /// The same context reporting to `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<EngineMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Meter the reconciler of `controller` (the reconciled kind in lower case) of `family`, running at most
    /// `concurrency` passes at once over the objects of `cache`: its store and what tells its first list (see
    /// [`EngineMetrics::meter`]).
    pub fn meter<K>(
        &self,
        controller: &'static str,
        family: Family,
        concurrency: u16,
        cache: (Store<K>, Listed),
    ) -> Meter
    where
        K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    {
        self.metrics
            .meter(controller, family, concurrency, cache, self.settings.resync)
    }

    /// The same context running `settings`' families with their options.
    pub fn with_settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Whether `family` runs.
    pub fn runs(&self, family: Family) -> bool {
        self.settings.families.contains(&family)
    }

    /// What a pass that ended without failing returns: look at the object again after the resync period.
    pub fn resync(&self) -> Action {
        crate::runtime::resync::after(self.settings.resync)
    }

    /// What a pass that must look again within `soon` returns: the sooner of that and the resync.
    pub fn resync_within(&self, soon: Duration) -> Action {
        crate::runtime::resync::within(self.settings.resync, soon)
    }

    /// Publish an event on `object`; a failure to publish is logged, never fatal (events are advice). Each distinct
    /// note is its own Event; only an exact repeat joins the series of the first (see [`crate::runtime::events`]).
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        let record = Record {
            warning,
            reason,
            action: reason,
            note: &note,
        };
        if let Err(error) = self
            .recorder
            .publish(&record, &object.object_ref(&()))
            .await
        {
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
pub(crate) fn describe(error: &kube::Error) -> String {
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

    /// Whether a person must act before a retry can succeed, and under which reason: the API refused the engine
    /// (403: a grant is missing), the object's namespace does not exist (404 on the namespace), or the API server
    /// refused what the engine wrote (400, 422: an admission check or validation the object's spec fails). `None`
    /// for what heals by itself: lost races, timeouts, an API server that is away or overloaded (5xx, 429), an
    /// object deleted in the middle of a pass, and the engine's own hiccups. Only the former are told as Events
    /// and conditions; the latter are only logged.
    pub fn attention(&self) -> Option<Attention> {
        let Error::Kube {
            action,
            source: kube::Error::Api(status),
        } = self
        else {
            return None;
        };
        let (reason, message) = match status.code {
            403 => (
                FORBIDDEN,
                format!(
                    "{self}; grant the engine what it lacks (`kmm-tui controller --print-rbac` prints what it needs)"
                ),
            ),
            // What to do leads: it is the whole story, and a table cuts a message from its end.
            404 => {
                let details = status.details.as_ref()?;
                if details.kind != "namespaces" {
                    return None;
                }
                let namespace = &details.name;
                (
                    NAMESPACE_MISSING,
                    format!(
                        "namespace {namespace} does not exist: create it (kubectl create namespace {namespace}); {self}"
                    ),
                )
            }
            400 | 422 => (
                REJECTED,
                format!("{self}; the API server refused the object: change what its message names"),
            ),
            _ => return None,
        };
        Some(Attention {
            reason,
            action: action.clone(),
            message,
        })
    }
}

/// Reason of a failure the API refused the engine (403).
pub(crate) const FORBIDDEN: &str = "Forbidden";
/// Reason of a failure to create an object in a namespace that does not exist.
pub(crate) const NAMESPACE_MISSING: &str = "NamespaceMissing";
/// Reason of a write the API server refused (400, 422).
pub(crate) const REJECTED: &str = "Rejected";

/// A failure a person must act on: what the engine tells them in an Event and a condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attention {
    /// The reason: [`FORBIDDEN`], [`NAMESPACE_MISSING`] or [`REJECTED`].
    pub reason: &'static str,
    /// What the engine was doing.
    pub action: String,
    /// What failed and what to do about it.
    pub message: String,
}

/// Attach what the engine was doing to a kube error.
pub(crate) trait KubeResultExt<T> {
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

/// The error policy every reconciler uses: retry after the object's next backoff step (fast for a lost race), and
/// log the failure, as a warning only when it is news (see [`Failures::failed`]).
pub(crate) fn retry_on_error<K: Resource<DynamicType = ()>>(
    object: Arc<K>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    let key = ObjectKey::of(object.as_ref());
    let failure = if error.is_conflict() {
        Failure::Conflict
    } else {
        Failure::Other
    };
    let retry = ctx.failures.failed(&key, failure, &error.to_string());
    let retry_in = format!("{:.1?}", retry.after);
    let attention = error.attention();
    let error = cause_chain(error);
    match (retry.warn, attention) {
        (true, Some(attention)) => tracing::warn!(
            object = %key, reason = attention.reason, %error, %retry_in,
            "pass failed; a person must act"
        ),
        (true, None) => tracing::warn!(object = %key, %error, %retry_in, "pass failed; retrying"),
        (false, _) if failure == Failure::Conflict => {
            tracing::debug!(object = %key, %error, %retry_in, "pass lost a race; retrying");
        }
        (false, _) => {
            tracing::debug!(object = %key, %error, %retry_in, "pass failed again; retrying")
        }
    }
    crate::runtime::metrics::requeue(retry.after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::response::StatusDetails;

    fn api_error(code: u16, reason: &str, message: &str, details: Option<(&str, &str)>) -> Error {
        Error::Kube {
            action: "doing something".to_owned(),
            source: kube::Error::Api(Box::new(kube::core::Status {
                code,
                reason: reason.to_owned(),
                message: message.to_owned(),
                details: details.map(|(kind, name)| StatusDetails {
                    kind: kind.to_owned(),
                    name: name.to_owned(),
                    group: String::new(),
                    uid: String::new(),
                    causes: Vec::new(),
                    retry_after_seconds: 0,
                }),
                ..kube::core::Status::default()
            })),
        }
    }

    fn reason(error: &Error) -> Option<&'static str> {
        error.attention().map(|a| a.reason)
    }

    #[test]
    fn refusals_a_person_must_fix_are_told_with_their_reason() {
        let forbidden = api_error(403, "Forbidden", "cannot patch nodes", None);
        let attention = forbidden.attention().expect("a 403 needs a person");
        assert_eq!(attention.reason, FORBIDDEN);
        assert_eq!(attention.action, "doing something");
        assert!(
            attention.message.starts_with(&forbidden.to_string())
                && attention.message.contains("--print-rbac"),
            "{}",
            attention.message
        );
        let missing = api_error(
            404,
            "NotFound",
            "namespaces \"openshift-kmm\" not found",
            Some(("namespaces", "openshift-kmm")),
        );
        let attention = missing
            .attention()
            .expect("a missing namespace needs a person");
        assert_eq!(attention.reason, NAMESPACE_MISSING);
        assert_eq!(
            attention.message,
            "namespace openshift-kmm does not exist: create it (kubectl create namespace openshift-kmm); \
             doing something: namespaces \"openshift-kmm\" not found (404 NotFound)"
        );
        assert_eq!(
            reason(&api_error(422, "Invalid", "spec.x: Invalid", None)),
            Some(REJECTED)
        );
        assert_eq!(
            reason(&api_error(400, "BadRequest", "no", None)),
            Some(REJECTED)
        );
    }

    #[test]
    fn what_heals_by_itself_is_only_logged() {
        let other_404 = api_error(404, "NotFound", "pods \"p\" not found", Some(("pods", "p")));
        for error in [
            api_error(409, "Conflict", "the object has been modified", None),
            other_404,
            api_error(404, "NotFound", "gone", None),
            api_error(500, "InternalError", "etcd", None),
            api_error(503, "ServiceUnavailable", "later", None),
            api_error(429, "TooManyRequests", "slow down", None),
            Error::Invalid("the shared node watch stopped".to_owned()),
        ] {
            assert_eq!(reason(&error), None, "{error}");
        }
        assert!(api_error(409, "Conflict", "x", None).is_conflict());
    }
}
