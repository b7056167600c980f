//! The console driven as its event loop drives it (`App::update` with keys and data), drawn on a `TestBackend`,
//! and its writes against the embedded cluster through a real `kube::Client`.

mod app;
mod churn;
mod config;
mod devices;
mod engine;
mod feed;
mod fleet;
mod panes;
mod shim_writes;
mod shims;
mod support;
mod worded;
mod writes;
