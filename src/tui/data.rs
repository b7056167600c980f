//! What the console knows of the cluster: the latest list of every kind it watches, as shared immutable objects.
//! The watch tasks send whole lists ([`KindSnapshot`]); the UI task swaps them in, so a frame always reads one
//! consistent list per kind and nothing is copied but pointers.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};

use super::worded::Why;
use kmm_api::day0::{MachineConfig, MachineConfigPool, ModuleDay0};
use kmm_api::hub::ManagedClusterModule;
use kmm_api::imagecache::ImageCache;
use kmm_api::kmm::{Module, ModuleImagesConfig, NodeModulesConfig, PreflightValidation};
use kmm_api::shim::Shim;

/// The kinds the console watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// KMM Modules.
    Module,
    /// ModuleImagesConfigs: the image states per Module.
    ModuleImagesConfig,
    /// NodeModulesConfigs: what each node should load and has loaded.
    NodeModulesConfig,
    /// Nodes.
    Node,
    /// The pods KMM runs: pull, build, sign and worker pods.
    Pod,
    /// Events (events.k8s.io/v1).
    Event,
    /// containerd Shims.
    Shim,
    /// kube-fledged ImageCaches: images to keep pulled on nodes.
    ImageCache,
    /// ModuleDay0s: kernel modules baked into a pool's OS image.
    ModuleDay0,
    /// MachineConfigPools: the rollout of a ModuleDay0's image.
    MachineConfigPool,
    /// MachineConfigs labelled kmm-managed: the ones handed over, or waiting to be.
    MachineConfig,
    /// PreflightValidations: every Module checked against the kernel of a planned upgrade.
    PreflightValidation,
    /// ResourceSlices: the devices DRA drivers publish (resource.k8s.io/v1, watched only where served).
    ResourceSlice,
    /// ResourceClaims: the devices allocated to pods (resource.k8s.io/v1, watched only where served).
    ResourceClaim,
    /// ManagedClusterModules: a hub's Modules for a fleet of clusters (watched by the fleet view only).
    ManagedClusterModule,
}

impl Kind {
    /// Every kind watched on every cluster. The [`Kind::DRA`] kinds are watched besides, where the cluster serves
    /// them.
    pub const ALL: [Kind; 12] = [
        Kind::Module,
        Kind::ModuleImagesConfig,
        Kind::NodeModulesConfig,
        Kind::Node,
        Kind::Pod,
        Kind::Event,
        Kind::Shim,
        Kind::ImageCache,
        Kind::ModuleDay0,
        Kind::MachineConfigPool,
        Kind::MachineConfig,
        Kind::PreflightValidation,
    ];

    /// The kinds of Dynamic Resource Allocation, watched only on a cluster that serves resource.k8s.io/v1
    /// (Kubernetes 1.34 and later): an older one would answer each watch with an error forever.
    pub const DRA: [Kind; 2] = [Kind::ResourceSlice, Kind::ResourceClaim];

