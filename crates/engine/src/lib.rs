//! The engine of kmm-tui: the reconcilers of four families of software that lives on nodes, each in its folder.
//!
//! - **KMM** ([`kmm`]): `Module` → ModuleImagesConfig, ModuleBuildSignConfig and NodeModulesConfig → worker pods that
//!   load the kernel module on every matching node, its device plugin, and `PreflightValidation` of a planned
//!   kernel upgrade.
//! - **Shim** ([`shim`]): `Shim` → installer pods that put a containerd shim on the selected nodes, batch by batch,
//!   and its RuntimeClass.
//! - **ImageCache** ([`imagecache`]): `ImageCache` → each cache's images kept on the nodes its lists select.
//! - **Day-0** ([`day0`]): `ModuleDay0` → kernel modules baked into the OS image of a machine config pool, and the
//!   kernels of the OS images the cluster names (`day0/os_image_kernels`).
//! - **Hub** ([`hub`]): `ManagedClusterModule` on an Open Cluster Management hub → images built once on the hub for
//!   the kernels of every cluster it selects, and a ManifestWork per cluster carrying the Module its spoke loads.
//!
//! What the families run on lives in [`runtime`]: the shared [`Context`] and its error policy, events, back-off,
//! metrics, health, leader election ([`runtime::leader`] makes sure two engines never act at once), the watches the
//! families share and the upstream operators the engine steps aside for.
//!
//! Every reconciler runs on `kube::runtime::Controller` and talks only through `kube::Client`, so the same code runs
//! against the embedded cluster and a real one. Passes are level-triggered and idempotent: the engine may be killed
//! at any point and restarted.

pub mod day0;
mod hub;
pub mod imagecache;
pub mod kmm;
pub mod runtime;
mod shim;

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use runtime::{events, leader, operators, shared};

pub use runtime::context::{Context, PodImages};
pub use runtime::family::Family;
pub use runtime::leader::LeaseConfig;
pub use runtime::settings::{DEFAULT_HUB_NAMESPACE, Settings};

/// How to run the engine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Images of the pods the engine creates.
    pub images: PodImages,
    /// The Lease that elects one acting engine.
    pub lease: LeaseConfig,
    /// Which families run, and their options.
    pub settings: Settings,
}

/// Run every reconciler until `shutdown` is cancelled, acting only while this engine holds the lease. Returns once
/// the reconcilers have stopped and the lease is released.
pub async fn run(
    client: kube::Client,
    config: EngineConfig,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    run_steered(client, config, leader::Candidacy::default(), shutdown).await
}

/// [`run`], handed off and taken back through `candidacy`. The reconcilers write through its fence, so they write
/// only while this engine holds the lease, under a field manager naming this engine's identity.
pub async fn run_steered(
    client: kube::Client,
    config: EngineConfig,
    candidacy: leader::Candidacy,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let fenced = candidacy
        .fence
        .client(client.clone(), &config.lease.identity);
    let context = Arc::new(
        Context::new(
            fenced,
            config.images.clone(),
            Some(config.lease.identity.clone()),
        )
        .with_settings(config.settings.clone())
        .with_metrics(candidacy.metrics.clone()),
    );
    candidacy.metrics.count_fenced(candidacy.fence.refused());
    leader::run_candidate(client, config.lease, candidacy, shutdown, move |leading| {
        run_reconcilers(context.clone(), leading)
    })
    .await
}

/// Run the reconcilers of every family the context runs until `stop` is cancelled, except the families an upstream
/// operator acts on ([`operators`]): when that changes, the reconcilers are stopped and started again for the new
/// set. The families share one watch per kind they have in common ([`shared`]).
pub async fn run_reconcilers(context: Arc<Context>, stop: CancellationToken) {
    let mut upstream = operators::follow(context.client.clone(), stop.clone());
    tokio::select! {
        () = stop.cancelled() => return,
        _ = upstream.wait_for(Option::is_some) => {}
    }
    let mut handed = BTreeMap::new();
    loop {
        let taken = upstream.borrow_and_update().clone().unwrap_or_default();
        for (family, operator) in &taken {
            tracing::info!(
                %family,
                operator = operator.operator,
                evidence = %operator.evidence,
                "{} acts on {family}; the engine leaves it alone",
                operator.operator
            );
            if !handed.contains_key(family) && context.settings.families.contains(family) {
                record_hand_over(&context, *family, operator).await;
            }
        }
        handed = taken.clone();
        let families: Vec<Family> = context
            .settings
            .families
            .iter()
            .copied()
            .filter(|family| !taken.contains_key(family))
            .collect();
        let round = stop.child_token();
        let running = run_families(context.clone(), &families, round.clone());
        tokio::pin!(running);
        tokio::select! {
            // Every family is left to upstream operators (or none runs): wait for that to change.
            () = &mut running => tokio::select! {
                () = stop.cancelled() => {}
                _ = upstream.changed() => {}
            },
            _ = upstream.changed() => {
                round.cancel();
                running.await;
            }
        }
        if stop.is_cancelled() {
            break;
        }
    }
    tracing::info!("reconcilers stopped");
}

/// Record on the operator's Deployment that `family` is left to it, so `kubectl get events` in its namespace says
/// why the engine stopped acting on that family, and on what evidence.
async fn record_hand_over(context: &Context, family: Family, operator: &operators::Upstream) {
    let note = format!(
        "kmm-tui leaves the {family} family to {}: {}",
        operator.operator, operator.evidence
    );
    let record = events::Record {
        warning: false,
        reason: "LeftToUpstreamOperator",
        action: "LeaveFamily",
        note: &note,
    };
    if let Err(error) = context
        .recorder
        .publish(&record, &operator.deployment.object_ref())
        .await
    {
        tracing::debug!(%error, "hand-over event not published");
    }
}

/// Run the reconcilers of `families` until `stop` is cancelled.
async fn run_families(context: Arc<Context>, families: &[Family], stop: CancellationToken) {
    let names: Vec<&str> = families.iter().map(|f| f.as_str()).collect();
    tracing::info!(families = %names.join(","), "engine acting: reconcilers started");
    context.metrics.reconcilers_stopped();
    let shared = shared::SharedWatches::new().reporting_to(context.metrics.clone());
    let mut running: Vec<futures::future::BoxFuture<'static, ()>> = Vec::new();
    for family in families {
        match family {
            Family::Kmm => running.push(Box::pin(kmm::run(context.clone(), &shared, stop.clone()))),
            Family::Shims => {
                running.push(Box::pin(shim::run(context.clone(), &shared, stop.clone())))
            }
            Family::Caches => running.push(Box::pin(imagecache::run(
                context.clone(),
                &shared,
                stop.clone(),
            ))),
            Family::Day0 => {
                running.push(Box::pin(day0::run(context.clone(), &shared, stop.clone())))
            }
            Family::Hub => running.push(Box::pin(hub::run(context.clone(), stop.clone()))),
        }
    }
    let watches = shared.run(context.client.clone(), stop.clone());
    let sampling = context.metrics.clone().sample_until(stop.clone());
    tokio::join!(watches, sampling, futures::future::join_all(running));
    context.metrics.reconcilers_stopped();
}
