//! Starting and stopping a simulation.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::scenario::Scenario;
use super::{
    OwnImagePrograms, SharedRegistry, World, background, disruption, endpoint_slices, inject,
    kubelet, mco, objects, registry_record, scheduler, workloads,
};
use kmm_apiserver::apiserver::ApiServer;

/// A running simulation.
pub struct Simulation {
    world: Arc<World>,
    tasks: Vec<JoinHandle<()>>,
}

impl Simulation {
    /// Check the scenario's objects against the server, take over the registry a previous run recorded, register
    /// the nodes, apply the objects, write the background workloads and start their churn, and start the scheduler, kubelets (which also apply the scenario's timed faults
    /// and the injected ones), the Machine Config Operator, the Deployment, ReplicaSet, ReplicationController,
    /// resource claim and EndpointSlice controllers and the follower of injected faults.
    pub async fn start(
        server: ApiServer,
        client: kube::Client,
        scenario: Scenario,
        own_image: Option<OwnImagePrograms>,
        registry: Option<SharedRegistry>,
    ) -> anyhow::Result<Self> {
        let world = World::new(server, client, scenario, own_image, registry);
        objects::check(&world).await?;
        registry_record::adopt(&world).await?;
        kubelet::register(&world).await?;
        objects::apply(&world).await?;
        let loading = world.clone();
        let loaded = tokio::task::spawn_blocking(move || background::load(&loading)).await??;
        let mut tasks = kubelet::spawn(world.clone());
        tasks.extend(loaded.and_then(|loaded| background::spawn(world.clone(), loaded)));
        tasks.push(scheduler::spawn(world.clone()));
        tasks.push(mco::spawn(world.clone()));
        tasks.push(workloads::spawn(world.clone()));
        tasks.push(workloads::resource_claims::spawn(world.clone()));
        tasks.push(endpoint_slices::spawn(world.clone()));
        tasks.push(disruption::spawn(world.clone()));
        tasks.push(inject::spawn(world.clone()));
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
