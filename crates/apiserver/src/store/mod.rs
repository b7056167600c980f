//! The object store behind the embedded API server.
//!
//! Objects live in memory (one ordered map per resource) so reads and lists never touch disk; every acknowledged
//! write is first committed to SQLite when the store is durable (see [`durable`]), by one writer at a time and
//! outside the lock readers take, so reads and watches never wait for the disk. Writes are compare-and-swap on
//! the object's resourceVersion, which gives the API its optimistic concurrency: handlers read, compute the new
//! object without holding any lock, and commit only if nobody wrote in between (the way kube-apiserver's
//! `GuaranteedUpdate` works against etcd).
//!
//! Every committed write becomes an [`Event`], kept in a bounded history and published on the live [`feed`], which
//! watchers read from their own cursor. A watch from a resourceVersion still in the history resumes exactly; an
//! older one gets `410 Expired` and the client relists. Lists of an older snapshot and watches that catch up read
//! the history in short batches, so no reader holds the lock writers need while it walks history.
//!
//! Objects of a resource given a time to live ([`Store::with_ttl`]: Events) are deleted that long after their last
//! write ([`expiry`]).

pub mod durable;
pub mod expiry;
mod feed;
mod index;
mod object;
mod private;
mod resource_key;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use durable::Durable;
use expiry::Expiring;
pub(crate) use feed::Feed;
pub use feed::{FEED_BYTES, FEED_EVENTS, FeedReceiver};
use index::FieldIndexes;
pub use object::{Event, EventType, StoredObject};
pub use resource_key::ResourceKey;

/// How many events the store remembers for watches that resume from an older resourceVersion.
pub const DEFAULT_HISTORY: usize = 100_000;

/// How many bytes of serialised objects the history may hold besides the live objects. Counting events alone let
/// a cluster of 5,000 large nodes keep gigabytes of superseded node statuses; a byte bound keeps the memory of a
/// busy cluster flat while still covering minutes of writes, so watches that reconnect resume instead of relisting.
pub const DEFAULT_HISTORY_BYTES: usize = 32 << 20;

/// How many events of the history one lock hold reads: enough that walking the history costs few lock
/// acquisitions, few enough that a writer waiting for the lock meanwhile waits microseconds.
const HISTORY_BATCH: usize = 256;

/// Resources whose objects the store holds only serialised ([`StoredObject::serialised`]), each parsed when the
/// server itself reads it, which it seldom does: clients read the serialised form.
/// - Events are most of what a busy cluster writes (a pod's lifecycle records about as many Events as it makes pod
///   writes) and stay until they expire, yet the server reads them back only for lists and watches with selectors.
/// - Nodes and NodeModulesConfigs come one per node: on 5,000 nodes their parsed trees took about 110 MiB beside
///   40 MB of JSON, and the server parses one only when a write changes it or a selector other than its name reads
///   it (selecting by name reads the key: [`super::apiserver`]'s watches of one node cost no parsing).
///
/// Pods and ConfigMaps keep their tree. The store indexes pods by node, and the scheduler and every kubelet write
/// each one several times in its short life: parsing them on each write made a 5,000-node rollout 40 % slower.
/// ConfigMaps are what controllers most often watch by label, and a label selector reads the tree once per watch.
const SERIALISED_ONLY: &[&str] = &["/events", "/nodes", "kmm.sigs.x-k8s.io/nodemodulesconfigs"];

/// A stored object of `resource` for `value` written at `rv`, parsed or not as the resource is read.
fn stored_object(resource: &ResourceKey, value: Value, rv: u64) -> StoredObject {
    if SERIALISED_ONLY.contains(&&*resource.0) {
        StoredObject::serialised(value, rv)
    } else {
        StoredObject::new(value, rv)
    }
}

/// Why a commit did not happen.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The object's current resourceVersion is not the one the caller read (or it exists/does not exist).
    #[error("the object has been modified")]
    Conflict,
    /// The durable store failed; nothing was changed.
    #[error("storage failure: {0}")]
    Storage(String),
    /// The object is larger than the store keeps ([`MAX_OBJECT_BYTES`]); nothing was changed.
    #[error(
        "the object is {bytes} bytes serialised, more than the {MAX_OBJECT_BYTES} bytes an object may take"
    )]
    TooLarge {
        /// The object's size, serialised.
        bytes: usize,
    },
}

/// The largest object the store keeps, serialised: etcd's default request limit (1.5 MiB), which bounds every
/// object of a real cluster. Without it, objects grown by patches pin their size many times over in the watch
/// history.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// The store's answer to a watch that wants history from a resourceVersion.
#[derive(Debug, thiserror::Error)]
#[error("too old resource version: {requested} ({oldest})")]
pub struct TooOld {
    /// What the client asked for.
    pub requested: u64,
    /// The oldest resourceVersion still resumable.
    pub oldest: u64,
}

type ObjectKey = (String, String);

/// What a new watch starts from: the events it missed, and a receiver for those to come.
pub type WatchStart = (Vec<Arc<Event>>, FeedReceiver);

