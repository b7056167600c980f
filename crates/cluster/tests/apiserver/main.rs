//! Integration tests of the embedded API server, driven through a real `kube::Client` (typed and dynamic), as
//! the engine, the console and any kube-rs program use it.

mod client_certs;
mod common;
mod crd;
mod crud;
mod durable;
mod escalation;
mod events;
mod every_cluster;
mod gc;
mod lifecycle;
mod malformed;
mod metrics;
mod patch;
mod protobuf;
mod rbac;
mod reviews_certificates;
mod samples;
mod selectors;
mod status;
mod storage_kinds;
mod validation;
mod watch;
