//! Watches that several reconcilers share: one watch per kind for the whole engine instead of one per controller,
//! so a cluster of 5,000 nodes is listed and followed once however many families act on its nodes.
//!
//! A family takes what it needs while the engine is being assembled ([`SharedWatches::nodes`],
//! [`SharedWatches::node_changes`]), before [`SharedWatches::run`] starts the watch: a subscription taken later
//! would miss the initial list. Every subscription must then be polled, because the shared reflector waits for its
//! slowest subscriber once [`BUFFER`] changes are queued; a controller polls its trigger streams from its first
//! poll, so handing the stream to a `Controller` is enough.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Changes queued per subscriber before the shared reflector waits for it: a whole initial list of a large cluster
/// fits, so start-up never stalls on a subscriber that is still setting up.
pub const BUFFER: usize = 8192;

/// The engine's shared watches. Cheap to hand around by reference while the engine is assembled; consumed by
/// [`SharedWatches::run`].
pub struct SharedWatches {
    nodes: Store<Node>,
    node_writer: Writer<Node>,
    /// Deleted nodes: the shared reflector only fans out applied objects, and a node that leaves changes what
    /// several reconcilers target.
    node_deletions: broadcast::Sender<Arc<Node>>,
}

impl Default for SharedWatches {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedWatches {
    /// Shared stores with no watch running yet.
    pub fn new() -> Self {
        let (nodes, node_writer) = reflector::store_shared(BUFFER);
        let (node_deletions, _) = broadcast::channel(DELETIONS_BUFFER);
        Self {
            nodes,
            node_writer,
            node_deletions,
        }
    }

    /// Every node, as the shared watch last saw it. Empty until the first list arrives: wait on
    /// [`Store::wait_until_ready`] before judging a node absent.
    pub fn nodes(&self) -> Store<Node> {
        self.nodes.clone()
    }

    /// Nodes that appeared, left, or whose `fingerprint` changed, once the shared store reflects the change. A
    /// node's heartbeat changes its status every few seconds; a fingerprint of the fields a reconciler reads keeps
    /// those from starting passes. The first sighting of every node passes, so the initial list triggers once.
    pub fn node_changes(
        &self,
        fingerprint: fn(&Node) -> u64,
    ) -> impl Stream<Item = Arc<Node>> + Send + 'static {
        let applied = self
            .node_writer
            .subscribe()
            .expect("the shared node store was created with store_shared")
            .map(Change::Applied);
        let deleted = deletions(self.node_deletions.subscribe()).map(Change::Deleted);
        changed_only(futures::stream::select(applied, deleted), fingerprint)
    }

    /// Run every shared watch until `stop`. Watch errors are logged and retried with back-off; the stores keep
    /// their last content meanwhile.
    pub fn run(
        self,
        client: kube::Client,
        stop: CancellationToken,
    ) -> impl Future<Output = ()> + Send + 'static {
        let node_deletions = self.node_deletions;
        let nodes = watcher(Api::<Node>::all(client), watcher::Config::default())
            .default_backoff()
            .reflect_shared(self.node_writer)
            .for_each(move |event| {
                match event {
                    Ok(watcher::Event::Delete(node)) => {
                        // No subscriber is not an error: the families that care subscribed before the watch ran.
                        let _ = node_deletions.send(Arc::new(node));
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "watching nodes failed; retrying"),
                }
                std::future::ready(())
            });
        async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = nodes => {}
            }
        }
    }
}

/// Deleted objects can be missed only when a subscriber falls [`DELETIONS_BUFFER`] deletions behind.
const DELETIONS_BUFFER: usize = 1024;

/// One change a subscriber sees.
enum Change<K> {
    /// Listed, added or modified.
    Applied(Arc<K>),
    /// Gone.
    Deleted(Arc<K>),
}

/// The objects a broadcast channel carries; a subscriber that fell behind skips what it missed.
fn deletions<K: Clone + Send + 'static>(
    receiver: broadcast::Receiver<K>,
) -> impl Stream<Item = K> + Send + 'static {
    futures::stream::unfold(receiver, |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(object) => return Some((object, receiver)),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "a reconciler fell behind on deleted objects");
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

/// Applied objects whose fingerprint differs from the last one seen under the same name, and every deleted one.
fn changed_only<K>(
    stream: impl Stream<Item = Change<K>> + Send + 'static,
    fingerprint: fn(&K) -> u64,
) -> impl Stream<Item = Arc<K>> + Send + 'static
where
    K: kube::Resource + Send + Sync + 'static,
{
    let mut seen: HashMap<(Option<String>, String), u64> = HashMap::new();
    let key = |object: &K| {
        (
            object.meta().namespace.clone(),
            object.meta().name.clone().unwrap_or_default(),
        )
    };
    stream.filter_map(move |change| {
        let passed = match change {
            Change::Applied(object) => {
                let print = fingerprint(&object);
                (seen.insert(key(&object), print) != Some(print)).then_some(object)
            }
            Change::Deleted(object) => {
                seen.remove(&key(&object));
                Some(object)
            }
        };
        std::future::ready(passed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    fn node(name: &str, label: &str) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "labels": {"l": label}},
            }))
            .expect("a node"),
        )
    }

    fn label_print(node: &Node) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        node.metadata.labels.hash(&mut hasher);
        hasher.finish()
    }

    #[tokio::test]
    async fn first_sightings_changed_fingerprints_and_deletions_pass() {
        let input = stream::iter(vec![
            Change::Applied(node("a", "1")),
            Change::Applied(node("b", "1")),
            Change::Applied(node("a", "1")),
            Change::Applied(node("a", "2")),
            Change::Applied(node("b", "1")),
            Change::Deleted(node("b", "1")),
            Change::Applied(node("b", "1")),
        ]);
        let passed: Vec<(String, String)> = changed_only(input, label_print)
            .map(|n| {
                (
                    n.metadata.name.clone().unwrap_or_default(),
                    n.metadata.labels.as_ref().unwrap()["l"].clone(),
                )
            })
            .collect()
            .await;
        assert_eq!(
            passed,
            [("a", "1"), ("b", "1"), ("a", "2"), ("b", "1"), ("b", "1")]
                .map(|(n, l)| (n.to_owned(), l.to_owned()))
        );
    }
}
