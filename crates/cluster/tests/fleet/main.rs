//! Integration tests of the embedded fleet: a hub and two spokes in one process, joined by the simulated OCM agents,
//! checked through `kube::Client`s of the hub and of the spokes.

#![allow(clippy::unwrap_used)]

mod clusters;
mod health;
mod work;

use kmm_api::ocm::cluster::ManagedCluster;
use kmm_cluster::fleet::{EmbeddedFleet, FleetOptions};
use kmm_testing::wait::wait_for;
use kube::api::Api;

/// A hub and two spokes of one node per kernel, in-process, whose agents renew their Leases every second.
fn small() -> FleetOptions {
    FleetOptions {
        lease_duration_seconds: 1,
        ..FleetOptions::new(2, 1)
    }
}

/// Start `options`' fleet and wait until the hub holds every spoke available.
async fn started(options: FleetOptions) -> EmbeddedFleet {
    let fleet = EmbeddedFleet::start(options).await.unwrap();
    let clusters: Api<ManagedCluster> = Api::all(fleet.hub().client());
    for name in fleet.spoke_names() {
        wait_for(
            30,
            &format!("ManagedCluster {name} to be available"),
            || {
                let clusters = clusters.clone();
                async move {
                    clusters
                        .get_opt(name)
                        .await
                        .ok()
                        .flatten()
                        .filter(ManagedCluster::is_available)
                }
            },
        )
        .await;
    }
    fleet
}
