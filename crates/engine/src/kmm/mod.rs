//! The KMM family: kernel modules taken to every matching node.
//!
//! `Module` → [`module`] → one `ModuleImagesConfig` per Module and one `NodeModulesConfig` entry per node whose
//! image exists → [`mic`] proves images exist with pull pods and hands missing ones to a `ModuleBuildSignConfig`
//! → [`mbsc`] builds and signs them → [`nmc`] runs worker pods that load and unload the module and labels the node
//! → [`deviceplugin`] and [`dra`] run the Module's device plugin or DRA driver DaemonSet on the nodes where the
//! module is loaded (what the two share is in [`plugins`]).
//!
//! `PreflightValidation` → [`preflight`] checks every Module against the kernel of a planned upgrade, through a
//! ModuleImagesConfig per Module on the same image pipeline. [`kernel`] picks the image a node's kernel gets.

mod deviceplugin;
mod dra;
mod fingerprint;
pub mod kernel;
pub mod mbsc;
pub mod mic;
pub mod module;
pub mod nmc;
mod plugins;
pub mod preflight;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::runtime::context::Context;

/// The KMM family: Module, device plugin, DRA driver, ModuleImagesConfig, ModuleBuildSignConfig, NodeModulesConfig
/// and PreflightValidation reconcilers, the Module, device plugin, DRA driver and NodeModulesConfig ones subscribed
/// to the shared node watch now. Preflight belongs here as in upstream's operator: its checks run on the same image pipeline, and
/// an upstream KMM operator found acting runs its own.
pub fn run(
    context: Arc<Context>,
    shared: &crate::runtime::shared::SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let modules = module::run(context.clone(), shared, stop.clone());
    let nmcs = nmc::run(context.clone(), shared, stop.clone());
    let plugins = deviceplugin::run(context.clone(), shared, stop.clone());
    let drivers = dra::run(context.clone(), shared, stop.clone());
    async move {
        tokio::join!(
            modules,
            plugins,
            drivers,
            mic::run(context.clone(), stop.clone()),
            mbsc::run(context.clone(), stop.clone()),
            preflight::run(context, stop),
            nmcs,
        );
    }
}
