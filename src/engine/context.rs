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

/// The families of reconcilers the engine can run: one per kind of software that lives on nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Family {
    /// Kernel modules: Module, ModuleImagesConfig, ModuleBuildSignConfig, NodeModulesConfig.
    Kmm,
    /// containerd shims: Shim and its RuntimeClass.
    Shims,
    /// Pre-pulled images: ImageCache.
    Caches,
    /// Kernel modules baked into the OS image: ModuleDay0.
    Day0,
}

impl Family {
    /// Every family, in the order the engine starts them.
    pub const ALL: [Family; 4] = [Family::Kmm, Family::Shims, Family::Caches, Family::Day0];

    /// The family's name on the command line and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Kmm => "kmm",
            Family::Shims => "shims",
            Family::Caches => "caches",
            Family::Day0 => "day0",
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the engine runs and how, beyond its images.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The families of reconcilers to run.
    pub families: std::collections::BTreeSet<Family>,
    /// How often image caches re-pull everything even when nothing changed, for registries whose tags move; off
    /// by default, since caches react to every change they can see.
    pub cache_refresh: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            families: Family::ALL.into_iter().collect(),
            cache_refresh: None,
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
    /// Which families run, and their options.
    pub settings: Settings,
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
            settings: Settings::default(),
        }
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
