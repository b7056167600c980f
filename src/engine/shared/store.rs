//! A shared cache that reconcile passes wait on.
//!
//! A pass must not judge a node absent before the shared node watch has listed the nodes, so it waits for that
//! first list. kube's [`Store::wait_until_ready`] cannot be waited on by several passes at once: its readiness is a
//! oneshot channel with a single waker slot, so of the passes waiting together only the one that polled last is
//! woken, when the list arrives and when the watch stops before it. The others would wait forever — their
//! reconciler stuck, and the engine's wind-down with it. [`SharedStore`] waits on a watch channel instead, which
//! wakes every waiter.

use std::hash::Hash;
use std::sync::Arc;

use kube::runtime::reflector::{Lookup, Store};
use tokio::sync::watch;

/// A cache of the engine's shared watches, with a first list any number of passes can wait for.
#[derive(Clone)]
pub struct SharedStore<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    store: Store<K>,
    listed: watch::Receiver<bool>,
}

/// The shared watch stopped (or never ran) before its first list: the cache will not fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the shared watch stopped before its first list")]
pub struct NeverListed;

impl<K> SharedStore<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    /// `store`, listed once `listed` holds true; never once its sender is gone while it holds false.
    pub(super) fn new(store: Store<K>, listed: watch::Receiver<bool>) -> Self {
        Self { store, listed }
    }

    /// Wait until the watch has listed every object once. Every waiter wakes, however many wait at once; all of
    /// them get [`NeverListed`] when the watch stops first.
    pub async fn wait_until_ready(&self) -> Result<(), NeverListed> {
        let mut listed = self.listed.clone();
        listed
            .wait_for(|listed| *listed)
            .await
            .map(|_| ())
            .map_err(|_| NeverListed)
    }

    /// Every cached object; empty before the first list.
    pub fn state(&self) -> Vec<Arc<K>> {
        self.store.state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Node;
    use kube::runtime::reflector;

    /// Three passes waiting at once, each in its own task.
    async fn waiters(
        cache: &SharedStore<Node>,
    ) -> Vec<tokio::task::JoinHandle<Result<(), NeverListed>>> {
        let waiting: Vec<_> = (0..3)
            .map(|_| {
                let cache = cache.clone();
                tokio::spawn(async move { cache.wait_until_ready().await })
            })
            .collect();
        // Every waiter has polled (and is waiting) before the outcome is sent.
        tokio::task::yield_now().await;
        assert!(waiting.iter().all(|w| !w.is_finished()));
        waiting
    }

    #[tokio::test(flavor = "current_thread")]
    async fn every_waiter_wakes_when_listed() {
        let (store, _writer) = reflector::store::<Node>();
        let (listed, receiver) = watch::channel(false);
        let cache = SharedStore::new(store, receiver);
        let waiting = waiters(&cache).await;
        listed.send_replace(true);
        for waiter in waiting {
            assert_eq!(waiter.await.expect("the waiter ran"), Ok(()));
        }
        drop(listed);
        assert_eq!(
            cache.wait_until_ready().await,
            Ok(()),
            "a listed cache stays listed"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn every_waiter_wakes_when_the_watch_stops_first() {
        let (store, _writer) = reflector::store::<Node>();
        let (listed, receiver) = watch::channel(false);
        let cache = SharedStore::new(store, receiver);
        let waiting = waiters(&cache).await;
        drop(listed);
        for waiter in waiting {
            assert_eq!(waiter.await.expect("the waiter ran"), Err(NeverListed));
        }
    }
}
