//! Starting and stopping a simulation.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::scenario::Scenario;
use super::{World, kubelet, mco, objects, scheduler, workloads};
use crate::cluster::apiserver::ApiServer;

/// A running simulation.
pub struct Simulation {
    world: Arc<World>,
    tasks: Vec<JoinHandle<()>>,
}

impl Simulation {
    /// Check the scenario's objects against the server, register the nodes, apply the objects and start the
    /// scheduler, kubelets (which also apply the scenario's timed faults), the Machine Config Operator and
    /// the Deployment and ReplicaSet controllers.
    pub async fn start(
        server: ApiServer,
        client: kube::Client,
        scenario: Scenario,
    ) -> anyhow::Result<Self> {
        let world = World::new(server, client, scenario);
        objects::check(&world).await?;
        kubelet::register(&world).await?;
        objects::apply(&world).await?;
        let mut tasks = kubelet::spawn(world.clone());
        tasks.push(scheduler::spawn(world.clone()));
        tasks.push(mco::spawn(world.clone()));
        tasks.push(workloads::spawn(world.clone()));
        Ok(Self { world, tasks })
    }

    /// The shared state, for inspection (tests, the console's embedded mode).
    pub fn world(&self) -> &Arc<World> {
        &self.world
    }

    /// Stop every component.
    pub fn shutdown(self) {
        self.world.stop.cancel();
        for task in self.tasks {
            task.abort();
        }
    }
}
