//! The engine's metrics, in the Prometheus text format under the names and labels controller-runtime uses, so the
//! dashboards and alerts written for Go operators work on this engine unchanged; and the engine's own counters
//! under `kmm_tui_engine_`.
//!
//! kube's `Controller` keeps its scheduler to itself, so the `workqueue_*` figures are measured around it: every pass
//! runs through a [`Meter`], which sees each pass start and end and the look-again it asks for, and each
//! reconciler's cache is sampled for objects whose spec no pass has seen yet ([`queue`] says what counts as
//! waiting). `controller` and the workqueue's `name` are the reconciled kind in lower case, as controller-runtime
//! names its controllers.
//!
//! The counters live as long as the process, across terms of leadership; what each reconciler waits on is
//! forgotten when its reconcilers stop, and so is the readiness of their caches.

pub mod activity;
mod look_again;
mod meter;
mod queue;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::watcher;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family as LabelFamily;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::future::Future;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use look_again::requeue;
pub use meter::Meter;

use crate::runtime::family::Family;
use activity::{Activity, FamilyActivity, WINDOW};
use queue::{Listing, Queue};

/// The content type of a scrape.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How often each reconciler's cache is compared with what its passes saw.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(2);

/// controller-runtime's buckets of `controller_runtime_reconcile_time_seconds`, in seconds.
const RECONCILE_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The results controller-runtime counts passes by.
pub const RESULTS: [&str; 4] = ["success", "error", "requeue", "requeue_after"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: &'static str,
    controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FamilyLabels {
    family: &'static str,
}

/// A gauge holding seconds.
type Seconds = Gauge<f64, std::sync::atomic::AtomicU64>;

/// The queue gauges of one scrape, built afresh each time so a reconciler that is gone drops out.
#[derive(Default)]
struct QueueGauges {
    /// Objects queued, per queue.
    depth: LabelFamily<QueueLabels, Gauge>,
    /// How long the longest running pass has run, per queue.
    longest: LabelFamily<QueueLabels, Seconds>,
    /// Work in progress not yet counted in the work duration, per queue.
    unfinished: LabelFamily<QueueLabels, Seconds>,
    /// Objects waiting for a pass, per family.
    waiting: LabelFamily<FamilyLabels, Gauge>,
    /// How long the object waiting longest has waited, per family.
    oldest: LabelFamily<FamilyLabels, Seconds>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS)
}

/// controller-runtime's workqueue buckets: 10 ns to 1,000 s, by tens.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

/// Whether a reconciler's cache holds its watch's first list, as its watch stream tells: never asked of kube's
/// `Store::wait_until_ready`, whose single waker belongs to the controller's runner (a second waiter would take it,
/// and the runner would never start).
#[derive(Clone, Debug, Default)]
pub struct Listed(Arc<AtomicBool>);

impl Listed {
    /// `events`, marking the cache listed at its first `InitDone`.
    pub fn watching<K, E, S>(
        &self,
        events: S,
    ) -> impl Stream<Item = Result<watcher::Event<K>, E>> + use<K, E, S>
    where
        S: Stream<Item = Result<watcher::Event<K>, E>>,
    {
        let flag = self.0.clone();
        events.inspect(move |event| {
            if matches!(event, Ok(watcher::Event::InitDone)) {
                flag.store(true, Ordering::SeqCst);
            }
        })
    }

    /// Marked listed once `first_list` returns `Ok`: for caches the engine's shared watches fill.
    pub fn after<E>(first_list: impl Future<Output = Result<(), E>> + Send + 'static) -> Self {
        let listed = Self::default();
        let flag = listed.0.clone();
        tokio::spawn(async move {
            if first_list.await.is_ok() {
                flag.store(true, Ordering::SeqCst);
            }
        });
        listed
    }

