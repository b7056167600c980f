//! Leader election on a `coordination.k8s.io/v1` Lease, so that of several engines pointed at one cluster exactly one
//! acts at a time, and a standby takes over when the leader dies or stops.
//!
//! Expiry is judged the way client-go judges it: not from the `renewTime` another machine wrote (its clock may be
//! skewed against ours), but from when *this* candidate saw the Lease record last change. A watch on the single Lease
//! keeps that observation exact, and a standby wakes the moment `leaseDurationSeconds` have passed without a change.
//! Every write is a `replace` at the observed `resourceVersion`, so when candidates race the API server lets exactly
//! one win and the others see a conflict.
//!
//! The leader renews every `retry_period` and stops acting (cancels its work and waits for it) once renewals have
//! failed for `lease_duration - retry_period`: before any standby can consider the Lease expired. On shutdown it
//! releases the Lease (no holder) so a standby takes over at once instead of waiting for expiry.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::context::{is_conflict, is_not_found, post_params};

/// Namespace of the engine's Lease unless configured otherwise: it exists on every cluster.
pub const DEFAULT_LEASE_NAMESPACE: &str = "kube-system";

/// Name of the engine's Lease unless configured otherwise.
pub const DEFAULT_LEASE_NAME: &str = "kmm-tui-engine";

/// Which Lease elects the acting engine, and how fast a dead leader is replaced.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This engine's identity in `holderIdentity`.
    pub identity: String,
    /// How long a lease holds without renewal.
    pub lease_duration: Duration,
    /// How often the leader renews and a candidate retries.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// A Lease config that renews five times per lease duration, so a leader survives a few failed renewals before
    /// it has to step down.
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
        lease_duration: Duration,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration,
            retry_period: lease_duration / 5,
        }
    }

    /// `namespace/name`, for messages.
    fn lease_key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Refuse settings under which the leader could not step down before a standby takes over.
    fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.identity.is_empty(),
            "the leader election identity is empty"
        );
        anyhow::ensure!(
            !self.namespace.is_empty() && !self.name.is_empty(),
            "the Lease needs a namespace and a name"
        );
        anyhow::ensure!(
            !self.retry_period.is_zero() && self.retry_period < self.lease_duration,
            "the retry period ({:?}) must be positive and shorter than the lease duration ({:?})",
            self.retry_period,
            self.lease_duration
        );
        Ok(())
    }

    /// How long the leader keeps acting without a successful renewal: one retry period short of the lease duration,
    /// so it has stopped before any standby sees the lease expire.
    fn renew_deadline(&self) -> Duration {
        self.lease_duration.saturating_sub(self.retry_period)
    }

    /// `leaseDurationSeconds` to write: whole seconds, rounded up so others never wait less than we assume.
    fn lease_duration_seconds(&self) -> i32 {
        let seconds =
            self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(seconds.max(1)).unwrap_or(i32::MAX)
    }
}

/// Run `work` while holding the lease, until `shutdown` is cancelled.
///
/// `work` is called once per term of leadership with a token that is cancelled when the term ends (leadership lost
/// or shutdown); it must return soon after. The lease is only given up once `work` has returned, so two terms never
/// overlap. Returns after `shutdown` once the lease is released, or when `work` returns by itself (the lease is then
/// released too: there is nothing left to lead). API errors are logged and retried, never returned; the only error
/// is a config that cannot work.
pub async fn run_as_leader<F, Fut>(
    client: kube::Client,
    config: LeaseConfig,
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
    tokio::spawn(watch_lease(
        api.clone(),
        config.clone(),
        observer.clone(),
        watching.clone(),
    ));
    let _stop_watching = watching.drop_guard();
    let election = Election {
        api,
        config,
        observer,
    };
    loop {
        let acquired = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            acquired = election.acquire(&mut observations) => acquired,
        };
        match election.lead(acquired, &shutdown, &mut work).await {
            TermEnd::Lost => continue,
            TermEnd::Shutdown | TermEnd::WorkEnded => return Ok(()),
        }
    }
}

