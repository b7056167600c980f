//! Objects that expire a while after their last write, as kube-apiserver's `--event-ttl` has etcd delete every
//! Event an hour (by default) after it was last written. Without it the Events of a long run only pile up.
//!
//! Every write of an expiring resource queues (when it expires, which object, the resourceVersion written). A pass
//! takes what is due off the queue and deletes each object still at the queued resourceVersion, exactly as a delete
//! would: watchers see DELETED and the durable store loses the row. An object rewritten since (an Event whose series
//! count was bumped) has a later entry and is kept until that one is due; one deleted since has nothing left to
//! delete. Nothing walks the stored objects: a pass costs what is due, and looking at the queue costs nothing.
//!
//! Expiry runs on the wall clock, the clock the durable store records write times in, so an object expires on time
//! across restarts and the downtime between them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use super::ResourceKey;
use super::{ObjectKey, Store};

/// How often the queue is looked at: an object goes within this long of its expiry.
const CHECK_PERIOD: Duration = Duration::from_secs(1);

/// The objects of one resource that expire, in the order they come due.
#[derive(Debug)]
pub(super) struct Expiring {
    /// The resource whose objects expire.
    pub(super) resource: ResourceKey,
    /// How long after its last write an object expires.
    ttl: Duration,
    /// Earliest first. A heap rather than a list in write order, so a wall clock set back does not hold up the
    /// entries behind it.
    queue: BinaryHeap<Reverse<Due>>,
}

/// One write, and when the object it wrote expires unless written again.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Due {
    /// When the object expires.
    pub(super) at: SystemTime,
    /// The resourceVersion written.
    pub(super) rv: u64,
    /// The object written.
    pub(super) key: ObjectKey,
}

impl Expiring {
    /// Nothing queued yet for `resource`, whose objects expire `ttl` after their last write.
    pub(super) fn new(resource: ResourceKey, ttl: Duration) -> Self {
        Self {
            resource,
            ttl,
            queue: BinaryHeap::new(),
        }
    }

    /// Queue the write of `key` at resourceVersion `rv`, made at `written`.
    pub(super) fn record(&mut self, key: ObjectKey, rv: u64, written: SystemTime) {
        self.queue.push(Reverse(Due {
            at: written + self.ttl,
            rv,
            key,
        }));
    }

    /// Take the writes whose objects expire at `now` off the queue, earliest first.
    pub(super) fn take_due(&mut self, now: SystemTime) -> Vec<Due> {
        let mut due = Vec::new();
        while self
            .queue
            .peek()
            .is_some_and(|Reverse(next)| next.at <= now)
        {
            if let Some(Reverse(next)) = self.queue.pop() {
                due.push(next);
            }
        }
        due
    }

    /// Put back writes taken off the queue whose objects could not be deleted yet.
    pub(super) fn requeue(&mut self, due: impl IntoIterator<Item = Due>) {
        self.queue.extend(due.into_iter().map(Reverse));
    }

    /// When the earliest queued write expires.
    pub(super) fn next_due(&self) -> Option<SystemTime> {
        self.queue.peek().map(|Reverse(next)| next.at)
    }
}

/// Milliseconds since the Unix epoch, as the durable store records write times.
pub(super) fn to_millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
    })
}

/// The wall-clock time of `millis` since the Unix epoch.
pub(super) fn from_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// Delete the objects of `store` that expire, as they come due, until `stop`. A pass with work runs on a blocking
/// thread: it commits one delete per expired object.
pub async fn run(store: Arc<Store>, stop: CancellationToken) {
    let mut ticks = tokio::time::interval(CHECK_PERIOD);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        if store.next_expiry().is_none_or(|at| at > SystemTime::now()) {
            continue;
        }
        let expiring = store.clone();
        match tokio::task::spawn_blocking(move || expiring.expire(SystemTime::now())).await {
            Ok(expired) => tracing::debug!(expired, "expired objects deleted"),
            Err(error) => tracing::warn!(%error, "the expiry pass failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ("ns".to_owned(), name.to_owned())
    }

    #[test]
    fn writes_come_due_in_order_of_expiry_whatever_order_they_were_queued_in() {
        let start = UNIX_EPOCH + Duration::from_secs(1_000);
        let mut expiring = Expiring::new(ResourceKey::new("", "events"), Duration::from_secs(60));
        expiring.record(key("b"), 2, start + Duration::from_secs(5));
        expiring.record(key("a"), 1, start);
        expiring.record(key("b"), 3, start + Duration::from_secs(30));
        assert_eq!(expiring.next_due(), Some(start + Duration::from_secs(60)));
        let taken = |expiring: &mut Expiring, at| -> Vec<(ObjectKey, u64)> {
            let due = expiring.take_due(start + Duration::from_secs(at));
            due.into_iter().map(|due| (due.key, due.rv)).collect()
        };
        assert!(taken(&mut expiring, 59).is_empty());
        assert_eq!(taken(&mut expiring, 65), vec![(key("a"), 1), (key("b"), 2)]);
        assert_eq!(expiring.next_due(), Some(start + Duration::from_secs(90)));
        let last = expiring.take_due(start + Duration::from_secs(90));
        assert_eq!(expiring.next_due(), None);
        expiring.requeue(last);
        assert_eq!(
            expiring.next_due(),
            Some(start + Duration::from_secs(90)),
            "a write put back keeps its expiry"
        );
        assert_eq!(taken(&mut expiring, 90), vec![(key("b"), 3)]);
    }

    #[test]
    fn write_times_survive_the_round_trip_through_milliseconds() {
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(from_millis(to_millis(at)), at);
        assert_eq!(from_millis(-5), UNIX_EPOCH);
    }
}
