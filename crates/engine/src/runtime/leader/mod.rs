//! Leader election on a `coordination.k8s.io/v1` Lease, so that of several engines pointed at one cluster exactly one
//! acts at a time, a standby takes over when the leader dies or stops, and the Lease can be moved on purpose.
//!
//! Expiry is judged the way client-go judges it: not from the `renewTime` another machine wrote (its clock may be
//! skewed against ours), but from when *this* candidate saw the Lease record last change. A watch on the single Lease
//! keeps that observation exact, and a standby wakes the moment `leaseDurationSeconds` have passed without a change.
//! Every write is a `replace` at the observed `resourceVersion`, so when candidates race the API server lets exactly
//! one win and the others see a conflict.
//!
//! The leader renews every `retry_period` and stops acting (cancels its work and waits for it) once renewals have
//! failed for `lease_duration - retry_period`: before any standby can consider the Lease expired. On shutdown it
//! releases the Lease (no holder) so a standby takes over at once instead of waiting for expiry, and it is done
//! within that same renew deadline ([`LeaseConfig::shutdown_limit`]) whether or not the API server answers.
//!
//! Hand-off ([`handoff`]): anyone may annotate the Lease with the identity that should hold it next (or "anyone");
//! the holder honours the request at its next renewal by finishing its work in flight and then handing the Lease
//! straight to that identity (or releasing it). An engine told to stand aside does the same and claims nothing until
//! told to compete again. [`fence`] makes "one acting engine" hold for writes, not just for intentions.

mod config;
mod election;
pub mod fence;
pub mod handoff;
mod record;

use std::future::Future;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use config::LeaseConfig;
pub use fence::Fence;
pub use handoff::{Participate, Participation};

use election::{Election, TermEnd};
use handoff::Yield;

/// How a candidate is steered and watched from outside the election: the fence its writes go through, whether it
/// competes, and the metrics it reports (and publishes on the Lease while it holds it).
#[derive(Clone, Debug, Default)]
pub struct Candidacy {
    /// Opened while this candidate leads; give the work a client from [`Fence::client`].
    pub fence: Fence,
    /// Stand aside (hand off) or compete (take over).
    pub participate: Participate,
    /// What the engine does; its [`Activity`](crate::runtime::metrics::activity::Activity) is written on the Lease
    /// at every renewal.
    pub metrics: std::sync::Arc<crate::runtime::metrics::EngineMetrics>,
}

/// Run `work` while holding the lease, until `shutdown` is cancelled, always competing.
///
/// `work` is called once per term of leadership with a token that is cancelled when the term ends (leadership lost
/// or shutdown); it must return soon after. The lease is only given up once `work` has returned, or once it has had
/// its limit (the renew deadline after a lost Lease; the shutdown limit less the release's share after shutdown) and
/// is left unfinished, never polled again, behind a shut fence: two terms never overlap, and a shutdown returns
/// within [`LeaseConfig::shutdown_limit`] even when the API server is gone. Returns after `shutdown` once the lease
/// is released (or its release has had its share of that limit), or when `work` returns by itself (the lease is
/// then released too: there is nothing left to lead). API errors are logged and retried, never returned; the only
/// error is a config that cannot work.
pub async fn run_as_leader<F, Fut>(
    client: kube::Client,
    config: LeaseConfig,
    shutdown: CancellationToken,
    work: F,
) -> anyhow::Result<()>
where
    F: FnMut(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    run_candidate(client, config, Candidacy::default(), shutdown, work).await
}

/// [`run_as_leader`], steered by `candidacy`: its fence is open only while this candidate leads, and while told to
/// stand aside it hands the Lease off and claims nothing. Hand-off requests on the Lease are honoured either way.
pub async fn run_candidate<F, Fut>(
    client: kube::Client,
    config: LeaseConfig,
    candidacy: Candidacy,
    shutdown: CancellationToken,
    mut work: F,
) -> anyhow::Result<()>
where
    F: FnMut(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    config.validate()?;
    let api = Api::<Lease>::namespaced(client, &config.namespace);
    let (observer, mut observations) = watch::channel(None);
    let watching = CancellationToken::new();
    tokio::spawn(record::watch_lease(
        api.clone(),
        config.clone(),
        observer.clone(),
        watching.clone(),
    ));
    let _stop_watching = watching.drop_guard();
    let mut participation = candidacy.participate.subscribe();
    let election = Election {
        api,
        config,
        observer,
        fence: candidacy.fence,
        metrics: candidacy.metrics,
    };
    loop {
        if *participation.borrow_and_update() == Participation::StandAside {
            tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                _ = participation.wait_for(|p| *p == Participation::Compete) => continue,
            }
        }
        let acquired = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            _ = participation.changed() => continue,
            acquired = election.acquire(&mut observations) => acquired,
        };
        match election
            .lead(acquired, &shutdown, &mut participation, &mut work)
            .await
        {
            TermEnd::Lost | TermEnd::Yielded(Yield::To(_)) | TermEnd::StoodAside => continue,
            TermEnd::Yielded(Yield::Anyone) => {
                // Asked to let anyone have it: leave the others a lease duration to claim it before competing again.
                tokio::select! {
                    () = shutdown.cancelled() => return Ok(()),
                    () = tokio::time::sleep(election.config.lease_duration) => {}
                }
            }
            TermEnd::Shutdown | TermEnd::WorkEnded => return Ok(()),
        }
    }
}