/// The Lease as this candidate last saw it change, and when: the local instant expiry is judged from.
#[derive(Clone, Debug)]
struct Observation {
    lease: Option<Lease>,
    at: Instant,
}

/// What tells two versions of the Lease record apart: a renewal changes `renewTime`, a change of leader changes
/// `holderIdentity`, and any write at all changes the resourceVersion.
#[derive(Debug, PartialEq)]
struct RecordKey {
    holder: Option<String>,
    renew_time: Option<MicroTime>,
    resource_version: Option<String>,
}

impl RecordKey {
    fn of(lease: &Lease) -> Self {
        let spec = lease.spec.as_ref();
        Self {
            holder: spec.and_then(|s| s.holder_identity.clone()),
            renew_time: spec.and_then(|s| s.renew_time.clone()),
            resource_version: lease.metadata.resource_version.clone(),
        }
    }
}

/// Record what was seen of the Lease. The observation time only moves when the record changed: re-reading an
/// unchanged Lease must not postpone its expiry.
fn observe(observer: &watch::Sender<Option<Observation>>, lease: Option<Lease>) {
    let key = lease.as_ref().map(RecordKey::of);
    observer.send_if_modified(|current| {
        let unchanged = current
            .as_ref()
            .is_some_and(|seen| seen.lease.as_ref().map(RecordKey::of) == key);
        if !unchanged {
            *current = Some(Observation {
                lease,
                at: Instant::now(),
            });
        }
        !unchanged
    });
}

/// Feed every change of the Lease into `observer` until `stop`. Errors (forbidden, gone, unreachable) are logged;
/// the watcher retries them with back-off.
async fn watch_lease(
    api: Api<Lease>,
    config: LeaseConfig,
    observer: watch::Sender<Option<Observation>>,
    stop: CancellationToken,
) {
    let mut changes = watcher::watch_object(api, &config.name)
        .default_backoff()
        .boxed();
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = changes.next() => next,
        };
        match next {
            Some(Ok(lease)) => observe(&observer, lease),
            Some(Err(error)) => tracing::warn!(
                lease = %config.lease_key(),
                identity = %config.identity,
                %error,
                "watching the lease failed; retrying"
            ),
            None => return,
        }
    }
}

/// Whether a candidate may claim the Lease now.
#[derive(Debug, PartialEq)]
enum Claim {
    /// Absent, without holder, held by us, or expired.
    Open,
    /// Held by someone else until the instant given, unless it changes before.
    HeldBy { holder: String, until: Instant },
}

/// Judge an observation at `now`. The holder's own `leaseDurationSeconds` says how long its lease lasts (ours when it
/// wrote none), counted from when we saw the record change.
fn assess(observation: &Observation, config: &LeaseConfig, now: Instant) -> Claim {
    let Some(spec) = observation.lease.as_ref().and_then(|l| l.spec.as_ref()) else {
        return Claim::Open;
    };
    let holder = match spec.holder_identity.as_deref() {
        None | Some("") => return Claim::Open,
        Some(holder) if holder == config.identity => return Claim::Open,
        Some(holder) => holder,
    };
    let duration = match spec.lease_duration_seconds {
        Some(seconds) if seconds > 0 => Duration::from_secs(seconds.unsigned_abs().into()),
        _ => config.lease_duration,
    };
    let until = observation.at + duration;
    if now >= until {
        Claim::Open
    } else {
        Claim::HeldBy {
            holder: holder.to_owned(),
            until,
        }
    }
}

/// The Lease with `identity` as holder, renewed now: `current` taken over (a new term when the holder changes) or,
/// without one, a new Lease.
fn claimed(current: Option<&Lease>, config: &LeaseConfig, now: MicroTime) -> Lease {
    let mut lease = current.cloned().unwrap_or_else(|| Lease {
        metadata: ObjectMeta {
            name: Some(config.name.clone()),
            namespace: Some(config.namespace.clone()),
            ..ObjectMeta::default()
        },
        spec: None,
    });
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    let new_term = spec.holder_identity.as_deref() != Some(config.identity.as_str());
    if new_term {
        spec.acquire_time = Some(now.clone());
        spec.lease_transitions = Some(match current {
            Some(_) => spec.lease_transitions.unwrap_or(0).saturating_add(1),
            None => 0,
        });
    }
    spec.holder_identity = Some(config.identity.clone());
    spec.lease_duration_seconds = Some(config.lease_duration_seconds());
    spec.renew_time = Some(now);
    lease
}

