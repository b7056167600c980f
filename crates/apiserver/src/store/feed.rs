//! The live feed: the newest committed events, bounded in events and in bytes, which watchers read at their own
//! pace from a cursor.
//!
//! A broadcast channel keeps every event until its slowest receiver has read it, so one receiver that stops
//! reading pins the newest thousand objects (with their parsed trees and the states they replaced) however large
//! they are. The feed instead keeps a fixed window of the newest events and drops the oldest whatever its readers
//! have read: a reader that falls behind the window is told it lagged ([`RecvError::Lagged`]) and catches up from
//! the store's history, or is closed and resumes from its resourceVersion as kube-apiserver's watchers do.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::watch;

use super::Event;

/// How many of the newest events the feed keeps at most.
pub const FEED_EVENTS: usize = 1024;

/// How many serialised bytes the feed's events may carry (the objects and the states they replaced). The feed's
/// objects keep their parsed trees, which cost a few times their JSON, so the bound stays small: a watcher that
/// falls further behind than this reads from the history, which holds the same events serialised only.
pub const FEED_BYTES: usize = 4 << 20;

/// The window of newest events, shared by the store (which appends) and its readers.
struct Window {
    events: VecDeque<Arc<Event>>,
    /// Serialised bytes of the objects the events carry.
    bytes: usize,
    /// The resourceVersion of the newest event dropped from the window: readers at or after it miss nothing.
    dropped_through: u64,
}

/// Where the store publishes committed events; dropping it closes every reader.
pub(crate) struct Feed {
    window: Arc<Mutex<Window>>,
    newest: watch::Sender<u64>,
    limits: (usize, usize),
}

/// The serialised bytes an event keeps alive.
fn weight(event: &Event) -> usize {
    event.object.json.len() + event.previous.as_ref().map_or(0, |p| p.json.len())
}

fn lock(window: &Mutex<Window>) -> MutexGuard<'_, Window> {
    window.lock().unwrap_or_else(|p| p.into_inner())
}

impl Feed {
    /// An empty feed whose readers start after `rv`, keeping at most `events` events and `bytes` bytes (the newest
    /// event is always kept).
    pub(crate) fn new(rv: u64, events: usize, bytes: usize) -> Self {
        Self {
            window: Arc::new(Mutex::new(Window {
                events: VecDeque::new(),
                bytes: 0,
                dropped_through: rv,
            })),
            newest: watch::channel(rv).0,
            limits: (events.max(1), bytes),
        }
    }

    /// Append the newest event, dropping the oldest beyond the bounds, and wake the readers. Called in
    /// resourceVersion order.
    pub(crate) fn publish(&self, event: Arc<Event>) {
        let rv = event.rv;
        {
            let mut window = lock(&self.window);
            window.bytes += weight(&event);
            window.events.push_back(event);
            let (events, bytes) = self.limits;
            while window.events.len() > events || (window.bytes > bytes && window.events.len() > 1)
            {
                let Some(old) = window.events.pop_front() else {
                    break;
                };
                window.bytes -= weight(&old);
                window.dropped_through = old.rv;
            }
        }
        self.newest.send_replace(rv);
    }

    /// A reader of the events after `rv`.
    pub(crate) fn subscribe(&self, rv: u64) -> FeedReceiver {
        FeedReceiver {
            window: self.window.clone(),
            cursor: rv,
            newest: self.newest.subscribe(),
        }
    }

    /// A receiver of the newest resourceVersion published, for waiting until the store reaches one.
    pub(super) fn newest(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }

    /// The events the feed holds and their serialised bytes.
    pub(super) fn usage(&self) -> (usize, usize) {
        let window = lock(&self.window);
        (window.events.len(), window.bytes)
    }
}

/// One reader of the live feed: the resourceVersion it has read up to, and a wake-up for newer events. It holds
/// no event itself, so a reader that stops reading keeps nothing alive.
pub struct FeedReceiver {
    window: Arc<Mutex<Window>>,
    cursor: u64,
    newest: watch::Receiver<u64>,
}