struct State {
    rv: u64,
    objects: HashMap<ResourceKey, BTreeMap<ObjectKey, Arc<StoredObject>>>,
    history: VecDeque<Arc<Event>>,
    /// Serialised size of the objects the history's events carry.
    history_bytes: usize,
    /// Lowest resourceVersion a watch may resume after without missing events.
    compacted_through: u64,
    /// Committed writes per resource, for benchmarks and diagnostics.
    writes: HashMap<ResourceKey, WriteCounts>,
    /// Which objects hold each value of the indexed fields.
    indexes: FieldIndexes,
    /// The resources whose objects expire, with the writes queued to expire.
    expiring: Vec<Expiring>,
}

impl State {
    /// Whether the history still holds every event after `at`: fails with [`TooOld`] once compaction passed it.
    fn history_reaches(&self, at: u64) -> Result<(), TooOld> {
        if at < self.compacted_through {
            return Err(TooOld {
                requested: at,
                oldest: self.compacted_through,
            });
        }
        Ok(())
    }
}

/// How many writes the store committed on one resource since it started, by what they did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteCounts {
    /// Objects created.
    pub added: u64,
    /// Objects changed (spec, status, metadata, finalizers, deletion marks).
    pub modified: u64,
    /// Objects removed.
    pub deleted: u64,
}

impl WriteCounts {
    /// Every write, whatever it did.
    pub fn total(&self) -> u64 {
        self.added + self.modified + self.deleted
    }

    fn count(&mut self, kind: EventType) {
        match kind {
            EventType::Added => self.added += 1,
            EventType::Modified => self.modified += 1,
            EventType::Deleted => self.deleted += 1,
        }
    }
}

/// What the store holds, as `/metrics` reports it.
#[derive(Debug, Clone, Default)]
pub struct StoreUsage {
    /// Per resource, sorted by key.
    pub resources: Vec<ResourceUsage>,
    /// Events kept in memory for watches to resume from.
    pub history: usize,
    /// The serialised bytes of the objects those events carry: memory that grows with writes up to the store's
    /// history bound ([`DEFAULT_HISTORY_BYTES`]) and then holds, which a memory trend has to tell from a leak.
    pub history_bytes: usize,
    /// Events held by the live feed, with their parsed objects, for watchers to read.
    pub feed: usize,
    /// The serialised bytes of the objects and replaced states those events carry, at most [`FEED_BYTES`] beyond
    /// the newest event: what watchers can keep alive, however many there are and however slowly they read.
    pub feed_bytes: usize,
}

/// Objects and bytes of one resource.
#[derive(Debug, Clone)]
pub struct ResourceUsage {
    /// The resource (`group/plural`).
    pub resource: ResourceKey,
    /// How many objects are stored.
    pub objects: usize,
    /// The size of their JSON.
    pub bytes: usize,
}

/// The object store. Cheap to share behind an `Arc`.
pub struct Store {
    state: Mutex<State>,
    feed: Feed,
    /// Held by one write at a time from its compare-and-swap check to its publication, so the state lock is taken
    /// only briefly on either side: reads, lists and watches never wait behind serialising or SQLite. Holds the
    /// database when the store is durable.
    writer: Mutex<Option<Durable>>,
    history: HistoryLimits,
}

/// How much history the store keeps: whichever bound is reached first.
#[derive(Debug, Clone, Copy)]
struct HistoryLimits {
    /// Events.
    events: usize,
    /// Serialised bytes of the objects the events carry.
    bytes: usize,
}

impl HistoryLimits {
    /// Drop the oldest events while the history holds more than the limits allow; a watch can no longer resume
    /// from before the newest dropped one (it gets `410 Expired` and relists).
    fn trim(&self, state: &mut State) {
        while state.history.len() > self.events
            || (state.history_bytes > self.bytes && state.history.len() > 1)
        {
            let Some(old) = state.history.pop_front() else {
                break;
            };
            state.history_bytes -= old.object.json.len();
            state.compacted_through = old.rv;
        }
    }
}

impl Store {
    /// A store that lives only in memory.
    pub fn in_memory(history_limit: usize) -> Self {
        Self::from_parts(0, HashMap::new(), VecDeque::new(), None, history_limit)
    }

    /// A store backed by an SQLite database in `dir`, loading whatever an earlier run committed.
    pub fn open(dir: &Path, history_limit: usize) -> Result<Self, CommitError> {
        let (durable, loaded) = Durable::open(
            dir,
            history_limit,
            DEFAULT_HISTORY_BYTES,
            |row| {
                let resource = ResourceKey(Arc::from(row.resource.as_str()));
                let obj = Arc::new(stored_object(&resource, row.value, row.rv));
                (resource, obj)
            },
            |e| {
                Arc::new(Event {
                    rv: e.rv,
                    resource: ResourceKey(Arc::from(e.resource.as_str())),
                    kind: EventType::from_code(e.kind),
                    object: Arc::new(StoredObject::serialised(e.value, e.rv)),
                    previous: None,
                })
            },
        )
        .map_err(|e| CommitError::Storage(format!("{e:#}")))?;
        let mut objects: HashMap<ResourceKey, BTreeMap<ObjectKey, Arc<StoredObject>>> =
            HashMap::new();
        for (resource, obj) in loaded.objects {
            objects
                .entry(resource)
                .or_default()
                .insert((obj.namespace().to_string(), obj.name().to_string()), obj);
        }
        let history = loaded.events.into();
        Ok(Self::from_parts(
            loaded.rv,
            objects,
            history,
            Some(durable),
            history_limit,
        ))
    }