    fn done(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// One running reconciler: its family, its cache, whether that cache has listed, and what it owes.
struct Reconciler {
    family: Family,
    listing: Box<dyn Fn() -> Listing + Send + Sync>,
    listed: Listed,
    queue: Queue,
    /// The reconcile id of each object's last failed pass, for its error policy to log under.
    failed: std::collections::HashMap<String, String>,
}

/// Passes ended and failed per family since the process started, at one moment: what windows are measured from.
#[derive(Clone, Debug)]
struct Totals {
    at: Instant,
    per_family: BTreeMap<Family, (u64, u64)>,
}

/// The engine's metrics. One per engine; cloning the `Arc` shares it with the endpoint that serves it.
pub struct EngineMetrics {
    reconciles: LabelFamily<ResultLabels, Counter>,
    errors: LabelFamily<ControllerLabels, Counter>,
    reconcile_time: LabelFamily<ControllerLabels, Histogram, fn() -> Histogram>,
    active: LabelFamily<ControllerLabels, Gauge>,
    max_concurrent: LabelFamily<ControllerLabels, Gauge>,
    adds: LabelFamily<QueueLabels, Counter>,
    retries: LabelFamily<QueueLabels, Counter>,
    queue_duration: LabelFamily<QueueLabels, Histogram, fn() -> Histogram>,
    work_duration: LabelFamily<QueueLabels, Histogram, fn() -> Histogram>,
    leading: LabelFamily<LeaseLabels, Gauge>,
    watch_restarts: LabelFamily<KindLabels, Counter>,
    rollout_batches: LabelFamily<FamilyLabels, Counter>,
    pulls_failed: LabelFamily<FamilyLabels, Counter>,
    fenced: Mutex<Counter>,
    is_leading: AtomicBool,
    reconcilers: Mutex<BTreeMap<&'static str, Reconciler>>,
    totals: Mutex<BTreeMap<Family, (u64, u64)>>,
    history: Mutex<VecDeque<Totals>>,
}

impl Default for EngineMetrics {
    fn default() -> Self {
        Self {
            reconciles: LabelFamily::default(),
            errors: LabelFamily::default(),
            reconcile_time: LabelFamily::new_with_constructor(reconcile_histogram),
            active: LabelFamily::default(),
            max_concurrent: LabelFamily::default(),
            adds: LabelFamily::default(),
            retries: LabelFamily::default(),
            queue_duration: LabelFamily::new_with_constructor(queue_histogram),
            work_duration: LabelFamily::new_with_constructor(queue_histogram),
            leading: LabelFamily::default(),
            watch_restarts: LabelFamily::default(),
            rollout_batches: LabelFamily::default(),
            pulls_failed: LabelFamily::default(),
            fenced: Mutex::default(),
            is_leading: AtomicBool::new(false),
            reconcilers: Mutex::default(),
            totals: Mutex::default(),
            history: Mutex::default(),
        }
    }
}

impl std::fmt::Debug for EngineMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineMetrics")
            .field("leading", &self.is_leading.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl EngineMetrics {
    /// Meter the reconciler of `controller` (the reconciled kind in lower case) of `family`, running at most
    /// `concurrency` passes at once over the objects of `store`, whose first list `listed` tells. A reconciler
    /// registered again replaces the one before (a new term, a new set of families).
    pub fn meter<K>(
        self: &Arc<Self>,
        controller: &'static str,
        family: Family,
        concurrency: u16,
        (store, listed): (kube::runtime::reflector::Store<K>, Listed),
        resync: Duration,
    ) -> Meter
    where
        K: kube::Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    {
        let labels = ControllerLabels { controller };
        for result in RESULTS {
            self.reconciles
                .get_or_create_owned(&ResultLabels { controller, result });
        }
        self.errors.get_or_create_owned(&labels);
        let family_labels = FamilyLabels {
            family: family.as_str(),
        };
        self.rollout_batches.get_or_create_owned(&family_labels);
        self.pulls_failed.get_or_create_owned(&family_labels);
        self.reconcile_time.get_or_create_owned(&labels);
        self.active.get_or_create_owned(&labels);
        self.max_concurrent
            .get_or_create(&labels)
            .set(i64::from(concurrency));
        let queue = QueueLabels {
            name: controller,
            controller,
        };
        self.adds.get_or_create_owned(&queue);
        self.retries.get_or_create_owned(&queue);
        self.queue_duration.get_or_create_owned(&queue);
        self.work_duration.get_or_create_owned(&queue);
        let listing = Box::new(move || {
            store
                .state()
                .iter()
                .map(|object| (object_key(object.as_ref()), object.meta().generation))
                .collect()
        });
        lock(&self.reconcilers).insert(
            controller,
            Reconciler {
                family,
                listing,
                listed,
                queue: Queue::default(),
                failed: std::collections::HashMap::new(),
            },
        );
        Meter::new(self.clone(), controller, family, resync)
    }

    /// Forget every reconciler: they stopped (the term ended, or the families that run changed).
    pub fn reconcilers_stopped(&self) {
        lock(&self.reconcilers).clear();
    }

    /// Record whether this engine holds the Lease `lease_name`. A new term starts the activity window afresh, from
    /// the counts at its start.
    pub fn set_leading(&self, lease_name: &str, leading: bool) {
        self.leading
            .get_or_create(&LeaseLabels {
                name: lease_name.to_owned(),
            })
            .set(i64::from(leading));
        self.is_leading.store(leading, Ordering::SeqCst);
        if leading {
            let start = Totals {
                at: Instant::now(),
                per_family: lock(&self.totals).clone(),
            };
            let mut history = lock(&self.history);
            history.clear();
            history.push_back(start);
        }
    }

    /// Whether this engine holds the Lease.
    pub fn leading(&self) -> bool {
        self.is_leading.load(Ordering::SeqCst)
    }

    /// The running reconcilers whose cache has not listed yet: the acting engine is ready once it acts on the
    /// whole cluster, not on the part its watches have delivered so far.
    pub fn unsynced(&self) -> Vec<&'static str> {
        lock(&self.reconcilers)
            .iter()
            .filter(|(_, r)| !r.listed.done())
            .map(|(controller, _)| *controller)
            .collect()
    }

    /// Count the writes a fence refuses, through its counter (see `Fence::refused`).
    pub fn count_fenced(&self, refused: Counter) {
        *lock(&self.fenced) = refused;
    }

    /// A shared watch of `kind` starts: its restarts are counted from zero.
    pub fn watch_started(&self, kind: &str) {
        self.watch_restarts.get_or_create_owned(&KindLabels {
            kind: kind.to_owned(),
        });
    }

    /// A shared watch of `kind` failed and starts again.
    pub fn watch_restarted(&self, kind: &str) {
        self.watch_restarts
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .inc();
    }

    /// A rollout of `family` started a batch of nodes.
    pub fn rollout_batch_started(&self, family: Family) {
        self.rollout_batches
            .get_or_create(&FamilyLabels {
                family: family.as_str(),
            })
            .inc();
    }

    /// A pull of `family` failed.
    pub fn pull_failed(&self, family: Family) {
        self.pulls_failed
            .get_or_create(&FamilyLabels {
                family: family.as_str(),
            })
            .inc();
    }

    /// Compare every reconciler's cache with what its passes saw, every [`SAMPLE_PERIOD`] until `stop`.
    pub async fn sample_until(self: Arc<Self>, stop: CancellationToken) {
        let mut ticker = tokio::time::interval(SAMPLE_PERIOD);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticker.tick() => self.sample(),
            }
        }
    }