impl std::fmt::Debug for FeedReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedReceiver")
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl FeedReceiver {
    /// The next event after the cursor without waiting: `Empty` when there is none yet, `Lagged` (once, moving
    /// the cursor to the oldest event still held) when the feed has dropped events the reader had not read,
    /// `Closed` when the store is gone.
    pub fn try_recv(&mut self) -> Result<Arc<Event>, TryRecvError> {
        let window = lock(&self.window);
        if self.cursor < window.dropped_through {
            let missed = window.dropped_through - self.cursor;
            self.cursor = window.dropped_through;
            return Err(TryRecvError::Lagged(missed));
        }
        let first = window.events.partition_point(|e| e.rv <= self.cursor);
        if let Some(event) = window.events.get(first) {
            self.cursor = event.rv;
            return Ok(event.clone());
        }
        drop(window);
        if self.newest.has_changed().is_err() {
            return Err(TryRecvError::Closed);
        }
        Err(TryRecvError::Empty)
    }

    /// The next event after the cursor, waiting for one; see [`FeedReceiver::try_recv`].
    pub async fn recv(&mut self) -> Result<Arc<Event>, RecvError> {
        loop {
            self.newest.borrow_and_update();
            match self.try_recv() {
                Ok(event) => return Ok(event),
                Err(TryRecvError::Lagged(missed)) => return Err(RecvError::Lagged(missed)),
                Err(TryRecvError::Closed) => return Err(RecvError::Closed),
                Err(TryRecvError::Empty) => {
                    if self.newest.changed().await.is_err() {
                        return Err(RecvError::Closed);
                    }
                }
            }
        }
    }

    /// Wait until an event newer than any seen at the last wait is published; false when the store is gone.
    pub async fn changed(&mut self) -> bool {
        self.newest.changed().await.is_ok()
    }

    /// The resourceVersion of the last event read.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// Move the cursor to `rv`, for a reader that read the events up to it elsewhere (from the history).
    pub fn seek(&mut self, rv: u64) {
        self.cursor = rv;
    }

    /// Whether the feed has dropped an event after `rv` (a reader at `rv` could no longer read on from the feed).
    pub fn dropped_after(&self, rv: u64) -> bool {
        lock(&self.window).dropped_through > rv
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ResourceKey;
    use crate::store::{EventType, StoredObject};
    use serde_json::json;

    fn event(rv: u64, padding: usize) -> Arc<Event> {
        let value =
            json!({"metadata": {"name": "p", "namespace": "ns"}, "pad": "x".repeat(padding)});
        Arc::new(Event {
            rv,
            resource: ResourceKey::new("", "pods"),
            kind: EventType::Modified,
            object: Arc::new(StoredObject::new(value, rv)),
            previous: None,
        })
    }

    #[test]
    fn the_window_is_bounded_by_bytes_and_a_reader_behind_it_is_told_once() {
        let feed = Feed::new(0, 1000, 10_000);
        let mut reader = feed.subscribe(0);
        for rv in 1..=20 {
            feed.publish(event(rv, 1000));
        }
        let (events, bytes) = feed.usage();
        assert!(
            bytes <= 10_000 && events < 20,
            "{events} events of {bytes} bytes"
        );
        assert!(reader.dropped_after(0));
        let Err(TryRecvError::Lagged(missed)) = reader.try_recv() else {
            panic!("the reader lagged");
        };
        assert_eq!(missed, 20 - events as u64);
        let read: Vec<u64> = std::iter::from_fn(|| reader.try_recv().ok())
            .map(|e| e.rv)
            .collect();
        assert_eq!(read, ((21 - events as u64)..=20).collect::<Vec<_>>());
        assert!(matches!(reader.try_recv(), Err(TryRecvError::Empty)));
        drop(feed);
        assert!(matches!(reader.try_recv(), Err(TryRecvError::Closed)));
    }

    #[tokio::test]
    async fn a_waiting_reader_wakes_for_the_next_event() {
        let feed = Arc::new(Feed::new(5, 10, 1 << 20));
        let mut reader = feed.subscribe(5);
        let waiting = tokio::spawn(async move { reader.recv().await.map(|e| e.rv) });
        tokio::task::yield_now().await;
        feed.publish(event(6, 10));
        assert_eq!(waiting.await.expect("the reader ran"), Ok(6));
    }
}
