//! Starting and stopping a simulation.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::scenario::Scenario;
use super::{World, kubelet, mco, objects, scheduler};
use crate::cluster::apiserver::ApiServer;

/// A running simulation.
pub struct Simulation {
    world: Arc<World>,
    tasks: Vec<JoinHandle<()>>,
}

impl Simulation {
    /// Check the scenario's objects against the server, register the nodes, apply the objects and start the
    /// scheduler, kubelets, Machine Config Operator and registry faults.
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
        tasks.push(tokio::spawn(registry_faults(world.clone())));
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

/// Remove images from the registry when `removeImage` faults say so.
async fn registry_faults(world: Arc<World>) {
    let mut removals = world.faults.image_removals();
    removals.sort_by_key(|(_, at)| *at);
    for (image, at) in removals {
        tokio::select! {
            _ = world.clock.sleep_until(at) => {
                world.registry.remove(&image);
                tracing::info!(%image, "scenario fault: the registry lost the image");
            }
            _ = world.stop.cancelled() => return,
        }
    }
}