    /// Compare every reconciler's cache with what its passes saw now.
    fn sample(&self) {
        let now = Instant::now();
        let mut reconcilers = lock(&self.reconcilers);
        for (controller, reconciler) in reconcilers.iter_mut() {
            let added = reconciler.queue.sample((reconciler.listing)(), now);
            if added > 0 {
                self.adds
                    .get_or_create(&QueueLabels {
                        name: controller,
                        controller,
                    })
                    .inc_by(added);
            }
        }
    }

    /// What the engine did lately, for its Lease (see [`activity`]).
    pub fn activity(&self) -> Activity {
        self.sample();
        let now = Instant::now();
        let current = Totals {
            at: now,
            per_family: lock(&self.totals).clone(),
        };
        let (window_start, minute_start) = {
            let mut history = lock(&self.history);
            history.push_back(current.clone());
            // Keep the newest snapshot at least a window old as the window's start.
            while history.len() > 1 && now.duration_since(history[1].at) >= WINDOW {
                history.pop_front();
            }
            let window_start = history.front().cloned().unwrap_or_else(|| current.clone());
            let minute_start = history
                .iter()
                .rev()
                .find(|t| now.duration_since(t.at) >= Duration::from_secs(60))
                .cloned()
                .unwrap_or_else(|| window_start.clone());
            (window_start, minute_start)
        };
        let mut families: BTreeMap<String, FamilyActivity> = BTreeMap::new();
        let since = |start: &Totals, family: &Family| {
            let (ended, failed) = current.per_family.get(family).copied().unwrap_or_default();
            let (ended_before, failed_before) =
                start.per_family.get(family).copied().unwrap_or_default();
            (
                ended.saturating_sub(ended_before),
                failed.saturating_sub(failed_before),
            )
        };
        for reconciler in lock(&self.reconcilers).values() {
            let entry = families
                .entry(reconciler.family.as_str().to_owned())
                .or_default();
            entry.waiting += reconciler.queue.depth() as u64;
            entry.oldest_waiting_seconds = entry
                .oldest_waiting_seconds
                .max(reconciler.queue.oldest_waiting(now).as_secs());
        }
        for family in current.per_family.keys() {
            let entry = families.entry(family.as_str().to_owned()).or_default();
            (entry.reconciles, entry.errors) = since(&window_start, family);
            entry.last_minute = since(&minute_start, family).0;
        }
        Activity {
            window_seconds: now
                .duration_since(window_start.at)
                .as_secs()
                .min(WINDOW.as_secs()),
            families,
        }
    }

