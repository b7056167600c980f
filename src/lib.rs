//! kmm-tui: a terminal console and reconciler engine for the software that lives on Kubernetes nodes.
//!
//! The layers below the console are crates of their own, so the compiler keeps them in order: `kmm-api` (the typed
//! custom resources and the wire contract), `kmm-cluster` (the embedded cluster, which never depends on the engine)
//! and `kmm-engine` (the reconcilers, which talk to any cluster through a kube client). This crate is the console,
//! the installer and the command line, and joins the engine to the embedded cluster ([`controller`]).
pub mod agent;
pub mod allocator;
pub mod controller;
pub mod install;
pub mod tui;
