//! Lease-based health: a spoke that stops renewing its Lease turns unknown on the hub, and available again once it
//! is back.

use kmm_api::ocm::cluster::ManagedCluster;
use kmm_api::ocm::names;
use kmm_testing::wait::eventually;
use kube::api::Api;

use super::{small, started};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_spoke_turns_unknown_and_comes_back() {
    let mut fleet = started(small()).await;
    let clusters: Api<ManagedCluster> = Api::all(fleet.hub().client());
    fleet.stop_spoke("spoke-2").await.unwrap();
    assert!(fleet.spoke("spoke-2").is_none());
    eventually(
        20,
        "spoke-2 to turn unknown once its lease is stale",
        || {
            let clusters = clusters.clone();
            async move {
                let cluster = clusters.get("spoke-2").await.unwrap();
                cluster
                    .condition(names::CONDITION_AVAILABLE)
                    .is_some_and(|c| {
                        c.status == "Unknown" && c.reason == names::REASON_LEASE_STOPPED
                    })
            }
        },
    )
    .await;
    let other = clusters.get("spoke-1").await.unwrap();
    assert!(other.is_available(), "the running spoke stays available");
    fleet.start_spoke("spoke-2").await.unwrap();
    eventually(20, "spoke-2 to be available again", || {
        let clusters = clusters.clone();
        async move { clusters.get("spoke-2").await.unwrap().is_available() }
    })
    .await;
    fleet.shutdown().await;
}