    /// The kind's name as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Module => "Module",
            Kind::ModuleImagesConfig => "ModuleImagesConfig",
            Kind::NodeModulesConfig => "NodeModulesConfig",
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::Event => "Event",
            Kind::Shim => "Shim",
            Kind::ImageCache => "ImageCache",
            Kind::ModuleDay0 => "ModuleDay0",
            Kind::MachineConfigPool => "MachineConfigPool",
            Kind::MachineConfig => "MachineConfig",
            Kind::PreflightValidation => "PreflightValidation",
            Kind::ResourceSlice => "ResourceSlice",
            Kind::ResourceClaim => "ResourceClaim",
            Kind::ManagedClusterModule => "ManagedClusterModule",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A whole list of one kind, as a watch task sends it.
#[derive(Clone, Debug)]
pub enum KindSnapshot {
    /// Every Module.
    Modules(Vec<Arc<Module>>),
    /// Every ModuleImagesConfig.
    ModuleImagesConfigs(Vec<Arc<ModuleImagesConfig>>),
    /// Every NodeModulesConfig.
    NodeModulesConfigs(Vec<Arc<NodeModulesConfig>>),
    /// Every Node.
    Nodes(Vec<Arc<Node>>),
    /// Every KMM pod and image puller pod.
    Pods(Vec<Arc<Pod>>),
    /// The most recent events.
    Events(Vec<Arc<Event>>),
    /// Every Shim.
    Shims(Vec<Arc<Shim>>),
    /// Every ImageCache.
    ImageCaches(Vec<Arc<ImageCache>>),
    /// Every ModuleDay0.
    ModuleDay0s(Vec<Arc<ModuleDay0>>),
    /// Every MachineConfigPool.
    MachineConfigPools(Vec<Arc<MachineConfigPool>>),
    /// Every kmm-managed MachineConfig.
    MachineConfigs(Vec<Arc<MachineConfig>>),
    /// Every PreflightValidation.
    PreflightValidations(Vec<Arc<PreflightValidation>>),
    /// Every ResourceSlice.
    ResourceSlices(Vec<Arc<ResourceSlice>>),
    /// Every ResourceClaim.
    ResourceClaims(Vec<Arc<ResourceClaim>>),
    /// Every ManagedClusterModule of a hub.
    ManagedClusterModules(Vec<Arc<ManagedClusterModule>>),
}

impl KindSnapshot {
    /// Which kind the list holds.
    pub fn kind(&self) -> Kind {
        match self {
            KindSnapshot::Modules(_) => Kind::Module,
            KindSnapshot::ModuleImagesConfigs(_) => Kind::ModuleImagesConfig,
            KindSnapshot::NodeModulesConfigs(_) => Kind::NodeModulesConfig,
            KindSnapshot::Nodes(_) => Kind::Node,
            KindSnapshot::Pods(_) => Kind::Pod,
            KindSnapshot::Events(_) => Kind::Event,
            KindSnapshot::Shims(_) => Kind::Shim,
            KindSnapshot::ImageCaches(_) => Kind::ImageCache,
            KindSnapshot::ModuleDay0s(_) => Kind::ModuleDay0,
            KindSnapshot::MachineConfigPools(_) => Kind::MachineConfigPool,
            KindSnapshot::MachineConfigs(_) => Kind::MachineConfig,
            KindSnapshot::PreflightValidations(_) => Kind::PreflightValidation,
            KindSnapshot::ResourceSlices(_) => Kind::ResourceSlice,
            KindSnapshot::ResourceClaims(_) => Kind::ResourceClaim,
            KindSnapshot::ManagedClusterModules(_) => Kind::ManagedClusterModule,
        }
    }
}

/// Whether a kind's watch is delivering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeedState {
    /// Not listed yet.
    Loading,
    /// Listed and watching.
    Live,
    /// The watch failed (why, worded for a person) and is retrying with backoff; the lists shown are the last ones
    /// received.
    Failing(Why),
}

/// Whether the cluster serves resource.k8s.io/v1, through which DRA drivers publish devices and pods claim them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DraServing {
    /// Not asked yet (or the cluster did not answer yet).
    #[default]
    Unknown,
    /// Served: its ResourceSlices and ResourceClaims are watched.
    Served,
    /// Not served (a cluster older than Kubernetes 1.34): nothing is watched and the panes say so.
    NotServed,
}

/// What the panes say where devices would be, on a cluster that does not serve DRA.
pub const DRA_NOT_SERVED: &str = "DRA: not served by this cluster (needs Kubernetes 1.34)";

