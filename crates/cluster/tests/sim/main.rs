//! Integration tests of the node simulation, through kube::Client against the embedded cluster.

#![allow(clippy::unwrap_used)]

mod background;
mod common_control;
mod common_kubelet;
mod control;
mod daemon_sets;
mod dra;
mod effects;
mod endpoint_slices;
mod endpoints;
mod ephemeral;
mod exec;
mod image_refs;
mod inject;
mod jobs;
mod kubelet;
mod portforward;
mod processes;
mod resource_claims;
mod scenarios;
mod shared;
mod streams_end;
mod workloads;

use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};

/// An embedded cluster simulating `scenario` (YAML), for the tests that run workloads on its nodes.
async fn cluster_on(scenario: &str) -> EmbeddedCluster {
    EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(Scenario::parse(scenario, "test", None).expect("the scenario parses")),
        ..Default::default()
    })
    .await
    .expect("the cluster starts")
}