    /// The scrape: every counter, and what each reconciler waits on and runs now. It is one flat list of the
    /// metrics in the order they are scraped, the upstream controller-runtime names first, so it stays long.
    pub fn encode(&self) -> String {
        self.sample();
        let now = Instant::now();
        let mut registry = Registry::default();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            self.reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            self.errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            self.reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            self.active.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            self.max_concurrent.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.adds.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            self.retries.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            self.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            self.work_duration.clone(),
        );
        let QueueGauges {
            depth,
            longest,
            unfinished,
            waiting,
            oldest,
        } = self.queue_gauges(now);
        registry.register("workqueue_depth", "Current depth of workqueue", depth);
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            longest,
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by \
             work_duration. Large values indicate stuck threads",
            unfinished,
        );
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 \
             indicates master. 'name' is the string used to identify the lease. Please make sure to group by name",
            self.leading.clone(),
        );
        registry.register(
            "kmm_tui_engine_objects_waiting",
            "Objects waiting for a pass (a spec no pass has seen, or a look-again come due), per family",
            waiting,
        );
        registry.register(
            "kmm_tui_engine_oldest_waiting_seconds",
            "How long the object waiting longest for a pass has waited, per family",
            oldest,
        );
        registry.register(
            "kmm_tui_engine_watch_restarts",
            "Shared watches that failed and started again, per kind",
            self.watch_restarts.clone(),
        );
        registry.register(
            "kmm_tui_engine_fenced_writes_refused",
            "Writes refused because this engine did not hold the Lease when it sent them",
            lock(&self.fenced).clone(),
        );
        registry.register(
            "kmm_tui_engine_rollout_batches_started",
            "Batches of nodes a rollout started, per family",
            self.rollout_batches.clone(),
        );
        registry.register(
            "kmm_tui_engine_pulls_failed",
            "Image pulls that failed, per family",
            self.pulls_failed.clone(),
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry)
            .expect("writing to a String cannot fail");
        text
    }

    /// What each reconciler's queue holds and runs now, read at scrape time: per queue, and summed (waiting) or
    /// maxed (oldest) per family, as a person asks "how far behind is the Shim engine" rather than per queue.
    fn queue_gauges(&self, now: Instant) -> QueueGauges {
        let gauges = QueueGauges::default();
        for (controller, reconciler) in lock(&self.reconcilers).iter() {
            let labels = QueueLabels {
                name: controller,
                controller,
            };
            let queued = i64::try_from(reconciler.queue.depth()).unwrap_or(i64::MAX);
            gauges.depth.get_or_create(&labels).set(queued);
            gauges
                .longest
                .get_or_create(&labels)
                .set(reconciler.queue.longest_running(now).as_secs_f64());
            gauges
                .unfinished
                .get_or_create(&labels)
                .set(reconciler.queue.unfinished(now).as_secs_f64());
            let family = FamilyLabels {
                family: reconciler.family.as_str(),
            };
            gauges.waiting.get_or_create(&family).inc_by(queued);
            let oldest_now = reconciler.queue.oldest_waiting(now).as_secs_f64();
            let gauge = gauges.oldest.get_or_create(&family);
            if oldest_now > gauge.get() {
                gauge.set(oldest_now);
            }
        }
        gauges
    }
}