    fn from_parts(
        rv: u64,
        objects: HashMap<ResourceKey, BTreeMap<ObjectKey, Arc<StoredObject>>>,
        history: VecDeque<Arc<Event>>,
        durable: Option<Durable>,
        history_limit: usize,
    ) -> Self {
        let compacted_through = history
            .front()
            .map(|e: &Arc<Event>| e.rv.saturating_sub(1))
            .unwrap_or(rv);
        let feed = Feed::new(rv, FEED_EVENTS, FEED_BYTES);
        let history_bytes = history.iter().map(|e| e.object.json.len()).sum();
        let mut indexes = FieldIndexes::new();
        for (resource, map) in &objects {
            if !indexes.covers(resource) {
                continue;
            }
            for (key, object) in map {
                indexes.update(resource, key, None, Some(&object.value()));
            }
        }
        let mut state = State {
            rv,
            objects,
            history,
            history_bytes,
            compacted_through,
            writes: HashMap::new(),
            indexes,
            expiring: Vec::new(),
        };
        let limits = HistoryLimits {
            events: history_limit.max(1),
            bytes: DEFAULT_HISTORY_BYTES,
        };
        limits.trim(&mut state);
        Self {
            state: Mutex::new(state),
            feed,
            writer: Mutex::new(durable),
            history: limits,
        }
    }

    /// The same store with its history bounded to `bytes` of serialised objects (the newest event is always kept).
    pub fn with_history_bytes(mut self, bytes: usize) -> Self {
        self.history.bytes = bytes;
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        self.history.trim(state);
        self
    }

