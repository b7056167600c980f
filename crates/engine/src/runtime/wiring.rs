//! How a reconciler's controller is put together. Every reconciler watches its primary kind into a cache, tells its
//! meter when that cache holds the first list, builds a `Controller` on it, adds the kinds it owns or watches and
//! ends in [`stopping::drive`]. Only the watch, the added kinds, the pass and its context differ; [`Wiring`] does
//! the rest once, so every reconciler caches, meters and stops alike.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::runtime::context::Context;
use crate::runtime::family::Family;
use crate::runtime::metrics::{Listed, Meter};
use crate::runtime::stopping;

/// What names a reconciler in the metrics, and how many passes it runs at once (0: no bound).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Metered {
    /// The reconciled kind in lower case.
    name: &'static str,
    /// The family it belongs to.
    family: Family,
    /// Passes at once; the controller is bounded by the same number the meter reports.
    concurrency: u16,
}

impl Metered {
    /// The reconciler of `name` (the kind in lower case) in `family`, its passes unbounded.
    pub(crate) fn new(name: &'static str, family: Family) -> Self {
        Self {
            name,
            family,
            concurrency: 0,
        }
    }

    /// The same reconciler running at most `concurrency` passes at once.
    pub(crate) fn at_most(self, concurrency: u16) -> Self {
        Self {
            concurrency,
            ..self
        }
    }
}

/// A reconciler's controller on its own cache of the primary kind, with the meter that counts its passes.
pub(crate) struct Wiring<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// The controller, its primary watch in place.
    controller: Controller<K>,
    /// The reconciler's meter, watching the controller's cache.
    meter: Meter,
}

impl<K> Wiring<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// A controller of every object `events` brings: the caller's watch of the primary kind, with its selector,
    /// back-off and trimming.
    pub(crate) fn new<S>(context: &Context, metered: Metered, events: S) -> Self
    where
        S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    {
        Self::cached(context, metered, events, |changes| changes)
    }

    /// As [`Wiring::new`], but a change starts a pass only when `fingerprint` (what about an object its pass reads)
    /// changed: status writes and other noise wake nothing.
    pub(crate) fn filtered<S>(
        context: &Context,
        metered: Metered,
        events: S,
        fingerprint: fn(&K) -> Option<u64>,
    ) -> Self
    where
        S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    {
        Self::cached(context, metered, events, move |changes| {
            changes.predicate_filter(fingerprint, Default::default())
        })
    }

    /// A controller already built on one of the engine's shared watches, whose first list `listed` tells.
    pub(crate) fn shared(
        context: &Context,
        metered: Metered,
        controller: Controller<K>,
        listed: Listed,
    ) -> Self {
        Self::metered(context, metered, controller, listed)
    }

    /// `events` marked for the meter's first list and mirrored into the controller's cache; the changes `narrow`
    /// keeps start passes.
    fn cached<S, N, T>(context: &Context, metered: Metered, events: S, narrow: N) -> Self
    where
        S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
        N: FnOnce(futures::stream::BoxStream<'static, Result<K, watcher::Error>>) -> T,
        T: Stream<Item = Result<K, watcher::Error>> + Send + 'static,
    {
        let (store, writer) = reflector::store();
        let listed = Listed::default();
        let changes = listed.watching(events).reflect(writer).applied_objects();
        let controller = Controller::for_stream(narrow(changes.boxed()), store);
        Self::metered(context, metered, controller, listed)
    }

    /// `controller`, bounded to the passes `metered` allows, with its meter on its cache.
    fn metered(
        context: &Context,
        metered: Metered,
        controller: Controller<K>,
        listed: Listed,
    ) -> Self {
        let meter = context.meter(
            metered.name,
            metered.family,
            metered.concurrency,
            (controller.store(), listed),
        );
        let controller =
            controller.with_config(controller::Config::default().concurrency(metered.concurrency));
        Self { controller, meter }
    }

    /// The controller's cache of the primary kind, for mappers that wake every object and for the pass's context.
    pub(crate) fn store(&self) -> Store<K> {
        self.controller.store()
    }

    /// The same controller with what `add` adds: the kinds it owns, the watches that map to its objects.
    pub(crate) fn with(self, add: impl FnOnce(Controller<K>) -> Controller<K>) -> Self {
        Self {
            controller: add(self.controller),
            ..self
        }
    }

    /// Run `reconcile` (failures through `policy`) with `context` until `stop`, as [`stopping::drive`] does; `what`
    /// names a pass that did not complete in the log.
    pub(crate) async fn drive<C, E, R, Fut, P>(
        self,
        reconcile: R,
        policy: P,
        context: Arc<C>,
        stop: &CancellationToken,
        what: &'static str,
    ) where
        C: Send + Sync + 'static,
        E: std::error::Error + Send + 'static,
        R: FnMut(Arc<K>, Arc<C>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        P: Fn(Arc<K>, &E, Arc<C>) -> Action + Send + Sync + 'static,
    {
        stopping::drive(
            self.controller,
            &self.meter,
            reconcile,
            policy,
            context,
            stop,
            what,
        )
        .await;
    }

    /// As [`Wiring::drive`], but each pass's outcome goes to `answer` (see [`stopping::drive_answering`]).
    pub(crate) async fn drive_answering<C, E, R, Fut, P, A, AFut>(
        self,
        reconcile: R,
        policy: P,
        context: Arc<C>,
        stop: &CancellationToken,
        answer: A,
    ) where
        C: Send + Sync + 'static,
        E: std::error::Error + Send + 'static,
        R: FnMut(Arc<K>, Arc<C>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        P: Fn(Arc<K>, &E, Arc<C>) -> Action + Send + Sync + 'static,
        A: FnMut(stopping::PassOutcome<K, E>) -> AFut,
        AFut: Future<Output = ()>,
    {
        stopping::drive_answering(
            self.controller,
            &self.meter,
            reconcile,
            policy,
            context,
            stop,
            answer,
        )
        .await;
    }
}
