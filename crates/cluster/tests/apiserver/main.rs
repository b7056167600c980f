//! Integration tests of the embedded API server, driven through a real `kube::Client` (typed and dynamic), as
//! the engine, the console and any kube-rs program use it.

#![allow(clippy::unwrap_used)]

mod admission_policies;
mod aggregated_discovery;
mod cel_rules;
mod client_certs;
mod common;
mod crd;
mod crud;
mod delete_status;
mod durable;
mod endpoints;
mod ephemeral;
mod escalation;
mod events;
mod every_cluster;
mod eviction;
mod field_unset;
mod gc;
mod jobs_selector;
mod lifecycle;
mod malformed;
mod metrics;
mod node_ports;
mod openapi_builtins;
mod partial_metadata;
mod patch;
mod protobuf;
mod query_flags;
mod rbac;
mod resource_claims;
mod resource_kinds;
mod reviews_certificates;
mod revisions;
mod samples;
mod scale;
mod selectors;
mod services_wire;
mod status;
mod storage_kinds;
mod validation;
mod watch;
mod with_kubectl;
