//! One candidate's side of the election: claim the Lease, lead a term while renewing it, and end the term — lost,
//! shut down, handed off or released — only once the work has stopped (or been left behind past its limit) and the
//! fence is shut. Every wait after a shutdown is bounded, so the engine stops within the shutdown limit however the
//! API server behaves.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::LeaseConfig;
use super::fence::Fence;
use super::handoff::{Participation, Yield, requested_yield};
use super::record::{
    Claim, Observation, assess, claimed, handed, holder_of, now_micro, observe, released, renewed,
};
use crate::runtime::metrics::{EngineMetrics, activity};
use crate::runtime::writes::post_params;
use kmm_api::errors::{is_conflict, is_not_found};

/// How a term of leadership ended.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum TermEnd {
    /// Renewals failed for too long, or another candidate holds the Lease.
    Lost,
    /// `shutdown` was cancelled.
    Shutdown,
    /// `work` returned by itself.
    WorkEnded,
    /// A hand-off request on the Lease asked us to yield.
    Yielded(Yield),
    /// We were told to stand aside.
    StoodAside,
}

/// A Lease just written with us as holder, and when that write was sent: no other candidate saw the record change
/// before then, so none considers it expired before `sent + lease duration`.
pub(super) struct Acquired {
    lease: Lease,
    sent: Instant,
}

/// Why a write of our own record did not go through.
enum WriteError {
    /// Someone else wrote the Lease first (409), or it is gone (404): re-observe before trying again.
    Superseded,
    /// The API failed or refused the call: retry later.
    Failed(kube::Error),
}

impl From<kube::Error> for WriteError {
    fn from(error: kube::Error) -> Self {
        if is_conflict(&error) || is_not_found(&error) {
            Self::Superseded
        } else {
            Self::Failed(error)
        }
    }
}

/// One candidate's view of and writes to the Lease.
pub(super) struct Election {
    pub(super) api: Api<Lease>,
    pub(super) config: LeaseConfig,
    pub(super) observer: watch::Sender<Option<Observation>>,
    pub(super) fence: Fence,
    pub(super) metrics: Arc<EngineMetrics>,
}

impl Election {
    /// Wait until the Lease is ours.
    pub(super) async fn acquire(
        &self,
        observations: &mut watch::Receiver<Option<Observation>>,
    ) -> Acquired {
        let mut reported_holder: Option<String> = None;
        if observations.borrow().is_none() {
            self.refresh().await;
        }
        loop {
            let observation = observations.borrow_and_update().clone();
            let wake_at = match observation {
                // Neither the watch nor a read has answered yet: wait for either.
                None => Instant::now() + self.config.retry_period,
                Some(observation) => match assess(&observation, &self.config, Instant::now()) {
                    Claim::Open => match self.claim(observation.lease.as_ref()).await {
                        Ok(acquired) => return acquired,
                        Err(WriteError::Superseded) => {
                            self.refresh().await;
                            if observations.has_changed().unwrap_or(false) {
                                continue;
                            }
                            // The read failed or showed nothing new: do not hammer the API.
                            Instant::now() + self.config.retry_period
                        }
                        Err(WriteError::Failed(error)) => {
                            tracing::warn!(
                                lease = %self.config.lease_key(),
                                identity = %self.config.identity,
                                %error,
                                "claiming the lease failed; retrying in {:?}",
                                self.config.retry_period
                            );
                            Instant::now() + self.config.retry_period
                        }
                    },
                    Claim::HeldBy { holder, until } => {
                        if reported_holder.as_deref() != Some(holder.as_str()) {
                            tracing::info!(
                                lease = %self.config.lease_key(),
                                identity = %self.config.identity,
                                leader = %holder,
                                "standing by: lease {} is held by {holder}",
                                self.config.lease_key()
                            );
                            reported_holder = Some(holder);
                        }
                        until
                    }
                },
            };
            tokio::select! {
                // Fails only once every sender is gone, and `self` holds one.
                _ = observations.changed() => {}
                () = tokio::time::sleep_until(wake_at) => {
                    if observations.borrow().is_none() {
                        self.refresh().await;
                    }
                }
            }
        }
    }

