//! End-to-end tests of the KMM engine on the embedded cluster and its simulated nodes, through `kube::Client`.

mod bad_edits;
mod common;
mod day0;
mod device_plugin;
mod dra;
mod events;
mod handoff;
mod hub;
mod imagecache;
mod images;
mod kmm;
mod metrics;
mod module;
mod nmc;
mod os_image_kernels;
mod preflight;
mod rbac;
mod resilience;
mod restarts;
mod samples;
mod shared;
mod shim;
mod shim_demo;
mod takeover;
mod upstream;