/// An object's key in the metrics: `namespace/name`, or `name` when cluster-scoped.
fn object_key<K: kube::Resource>(object: &K) -> String {
    let meta = object.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kmm_api::kmm::NodeModulesConfig;
    use kube::runtime::controller::Action;

    #[derive(Debug, thiserror::Error)]
    #[error("the pass failed")]
    struct Failed;

    fn nmc(name: &str) -> Arc<NodeModulesConfig> {
        let mut nmc = NodeModulesConfig::new(name, Default::default());
        nmc.metadata.generation = Some(1);
        Arc::new(nmc)
    }

    #[tokio::test(start_paused = true)]
    async fn passes_are_counted_by_result_and_the_activity_covers_the_window() {
        let metrics = Arc::new(EngineMetrics::default());
        let (store, _writer) = kube::runtime::reflector::store::<NodeModulesConfig>();
        let resync = Duration::from_secs(600);
        let meter = metrics.meter(
            "nodemodulesconfig",
            Family::Kmm,
            64,
            (store, Listed::default()),
            resync,
        );
        metrics.set_leading("kmm-tui-engine", true);
        let mut reconcile =
            meter.reconciler(|_: Arc<NodeModulesConfig>, soon: Arc<bool>| async move {
                if *soon {
                    Ok(requeue(Duration::from_secs(5)))
                } else {
                    Ok::<_, Failed>(requeue(resync))
                }
            });
        assert!(reconcile(nmc("a"), Arc::new(false)).await.is_ok());
        assert!(reconcile(nmc("b"), Arc::new(true)).await.is_ok());
        let mut failing = meter
            .reconciler(|_: Arc<NodeModulesConfig>, _: Arc<()>| async { Err::<Action, _>(Failed) });
        assert!(failing(nmc("c"), Arc::new(())).await.is_err());
        let policy = meter.error_policy(|_: Arc<NodeModulesConfig>, _: &Failed, _: Arc<()>| {
            requeue(Duration::from_secs(1))
        });
        policy(nmc("c"), &Failed, Arc::new(()));

        let text = metrics.encode();
        for (result, count) in [
            ("success", 1),
            ("requeue_after", 1),
            ("error", 1),
            ("requeue", 0),
        ] {
            let series = format!(
                r#"controller_runtime_reconcile_total{{controller="nodemodulesconfig",result="{result}"}} {count}"#
            );
            assert!(text.contains(&series), "{series}\n{text}");
        }
        assert!(text.contains(
            r#"controller_runtime_reconcile_errors_total{controller="nodemodulesconfig"} 1"#
        ));
        assert!(text.contains(
            r#"workqueue_retries_total{name="nodemodulesconfig",controller="nodemodulesconfig"} 1"#
        ));
        assert!(text.contains(r#"leader_election_master_status{name="kmm-tui-engine"} 1"#));
        assert!(text.contains(
            r#"controller_runtime_max_concurrent_reconciles{controller="nodemodulesconfig"} 64"#
        ));

        let activity = metrics.activity();
        let kmm = &activity.families["kmm"];
        assert_eq!((kmm.reconciles, kmm.errors, kmm.last_minute), (3, 1, 3));
        // Two minutes on, the last minute is quiet while the window still holds the passes.
        tokio::time::advance(Duration::from_secs(120)).await;
        let activity = metrics.activity();
        let kmm = &activity.families["kmm"];
        assert_eq!((kmm.reconciles, kmm.last_minute), (3, 0));
        assert_eq!(activity.window_seconds, 120);
        // Past the window, nothing is left of them.
        tokio::time::advance(WINDOW).await;
        metrics.activity();
        let activity = metrics.activity();
        assert_eq!(activity.families["kmm"].reconciles, 0);
        assert_eq!(activity.window_seconds, WINDOW.as_secs());
    }
}
