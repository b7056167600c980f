//! The first list of a cache a reconciler keeps beside its controller's own, as its passes wait for it.
//!
//! kube's `Store::wait_until_ready` does not do for a pass: it wakes only the last of several waiters (see
//! [`crate::runtime::shared`]), and it never gives up. Once the engine stops, the controller polls the trigger
//! stream that fills such a cache no more, so a pass that started before the first list came (the engine told to
//! stop as it began acting, or a watch refused because the kind is not served or not permitted) would wait forever,
//! and the controller's graceful shutdown with it: the engine was left behind at its shutdown limit instead of
//! stopping. [`FirstList::wait`] wakes every waiter, and ends with the engine.

use futures::{Stream, StreamExt};
use kube::runtime::watcher;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Whether a cache holds its watch's first list, for passes to wait on.
#[derive(Clone, Debug)]
pub(crate) struct FirstList {
    listed: watch::Receiver<bool>,
    stop: CancellationToken,
}

impl FirstList {
    /// `events` (a watch already reflected into the cache), marking the cache listed at its first `InitDone`; a
    /// wait ends at `stop` too.
    pub(crate) fn watching<K, E, S>(
        events: S,
        stop: &CancellationToken,
    ) -> (
        Self,
        impl Stream<Item = Result<watcher::Event<K>, E>> + use<K, E, S>,
    )
    where
        S: Stream<Item = Result<watcher::Event<K>, E>>,
    {
        let (sender, listed) = watch::channel(false);
        let events = events.inspect(move |event| {
            if matches!(event, Ok(watcher::Event::InitDone)) {
                sender.send_replace(true);
            }
        });
        let first_list = Self {
            listed,
            stop: stop.clone(),
        };
        (first_list, events)
    }

    /// Wait until the cache has listed: `true` then, `false` when the engine stops (or the watch ends) first.
    pub(crate) async fn wait(&self) -> bool {
        let mut listed = self.listed.clone();
        tokio::select! {
            biased;
            result = listed.wait_for(|listed| *listed) => result.is_ok(),
            () = self.stop.cancelled() => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    type Event = Result<watcher::Event<ConfigMap>, std::convert::Infallible>;

    #[tokio::test]
    async fn every_waiter_wakes_at_the_first_list() {
        let stop = CancellationToken::new();
        let first_list: Vec<Event> = vec![Ok(watcher::Event::Init), Ok(watcher::Event::InitDone)];
        let (first_list, events) = FirstList::watching(futures::stream::iter(first_list), &stop);
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let first_list = first_list.clone();
                tokio::spawn(async move { first_list.wait().await })
            })
            .collect();
        events.for_each(|_| async {}).await;
        for waiter in waiters {
            assert!(waiter.await.expect("the waiter ran"));
        }
    }

    #[tokio::test]
    async fn a_wait_for_a_list_that_never_comes_ends_with_the_engine() {
        let stop = CancellationToken::new();
        let (_sender, receiver) = futures::channel::mpsc::unbounded::<Event>();
        let (first_list, _events) = FirstList::watching(receiver, &stop);
        let waiter = tokio::spawn({
            let first_list = first_list.clone();
            async move { first_list.wait().await }
        });
        stop.cancel();
        assert!(!waiter.await.expect("the waiter ran"));
    }
}
