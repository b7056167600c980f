//! Each pass of a reconciler runs through its [`Meter`]: in a span that names the controller, the family, the
//! object and a reconcile id, so the log lines of one pass group together, and timed and counted as
//! controller-runtime counts its reconciles.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::runtime::controller::Action;
use tokio::time::Instant;
use tracing::Instrument;

use super::{
    ControllerLabels, EngineMetrics, QueueLabels, ResultLabels, lock, look_again, object_key,
};
use crate::runtime::backoff::JITTER;
use crate::runtime::causes::cause_chain;
use crate::runtime::family::Family;

/// Meters one reconciler's passes; cheap to clone.
#[derive(Clone)]
pub struct Meter {
    metrics: Arc<EngineMetrics>,
    controller: &'static str,
    family: Family,
    resync: Duration,
}

impl Meter {
    pub(super) fn new(
        metrics: Arc<EngineMetrics>,
        controller: &'static str,
        family: Family,
        resync: Duration,
    ) -> Self {
        Self {
            metrics,
            controller,
            family,
            resync,
        }
    }

    /// `reconcile`, metered: for `Controller::run`.
    pub fn reconciler<K, C, E, F, Fut>(
        &self,
        reconcile: F,
    ) -> impl FnMut(Arc<K>, Arc<C>) -> BoxFuture<'static, Result<Action, E>> + use<K, C, E, F, Fut>
    where
        K: kube::Resource<DynamicType = ()> + Send + Sync + 'static,
        C: Send + Sync + 'static,
        E: std::error::Error + Send + 'static,
        F: FnMut(Arc<K>, Arc<C>) -> Fut,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
    {
        let meter = self.clone();
        let mut reconcile = reconcile;
        move |object: Arc<K>, context: Arc<C>| {
            let key = object_key(object.as_ref());
            let generation = object.meta().generation;
            let id = uuid::Uuid::new_v4().to_string();
            // The span is made when the pass is first polled, not here: entered and left under the dispatcher
            // that polls it (a tracing registry closes a span through whichever dispatcher is the default).
            let (namespace, name) = (object.meta().namespace.clone(), object.meta().name.clone());
            let pass = reconcile(object, context);
            let meter = meter.clone();
            async move {
                let span = meter.span(namespace.as_deref(), name.as_deref(), &id);
                async {
                    let running = meter.started(&id, &key, generation);
                    let (outcome, asked) = look_again::noted(pass).await;
                    let result = match &outcome {
                        Ok(action) => meter.result_of(action, asked),
                        Err(error) => {
                            tracing::debug!(error = %cause_chain(error), "reconcile failed");
                            lock(&meter.metrics.reconcilers)
                                .get_mut(meter.controller)
                                .map(|r| r.failed.insert(key.clone(), id.clone()));
                            "error"
                        }
                    };
                    let look_again = match &outcome {
                        Ok(action) if *action != Action::await_change() => asked,
                        _ => None,
                    };
                    running.ended(result, look_again);
                    outcome
                }
                .instrument(span)
                .await
            }
            .boxed()
        }
    }

    /// `policy`, metered: counts the retry and when it is due, logging in the span of the pass that failed.
    pub fn error_policy<K, C, E, P>(
        &self,
        policy: P,
    ) -> impl Fn(Arc<K>, &E, Arc<C>) -> Action + use<K, C, E, P>
    where
        K: kube::Resource<DynamicType = ()>,
        P: Fn(Arc<K>, &E, Arc<C>) -> Action,
    {
        let meter = self.clone();
        move |object: Arc<K>, error: &E, context: Arc<C>| {
            let key = object_key(object.as_ref());
            let id = lock(&meter.metrics.reconcilers)
                .get_mut(meter.controller)
                .and_then(|r| r.failed.remove(&key))
                .unwrap_or_default();
            let span = meter.span(
                object.meta().namespace.as_deref(),
                object.meta().name.as_deref(),
                &id,
            );
            let (action, asked) =
                span.in_scope(|| look_again::noted_sync(|| policy(object, error, context)));
            meter
                .metrics
                .retries
                .get_or_create(&meter.queue_labels())
                .inc();
            if let Some(after) = asked {
                meter.schedule(&key, after);
            }
            action
        }
    }

