//! Integration tests of the embedded API server, driven through a real `kube::Client` (typed and dynamic), as
//! the engine, the console and any kube-rs program use it.

mod common;
mod crd;
mod crud;
mod durable;
mod escalation;
mod events;
mod every_cluster;
mod eviction;
mod gc;
mod lifecycle;
mod malformed;
mod metrics;
mod patch;
mod protobuf;
mod rbac;
mod revisions;
mod samples;
mod scale;
mod selectors;
mod status;
mod validation;
mod watch;
mod with_kubectl;
