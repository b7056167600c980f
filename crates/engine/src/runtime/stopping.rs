//! How a reconciler built on `kube::runtime::Controller` stops when its engine's token is cancelled.
//!
//! A Controller stopped with `graceful_shutdown_on` lets its in-flight passes finish, then ends. But its runner
//! starts no pass, and never ends, until the controller's store has seen its first list: a stop that comes before
//! that list (a term that ends as it begins, a watch still retrying) leaves the controller waiting forever for a list
//! its stopped watches will never deliver, and the engine's wind-down with it. [`until_stopped`] ends such a
//! controller at once: no pass has started, so there is nothing to wait for.

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use kube::Resource;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{Lookup, ObjectRef, Store};
use kube::runtime::watcher;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::runtime::metrics::Meter;

/// What a controller's run stream yields for each pass it ran or could not run.
pub(crate) type PassOutcome<K, E> =
    Result<(ObjectRef<K>, Action), controller::Error<E, watcher::Error>>;

/// Run `controller` until `stop`, its passes and their retries metered by `meter`, and end it as
/// [`until_stopped`] does; a pass that did not complete is logged under `what`. Every reconciler ends its
/// controller here, so all of them stop, meter and log alike.
pub(crate) async fn drive<K, C, E, R, Fut, P>(
    controller: Controller<K>,
    meter: &Meter,
    reconcile: R,
    policy: P,
    context: Arc<C>,
    stop: &CancellationToken,
    what: &'static str,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    C: Send + Sync + 'static,
    E: std::error::Error + Send + 'static,
    R: FnMut(Arc<K>, Arc<C>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    P: Fn(Arc<K>, &E, Arc<C>) -> Action + Send + Sync + 'static,
{
    let log = move |outcome: PassOutcome<K, E>| async move {
        if let Err(error) = outcome {
            tracing::debug!(%error, "{what} pass did not complete");
        }
    };
    drive_answering(controller, meter, reconcile, policy, context, stop, log).await;
}

/// As [`drive`], but each pass's outcome goes to `answer`: for a reconciler that must act on a pass the controller
/// could not run (its object gone), not only log it.
pub(crate) async fn drive_answering<K, C, E, R, Fut, P, A, AFut>(
    controller: Controller<K>,
    meter: &Meter,
    reconcile: R,
    policy: P,
    context: Arc<C>,
    stop: &CancellationToken,
    answer: A,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    C: Send + Sync + 'static,
    E: std::error::Error + Send + 'static,
    R: FnMut(Arc<K>, Arc<C>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    P: Fn(Arc<K>, &E, Arc<C>) -> Action + Send + Sync + 'static,
    A: FnMut(PassOutcome<K, E>) -> AFut,
    AFut: Future<Output = ()>,
{
    let store = controller.store();
    let passes = controller
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            meter.reconciler(reconcile),
            meter.error_policy(policy),
            context,
        )
        .for_each(answer);
    until_stopped(passes, &store, stop).await;
}

/// Drive `passes` (a Controller's run stream, consumed) until it ends, which it does once `stop` is cancelled and
/// its in-flight passes are done; or, when `stop` comes before `store` (the controller's own) has seen its first
/// list, right away.
pub(crate) async fn until_stopped<K>(
    passes: impl Future<Output = ()>,
    store: &Store<K>,
    stop: &CancellationToken,
) where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    tokio::pin!(passes);
    tokio::select! {
        () = &mut passes => {}
        () = stopped_before_first_list(store, stop) => {}
    }
}

/// Resolves when `stop` is cancelled before `store` is ready; pending otherwise. Once stopped, the controller polls
/// its watches no more, so a store not ready then never will be.
async fn stopped_before_first_list<K>(store: &Store<K>, stop: &CancellationToken)
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    stop.cancelled().await;
    // Ready, or its writer gone (the runner then ends on its own): the controller winds down by itself.
    if store.wait_until_ready().now_or_never().is_some() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Node;
    use kube::runtime::reflector;

    #[tokio::test]
    async fn a_stop_before_the_first_list_ends_at_once() {
        let (store, _writer) = reflector::store::<Node>();
        let stop = CancellationToken::new();
        stop.cancel();
        until_stopped(std::future::pending(), &store, &stop).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_after_the_first_list_waits_for_the_passes() {
        let (store, mut writer) = reflector::store::<Node>();
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let stop = CancellationToken::new();
        stop.cancel();
        let waited = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            until_stopped(std::future::pending(), &store, &stop),
        )
        .await;
        assert!(waited.is_err(), "the in-flight passes were not waited for");
        let finished = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            until_stopped(std::future::ready(()), &store, &stop),
        )
        .await;
        assert!(
            finished.is_ok(),
            "the passes ended but the controller did not"
        );
    }
}
