//! The node simulation: the scheduler, kubelets and container runtimes, registry, image builder and Machine Config
//! Operator of the embedded cluster.
//!
//! Every component acts only through the API server, as the real ones do: the scheduler binds pods, kubelets
//! report node and pod status and record events, the Machine Config Operator cordons, drains and reboots nodes. So
//! the engine and the console cannot tell the simulation from a real cluster. What lies beneath the API — each
//! node's kernel, loaded modules, shim binaries, containerd configuration and image store — is kept in
//! [`machine::Machines`] and changed only by kubelets (image pulls and garbage collection), by the effects of the
//! privileged pods the kubelets run (see `effects`), and by reboots.
//!
//! Time is simulated ([`clock::SimClock`]) and every random choice comes from the scenario's seed, so a run is
//! reproducible and tests go through minutes of simulated time in milliseconds.

pub mod background;
mod clock;
mod containers;
mod disruption;
pub mod effects;
mod endpoint_slices;
mod endpoints;
mod environment;
mod faults;
pub mod inject;
pub mod kubelet;
pub mod machine;
pub mod mco;
mod network;
mod objects;
pub mod ocm;
mod registry;
pub mod registry_record;
pub mod run;
pub mod scenario;
pub mod scheduler;
pub mod shared;
mod shell;
pub mod workloads;

use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use clock::SimClock;
use containers::Containers;
use effects::device_plugin::DevicePlugins;
pub use effects::own_image::{OwnImage, OwnImagePrograms, Program};
use faults::Faults;
use kmm_apiserver::apiserver::ApiServer;
use machine::Machines;
pub use registry::SharedRegistry;
use registry::SimRegistry;
use scenario::Scenario;
use shared::SharedWatches;

/// The namespace where the simulation publishes what it knows about each machine (one ConfigMap per node).
pub const SIM_NAMESPACE: &str = "kmm-tui-sim";

/// The field manager of every write the simulation makes.
pub const MANAGER: &str = "kmm-tui-sim";

/// Everything the simulation's components share.
pub struct World {
    /// Client of the embedded API server (in-process).
    pub client: kube::Client,
    /// The API server itself, for container logs (which a real kubelet keeps on the node).
    pub server: ApiServer,
    /// Simulated time.
    pub clock: SimClock,
    /// The machines behind the nodes.
    pub machines: Machines,
    /// The containers running on every node, for `exec` and `attach`.
    pub containers: Containers,
    /// The container registry: the simulation's own, or one it shares with other clusters of a fleet.
    pub registry: Arc<SimRegistry>,
    /// Whether the simulation records its registry in its cluster (see [`registry_record`]): a registry it shares
    /// belongs to the fleet, which outlives any one of its clusters.
    pub records_registry: bool,
    /// How many of the registry's changes its record holds (see [`registry_record`]); locked while it is written.
    pub registry_recorded: tokio::sync::Mutex<u64>,
    /// Injected faults.
    pub faults: Faults,
    /// The devices running device plugins advertise, per node (what each kubelet's device manager knows).
    pub device_plugins: DevicePlugins,
    /// The scenario the simulation runs.
    pub scenario: Scenario,
    /// What containers of the cluster's own image run in-process, when someone registered it.
    pub own_image: Option<Arc<dyn OwnImage>>,
    /// Announces (by node name) that a machine changed underneath its node — a reboot, a fault, an effect — so
    /// the kubelet republishes what the API shows of it.
    pub machine_changed: broadcast::Sender<String>,
    /// The pods and nodes every component follows, watched and cached once.
    pub watches: SharedWatches,
    /// Cancelled when the simulation stops.
    pub stop: CancellationToken,
}

impl World {
    /// The shared state for a scenario, whose own-image containers run `own_image`'s programs and whose images come
    /// from `registry` when it is given (a fleet's), else from a registry of the scenario's own.
    pub fn new(
        server: ApiServer,
        client: kube::Client,
        scenario: Scenario,
        own_image: Option<OwnImagePrograms>,
        registry: Option<SharedRegistry>,
    ) -> Arc<Self> {
        let machines = Machines::default();
        let containers = Containers::default();
        // `kubectl exec` and `attach` reach the containers the kubelets run, as a kubelet hands them to its node's
        // runtime.
        server.set_runtime(Arc::new(containers.clone()));
        let stop = CancellationToken::new();
        Arc::new(Self {
            watches: SharedWatches::new(&client, &stop),
            client,
            server,
            clock: SimClock::new(scenario.time_scale),
            machines,
            containers,
            records_registry: registry.is_none(),
            registry: match registry {
                Some(shared) => shared.0,
                None => Arc::new(SimRegistry::new(
                    &scenario.registry,
                    &scenario.controller_image,
                    &scenario.os_images,
                )),
            },
            registry_recorded: tokio::sync::Mutex::new(0),
            faults: Faults::new(scenario.faults.clone()),
            device_plugins: DevicePlugins::default(),
            scenario,
            own_image: own_image.map(|programs| programs.0),
            machine_changed: broadcast::channel(4096).0,
            stop,
        })
    }

