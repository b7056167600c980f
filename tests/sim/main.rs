//! Integration tests of the node simulation, through kube::Client against the embedded cluster.

mod common_control;
mod common_kubelet;
mod control;
mod daemon_sets;
mod effects;
mod endpoint_slices;
mod exec;
mod inject;
mod jobs;
mod kubelet;
mod scenarios;
mod workloads;
