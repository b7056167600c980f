//! What one reconciler owes, measured from outside kube's `Controller`, which keeps its scheduler to itself: an
//! object *waits* from the moment the engine can tell it needs a pass until that pass starts.
//!
//! Two things make an object wait, and both are seen here: its spec changed (or it is new) and no pass has looked
//! at that generation yet, or a look-again it asked for (a resync, a retry after a failure, a poll) has come due.
//! Changes seen only through watched objects (a worker pod, a node) are not counted as waiting: their passes are
//! counted as added when they start, with no wait measured. The reconciler's cache is sampled every couple of
//! seconds, so a wait may start up to that much later than the change that caused it.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// What a sampled listing of the reconciler's cache gives per object: its key and its generation.
pub(super) type Listing = Vec<(String, Option<i64>)>;

/// One reconciler's objects: the generations its passes saw, the look-agains it asked for, the objects waiting and
/// the passes running.
#[derive(Debug, Default)]
pub(super) struct Queue {
    /// The generation each object's last pass started with.
    seen: HashMap<String, Option<i64>>,
    /// When each object asked to be looked at again.
    due: HashMap<String, Instant>,
    /// Objects waiting for a pass, since when.
    waiting: HashMap<String, Instant>,
    /// Passes running, by reconcile id: the object and when the pass started.
    running: HashMap<String, (String, Instant)>,
}

/// What starting a pass tells the metrics.
#[derive(Debug, PartialEq)]
pub(super) struct Started {
    /// Whether the pass answers a wait not counted yet (an add).
    pub added: bool,
    /// How long the object waited, when the engine saw the wait begin.
    pub waited: Option<Duration>,
}

impl Queue {
    /// Compare the cache with what passes saw: objects whose generation no pass has seen, and look-agains that
    /// came due, begin waiting. Forgets objects no longer cached. Returns how many began waiting.
    pub(super) fn sample(&mut self, listing: Listing, now: Instant) -> u64 {
        let mut added = 0;
        let running: std::collections::HashSet<&str> =
            self.running.values().map(|(key, _)| key.as_str()).collect();
        let mut present = std::collections::HashSet::with_capacity(listing.len());
        for (key, generation) in listing {
            let unseen = self.seen.get(&key) != Some(&generation);
            let due = self.due.get(&key).copied().filter(|at| *at <= now);
            let since = match (unseen, due) {
                (true, _) => Some(now),
                (false, Some(at)) => Some(at),
                (false, None) => None,
            };
            if let Some(since) = since
                && !running.contains(key.as_str())
                && !self.waiting.contains_key(&key)
            {
                self.waiting.insert(key.clone(), since);
                self.due.remove(&key);
                added += 1;
            }
            present.insert(key);
        }
        self.seen.retain(|key, _| present.contains(key));
        self.due.retain(|key, _| present.contains(key));
        self.waiting.retain(|key, _| present.contains(key));
        added
    }

    /// A pass over `key` (at `generation`) starts as reconcile `id`.
    pub(super) fn start(
        &mut self,
        id: &str,
        key: &str,
        generation: Option<i64>,
        now: Instant,
    ) -> Started {
        self.seen.insert(key.to_owned(), generation);
        let due = self.due.remove(key).filter(|at| *at <= now);
        self.running.insert(id.to_owned(), (key.to_owned(), now));
        match (self.waiting.remove(key), due) {
            // Counted when the sample saw it begin.
            (Some(since), _) => Started {
                added: false,
                waited: Some(now.saturating_duration_since(since)),
            },
            (None, Some(at)) => Started {
                added: true,
                waited: Some(now.saturating_duration_since(at)),
            },
            (None, None) => Started {
                added: true,
                waited: None,
            },
        }
    }

    /// Pass `id` ended; how long it ran.
    pub(super) fn finish(&mut self, id: &str, now: Instant) -> Option<Duration> {
        let (_, started) = self.running.remove(id)?;
        Some(now.saturating_duration_since(started))
    }

