//! The kubelets and container runtimes of every simulated node.
//!
//! A real kubelet registers its Node, reports node status, runs the pods bound to its node (pulling images,
//! starting and restarting containers, recording events, keeping logs) and garbage-collects images. This one does
//! the same for every node of the scenario, and only through the API server, so nothing above the API can tell it
//! from a real one. Underneath it changes [`Machines`](super::machine::Machines): image pulls and image garbage
//! collection, and (through [`effects`](super::effects)) what privileged containers do to their node.
//!
//! It scales to thousands of nodes by never polling: one pod watch for all nodes, one task that follows machine
//! changes and fault windows, one publisher that writes a node's status and machine ConfigMap only when they
//! change, and one task per pod that sleeps on the simulated clock between the things it does.

mod backoff;
mod ephemeral;
mod events;
mod gc;
mod ids;
mod node;
mod pod_run;
mod process;
mod provision;
mod publish;
mod pulls;
mod record;
mod status;
mod watch;
mod worker;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch as state;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::World;

pub use provision::register;

/// What the pods of a node see of their machine: whether it is up, and which boot it is in (containers die when
/// the boot changes).
#[derive(Debug, Clone, PartialEq)]
struct NodeLife {
    ready: bool,
    boot_id: String,
}

/// The kubelet's view of one node.
struct NodeHandle {
    /// Position of the node in the scenario, from which its addresses derive.
    index: usize,
    /// Readiness and boot, watched by the node's pods.
    life: state::Sender<NodeLife>,
    /// The last host part handed out for a pod IP.
    last_pod_ip: Mutex<u8>,
}

/// A pod the kubelet knows, by UID.
enum Tracked {
    /// Its worker runs; cancelling the token kills its containers.
    Running(CancellationToken),
    /// It reached a final phase; nothing runs for it any more.
    Done,
}

/// State shared by the kubelet's tasks.
struct Kubelet {
    world: Arc<World>,
    nodes: BTreeMap<String, NodeHandle>,
    /// Per node, images of running containers with how many containers use them.
    in_use: Mutex<HashMap<String, BTreeMap<String, usize>>>,
    pods: Mutex<HashMap<String, Tracked>>,
    /// Per pod uid, the ephemeral containers started (each runs once).
    ephemeral: Mutex<HashMap<String, HashSet<String>>>,
    publisher: publish::Dirty,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Kubelet {
    /// The kubelet of every registered machine of the scenario.
    fn new(world: Arc<World>) -> Self {
        let now = world.clock.now();
        let machines = world.machines.lock();
        let nodes = world
            .scenario
            .node_names()
            .into_iter()
            .enumerate()
            .filter_map(|(index, name)| {
                let machine = machines.get(&name)?;
                let life = NodeLife {
                    ready: machine.ready && !world.faults.node_not_ready(&name, now),
                    boot_id: machine.boot_id.clone(),
                };
                let handle = NodeHandle {
                    index,
                    life: state::channel(life).0,
                    last_pod_ip: Mutex::new(1),
                };
                Some((name, handle))
            })
            .collect();
        drop(machines);
        Self {
            world,
            nodes,
            in_use: Mutex::default(),
            pods: Mutex::default(),
            ephemeral: Mutex::default(),
            publisher: publish::Dirty::default(),
        }
    }

    /// Images of the containers running on `node`.
    fn images_in_use(&self, node: &str) -> BTreeSet<String> {
        locked(&self.in_use)
            .get(node)
            .map(|images| images.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Record that a container on `node` runs `image` until the returned guard is dropped.
    fn use_image(self: &Arc<Self>, node: &str, image: &str) -> ImageInUse {
        *locked(&self.in_use)
            .entry(node.to_string())
            .or_default()
            .entry(image.to_string())
            .or_default() += 1;
        ImageInUse {
            kubelet: self.clone(),
            node: node.to_string(),
            image: image.to_string(),
        }
    }

    /// Bring what the pods of `node` see up to date with its machine and faults, and have it republished.
    fn refresh_node(&self, node: &str) {
        let Some(handle) = self.nodes.get(node) else {
            return;
        };
        let Some(machine) = self.world.machines.get(node) else {
            return;
        };
        let now = self.world.clock.now();
        let life = NodeLife {
            ready: machine.ready && !self.world.faults.node_not_ready(node, now),
            boot_id: machine.boot_id,
        };
        let before = handle.life.send_replace(life.clone());
        if before != life {
            events::node_changed(&self.world, node, &before, &life);
        }
        self.publisher.mark(node);
    }
}

/// A container's use of an image, released when dropped (also when its pod's task is cancelled).
struct ImageInUse {
    kubelet: Arc<Kubelet>,
    node: String,
    image: String,
}

impl Drop for ImageInUse {
    fn drop(&mut self) {
        let mut in_use = locked(&self.kubelet.in_use);
        if let Some(images) = in_use.get_mut(&self.node)
            && let Some(count) = images.get_mut(&self.image)
        {
            *count -= 1;
            if *count == 0 {
                images.remove(&self.image);
            }
        }
    }
}

/// Run every node's kubelet: the pod watch (which starts one task per pod), the task that follows machine changes
/// and fault windows, and the publisher of node status and machine ConfigMaps. Call after [`register`].
pub fn spawn(world: Arc<World>) -> Vec<JoinHandle<()>> {
    let changes = world.machine_changed.subscribe();
    let kubelet = Arc::new(Kubelet::new(world));
    vec![
        tokio::spawn(watch::pods(kubelet.clone())),
        tokio::spawn(watch::machines(kubelet.clone(), changes)),
        tokio::spawn(publish::run(kubelet)),
    ]
}
