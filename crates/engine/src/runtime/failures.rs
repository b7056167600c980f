//! What the engine remembers of each object whose passes keep failing: how many times in a row (which sets the next
//! retry's delay, see [`backoff`](crate::runtime::backoff)), and what it last said about it in its log and in an Event, so it
//! says a thing once instead of on every retry. A successful pass forgets the object.
//!
//! Kept in memory only: a restarted engine starts every object afresh, which costs one fast retry and one Event.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use kube::Resource;
use tokio::time::Instant;

use crate::runtime::backoff::{self, Failure};

/// How long a streak nobody touched is kept: well past the longest retry delay, so only objects that stopped being
/// retried (deleted while failing) are dropped.
const STALE: Duration = Duration::from_secs(900);

/// How often the same warning may reach the log while an object keeps failing the same way.
pub(crate) const WARN_EVERY: Duration = Duration::from_secs(300);

/// How often the same Event may be published again while an object keeps failing the same way: often enough that
/// it outlives the API server's Event time-to-live (an hour by default), rarely enough to be no flood.
pub(crate) const TELL_EVERY: Duration = Duration::from_secs(1800);

/// An object, by kind, namespace and name: the key of its streak.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    kind: String,
    namespace: Option<String>,
    name: String,
}

impl ObjectKey {
    /// The key of `object`.
    pub fn of<K: Resource<DynamicType = ()>>(object: &K) -> Self {
        let meta = object.meta();
        Self {
            kind: K::kind(&()).into_owned(),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// One object's run of failed passes.
#[derive(Debug)]
struct Streak {
    /// Failed passes in a row.
    failures: u32,
    /// When the streak was last touched.
    touched: Instant,
    /// The last message warned about in the log, and when.
    warned: Option<(String, Instant)>,
    /// The last message published as an Event, and when.
    told: Option<(String, Instant)>,
}

impl Streak {
    fn new(now: Instant) -> Self {
        Self {
            failures: 0,
            touched: now,
            warned: None,
            told: None,
        }
    }
}

/// When to retry a failed pass, and whether its failure is worth a warning in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// How long to wait.
    pub after: Duration,
    /// Whether to log it as a warning (else at debug level).
    pub warn: bool,
}

/// The streaks of every failing object of one engine; shared by its reconcilers.
#[derive(Debug, Default)]
pub struct Failures {
    streaks: Mutex<HashMap<ObjectKey, Streak>>,
}

impl Failures {
    /// Count a failed pass of `key` with `message` and say when to retry: conflicts fast, anything else after the
    /// object's next backoff step. A conflict is never warned about; another failure is when the object was not
    /// failing, when its message changed, or when it was last warned about [`WARN_EVERY`] ago.
    pub fn failed(&self, key: &ObjectKey, failure: Failure, message: &str) -> Retry {
        let now = Instant::now();
        let mut streaks = self.lock();
        streaks.retain(|_, streak| now.duration_since(streak.touched) < STALE);
        let streak = streaks
            .entry(key.clone())
            .or_insert_with(|| Streak::new(now));
        streak.failures = streak.failures.saturating_add(1);
        streak.touched = now;
        let warn = failure == Failure::Other && is_news(&streak.warned, message, now, WARN_EVERY);
        if warn {
            streak.warned = Some((message.to_owned(), now));
        }
        Retry {
            after: backoff::delay(streak.failures, failure),
            warn,
        }
    }

    /// Whether an Event saying `message` about `key` is news: its first, a changed message, or the same one last
    /// published [`TELL_EVERY`] ago. Answering yes records it as published.
    pub fn tell(&self, key: &ObjectKey, message: &str) -> bool {
        let now = Instant::now();
        let mut streaks = self.lock();
        let streak = streaks
            .entry(key.clone())
            .or_insert_with(|| Streak::new(now));
        streak.touched = now;
        let news = is_news(&streak.told, message, now, TELL_EVERY);
        if news {
            streak.told = Some((message.to_owned(), now));
        }
        news
    }

    /// A pass of `key` succeeded: its next failure starts a new streak, retried fast and told again.
    pub fn succeeded(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }

    /// How many failed passes in a row `key` has had.
    #[cfg(test)]
    fn streak(&self, key: &ObjectKey) -> u32 {
        self.lock().get(key).map_or(0, |s| s.failures)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Streak>> {
        self.streaks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether `message` differs from what was last said, or was said at least `every` ago.
fn is_news(said: &Option<(String, Instant)>, message: &str, now: Instant, every: Duration) -> bool {
    match said {
        Some((last, at)) => last != message || now.duration_since(*at) >= every,
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn key(name: &str) -> ObjectKey {
        let mut object = ConfigMap::default();
        object.metadata.name = Some(name.to_owned());
        object.metadata.namespace = Some("ns".to_owned());
        ObjectKey::of(&object)
    }

    #[tokio::test(start_paused = true)]
    async fn delays_grow_per_object_and_a_success_resets_them() {
        let failures = Failures::default();
        let (a, b) = (key("a"), key("b"));
        let delays: Vec<Duration> = (0..6)
            .map(|_| failures.failed(&a, Failure::Other, "boom").after)
            .collect();
        assert!(delays.windows(2).all(|w| w[1] > w[0]), "{delays:?}");
        assert!(delays[5] >= Duration::from_secs(25), "{delays:?}");
        // Another object's streak is its own.
        assert!(failures.failed(&b, Failure::Other, "boom").after <= Duration::from_millis(1200));
        failures.succeeded(&a);
        assert_eq!(failures.streak(&a), 0);
        assert!(failures.failed(&a, Failure::Other, "boom").after <= Duration::from_millis(1200));
    }

    #[tokio::test(start_paused = true)]
    async fn conflicts_stay_fast_however_long_they_last() {
        let failures = Failures::default();
        let a = key("a");
        let longest = (0..50)
            .map(|_| failures.failed(&a, Failure::Conflict, "409").after)
            .max()
            .expect("delays");
        assert!(longest <= Duration::from_millis(9600), "{longest:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_same_warning_is_logged_once_per_period_and_a_new_one_at_once() {
        let failures = Failures::default();
        let a = key("a");
        let warned = |message: &str| failures.failed(&a, Failure::Other, message).warn;
        assert!(warned("forbidden"));
        assert!(!warned("forbidden"));
        assert!(warned("not found"));
        tokio::time::advance(WARN_EVERY).await;
        assert!(warned("not found"));
        assert!(!failures.failed(&a, Failure::Conflict, "409").warn);
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_is_told_once_until_it_changes_or_goes_stale() {
        let failures = Failures::default();
        let a = key("a");
        assert!(failures.tell(&a, "forbidden"));
        assert!(!failures.tell(&a, "forbidden"));
        tokio::time::advance(TELL_EVERY / 2).await;
        assert!(!failures.tell(&a, "forbidden"));
        assert!(failures.tell(&a, "namespace missing"));
        tokio::time::advance(TELL_EVERY).await;
        assert!(failures.tell(&a, "namespace missing"));
        failures.succeeded(&a);
        assert!(failures.tell(&a, "namespace missing"));
    }

    #[tokio::test(start_paused = true)]
    async fn streaks_of_objects_no_longer_retried_are_dropped() {
        let failures = Failures::default();
        let (gone, other) = (key("gone"), key("other"));
        failures.failed(&gone, Failure::Other, "boom");
        tokio::time::advance(STALE).await;
        failures.failed(&other, Failure::Other, "boom");
        assert_eq!(failures.streak(&gone), 0);
        assert_eq!(failures.streak(&other), 1);
    }
}