    /// The same store with the objects of `resource` deleted `ttl` after their last write (what kube-apiserver's
    /// `--event-ttl` does to Events), by [`Store::expire`]. Objects already stored count from when they were last
    /// written, as the durable store recorded it, so those that expired while the server was down go at the first
    /// pass; objects whose write time is unknown count from now.
    pub fn with_ttl(mut self, resource: ResourceKey, ttl: Duration) -> Result<Self, CommitError> {
        let written: HashMap<ObjectKey, (u64, Option<i64>)> = match self.writer.get_mut() {
            Ok(Some(db)) => db
                .write_times(&resource.0)
                .map_err(|e| CommitError::Storage(e.to_string()))?
                .into_iter()
                .map(|row| ((row.namespace, row.name), (row.rv, row.written)))
                .collect(),
            _ => HashMap::new(),
        };
        let now = SystemTime::now();
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let mut expiring = Expiring::new(resource.clone(), ttl);
        for (key, object) in state.objects.get(&resource).into_iter().flatten() {
            let at = written
                .get(key)
                .filter(|(rv, _)| *rv == object.rv)
                .and_then(|(_, written)| *written)
                .map_or(now, expiry::from_millis);
            expiring.record(key.clone(), object.rv, at);
        }
        state.expiring.push(expiring);
        Ok(self)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn writer(&self) -> MutexGuard<'_, Option<Durable>> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The newest resourceVersion (what a list is consistent with).
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// Whether writes reach disk.
    pub fn is_durable(&self) -> bool {
        self.writer().is_some()
    }

    /// One object.
    pub fn get(
        &self,
        resource: &ResourceKey,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<StoredObject>> {
        let state = self.lock();
        state
            .objects
            .get(resource)?
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// All objects of a resource (in one namespace, or all when `namespace` is None), ordered by namespace and
    /// name, together with the resourceVersion the snapshot is consistent with.
    pub fn list(
        &self,
        resource: &ResourceKey,
        namespace: Option<&str>,
    ) -> (Vec<Arc<StoredObject>>, u64) {
        let state = self.lock();
        (objects_of(&state, resource, namespace), state.rv)
    }

    /// Like [`Store::list`], but only the objects whose `field` equals `value`, read from the store's index of that
    /// field; `None` when the field is not indexed (the caller then lists and filters).
    pub fn list_by_field(
        &self,
        resource: &ResourceKey,
        namespace: Option<&str>,
        field: &str,
        value: &str,
    ) -> Option<(Vec<Arc<StoredObject>>, u64)> {
        let state = self.lock();
        let keys = state.indexes.lookup(resource, namespace, field, value)?;
        Some((indexed_objects(&state, resource, keys), state.rv))
    }

    /// Like [`Store::list`], but only the pods that hold the label `label`, read from the store's index of pods by
    /// label key; `None` when that key is not indexed (the caller then lists and filters).
    pub fn list_by_label(
        &self,
        resource: &ResourceKey,
        namespace: Option<&str>,
        label: &str,
    ) -> Option<(Vec<Arc<StoredObject>>, u64)> {
        let state = self.lock();
        let keys = state.indexes.lookup_label(resource, namespace, label)?;
        Some((indexed_objects(&state, resource, keys), state.rv))
    }

    /// The objects of a resource as they were at resourceVersion `at`, for paginated lists that must stay one
    /// consistent snapshot across pages; fails when the events after `at` are compacted. Rebuilt by undoing the
    /// newer events: the lock is held to take the objects (an `Arc` each, of the namespace asked for) and then for
    /// each short batch of history, and the undoing happens outside it, so writers wait microseconds however
    /// large the resource or old the snapshot.
    pub fn list_at(
        &self,
        resource: &ResourceKey,
        namespace: Option<&str>,
        at: u64,
    ) -> Result<Vec<Arc<StoredObject>>, TooOld> {
        let (current, mut upper) = {
            let state = self.lock();
            if at < state.compacted_through || at > state.rv {
                return Err(TooOld {
                    requested: at,
                    oldest: state.compacted_through,
                });
            }
            (objects_of(&state, resource, namespace), state.rv)
        };
        // The state of each key changed after `at` as it was at `at` (None: it did not exist), found by walking
        // the history back to `at`: the oldest change of a key is the last one seen.
        let mut undone: BTreeMap<ObjectKey, Option<Arc<StoredObject>>> = BTreeMap::new();
        while upper > at {
            let batch = self.history_between(at, upper)?;
            let Some(oldest) = batch.first() else {
                break;
            };
            upper = oldest.rv - 1;
            for event in batch.iter().rev() {
                if &event.resource != resource
                    || namespace.is_some_and(|want| want != event.object.namespace())
                {
                    continue;
                }
                let before = match (&event.kind, &event.previous) {
                    (EventType::Added, _) => None,
                    (_, Some(previous)) => Some(previous.clone()),
                    // Events reloaded from disk carry no previous state: the snapshot cannot be rebuilt exactly.
                    (_, None) => {
                        return Err(TooOld {
                            requested: at,
                            oldest: event.rv,
                        });
                    }
                };
                let key = (
                    event.object.namespace().to_string(),
                    event.object.name().to_string(),
                );
                undone.insert(key, before);
            }
        }
        Ok(merged(current, undone))
    }

    /// The events of the history after `at` and up to `upper`, at most [`HISTORY_BATCH`] of them, the newest
    /// ones; fails when the history no longer reaches back to `at`.
    fn history_between(&self, at: u64, upper: u64) -> Result<Vec<Arc<Event>>, TooOld> {
        let state = self.lock();
        state.history_reaches(at)?;
        let end = state.history.partition_point(|e| e.rv <= upper);
        let start = state
            .history
            .partition_point(|e| e.rv <= at)
            .max(end.saturating_sub(HISTORY_BATCH));
        Ok(state.history.range(start..end).cloned().collect())
    }

    /// Number of objects of a resource in a namespace (or everywhere).
    pub fn count(&self, resource: &ResourceKey, namespace: Option<&str>) -> usize {
        self.list(resource, namespace).0.len()
    }

    /// Write `value` if the object's current resourceVersion is `expected` (`None` = it must not exist yet).
    pub fn put(
        &self,
        resource: &ResourceKey,
        expected: Option<u64>,
        value: Value,
    ) -> Result<Arc<StoredObject>, CommitError> {
        let namespace = value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let key = (namespace, name);
        let mut writer = self.writer();
        let (previous, rv) = {
            let state = self.lock();
            let previous = state
                .objects
                .get(resource)
                .and_then(|m| m.get(&key))
                .cloned();
            (previous, state.rv + 1)
        };
        if previous.as_ref().map(|p| p.rv) != expected {
            return Err(CommitError::Conflict);
        }
        let object = Arc::new(stored_object(resource, value, rv));
        if object.json.len() > MAX_OBJECT_BYTES {
            return Err(CommitError::TooLarge {
                bytes: object.json.len(),
            });
        }
        let kind = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        let written = SystemTime::now();
        persist(&mut writer, resource, &key, kind, &object, written)?;
        let mut state = self.lock();
        state.rv = rv;
        if let Some(expiring) = state.expiring.iter_mut().find(|e| e.resource == *resource) {
            expiring.record(key.clone(), rv, written);
        }
        if state.indexes.covers(resource) {
            let before = previous.as_ref().map(|p| p.value());
            state
                .indexes
                .update(resource, &key, before.as_deref(), Some(&object.value()));
        }
        state
            .objects
            .entry(resource.clone())
            .or_default()
            .insert(key, object.clone());
        self.record(
            &mut state,
            Event {
                rv,
                resource: resource.clone(),
                kind,
                object: object.clone(),
                previous,
            },
        );
        Ok(object)
    }

    /// Remove an object if its current resourceVersion is `expected`; returns its last state.
    pub fn delete(
        &self,
        resource: &ResourceKey,
        namespace: &str,
        name: &str,
        expected: u64,
    ) -> Result<Arc<StoredObject>, CommitError> {
        let key = (namespace.to_string(), name.to_string());
        let mut writer = self.writer();
        let (previous, rv) = {
            let state = self.lock();
            let previous = state
                .objects
                .get(resource)
                .and_then(|m| m.get(&key))
                .cloned()
                .ok_or(CommitError::Conflict)?;
            (previous, state.rv + 1)
        };
        if previous.rv != expected {
            return Err(CommitError::Conflict);
        }
        let object = Arc::new(stored_object(resource, previous.to_value(), rv));
        let written = SystemTime::now();
        persist(
            &mut writer,
            resource,
            &key,
            EventType::Deleted,
            &object,
            written,
        )?;
        let mut state = self.lock();
        state.rv = rv;
        if state.indexes.covers(resource) {
            state
                .indexes
                .update(resource, &key, Some(&previous.value()), None);
        }
        if let Some(map) = state.objects.get_mut(resource) {
            map.remove(&key);
        }
        self.record(
            &mut state,
            Event {
                rv,
                resource: resource.clone(),
                kind: EventType::Deleted,
                object: object.clone(),
                previous: Some(previous),
            },
        );
        Ok(object)
    }

    /// Count a committed write, keep it in the history and send it to the live feed. The history keeps the
    /// objects only serialised (sharing their bytes with the live ones): the states it holds are mostly superseded
    /// ones nobody reads but a watcher catching up, while a parsed tree for each would cost several times the
    /// history's byte bound. The live feed's few events keep the trees watchers filter on.
    fn record(&self, state: &mut State, event: Event) {
        state
            .writes
            .entry(event.resource.clone())
            .or_default()
            .count(event.kind);
        state.history_bytes += event.object.json.len();
        state.history.push_back(Arc::new(Event {
            rv: event.rv,
            resource: event.resource.clone(),
            kind: event.kind,
            object: event.object.serialised_only(),
            previous: event.previous.as_ref().map(StoredObject::serialised_only),
        }));
        self.history.trim(state);
        // Publishing while holding the state lock keeps the feed's order equal to the resourceVersion order and
        // lets `watch_from` subscribe without a gap.
        self.feed.publish(Arc::new(event));
    }

    /// Writes committed per resource since the store opened, counted where they commit, so a benchmark can tell
    /// what a workload cost the server.
    pub fn write_counts(&self) -> Vec<(ResourceKey, WriteCounts)> {
        let state = self.lock();
        let mut counts: Vec<_> = state
            .writes
            .iter()
            .map(|(resource, counts)| (resource.clone(), *counts))
            .collect();
        counts.sort_by(|a, b| a.0.0.cmp(&b.0.0));
        counts
    }

    /// Start watching from `since`: the events already committed after it, and a receiver for the ones to come.
    /// Fails with [`TooOld`] when events after `since` have been compacted away.
    pub fn watch_from(&self, since: u64) -> Result<WatchStart, TooOld> {
        let state = self.lock();
        state.history_reaches(since)?;
        let first = state.history.partition_point(|e| e.rv <= since);
        let backlog = state.history.range(first..).cloned().collect();
        Ok((backlog, self.feed.subscribe(state.rv)))
    }

    /// A reader of the live feed from `since` on, for a watch that reads at its client's pace: whatever the feed
    /// no longer holds it reads from the history with [`Store::events_after`].
    pub fn feed_from(&self, since: u64) -> FeedReceiver {
        self.feed.subscribe(since)
    }

    /// The events after `since` from the history, oldest first, as many as fit in `bytes` of serialised objects
    /// (at least one when there is any): one short lock hold, however far behind `since` is. Fails with
    /// [`TooOld`] when events after `since` have been compacted away.
    pub fn events_after(&self, since: u64, bytes: usize) -> Result<Vec<Arc<Event>>, TooOld> {
        let state = self.lock();
        state.history_reaches(since)?;
        let first = state.history.partition_point(|e| e.rv <= since);
        let mut taken = 0;
        Ok(state
            .history
            .range(first..)
            .take(HISTORY_BATCH)
            .take_while(|e| {
                let fits = taken == 0 || taken + e.object.json.len() <= bytes;
                taken += e.object.json.len();
                fits
            })
            .cloned()
            .collect())
    }

    /// Wait up to `patience` until the store has reached resourceVersion `rv`, as a request for a version not
    /// yet written may ask; the current resourceVersion when it did not.
    pub async fn reached(&self, rv: u64, patience: Duration) -> Result<(), u64> {
        let mut newest = self.feed.newest();
        let reached = tokio::time::timeout(patience, newest.wait_for(|newest| *newest >= rv)).await;
        match reached {
            Ok(Ok(_)) => Ok(()),
            _ => Err(self.current_rv()),
        }
    }

    /// How much the store holds, per resource and in watch history, for `/metrics`.
    pub fn usage(&self) -> StoreUsage {
        let state = self.lock();
        let mut resources: Vec<ResourceUsage> = state
            .objects
            .iter()
            .map(|(key, objects)| ResourceUsage {
                resource: key.clone(),
                objects: objects.len(),
                bytes: objects.values().map(|o| o.json.len()).sum(),
            })
            .collect();
        resources.sort_by(|a, b| a.resource.cmp(&b.resource));
        let (feed, feed_bytes) = self.feed.usage();
        StoreUsage {
            resources,
            history: state.history.len(),
            history_bytes: state.history_bytes,
            feed,
            feed_bytes,
        }
    }

    /// Every resource key that currently has objects, for cleanup passes (namespace deletion, garbage collection).
    pub fn resources(&self) -> Vec<ResourceKey> {
        let state = self.lock();
        state
            .objects
            .iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Delete every object whose time to live ran out by `now` ([`Store::with_ttl`]) and that was not written
    /// since, as [`Store::delete`] would: watchers see it deleted and the durable store loses it. Returns how many
    /// went. A delete the database refuses is tried again at the next pass.
    pub fn expire(&self, now: SystemTime) -> usize {
        let due: Vec<(ResourceKey, Vec<expiry::Due>)> = self
            .lock()
            .expiring
            .iter_mut()
            .map(|expiring| (expiring.resource.clone(), expiring.take_due(now)))
            .collect();
        let mut expired = 0;
        for (resource, writes) in due {
            let mut writes = writes.into_iter();
            while let Some(write) = writes.next() {
                match self.delete(&resource, &write.key.0, &write.key.1, write.rv) {
                    Ok(_) => expired += 1,
                    // Written again since (its later write is queued) or deleted already.
                    Err(CommitError::Conflict) => {}
                    Err(error) => {
                        tracing::warn!(%error, resource = %resource.0, "deleting expired objects failed; retrying");
                        let mut state = self.lock();
                        if let Some(expiring) =
                            state.expiring.iter_mut().find(|e| e.resource == resource)
                        {
                            expiring.requeue(std::iter::once(write).chain(writes));
                        }
                        break;
                    }
                }
            }
        }
        expired
    }

    /// When the next object expires, if any is queued to.
    pub fn next_expiry(&self) -> Option<SystemTime> {
        self.lock()
            .expiring
            .iter()
            .filter_map(Expiring::next_due)
            .min()
    }

    /// Forget old history in the durable store too (called periodically; history in memory is bounded already).
    pub fn compact(&self) -> Result<(), CommitError> {
        let through = self.lock().compacted_through;
        let mut writer = self.writer();
        let Some(db) = writer.as_mut() else {
            return Ok(());
        };
        db.compact(through)
            .map_err(|e| CommitError::Storage(e.to_string()))
    }
}

/// The objects of `resource` in `namespace` (or all), in key order: one `Arc` each.
/// The objects of `resource` at `keys`, which an index gave.
fn indexed_objects<'a>(
    state: &State,
    resource: &ResourceKey,
    keys: impl Iterator<Item = &'a ObjectKey>,
) -> Vec<Arc<StoredObject>> {
    let map = state.objects.get(resource);
    keys.filter_map(|key| map?.get(key).cloned()).collect()
}

fn objects_of(
    state: &State,
    resource: &ResourceKey,
    namespace: Option<&str>,
) -> Vec<Arc<StoredObject>> {
    let Some(map) = state.objects.get(resource) else {
        return Vec::new();
    };
    match namespace {
        Some(ns) => map
            .range((ns.to_string(), String::new())..)
            .take_while(|((n, _), _)| n == ns)
            .map(|(_, o)| o.clone())
            .collect(),
        None => map.values().cloned().collect(),
    }
}

/// `current` (in key order) with the keys of `undone` replaced by their state there, removed where it is None:
/// a snapshot rebuilt from the objects of now and the history since, still in key order.
fn merged(
    current: Vec<Arc<StoredObject>>,
    undone: BTreeMap<ObjectKey, Option<Arc<StoredObject>>>,
) -> Vec<Arc<StoredObject>> {
    let mut result = Vec::with_capacity(current.len());
    let mut undone = undone.into_iter().peekable();
    for object in current {
        let key = (object.namespace(), object.name());
        while let Some(((ns, name), _)) = undone.peek()
            && (ns.as_str(), name.as_str()) < key
        {
            result.extend(undone.next().and_then(|(_, before)| before));
        }
        match undone.peek() {
            Some(((ns, name), _)) if (ns.as_str(), name.as_str()) == key => {
                result.extend(undone.next().and_then(|(_, before)| before));
            }
            _ => result.push(object),
        }
    }
    result.extend(undone.filter_map(|(_, before)| before));
    result
}

/// Commit one write made at `written` to the database of a durable store (held through `writer`); nothing to do in
/// memory.
fn persist(
    writer: &mut Option<Durable>,
    resource: &ResourceKey,
    key: &ObjectKey,
    kind: EventType,
    object: &StoredObject,
    written: SystemTime,
) -> Result<(), CommitError> {
    let Some(db) = writer.as_mut() else {
        return Ok(());
    };
    db.commit(
        &resource.0,
        &key.0,
        &key.1,
        kind.code(),
        object.rv,
        &object.json,
        expiry::to_millis(written),
    )
    .map_err(|e| CommitError::Storage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods() -> ResourceKey {
        ResourceKey(Arc::from("/pods"))
    }

    fn pod(name: &str, padding: usize) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"pad": "x".repeat(padding)}})
    }

