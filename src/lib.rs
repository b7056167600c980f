//! kmm-tui: a terminal console and reconciler engine for the software that lives on Kubernetes nodes.
mod allocator;
pub mod api;
pub mod cluster;
pub mod engine;
pub mod install;
pub mod tui;