    /// Read the Lease and record what was seen; a failed read is logged and leaves the observation as it was.
    async fn refresh(&self) {
        match self.api.get_opt(&self.config.name).await {
            Ok(lease) => observe(&self.observer, lease),
            Err(error) => tracing::warn!(
                lease = %self.config.lease_key(),
                identity = %self.config.identity,
                %error,
                "reading the lease failed"
            ),
        }
    }

    /// Write ourselves in as holder over the observed record (create it when absent).
    async fn claim(&self, current: Option<&Lease>) -> Result<Acquired, WriteError> {
        let lease = claimed(current, &self.config, now_micro());
        let sent = Instant::now();
        let written = match current {
            None => self.api.create(&post_params(), &lease).await?,
            Some(_) => {
                self.api
                    .replace(&self.config.name, &post_params(), &lease)
                    .await?
            }
        };
        observe(&self.observer, Some(written.clone()));
        tracing::info!(
            lease = %self.config.lease_key(),
            identity = %self.config.identity,
            "acquired lease {} as {}; leading",
            self.config.lease_key(),
            self.config.identity
        );
        Ok(Acquired {
            lease: written,
            sent,
        })
    }

    /// Run one term of `work` on the Lease just acquired, renewing it, until the term ends. The work is stopped
    /// (or, past its limit, abandoned) and the fence shut before the Lease is released or handed on; a lost Lease
    /// shuts the fence at once.
    pub(super) async fn lead<F, Fut>(
        &self,
        acquired: Acquired,
        shutdown: &CancellationToken,
        participation: &mut watch::Receiver<Participation>,
        work: &mut F,
    ) -> TermEnd
    where
        F: FnMut(CancellationToken) -> Fut,
        Fut: Future<Output = ()>,
    {
        let mut held = acquired.lease;
        let mut last_renewal = acquired.sent;
        self.fence
            .open_until(last_renewal + self.config.renew_deadline());
        self.metrics.set_leading(&self.config.name, true);
        let term = CancellationToken::new();
        let working = work(term.clone());
        tokio::pin!(working);
        let stops = Stops {
            shutdown,
            participation,
        };
        let end = tokio::select! {
            () = &mut working => TermEnd::WorkEnded,
            end = self.keep_renewed(&mut held, &mut last_renewal, Some(stops)) => end,
        };
        let stopped = if end == TermEnd::WorkEnded {
            true
        } else {
            term.cancel();
            self.wind_down(working, &end, &mut held, &mut last_renewal, shutdown)
                .await
        };
        self.fence.close();
        self.metrics.set_leading(&self.config.name, false);
        if !stopped {
            tracing::warn!(
                lease = %self.config.lease_key(),
                identity = %self.config.identity,
                "the work of the term did not stop in time; left behind (the fence is shut: it writes nothing)"
            );
        }
        match &end {
            TermEnd::Lost => tracing::info!(
                lease = %self.config.lease_key(),
                identity = %self.config.identity,
                "lost lease {}; work stopped, standing by",
                self.config.lease_key()
            ),
            TermEnd::Yielded(Yield::To(next)) => self.hand_on(held, Some(next), shutdown).await,
            TermEnd::Shutdown
            | TermEnd::WorkEnded
            | TermEnd::StoodAside
            | TermEnd::Yielded(Yield::Anyone) => self.hand_on(held, None, shutdown).await,
        }
        end
    }