    #[test]
    fn history_is_bounded_by_bytes_and_older_watches_are_too_old() {
        let store = Store::in_memory(1000).with_history_bytes(1000);
        for i in 0..20 {
            store
                .put(&pods(), None, pod(&format!("p{i}"), 200))
                .expect("written");
        }
        let rv = store.current_rv();
        let error = store
            .watch_from(0)
            .expect_err("the oldest events are compacted");
        assert!(error.oldest > 0, "{error}");
        let (backlog, _) = store
            .watch_from(error.oldest)
            .expect("resumable from the oldest kept");
        let bytes: usize = backlog.iter().map(|e| e.object.json.len()).sum();
        assert!(
            !backlog.is_empty() && bytes <= 1000,
            "{} events of {bytes} bytes kept",
            backlog.len()
        );
        assert_eq!(backlog.last().map(|e| e.rv), Some(rv));
        // One event larger than the whole bound is still kept: the newest write is always resumable.
        store
            .put(&pods(), None, pod("large", 5000))
            .expect("written");
        let (backlog, _) = store
            .watch_from(store.current_rv() - 1)
            .expect("the newest event is kept");
        assert_eq!(backlog.len(), 1);
    }

    #[test]
    fn events_and_the_history_hold_objects_serialised_and_serve_the_same_bytes() {
        let store = Store::in_memory(100);
        let events = ResourceKey::new("", "events");
        let event = json!({"metadata": {"name": "e", "namespace": "ns"}, "reason": "Pulled"});
        let stored = store.put(&events, None, event).expect("written");
        assert!(stored.is_serialised());
        assert_eq!(stored.value()["reason"], "Pulled");
        let created = store.put(&pods(), None, pod("a", 10)).expect("created");
        assert!(!created.is_serialised(), "pods keep their tree");
        let changed = store
            .put(&pods(), Some(created.rv), pod("a", 20))
            .expect("changed");
        let (backlog, _) = store.watch_from(0).expect("all in the history");
        assert_eq!(backlog.len(), 3);
        assert!(backlog.iter().all(|e| e.object.is_serialised()));
        assert_eq!(backlog[2].object.json, changed.json);
        let previous = backlog[2].previous.as_ref().expect("the replaced pod");
        assert_eq!(previous.json, created.json);
        assert_eq!(
            store.get(&pods(), "ns", "a").map(|o| o.is_serialised()),
            Some(false),
            "the live pod keeps its tree"
        );
        let before = store
            .list_at(&pods(), Some("ns"), created.rv)
            .expect("rebuilt from the history");
        assert_eq!(before.len(), 1);
        assert_eq!(before[0].json, created.json);
        assert_eq!(store.list(&events, None).0[0].json, stored.json);
    }

