//! Open Cluster Management's agents, simulated: what joins a spoke to its hub. Each spoke runs a registration agent
//! ([`registration`]: it renews the cluster's Lease on the hub and reports the cluster's state and claims) and a
//! work agent ([`work`]: it applies the hub's ManifestWorks to the spoke and reports back); the hub runs the lease
//! controller ([`availability`]) that marks a silent cluster's availability unknown.
//!
//! Every one of them is an API client of the hub and of its spoke, nothing more: a real OCM agent could take their
//! place, and the hub engine cannot tell the difference.

mod availability;
mod conditions;
mod feedback;
pub mod registration;
pub mod work;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Tasks that run until stopped.
struct Running {
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        for task in self.tasks {
            // A task that panicked has nothing left to stop.
            let _ = task.await;
        }
    }
}

/// The agents of one spoke: registration and work.
pub struct SpokeAgents(Running);

impl SpokeAgents {
    /// Start the agents of spoke `cluster` (the name of its ManagedCluster and cluster namespace on the hub).
    pub fn start(hub: kube::Client, spoke: kube::Client, cluster: &str) -> Self {
        let stop = CancellationToken::new();
        let tasks = vec![
            tokio::spawn(registration::run(
                hub.clone(),
                spoke.clone(),
                cluster.to_owned(),
                stop.clone(),
            )),
            tokio::spawn(work::run(hub, spoke, cluster.to_owned(), stop.clone())),
        ];
        Self(Running { stop, tasks })
    }

    /// Stop both agents and wait until they have: from then on the hub hears nothing from the spoke.
    pub async fn stop(self) {
        self.0.stop().await;
    }
}

/// The hub's own OCM controllers: cluster availability from the agents' Leases.
pub struct HubControllers(Running);

impl HubControllers {
    /// Start the hub's controllers.
    pub fn start(hub: kube::Client) -> Self {
        let stop = CancellationToken::new();
        let tasks = vec![tokio::spawn(availability::run(hub, stop.clone()))];
        Self(Running { stop, tasks })
    }

    /// Stop them and wait until they have.
    pub async fn stop(self) {
        self.0.stop().await;
    }
}