    /// Wait for the work of a term that ended with `end` to stop, keeping the Lease renewed meanwhile (unless it
    /// was lost) so no one else starts before it has. The wait is bounded: once the Lease is lost, by the renew
    /// deadline (the fence is shut then, so the work writes nothing more); once shutting down, by the shutdown
    /// limit less what the release may take, so the engine exits within that limit even when a pass waits on an
    /// API server that is gone. Returns whether the work stopped; work that did not is never polled again.
    async fn wind_down<W: Future<Output = ()>>(
        &self,
        working: Pin<&mut W>,
        end: &TermEnd,
        held: &mut Lease,
        last_renewal: &mut Instant,
        shutdown: &CancellationToken,
    ) -> bool {
        let lost = async {
            if *end != TermEnd::Lost {
                // Keep the term safe while the work winds down, so no one else starts before it has stopped.
                self.keep_renewed(held, last_renewal, None).await;
            }
            self.fence.close();
            tokio::time::sleep(self.config.renew_deadline()).await;
        };
        let stop_by = self
            .config
            .shutdown_limit()
            .saturating_sub(self.config.release_limit());
        tokio::select! {
            () = working => true,
            () = lost => false,
            () = after_shutdown(shutdown, stop_by) => false,
        }
    }

    /// Renew `held` every retry period until the Lease is lost or, when `stops` are given, shutdown, a hand-off
    /// request or being told to stand aside ends the term. `last_renewal` is when the last successful renewal was
    /// sent; each one moves the fence.
    async fn keep_renewed(
        &self,
        held: &mut Lease,
        last_renewal: &mut Instant,
        mut stops: Option<Stops<'_>>,
    ) -> TermEnd {
        let mut next_attempt = *last_renewal + self.config.retry_period;
        let honours_requests = stops.is_some();
        loop {
            let deadline = *last_renewal + self.config.renew_deadline();
            let stopped = async {
                match stops.as_mut() {
                    Some(stops) => stops.next().await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(stopped);
            tokio::select! {
                end = &mut stopped => return end,
                () = tokio::time::sleep_until(next_attempt.min(deadline)) => {}
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    lease = %self.config.lease_key(),
                    identity = %self.config.identity,
                    "lease {} not renewed for {:?}; stepping down",
                    self.config.lease_key(),
                    self.config.renew_deadline()
                );
                return TermEnd::Lost;
            }
            if honours_requests && let Some(request) = self.yield_requested(held) {
                tracing::info!(
                    lease = %self.config.lease_key(),
                    identity = %self.config.identity,
                    "hand-off of lease {} requested ({request:?}); finishing the work in flight",
                    self.config.lease_key()
                );
                return TermEnd::Yielded(request);
            }
            let sent = Instant::now();
            let attempt = tokio::time::timeout_at(deadline, self.renew(held));
            let outcome = tokio::select! {
                end = &mut stopped => return end,
                outcome = attempt => outcome,
            };
            match outcome {
                Ok(Ok(lease)) => {
                    *held = lease;
                    *last_renewal = sent;
                    self.fence.open_until(sent + self.config.renew_deadline());
                    next_attempt = sent + self.config.retry_period;
                }
                Ok(Err(WriteError::Superseded)) => return TermEnd::Lost,
                Ok(Err(WriteError::Failed(error))) => {
                    tracing::warn!(
                        lease = %self.config.lease_key(),
                        identity = %self.config.identity,
                        %error,
                        "renewing the lease failed; retrying"
                    );
                    next_attempt = Instant::now() + self.config.retry_period;
                }
                // The deadline passed mid-request: the next turn of the loop steps down.
                Err(_elapsed) => {}
            }
        }
    }

    /// The hand-off asked of us on the Lease, as last written by us or seen by the watch while still ours.
    fn yield_requested(&self, held: &Lease) -> Option<Yield> {
        let observed = self
            .observer
            .borrow()
            .as_ref()
            .and_then(|seen| seen.lease.clone());
        let identity = self.config.identity.as_str();
        observed
            .iter()
            .chain(std::iter::once(held))
            .filter(|lease| holder_of(lease) == Some(identity))
            .find_map(|lease| requested_yield(lease, identity))
    }

    /// Renew the Lease. When another write got in between (a 409), the Lease is re-read: still ours (say, someone
    /// edited its labels, or a renewal we gave up on landed after all) → renew over the new version; someone
    /// else's → `Superseded`.
    async fn renew(&self, held: &Lease) -> Result<Lease, WriteError> {
        match self.write(&self.renewed(held)).await {
            Err(WriteError::Superseded) => {
                let current = self.still_ours().await?;
                self.write(&self.renewed(&current)).await
            }
            result => result,
        }
    }

    /// `held` renewed now, carrying what the engine did lately.
    fn renewed(&self, held: &Lease) -> Lease {
        let mut lease = renewed(held, &self.config, now_micro());
        activity::annotate(&mut lease, &self.metrics.activity());
        lease
    }

    /// The Lease as it is now, if we still hold it.
    async fn still_ours(&self) -> Result<Lease, WriteError> {
        let current = self.api.get_opt(&self.config.name).await?;
        observe(&self.observer, current.clone());
        match current {
            Some(lease) if holder_of(&lease) == Some(self.config.identity.as_str()) => Ok(lease),
            Some(lease) => {
                tracing::info!(
                    lease = %self.config.lease_key(),
                    identity = %self.config.identity,
                    "lease {} was taken over by {}",
                    self.config.lease_key(),
                    holder_of(&lease).unwrap_or("nobody")
                );
                Err(WriteError::Superseded)
            }
            None => Err(WriteError::Superseded),
        }
    }

    /// Replace the Lease with `lease`, at its resourceVersion.
    async fn write(&self, lease: &Lease) -> Result<Lease, WriteError> {
        let written = self
            .api
            .replace(&self.config.name, &post_params(), lease)
            .await?;
        observe(&self.observer, Some(written.clone()));
        Ok(written)
    }

    /// Give up the Lease so a standby takes over at once, or hand it straight to `next`. Bounded by the lease
    /// duration (past it, the Lease has expired anyway) and, once shutting down, by the release limit.
    async fn hand_on(&self, held: Lease, next: Option<&str>, shutdown: &CancellationToken) {
        let record = |lease: &Lease| match next {
            Some(next) => handed(lease, next, &self.config, now_micro()),
            None => released(lease, now_micro()),
        };
        let releasing = async {
            match self.write(&record(&held)).await {
                Err(WriteError::Superseded) => {
                    let current = self.still_ours().await?;
                    self.write(&record(&current)).await
                }
                result => result,
            }
        };
        let limit = async {
            tokio::select! {
                () = tokio::time::sleep(self.config.lease_duration) => {}
                () = after_shutdown(shutdown, self.config.release_limit()) => {}
            }
        };
        let outcome = tokio::select! {
            outcome = releasing => Some(outcome),
            () = limit => None,
        };
        let key = self.config.lease_key();
        let identity = &self.config.identity;
        let to = next.unwrap_or("anyone");
        match outcome {
            Some(Ok(_)) => {
                tracing::info!(lease = %key, %identity, "released lease {key} held by {identity} to {to}")
            }
            Some(Err(WriteError::Superseded)) => {
                tracing::info!(lease = %key, %identity, "lease {key} no longer held; nothing to release")
            }
            Some(Err(WriteError::Failed(error))) => tracing::warn!(
                lease = %key,
                %identity,
                %error,
                "releasing the lease failed; it expires on its own"
            ),
            None => tracing::warn!(
                lease = %key,
                %identity,
                "releasing the lease timed out; it expires on its own"
            ),
        }
    }
}

/// Resolves `limit` after `shutdown` is cancelled; `limit` from now when it already is.
async fn after_shutdown(shutdown: &CancellationToken, limit: Duration) {
    shutdown.cancelled().await;
    tokio::time::sleep(limit).await;
}

/// What ends a term besides a lost Lease.
struct Stops<'a> {
    shutdown: &'a CancellationToken,
    participation: &'a mut watch::Receiver<Participation>,
}

impl Stops<'_> {
    /// Wait for shutdown or for being told to stand aside.
    async fn next(&mut self) -> TermEnd {
        tokio::select! {
            () = self.shutdown.cancelled() => TermEnd::Shutdown,
            _ = self.participation.wait_for(|p| *p == Participation::StandAside) => TermEnd::StoodAside,
        }
    }
}
