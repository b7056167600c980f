//! What the engine runs and how, beyond its images: the families and their options, with the defaults the command
//! line shows.

use std::collections::BTreeSet;
use std::time::Duration;

use super::family::Family;

/// Pods working at once in the whole cluster by default. A slot is freed when a pass sees its pod finished, and
/// passes over a cache are at least `PACE` (750 ms) apart, so a rollout pulls about this many images per
/// pass: on 5,000 nodes with 5 images each, 256 took 97 s in-process and 512 took 71 s (1024 took 57 s but peaked
/// 34 MiB higher, with more pods and their Events in flight at once).
pub const DEFAULT_CLUSTER_PULLS: usize = 512;

/// How long after a failed pull the first retry starts by default.
pub const DEFAULT_FIRST_RETRY: Duration = Duration::from_secs(30);

/// The hub family's namespace unless told otherwise.
pub const DEFAULT_HUB_NAMESPACE: &str = kmm_api::hub::DEFAULT_NAMESPACE;

/// What the engine runs and how, beyond its images.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The families of reconcilers to run.
    pub families: BTreeSet<Family>,
    /// How often image caches re-pull everything even when nothing changed, for registries whose tags move; off
    /// by default, since caches react to every change they can see.
    pub cache_refresh: Option<Duration>,
    /// How long after a failed pull an image cache tries again (doubling per attempt, at most twenty times this):
    /// a registry outage heals without anyone asking, and a registry that stays down is not hammered.
    pub cache_retry: Duration,
    /// How many image cache pull pods work at once in the whole cluster (all caches together): enough to keep a
    /// 5,000-node rollout busy, few enough that a cache of thousands of nodes never floods the registry or the
    /// API server.
    pub cache_pulls: usize,
    /// How often every reconciler looks again at each object it owns when no watch said it changed, so a change
    /// no watch delivers heals within it (see [`resync`](crate::runtime::resync)).
    pub resync: Duration,
    /// Where the hub family keeps what it builds for a fleet (each ManagedClusterModule's ModuleImagesConfig, its
    /// pull, build and sign pods) and reads their Dockerfiles and secrets from: upstream's operator namespace.
    pub hub_namespace: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            families: Family::ALL.into_iter().collect(),
            cache_refresh: None,
            cache_retry: DEFAULT_FIRST_RETRY,
            cache_pulls: DEFAULT_CLUSTER_PULLS,
            resync: super::resync::DEFAULT_PERIOD,
            hub_namespace: DEFAULT_HUB_NAMESPACE.to_owned(),
        }
    }
}