    /// A random number generator for one component, derived from the scenario's seed and the component's name
    /// so that components do not disturb each other's sequences. ChaCha8 rather than `StdRng`, whose algorithm
    /// `rand` may change in any release: a scenario's seed gives the same run after a `rand` upgrade.
    pub fn rng(&self, component: &str) -> ChaCha8Rng {
        let mut seed = self.scenario.seed;
        for byte in component.bytes() {
            seed = seed.wrapping_mul(31).wrapping_add(u64::from(byte));
        }
        ChaCha8Rng::seed_from_u64(seed)
    }
}

/// Drop `metadata.managedFields` from a watched object before a component keeps it. No simulated component reads
/// them, yet they are about half of a Node's JSON and most of its size once parsed, and the simulation caches every
/// Node and Pod of the cluster ([`shared`]).
pub(crate) fn forget_managed_fields<K: kube::Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// What the simulation's pod cache ([`shared`]) keeps of a pod: all of it but the managed fields, each list in an
/// allocation of its length. A list read from JSON grows as its items arrive, so a pod's one container, one
/// container status and five conditions held room for four, four and eight: on 5,000 nodes in a rollout that
/// spare room was a large share of the cache.
pub(crate) fn pod_as_cached(pod: &mut k8s_openapi::api::core::v1::Pod) {
    fn exact<T>(list: &mut Option<Vec<T>>) {
        if let Some(list) = list {
            list.shrink_to_fit();
        }
    }
    fn exact_container(container: &mut k8s_openapi::api::core::v1::Container) {
        exact(&mut container.args);
        exact(&mut container.command);
        exact(&mut container.env);
        exact(&mut container.volume_mounts);
    }
    forget_managed_fields(pod);
    exact(&mut pod.metadata.owner_references);
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers.shrink_to_fit();
        spec.containers.iter_mut().for_each(exact_container);
        exact(&mut spec.init_containers);
        spec.init_containers
            .iter_mut()
            .flatten()
            .for_each(exact_container);
        exact(&mut spec.volumes);
        exact(&mut spec.tolerations);
    }
    if let Some(status) = pod.status.as_mut() {
        exact(&mut status.conditions);
        exact(&mut status.container_statuses);
        exact(&mut status.init_container_statuses);
    }
}

/// What the simulation's node cache ([`shared`]) keeps of a node: what the scheduler, the DaemonSet controller and
/// the Machine Config Operator read. That is its metadata but managed fields, its spec (taints, cordon), and of its
/// status the allocatable resources and the Ready condition. The statuses took 23 MiB of the cache on 5,000 nodes
/// (a heap profile of a Module rollout), most of it image lists, nodeInfo, addresses, capacity and the other four
/// conditions, and nothing there places pods or rolls out machine configs by them.
pub(crate) fn node_for_placement(node: &mut k8s_openapi::api::core::v1::Node) {
    forget_managed_fields(node);
    if let Some(status) = node.status.take() {
        node.status = Some(k8s_openapi::api::core::v1::NodeStatus {
            allocatable: status.allocatable,
            conditions: status.conditions.map(kmm_api::conditions::node_ready_only),
            ..Default::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_cache_keeps_what_placement_reads() {
        let mut node: k8s_openapi::api::core::v1::Node = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "n", "labels": {"role": "worker"},
                "annotations": {"machineconfiguration.openshift.io/state": "Done"},
                "managedFields": [{"manager": "kubelet"}]
            },
            "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {
                "allocatable": {"cpu": "8", "example.com/gpu": "2"},
                "capacity": {"cpu": "8"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False"},
                    {"type": "Ready", "status": "True"}
                ],
                "nodeInfo": {"kernelVersion": "5.14", "architecture": "amd64", "bootID": "b",
                    "containerRuntimeVersion": "", "kubeProxyVersion": "", "kubeletVersion": "",
                    "machineID": "", "operatingSystem": "linux", "osImage": "", "systemUUID": ""},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}],
                "images": [{"names": ["quay.io/a/b:1"], "sizeBytes": 1}]
            }
        }))
        .expect("a node");
        node_for_placement(&mut node);
        let kept = serde_json::to_value(&node).expect("serialisable");
        assert_eq!(
            kept,
            serde_json::json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {
                    "name": "n", "labels": {"role": "worker"},
                    "annotations": {"machineconfiguration.openshift.io/state": "Done"}
                },
                "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoSchedule"}]},
                "status": {
                    "allocatable": {"cpu": "8", "example.com/gpu": "2"},
                    "conditions": [{"type": "Ready", "status": "True"}]
                }
            })
        );
    }
}