    #[test]
    fn nodes_and_node_modules_configs_are_held_serialised_and_read_the_same() {
        let store = Store::in_memory(100);
        let node = json!({"metadata": {"name": "n1", "labels": {"zone": "a"}}, "status": {"capacity": {"cpu": "4"}}});
        for (resource, object) in [
            (ResourceKey::new("", "nodes"), node),
            (
                ResourceKey::new("kmm.sigs.x-k8s.io", "nodemodulesconfigs"),
                json!({"metadata": {"name": "n1"}, "spec": {"modules": []}}),
            ),
        ] {
            let stored = store.put(&resource, None, object.clone()).expect("written");
            assert!(stored.is_serialised(), "{resource:?} held serialised");
            let mut read = stored.value().into_owned();
            read["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("resourceVersion");
            assert_eq!(read, object, "{resource:?} reads as written");
        }
    }

    #[test]
    fn writes_are_counted_per_resource_by_what_they_did() {
        let store = Store::in_memory(10);
        let created = store.put(&pods(), None, pod("a", 1)).expect("created");
        let changed = store
            .put(&pods(), Some(created.rv), pod("a", 2))
            .expect("changed");
        assert!(matches!(
            store.put(&pods(), Some(created.rv), pod("a", 3)),
            Err(CommitError::Conflict)
        ));
        store
            .delete(&pods(), "ns", "a", changed.rv)
            .expect("deleted");
        let counts = store.write_counts();
        assert_eq!(
            counts,
            vec![(
                pods(),
                WriteCounts {
                    added: 1,
                    modified: 1,
                    deleted: 1
                }
            )]
        );
        assert_eq!(counts[0].1.total(), 3);
    }

    #[test]
    fn a_watch_that_stops_reading_keeps_no_superseded_object_alive() {
        let store = Store::in_memory(DEFAULT_HISTORY);
        let (_, _stalled) = store.watch_from(store.current_rv()).expect("watching");
        let mut written = Vec::new();
        let mut current = None;
        for _ in 0..300 {
            let object = store
                .put(&pods(), current, pod("large", 64 << 10))
                .expect("written");
            current = Some(object.rv);
            written.push(Arc::downgrade(&object));
        }
        let alive: Vec<Arc<StoredObject>> = written.iter().filter_map(|w| w.upgrade()).collect();
        let pinned: usize = alive.iter().map(|o| o.json.len()).sum();
        assert!(
            pinned <= FEED_BYTES + (64 << 10),
            "{} of 300 written states ({pinned} bytes) are kept alive",
            alive.len()
        );
        assert!(store.usage().feed_bytes <= FEED_BYTES + 2 * (64 << 10));
    }

    #[test]
    fn writes_complete_while_an_old_snapshot_is_listed() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let store = Arc::new(Store::in_memory(1_000_000));
        let configmaps = ResourceKey::new("", "configmaps");
        for i in 0..20_000 {
            let configmap = json!({"metadata": {"name": format!("c{i}"), "namespace": format!("ns{}", i % 20)},
                                   "data": {"version": "0"}});
            store.put(&configmaps, None, configmap).expect("created");
        }
        let old = store.current_rv();
        for object in store.list(&configmaps, None).0 {
            let mut value = object.to_value();
            value["data"]["version"] = json!("1");
            store
                .put(&configmaps, Some(object.rv), value)
                .expect("changed");
        }
        let writes = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let writer = std::thread::spawn({
            let (store, writes, done) = (store.clone(), writes.clone(), done.clone());
            move || {
                let mut current = None;
                while !done.load(Ordering::SeqCst) {
                    let written = store
                        .put(&pods(), current, pod("bystander", 10))
                        .expect("written");
                    current = Some(written.rv);
                    writes.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let mut during = Vec::new();
        for _ in 0..5 {
            let before = writes.load(Ordering::SeqCst);
            let listed = store
                .list_at(&configmaps, None, old)
                .expect("still in the history");
            let after = writes.load(Ordering::SeqCst);
            assert_eq!(listed.len(), 20_000);
            assert!(listed.iter().all(|o| o.value()["data"]["version"] == "0"));
            during.push(after - before);
        }
        done.store(true, Ordering::SeqCst);
        writer.join().expect("the writer finishes");
        // A list that held the lock throughout lets a write through only when it is preempted between counting and
        // locking; the middle of five lists is not that unlucky.
        during.sort_unstable();
        assert!(
            during[2] >= 10,
            "writes completed while each of five old snapshots was listed: {during:?}"
        );
    }

    fn events() -> ResourceKey {
        ResourceKey::new("", "events")
    }

    fn event(name: &str, count: u64) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}, "reason": "Pulled", "count": count})
    }