    /// The span of pass `id` over `object`: what groups its log lines.
    fn span(&self, namespace: Option<&str>, name: Option<&str>, id: &str) -> tracing::Span {
        tracing::info_span!(
            "reconcile",
            controller = self.controller,
            family = self.family.as_str(),
            namespace = namespace.unwrap_or(""),
            name = name.unwrap_or(""),
            reconcile_id = id,
        )
    }

    fn queue_labels(&self) -> QueueLabels {
        QueueLabels {
            name: self.controller,
            controller: self.controller,
        }
    }

    /// controller-runtime's result of a pass that returned `action`, having asked to look again after `asked`: a
    /// resync is a success (controller-runtime's SyncPeriod is no requeue), a sooner look-again a `requeue_after`.
    fn result_of(&self, action: &Action, asked: Option<Duration>) -> &'static str {
        let resync_floor = self.resync.mul_f64(1.0 - JITTER);
        match asked {
            Some(after) if *action != Action::await_change() && after < resync_floor => {
                "requeue_after"
            }
            _ => "success",
        }
    }

    /// A pass over `key` starts.
    fn started(&self, id: &str, key: &str, generation: Option<i64>) -> Running {
        let now = Instant::now();
        let labels = self.queue_labels();
        let started = lock(&self.metrics.reconcilers)
            .get_mut(self.controller)
            .map(|r| r.queue.start(id, key, generation, now));
        if let Some(started) = started {
            if started.added {
                self.metrics.adds.get_or_create(&labels).inc();
            }
            if let Some(waited) = started.waited {
                self.metrics
                    .queue_duration
                    .get_or_create(&labels)
                    .observe(waited.as_secs_f64());
            }
        }
        self.metrics
            .active
            .get_or_create(&ControllerLabels {
                controller: self.controller,
            })
            .inc();
        Running {
            meter: self.clone(),
            id: id.to_owned(),
            key: key.to_owned(),
            started: now,
        }
    }

    fn schedule(&self, key: &str, after: Duration) {
        if let Some(reconciler) = lock(&self.metrics.reconcilers).get_mut(self.controller) {
            reconciler.queue.schedule(key, Instant::now() + after);
        }
    }
}

/// A pass in flight: counted as an active worker until it ends or is dropped (a shutdown abandons passes).
struct Running {
    meter: Meter,
    id: String,
    key: String,
    started: Instant,
}

impl Running {
    /// The pass ended with `result`, asking to be looked at again after `look_again`.
    fn ended(self, result: &'static str, look_again: Option<Duration>) {
        let meter = &self.meter;
        let metrics = &meter.metrics;
        let elapsed = self.started.elapsed().as_secs_f64();
        let controller = ControllerLabels {
            controller: meter.controller,
        };
        metrics
            .reconciles
            .get_or_create(&ResultLabels {
                controller: meter.controller,
                result,
            })
            .inc();
        if result == "error" {
            metrics.errors.get_or_create(&controller).inc();
        }
        metrics
            .reconcile_time
            .get_or_create(&controller)
            .observe(elapsed);
        metrics
            .work_duration
            .get_or_create(&meter.queue_labels())
            .observe(elapsed);
        {
            let mut totals = lock(&metrics.totals);
            let (ended, failed) = totals.entry(meter.family).or_default();
            *ended += 1;
            *failed += u64::from(result == "error");
        }
        if let Some(after) = look_again {
            meter.schedule(&self.key, after);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let meter = &self.meter;
        meter
            .metrics
            .active
            .get_or_create(&ControllerLabels {
                controller: meter.controller,
            })
            .dec();
        if let Some(reconciler) = lock(&meter.metrics.reconcilers).get_mut(meter.controller) {
            reconciler.queue.finish(&self.id, Instant::now());
        }
    }
}