/// The latest lists of every watched kind, sorted by namespace and name (events newest first).
#[derive(Clone, Debug, Default)]
pub struct ClusterData {
    /// Modules.
    pub modules: Vec<Arc<Module>>,
    /// ModuleImagesConfigs.
    pub mics: Vec<Arc<ModuleImagesConfig>>,
    /// NodeModulesConfigs.
    pub nmcs: Vec<Arc<NodeModulesConfig>>,
    /// Nodes.
    pub nodes: Vec<Arc<Node>>,
    /// KMM pods and image puller pods.
    pub pods: Vec<Arc<Pod>>,
    /// Events, newest first.
    pub events: Vec<Arc<Event>>,
    /// Shims.
    pub shims: Vec<Arc<Shim>>,
    /// ImageCaches.
    pub caches: Vec<Arc<ImageCache>>,
    /// ModuleDay0s.
    pub day0s: Vec<Arc<ModuleDay0>>,
    /// MachineConfigPools.
    pub pools: Vec<Arc<MachineConfigPool>>,
    /// kmm-managed MachineConfigs.
    pub machine_configs: Vec<Arc<MachineConfig>>,
    /// PreflightValidations.
    pub preflights: Vec<Arc<PreflightValidation>>,
    /// ResourceSlices, by name.
    pub slices: Vec<Arc<ResourceSlice>>,
    /// ResourceClaims.
    pub claims: Vec<Arc<ResourceClaim>>,
    /// ManagedClusterModules, on a hub the fleet view follows.
    pub hub_modules: Vec<Arc<ManagedClusterModule>>,
    /// Whether the cluster serves DRA, so its panes tell "no devices" from "no DRA here".
    pub dra: DraServing,
    /// Feed state per kind; a kind missing here has not reported yet.
    pub feeds: BTreeMap<Kind, FeedState>,
    /// The Lease electing the acting engine, so the header can say who acts.
    pub engine_lease: Option<Arc<Lease>>,
    /// The engine's record of the kernel each OS image the cluster names boots
    /// (`openshift-kmm/kmm-tui-os-image-kernels`), when it exists.
    pub os_image_kernels: Option<Arc<ConfigMap>>,
    /// How many lists of each kind were taken in, so a view built from a few kinds is rebuilt only when they change.
    pub revisions: BTreeMap<Kind, u64>,
}

impl ClusterData {
    /// Swap in a new list of one kind.
    pub fn apply(&mut self, snapshot: KindSnapshot) {
        let kind = snapshot.kind();
        match snapshot {
            KindSnapshot::Modules(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.modules = list;
            }
            KindSnapshot::ModuleImagesConfigs(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.mics = list;
            }
            KindSnapshot::NodeModulesConfigs(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.nmcs = list;
            }
            KindSnapshot::Nodes(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.nodes = list;
            }
            KindSnapshot::Pods(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.pods = list;
            }
            KindSnapshot::Events(mut list) => {
                list.sort_by_key(|event| std::cmp::Reverse(event_time(event)));
                self.events = list;
            }
            KindSnapshot::Shims(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.shims = list;
            }
            KindSnapshot::ImageCaches(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.caches = list;
            }
            KindSnapshot::ModuleDay0s(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.day0s = list;
            }
            KindSnapshot::MachineConfigPools(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.pools = list;
            }
            KindSnapshot::MachineConfigs(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.machine_configs = list;
            }
            KindSnapshot::PreflightValidations(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.preflights = list;
            }
            KindSnapshot::ResourceSlices(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.slices = list;
            }
            KindSnapshot::ResourceClaims(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.claims = list;
            }
            KindSnapshot::ManagedClusterModules(mut list) => {
                list.sort_by(|a, b| key(&a.metadata).cmp(&key(&b.metadata)));
                self.hub_modules = list;
            }
        }
        self.feeds.insert(kind, FeedState::Live);
        *self.revisions.entry(kind).or_default() += 1;
    }

    /// How many lists of `kind` were taken in.
    pub fn revision(&self, kind: Kind) -> u64 {
        self.revisions.get(&kind).copied().unwrap_or_default()
    }

    /// Record a watch failure (or recovery) of one kind.
    pub fn set_feed(&mut self, kind: Kind, state: FeedState) {
        self.feeds.insert(kind, state);
    }