    #[test]
    fn expired_objects_are_deleted_and_a_rewrite_restarts_the_clock() {
        let ttl = Duration::from_secs(60);
        let store = Store::in_memory(100)
            .with_ttl(events(), ttl)
            .expect("in memory");
        let old = store
            .put(&events(), None, event("old", 1))
            .expect("written");
        let bumped = store
            .put(&events(), None, event("bumped", 1))
            .expect("written");
        let pod = store.put(&pods(), None, pod("p", 1)).expect("written");
        let first_written = SystemTime::now();
        assert_eq!(store.expire(first_written), 0, "nothing is due yet");
        std::thread::sleep(Duration::from_millis(10));
        let (_, mut watch) = store.watch_from(store.current_rv()).expect("watching");
        let bumped = store
            .put(&events(), Some(bumped.rv), event("bumped", 2))
            .expect("rewritten");
        let rewritten = SystemTime::now();

        assert_eq!(
            store.expire(first_written + ttl),
            1,
            "the old event expires"
        );
        assert!(store.get(&events(), "ns", "old").is_none());
        assert!(
            store.get(&events(), "ns", "bumped").is_some(),
            "the rewritten one's clock restarted"
        );
        assert!(
            store
                .get(&pods(), "ns", "p")
                .is_some_and(|p| p.rv == pod.rv)
        );
        let modified = watch.try_recv().expect("the rewrite is seen");
        assert_eq!(modified.rv, bumped.rv);
        let deleted = watch.try_recv().expect("the expiry is seen");
        assert_eq!(deleted.kind, EventType::Deleted);
        assert_eq!(deleted.object.name(), "old");
        assert!(deleted.rv > old.rv);

        assert_eq!(
            store.expire(rewritten + ttl),
            1,
            "the rewritten one expires in its turn"
        );
        assert_eq!(store.count(&events(), None), 0);
        assert_eq!(store.next_expiry(), None);
        assert_eq!(store.expire(rewritten + ttl * 10), 0, "nothing goes twice");
    }

    #[test]
    fn write_times_survive_a_restart_so_expiry_counts_the_downtime() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ttl = Duration::from_secs(60);
        let before = SystemTime::now();
        {
            let store = Store::open(dir.path(), 100)
                .and_then(|s| s.with_ttl(events(), ttl))
                .expect("opened");
            store.put(&events(), None, event("e", 1)).expect("written");
            store.put(&pods(), None, pod("p", 1)).expect("written");
        }
        let after = SystemTime::now();
        let store = Store::open(dir.path(), 100)
            .and_then(|s| s.with_ttl(events(), ttl))
            .expect("reopened");
        let due = store.next_expiry().expect("the stored event is queued");
        assert!(
            due >= before + ttl - Duration::from_millis(1) && due <= after + ttl,
            "it expires a TTL after it was written, not after the restart"
        );
        assert_eq!(store.expire(after + ttl), 1);
        drop(store);
        let store = Store::open(dir.path(), 100)
            .and_then(|s| s.with_ttl(events(), ttl))
            .expect("reopened");
        assert_eq!(
            store.count(&events(), None),
            0,
            "the expired event stays gone"
        );
        assert_eq!(store.count(&pods(), None), 1);
        assert_eq!(store.next_expiry(), None);
    }
}