    /// The object asked to be looked at again at `at`.
    pub(super) fn schedule(&mut self, key: &str, at: Instant) {
        self.due.insert(key.to_owned(), at);
    }

    /// How many objects wait.
    pub(super) fn depth(&self) -> usize {
        self.waiting.len()
    }

    /// How long the object waiting longest has waited.
    pub(super) fn oldest_waiting(&self, now: Instant) -> Duration {
        self.waiting
            .values()
            .map(|since| now.saturating_duration_since(*since))
            .max()
            .unwrap_or_default()
    }

    /// How long the longest-running pass has run.
    pub(super) fn longest_running(&self, now: Instant) -> Duration {
        self.running
            .values()
            .map(|(_, started)| now.saturating_duration_since(*started))
            .max()
            .unwrap_or_default()
    }

    /// The time the running passes have run so far, summed.
    pub(super) fn unfinished(&self, now: Instant) -> Duration {
        self.running
            .values()
            .map(|(_, started)| now.saturating_duration_since(*started))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(objects: &[(&str, i64)]) -> Listing {
        objects
            .iter()
            .map(|(key, generation)| ((*key).to_owned(), Some(*generation)))
            .collect()
    }

    #[test]
    fn new_and_changed_objects_wait_until_a_pass_starts() {
        let mut queue = Queue::default();
        let start = Instant::now();
        assert_eq!(queue.sample(listing(&[("a", 1), ("b", 1)]), start), 2);
        assert_eq!(queue.depth(), 2);
        let later = start + Duration::from_secs(3);
        assert_eq!(queue.oldest_waiting(later), Duration::from_secs(3));
        let started = queue.start("r1", "a", Some(1), later);
        assert_eq!(
            started,
            Started {
                added: false,
                waited: Some(Duration::from_secs(3))
            }
        );
        assert_eq!(queue.depth(), 1);
        assert_eq!(
            queue.longest_running(later + Duration::from_secs(1)),
            Duration::from_secs(1)
        );
        assert_eq!(
            queue.finish("r1", later + Duration::from_secs(2)),
            Some(Duration::from_secs(2))
        );
        // Seen at generation 1: no wait until the spec changes.
        assert_eq!(queue.sample(listing(&[("a", 1), ("b", 1)]), later), 0);
        assert_eq!(queue.sample(listing(&[("a", 2), ("b", 1)]), later), 1);
        assert_eq!(queue.depth(), 2);
        // Deleted objects wait no more.
        queue.sample(listing(&[]), later);
        assert_eq!(queue.depth(), 0);
    }

    #[test]
    fn a_look_again_waits_from_when_it_came_due() {
        let mut queue = Queue::default();
        let start = Instant::now();
        queue.start("r1", "a", Some(1), start);
        queue.finish("r1", start);
        queue.schedule("a", start + Duration::from_secs(10));
        assert_eq!(
            queue.sample(listing(&[("a", 1)]), start + Duration::from_secs(5)),
            0
        );
        assert_eq!(
            queue.sample(listing(&[("a", 1)]), start + Duration::from_secs(12)),
            1
        );
        assert_eq!(
            queue.oldest_waiting(start + Duration::from_secs(15)),
            Duration::from_secs(5)
        );
        // A due look-again that starts between samples is added when it starts.
        queue.start("r2", "a", Some(1), start + Duration::from_secs(15));
        queue.finish("r2", start + Duration::from_secs(15));
        queue.schedule("a", start + Duration::from_secs(20));
        let started = queue.start("r3", "a", Some(1), start + Duration::from_secs(21));
        assert_eq!(
            started,
            Started {
                added: true,
                waited: Some(Duration::from_secs(1))
            }
        );
    }

    #[test]
    fn a_running_object_does_not_wait() {
        let mut queue = Queue::default();
        let now = Instant::now();
        queue.start("r1", "a", Some(1), now);
        assert_eq!(queue.sample(listing(&[("a", 2)]), now), 0);
        queue.finish("r1", now);
        assert_eq!(queue.sample(listing(&[("a", 2)]), now), 1);
    }
}
