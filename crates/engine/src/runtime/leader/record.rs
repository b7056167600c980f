//! What a candidate knows of the Lease and the records it writes: the observation expiry is judged from, whether
//! the Lease may be claimed, and the Lease claimed, renewed, released or handed on.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::LeaseConfig;
use super::handoff::{self, clear_request};
use crate::runtime::metrics::activity;

/// The Lease as this candidate last saw it change, and when: the local instant expiry is judged from.
#[derive(Clone, Debug)]
pub(super) struct Observation {
    pub(super) lease: Option<Lease>,
    pub(super) at: Instant,
}

/// What tells two versions of the Lease record apart: a renewal changes `renewTime`, a change of leader changes
/// `holderIdentity`, and any write at all changes the resourceVersion.
#[derive(Debug, PartialEq)]
pub(super) struct RecordKey {
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
pub(super) fn observe(observer: &watch::Sender<Option<Observation>>, lease: Option<Lease>) {
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
pub(super) async fn watch_lease(
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
pub(super) enum Claim {
    /// Absent, without holder, held by us, or expired.
    Open,
    /// Held by someone else until the instant given, unless it changes before.
    HeldBy { holder: String, until: Instant },
}

/// Judge an observation at `now`. The holder's own `leaseDurationSeconds` says how long its lease lasts (ours when it
/// wrote none), counted from when we saw the record change.
pub(super) fn assess(observation: &Observation, config: &LeaseConfig, now: Instant) -> Claim {
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
pub(super) fn claimed(current: Option<&Lease>, config: &LeaseConfig, now: MicroTime) -> Lease {
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
    if new_term {
        // A request made of an earlier holder is moot in a new term.
        clear_request(&mut lease);
    }
    lease
}

/// The Lease renewed now by its holder. A request that we take the Lease is answered by holding it.
pub(super) fn renewed(held: &Lease, config: &LeaseConfig, now: MicroTime) -> Lease {
    let mut lease = held.clone();
    if handoff::requested_yield(&lease, &config.identity).is_none() {
        clear_request(&mut lease);
    }
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.lease_duration_seconds = Some(config.lease_duration_seconds());
    spec.renew_time = Some(now);
    lease
}

/// The Lease given up: no holder, and a one-second duration for candidates that judge by the duration alone.
pub(super) fn released(held: &Lease, now: MicroTime) -> Lease {
    let mut lease = held.clone();
    clear_request(&mut lease);
    activity::clear(&mut lease);
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(now);
    lease
}

/// The Lease handed straight to `to` by its holder: a new term begins with `to` as holder, so no one else claims it
/// in between, and `to` finds it already its own.
pub(super) fn handed(held: &Lease, to: &str, config: &LeaseConfig, now: MicroTime) -> Lease {
    let mut lease = held.clone();
    clear_request(&mut lease);
    activity::clear(&mut lease);
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = Some(to.to_owned());
    spec.acquire_time = Some(now.clone());
    spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
    spec.lease_duration_seconds = Some(config.lease_duration_seconds());
    spec.renew_time = Some(now);
    lease
}

pub(super) fn now_micro() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

/// Who holds a Lease, for messages.
pub(super) fn holder_of(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .filter(|h| !h.is_empty())
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

    #[test]
    fn handing_on_starts_the_named_holders_term_and_answers_the_request() {
        let mut held = lease(Some("me"), Some(10), "7");
        held.metadata.annotations = Some(
            [(
                kmm_api::lease::HANDOFF_ANNOTATION.to_owned(),
                "pod-b".to_owned(),
            )]
            .into_iter()
            .collect(),
        );
        let handed = handed(&held, "pod-b", &config(), time(2_000));
        let spec = handed.spec.as_ref().expect("a spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("pod-b"));
        assert_eq!(spec.lease_transitions, Some(4));
        assert_eq!(spec.acquire_time, Some(time(2_000)));
        assert_eq!(handoff::requested_yield(&handed, "pod-b"), None);
        let mut other = config();
        other.identity = "pod-b".to_owned();
        let now = Instant::now();
        assert_eq!(assess(&seen(Some(handed), now), &other, now), Claim::Open);
    }

    #[test]
    fn a_request_naming_us_is_answered_by_renewing_and_others_stay() {
        let mut held = lease(Some("me"), Some(10), "7");
        held.metadata.annotations = Some(
            [(
                kmm_api::lease::HANDOFF_ANNOTATION.to_owned(),
                "me".to_owned(),
            )]
            .into_iter()
            .collect(),
        );
        let renewal = renewed(&held, &config(), time(2_000));
        assert!(
            renewal
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.is_empty())
        );
        held.metadata.annotations = Some(
            [(
                kmm_api::lease::HANDOFF_ANNOTATION.to_owned(),
                "pod-b".to_owned(),
            )]
            .into_iter()
            .collect(),
        );
        let renewal = renewed(&held, &config(), time(2_000));
        assert_eq!(
            handoff::requested_yield(&renewal, "me"),
            Some(handoff::Yield::To("pod-b".to_owned()))
        );
    }
}
