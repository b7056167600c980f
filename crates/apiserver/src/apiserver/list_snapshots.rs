//! The snapshots paginated lists continue from.
//!
//! A list read in pages is one snapshot: the first page's resourceVersion, whatever is written between pages.
//! kube-apiserver serves the later pages from etcd at that revision, which holds until etcd compacts (every five
//! minutes), so a client paging through 150,000 pods of a busy cluster gets them all. Rebuilding that state from
//! the store's history instead walks every write since the first page, and fails once the history (bounded in
//! bytes) no longer reaches back to it: on a cluster writing 500 objects a second, after about 40 seconds.
//!
//! So the first page keeps the list it cut (shared pointers to the stored objects, no copies) here, and later
//! pages read it: each page costs its own length, and a list stays whole for [`KEPT_FOR`], as long as
//! kube-apiserver keeps one. The last page lets its snapshot go, so the objects a list read are not held alive
//! once the client has them all. At most [`MAX_SNAPSHOTS`] are held, the oldest let go first; a page whose snapshot
//! is gone falls back to the history.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::store::{ResourceKey, StoredObject};

/// How long a list's snapshot is kept: kube-apiserver's compaction interval.
pub(crate) const KEPT_FOR: Duration = Duration::from_secs(5 * 60);

/// How many snapshots are held at once.
pub(crate) const MAX_SNAPSHOTS: usize = 16;

/// What a snapshot is of: a resource in a namespace (or everywhere) at a resourceVersion, as the store listed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SnapshotKey {
    pub(crate) resource: ResourceKey,
    pub(crate) namespace: Option<String>,
    pub(crate) rv: u64,
    /// The field the store's index selected by, with its value, when the list came from an index.
    pub(crate) indexed: Option<(String, String)>,
}

/// The snapshots kept, oldest first.
#[derive(Default)]
pub(crate) struct ListSnapshots {
    kept: Mutex<VecDeque<Kept>>,
}

struct Kept {
    key: SnapshotKey,
    objects: Arc<Vec<Arc<StoredObject>>>,
    taken: Instant,
}

impl ListSnapshots {
    /// Keep `objects` as the snapshot of `key`, for the pages after the first.
    pub(crate) fn keep(&self, key: SnapshotKey, objects: Arc<Vec<Arc<StoredObject>>>) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|k| k.key != key && k.taken.elapsed() < KEPT_FOR);
        while kept.len() >= MAX_SNAPSHOTS {
            kept.pop_front();
        }
        kept.push_back(Kept {
            key,
            objects,
            taken: Instant::now(),
        });
    }

    /// Let go of the snapshot of `key`: its last page was served. A client that reads to the end holds no old
    /// objects alive after it; only lists left unfinished stay for [`KEPT_FOR`].
    pub(crate) fn forget(&self, key: &SnapshotKey) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|k| k.key != *key);
    }

    /// The snapshot of `key`, if it is still kept.
    pub(crate) fn get(&self, key: &SnapshotKey) -> Option<Arc<Vec<Arc<StoredObject>>>> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|k| k.taken.elapsed() < KEPT_FOR);
        kept.iter()
            .find(|k| k.key == *key)
            .map(|k| k.objects.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(rv: u64) -> SnapshotKey {
        SnapshotKey {
            resource: ResourceKey::new("", "pods"),
            namespace: None,
            rv,
            indexed: None,
        }
    }

    #[test]
    fn the_newest_snapshots_are_kept_up_to_the_bound() {
        let snapshots = ListSnapshots::default();
        for rv in 0..(MAX_SNAPSHOTS as u64 + 2) {
            snapshots.keep(key(rv), Arc::new(Vec::new()));
        }
        assert!(snapshots.get(&key(0)).is_none() && snapshots.get(&key(1)).is_none());
        assert!(snapshots.get(&key(2)).is_some());
        assert!(snapshots.get(&key(MAX_SNAPSHOTS as u64 + 1)).is_some());
        let other_namespace = SnapshotKey {
            namespace: Some("ns".to_owned()),
            ..key(2)
        };
        assert!(snapshots.get(&other_namespace).is_none());
        snapshots.forget(&key(2));
        assert!(snapshots.get(&key(2)).is_none(), "the last page let it go");
    }
}