/// The Lease renewed now by its holder.
fn renewed(held: &Lease, config: &LeaseConfig, now: MicroTime) -> Lease {
    let mut lease = held.clone();
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.lease_duration_seconds = Some(config.lease_duration_seconds());
    spec.renew_time = Some(now);
    lease
}

/// The Lease given up: no holder, and a one-second duration for candidates that judge by the duration alone.
fn released(held: &Lease, now: MicroTime) -> Lease {
    let mut lease = held.clone();
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(now);
    lease
}

fn now_micro() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

/// Who holds a Lease, for messages.
fn holder_of(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .filter(|h| !h.is_empty())
}

/// How a term of leadership ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TermEnd {
    /// Renewals failed for too long, or another candidate holds the Lease.
    Lost,
    /// `shutdown` was cancelled.
    Shutdown,
    /// `work` returned by itself.
    WorkEnded,
}

/// A Lease just written with us as holder, and when that write was sent: no other candidate saw the record change
/// before then, so none considers it expired before `sent + lease duration`.
struct Acquired {
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
struct Election {
    api: Api<Lease>,
    config: LeaseConfig,
    observer: watch::Sender<Option<Observation>>,
}

impl Election {
    /// Wait until the Lease is ours.
    async fn acquire(&self, observations: &mut watch::Receiver<Option<Observation>>) -> Acquired {
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

    /// Run one term of `work` on the Lease just acquired, renewing it, until the term ends; the Lease is released
    /// unless it was lost.
    async fn lead<F, Fut>(
        &self,
        acquired: Acquired,
        shutdown: &CancellationToken,
        work: &mut F,
    ) -> TermEnd
    where
        F: FnMut(CancellationToken) -> Fut,
        Fut: Future<Output = ()>,
    {
        let mut held = acquired.lease;
        let mut last_renewal = acquired.sent;
        let term = CancellationToken::new();
        let working = work(term.clone());
        tokio::pin!(working);
        let end = tokio::select! {
            () = &mut working => TermEnd::WorkEnded,
            end = self.keep_renewed(&mut held, &mut last_renewal, Some(shutdown)) => end,
        };
        if end != TermEnd::WorkEnded {
            term.cancel();
            if end == TermEnd::Shutdown {
                // Keep the term safe while the work winds down, so no standby starts before it has stopped.
                tokio::select! {
                    () = &mut working => {}
                    _ = self.keep_renewed(&mut held, &mut last_renewal, None) => working.await,
                }
            } else {
                working.await;
            }
        }
        match end {
            TermEnd::Lost => tracing::info!(
                lease = %self.config.lease_key(),
                identity = %self.config.identity,
                "lost lease {}; work stopped, standing by",
                self.config.lease_key()
            ),
            TermEnd::Shutdown | TermEnd::WorkEnded => self.release(held).await,
        }
        end
    }

    /// Renew `held` every retry period until the Lease is lost or, when given, `shutdown` is cancelled.
    /// `last_renewal` is when the last successful renewal was sent.
    async fn keep_renewed(
        &self,
        held: &mut Lease,
        last_renewal: &mut Instant,
        shutdown: Option<&CancellationToken>,
    ) -> TermEnd {
        let mut next_attempt = *last_renewal + self.config.retry_period;
        loop {
            let deadline = *last_renewal + self.config.renew_deadline();
            let cancelled = async {
                match shutdown {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(cancelled);
            tokio::select! {
                () = &mut cancelled => return TermEnd::Shutdown,
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
            let sent = Instant::now();
            let attempt = tokio::time::timeout_at(deadline, self.renew(held));
            let outcome = tokio::select! {
                () = &mut cancelled => return TermEnd::Shutdown,
                outcome = attempt => outcome,
            };
            match outcome {
                Ok(Ok(lease)) => {
                    *held = lease;
                    *last_renewal = sent;
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

    /// Renew the Lease. When another write got in between (a 409), the Lease is re-read: still ours (say, someone
    /// edited its labels, or a renewal we gave up on landed after all) → renew over the new version; someone
    /// else's → `Superseded`.
    async fn renew(&self, held: &Lease) -> Result<Lease, WriteError> {
        match self.write(&renewed(held, &self.config, now_micro())).await {
            Err(WriteError::Superseded) => {
                let current = self.still_ours().await?;
                self.write(&renewed(&current, &self.config, now_micro()))
                    .await
            }
            result => result,
        }
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

    /// Give up the Lease so a standby takes over at once. Bounded by the lease duration: past it, the Lease has
    /// expired anyway.
    async fn release(&self, held: Lease) {
        let releasing = async {
            match self.write(&released(&held, now_micro())).await {
                Err(WriteError::Superseded) => {
                    let current = self.still_ours().await?;
                    self.write(&released(&current, now_micro())).await
                }
                result => result,
            }
        };
        let key = self.config.lease_key();
        let identity = &self.config.identity;
        match tokio::time::timeout(self.config.lease_duration, releasing).await {
            Ok(Ok(_)) => {
                tracing::info!(lease = %key, %identity, "released lease {key} held by {identity}")
            }
            Ok(Err(WriteError::Superseded)) => {
                tracing::info!(lease = %key, %identity, "lease {key} no longer held; nothing to release")
            }
            Ok(Err(WriteError::Failed(error))) => tracing::warn!(
                lease = %key,
                %identity,
                %error,
                "releasing the lease failed; it expires on its own"
            ),
            Err(_elapsed) => tracing::warn!(
                lease = %key,
                %identity,
                "releasing the lease timed out; it expires on its own"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> LeaseConfig {
        LeaseConfig::new("kube-system", "engine", "me", Duration::from_secs(10))
    }

    fn time(seconds: i64) -> MicroTime {
        MicroTime(jiff::Timestamp::from_second(seconds).expect("a valid timestamp"))
    }

    fn lease(holder: Option<&str>, duration: Option<i32>, version: &str) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some("engine".to_owned()),
                namespace: Some("kube-system".to_owned()),
                resource_version: Some(version.to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                lease_duration_seconds: duration,
                renew_time: Some(time(1_000)),
                acquire_time: Some(time(900)),
                lease_transitions: Some(3),
                ..LeaseSpec::default()
            }),
        }
    }

    fn seen(lease: Option<Lease>, at: Instant) -> Observation {
        Observation { lease, at }
    }

    #[test]
    fn the_retry_period_is_a_fifth_of_the_lease_and_the_deadline_one_period_short() {
        let config = config();
        assert_eq!(config.retry_period, Duration::from_secs(2));
        assert_eq!(config.renew_deadline(), Duration::from_secs(8));
        assert!(config.validate().is_ok());
    }

    #[test]
    fn configs_that_cannot_step_down_in_time_are_refused() {
        let mut config = config();
        config.retry_period = config.lease_duration;
        assert!(config.validate().is_err());
        config.retry_period = Duration::ZERO;
        assert!(config.validate().is_err());
        let mut nameless = self::config();
        nameless.identity.clear();
        assert!(nameless.validate().is_err());
    }

    #[test]
    fn lease_duration_seconds_round_up() {
        let mut config = config();
        config.lease_duration = Duration::from_millis(4_200);
        assert_eq!(config.lease_duration_seconds(), 5);
        config.lease_duration = Duration::from_millis(300);
        assert_eq!(config.lease_duration_seconds(), 1);
    }

    #[test]
    fn absent_free_and_own_leases_are_open() {
        let config = config();
        let now = Instant::now();
        for lease in [
            None,
            Some(lease(None, Some(10), "1")),
            Some(lease(Some(""), Some(10), "1")),
            Some(lease(Some("me"), Some(10), "1")),
        ] {
            assert_eq!(assess(&seen(lease, now), &config, now), Claim::Open);
        }
    }

    #[test]
    fn another_holder_keeps_the_lease_for_its_duration_from_our_observation() {
        let config = config();
        let at = Instant::now();
        let observation = seen(Some(lease(Some("other"), Some(4), "1")), at);
        let held = Claim::HeldBy {
            holder: "other".to_owned(),
            until: at + Duration::from_secs(4),
        };
        assert_eq!(assess(&observation, &config, at), held);
        assert_eq!(
            assess(&observation, &config, at + Duration::from_millis(3_999)),
            held
        );
        assert_eq!(
            assess(&observation, &config, at + Duration::from_secs(4)),
            Claim::Open
        );
    }

    #[test]
    fn a_holder_without_a_duration_gets_ours() {
        let config = config();
        let at = Instant::now();
        let observation = seen(Some(lease(Some("other"), None, "1")), at);
        assert_eq!(
            assess(&observation, &config, at),
            Claim::HeldBy {
                holder: "other".to_owned(),
                until: at + config.lease_duration
            }
        );
    }

    #[test]
    fn taking_over_starts_a_new_term() {
        let config = config();
        let taken = claimed(
            Some(&lease(Some("other"), Some(4), "7")),
            &config,
            time(2_000),
        );
        let spec = taken.spec.as_ref().expect("a spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("me"));
        assert_eq!(spec.lease_transitions, Some(4));
        assert_eq!(spec.acquire_time, Some(time(2_000)));
        assert_eq!(spec.renew_time, Some(time(2_000)));
        assert_eq!(spec.lease_duration_seconds, Some(10));
        assert_eq!(taken.metadata.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn reclaiming_our_own_lease_keeps_the_term() {
        let taken = claimed(
            Some(&lease(Some("me"), Some(10), "7")),
            &config(),
            time(2_000),
        );
        let spec = taken.spec.as_ref().expect("a spec");
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(spec.acquire_time, Some(time(900)));
        assert_eq!(spec.renew_time, Some(time(2_000)));
    }

    #[test]
    fn a_new_lease_names_us_with_no_transitions() {
        let created = claimed(None, &config(), time(2_000));
        assert_eq!(created.metadata.name.as_deref(), Some("engine"));
        assert_eq!(created.metadata.namespace.as_deref(), Some("kube-system"));
        assert_eq!(created.metadata.resource_version, None);
        let spec = created.spec.as_ref().expect("a spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("me"));
        assert_eq!(spec.lease_transitions, Some(0));
        assert_eq!(spec.acquire_time, Some(time(2_000)));
    }

    #[test]
    fn renewing_moves_only_the_renew_time() {
        let held = lease(Some("me"), Some(10), "7");
        let renewal = renewed(&held, &config(), time(2_000));
        let spec = renewal.spec.as_ref().expect("a spec");
        assert_eq!(spec.renew_time, Some(time(2_000)));
        assert_eq!(spec.acquire_time, Some(time(900)));
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    }

    #[test]
    fn a_released_lease_is_open_to_anyone_at_once() {
        let release = released(&lease(Some("me"), Some(10), "7"), time(2_000));
        let mut other = config();
        other.identity = "other".to_owned();
        let now = Instant::now();
        assert_eq!(holder_of(&release), None);
        assert_eq!(assess(&seen(Some(release), now), &other, now), Claim::Open);
    }

    #[tokio::test(start_paused = true)]
    async fn only_a_changed_record_moves_the_observation_time() {
        let (observer, observations) = watch::channel(None);
        observe(&observer, Some(lease(Some("other"), Some(4), "1")));
        let first = observations.borrow().as_ref().map(|o| o.at);
        tokio::time::sleep(Duration::from_secs(1)).await;
        observe(&observer, Some(lease(Some("other"), Some(4), "1")));
        assert_eq!(observations.borrow().as_ref().map(|o| o.at), first);
        observe(&observer, Some(lease(Some("other"), Some(4), "2")));
        let second = observations.borrow().as_ref().map(|o| o.at);
        assert_eq!(second, first.map(|at| at + Duration::from_secs(1)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        observe(&observer, None);
        let gone = observations.borrow().clone().expect("an observation");
        assert!(gone.lease.is_none());
        assert_eq!(Some(gone.at), second.map(|at| at + Duration::from_secs(1)));
    }
}