    /// Who holds the engine Lease, if it is held and not expired at `now`.
    pub fn engine_holder(&self, now: jiff::Timestamp) -> Option<&str> {
        let spec = self.engine_lease.as_ref()?.spec.as_ref()?;
        let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty())?;
        let renewed = spec.renew_time.as_ref().map(|t| t.0)?;
        let duration = i64::from(spec.lease_duration_seconds.unwrap_or(15));
        (now.as_second() - renewed.as_second() <= duration).then_some(holder)
    }

    /// Whether every kind has been listed at least once.
    pub fn loaded(&self) -> bool {
        Kind::ALL
            .iter()
            .all(|kind| !matches!(self.feeds.get(kind), None | Some(FeedState::Loading)))
    }

    /// Whether the DRA lists are in: the cluster serves resource.k8s.io/v1 and its ResourceSlices and
    /// ResourceClaims have both been listed.
    pub fn dra_listed(&self) -> bool {
        self.dra == DraServing::Served
            && Kind::DRA
                .iter()
                .all(|kind| !matches!(self.feeds.get(kind), None | Some(FeedState::Loading)))
    }

    /// The first failing feed, for the header.
    pub fn failure(&self) -> Option<(Kind, &Why)> {
        self.feeds.iter().find_map(|(kind, state)| match state {
            FeedState::Failing(why) => Some((*kind, why)),
            _ => None,
        })
    }

    /// Why the cluster cannot be reached, while a watch says it cannot (connection refused, timeout, TLS, unknown
    /// host): every pane says so rather than showing empty lists as if the cluster had nothing.
    pub fn unreachable(&self) -> Option<&Why> {
        self.feeds.values().find_map(|state| match state {
            FeedState::Failing(why) if why.unreachable() => Some(why),
            _ => None,
        })
    }

    /// The Module `namespace/name`.
    pub fn module(&self, namespace: &str, name: &str) -> Option<&Arc<Module>> {
        find(&self.modules, namespace, name, |m| &m.metadata)
    }

    /// The ModuleImagesConfig of the Module `namespace/name` (same name and namespace).
    pub fn mic(&self, namespace: &str, name: &str) -> Option<&Arc<ModuleImagesConfig>> {
        find(&self.mics, namespace, name, |m| &m.metadata)
    }

    /// The Node `name`.
    pub fn node(&self, name: &str) -> Option<&Arc<Node>> {
        find(&self.nodes, "", name, |n| &n.metadata)
    }

    /// The Shim `name`.
    pub fn shim(&self, name: &str) -> Option<&Arc<Shim>> {
        find(&self.shims, "", name, |s| &s.metadata)
    }

    /// The ImageCache `namespace/name`.
    pub fn cache(&self, namespace: &str, name: &str) -> Option<&Arc<ImageCache>> {
        find(&self.caches, namespace, name, |c| &c.metadata)
    }

    /// The ModuleDay0 `namespace/name`.
    pub fn day0(&self, namespace: &str, name: &str) -> Option<&Arc<ModuleDay0>> {
        find(&self.day0s, namespace, name, |d| &d.metadata)
    }

    /// The MachineConfigPool `name`.
    pub fn pool(&self, name: &str) -> Option<&Arc<MachineConfigPool>> {
        find(&self.pools, "", name, |p| &p.metadata)
    }

    /// The kmm-managed MachineConfig `name`.
    pub fn machine_config(&self, name: &str) -> Option<&Arc<MachineConfig>> {
        find(&self.machine_configs, "", name, |m| &m.metadata)
    }

    /// The PreflightValidation `name`.
    pub fn preflight(&self, name: &str) -> Option<&Arc<PreflightValidation>> {
        find(&self.preflights, "", name, |p| &p.metadata)
    }

    /// The NodeModulesConfig of node `name`.
    pub fn nmc(&self, name: &str) -> Option<&Arc<NodeModulesConfig>> {
        find(&self.nmcs, "", name, |n| &n.metadata)
    }
}

/// The sort key of an object: namespace, then name.
fn key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (&str, &str) {
    (
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

/// Binary search of a list sorted by [`key`].
fn find<'a, T>(
    list: &'a [Arc<T>],
    namespace: &str,
    name: &str,
    meta: impl Fn(&T) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<&'a Arc<T>> {
    list.binary_search_by(|item| key(meta(item)).cmp(&(namespace, name)))
        .ok()
        .map(|index| &list[index])
}

/// When an event happened: its last observation, else its time, else its creation.
pub fn event_time(event: &Event) -> Option<jiff::Timestamp> {
    event
        .series
        .as_ref()
        .map(|series| series.last_observed_time.0)
        .or_else(|| event.event_time.as_ref().map(|time| time.0))
        .or_else(|| event.deprecated_last_timestamp.as_ref().map(|time| time.0))
        .or_else(|| {
            event
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|time| time.0)
        })
}
