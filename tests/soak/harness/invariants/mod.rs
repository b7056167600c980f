//! Invariants checked continuously from the cluster, through watches of every kind the engine writes:
//!
//! - no engine writes outside its term ([`fencing`]);
//! - no two live pods for one purpose, and no more unfinished installers for a rolling Shim than its `maxUpdate`
//!   ([`pods`]);
//! - an object's resourceVersion never goes back, across watch restarts and API server restarts: each revision a
//!   watch delivers is newer than the last one seen of that object, and a relist shows it no older.
//!
//! The watches run on the soak's own client and go through everything the engines go through: closed watches,
//! relists, API server restarts.

mod fencing;
mod pods;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kmm_api::day0::{MachineConfig, ModuleDay0};
use kmm_api::imagecache::ImageCache;
use kmm_api::kmm::{Module, ModuleBuildSignConfig, ModuleImagesConfig, NodeModulesConfig};
use kmm_api::lease::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_api::shim::Shim;
use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event as Change};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use fencing::Fencing;
use pods::Pods;

/// How many violations are kept with their detail; the rest are counted.
const KEPT: usize = 200;

/// Violations found, by invariant, with the detail of the first [`KEPT`].
#[derive(Default)]
pub(super) struct Violations {
    by_invariant: BTreeMap<&'static str, u64>,
    details: Vec<String>,
}

impl Violations {
    /// Record one.
    pub(super) fn record(&mut self, invariant: &'static str, detail: String) {
        *self.by_invariant.entry(invariant).or_default() += 1;
        if self.details.len() < KEPT {
            self.details.push(format!("{invariant}: {detail}"));
        }
    }

    /// Add another's.
    pub(super) fn absorb(&mut self, other: Violations) {
        for (invariant, count) in other.by_invariant {
            *self.by_invariant.entry(invariant).or_default() += count;
        }
        let room = KEPT.saturating_sub(self.details.len());
        self.details.extend(other.details.into_iter().take(room));
    }

    /// How many in all.
    pub(super) fn count(&self) -> u64 {
        self.by_invariant.values().sum()
    }

    /// The details kept.
    pub(super) fn details(&self) -> &[String] {
        &self.details
    }

    /// Counts by invariant.
    pub(super) fn by_invariant(&self) -> &BTreeMap<&'static str, u64> {
        &self.by_invariant
    }
}

/// What the watches found.
#[derive(Default)]
pub(super) struct State {
    pub violations: Violations,
    fencing: Fencing,
    pods: Pods,
    /// The newest revision seen of each object (by uid), with what it is.
    versions: HashMap<String, (u64, String)>,
    /// Watch errors (the watches retry them), counted.
    pub watch_errors: u64,
}

/// What the invariants say at the end.
pub(super) struct Summary {
    pub violations: Violations,
    pub writes_judged: BTreeMap<String, u64>,
    pub writes_unjudged: u64,
    pub handovers: u64,
    pub most_installing: BTreeMap<String, usize>,
    pub pods_seen: BTreeMap<&'static str, u64>,
    pub watch_errors: u64,
}

impl State {
    /// The resourceVersion of a revision must be newer than the last seen of the object (no older, when listed).
    fn version(&mut self, kind: &str, meta: &ObjectMeta, revision: u64, listed: bool) {
        let Some(uid) = meta.uid.clone() else {
            return;
        };
        let what = format!(
            "{kind} {}{}",
            meta.namespace
                .as_deref()
                .map(|n| format!("{n}/"))
                .unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        );
        if let Some((last, _)) = self.versions.get(&uid) {
            let backwards = if listed {
                revision < *last
            } else {
                revision <= *last
            };
            if backwards {
                self.violations.record(
                    "resourceVersion went back",
                    format!("{what}: revision {revision} seen after revision {last}"),
                );
            }
        }
        let newest = self
            .versions
            .get(&uid)
            .map_or(revision, |(last, _)| revision.max(*last));
        self.versions.insert(uid, (newest, what));
    }
}

/// The watches and what they found.
pub(super) struct Invariants {
    state: Arc<Mutex<State>>,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

fn revision(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// How a revision reached a watch.
#[derive(Clone, Copy)]
enum Seen {
    /// A watch event: the write itself, right after `after` on this watch.
    Watched { after: u64 },
    /// A relist: written at some point after `after`, the last revision the watch saw before relisting.
    Listed { after: u64 },
}

impl Invariants {
    /// Start watching with `client`.
    pub(super) fn start(client: &kube::Client) -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let stop = CancellationToken::new();
        let mut tasks = vec![
            tokio::spawn(follow_lease(client.clone(), state.clone(), stop.clone())),
            tokio::spawn(follow_pods(client.clone(), state.clone(), stop.clone())),
        ];
        let kinds = [
            ("Module", ApiResource::erase::<Module>(&())),
            (
                "ModuleImagesConfig",
                ApiResource::erase::<ModuleImagesConfig>(&()),
            ),
            (
                "ModuleBuildSignConfig",
                ApiResource::erase::<ModuleBuildSignConfig>(&()),
            ),
            (
                "NodeModulesConfig",
                ApiResource::erase::<NodeModulesConfig>(&()),
            ),
            ("ModuleDay0", ApiResource::erase::<ModuleDay0>(&())),
            ("Shim", ApiResource::erase::<Shim>(&())),
            ("ImageCache", ApiResource::erase::<ImageCache>(&())),
            ("MachineConfig", ApiResource::erase::<MachineConfig>(&())),
            ("RuntimeClass", ApiResource::erase::<RuntimeClass>(&())),
            ("Node", ApiResource::erase::<Node>(&())),
            ("Event", ApiResource::erase::<Event>(&())),
        ];
        for (kind, resource) in kinds {
            let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
            tasks.push(tokio::spawn(follow(kind, api, state.clone(), stop.clone())));
        }
        Self { state, stop, tasks }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("the invariants lock")
    }

    /// Violations so far.
    pub(super) fn violations(&self) -> u64 {
        self.lock().violations.count()
    }

    /// Stop watching once the Lease watch has seen the Lease as it is now, judge every write left, and say what was
    /// found.
    pub(super) async fn finish(self, client: &kube::Client) -> Summary {
        let leases: Api<Lease> = Api::namespaced(client.clone(), DEFAULT_LEASE_NAMESPACE);
        if let Ok(Some(lease)) = leases.get_opt(DEFAULT_LEASE_NAME).await {
            let newest = revision(&lease.metadata);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while self.lock().fencing_seen() < newest && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        self.stop.cancel();
        for task in self.tasks {
            let _ = task.await;
        }
        let mut state = Arc::try_unwrap(self.state)
            .unwrap_or_else(|_| panic!("every watch has ended"))
            .into_inner()
            .expect("the invariants lock");
        let State {
            mut violations,
            mut fencing,
            pods,
            watch_errors,
            ..
        } = std::mem::take(&mut state);
        fencing.judge(true, &mut violations);
        Summary {
            violations,
            writes_judged: fencing.judged,
            writes_unjudged: fencing.unjudged,
            handovers: fencing.handovers,
            most_installing: pods.most_installing,
            pods_seen: pods.seen,
            watch_errors,
        }
    }
}

impl State {
    fn fencing_seen(&self) -> u64 {
        self.fencing.seen()
    }
}

/// Follow the engine Lease: its terms.
async fn follow_lease(client: kube::Client, state: Arc<Mutex<State>>, stop: CancellationToken) {
    let api: Api<Lease> = Api::namespaced(client, DEFAULT_LEASE_NAMESPACE);
    let config = watcher::Config::default().fields(&format!("metadata.name={DEFAULT_LEASE_NAME}"));
    let mut changes = watcher::watcher(api, config).default_backoff().boxed();
    let mut relisting = false;
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = changes.next() => next,
        };
        let mut state = state.lock().expect("the invariants lock");
        match next {
            Some(Ok(Change::Init)) => relisting = true,
            Some(Ok(Change::InitDone)) => relisting = false,
            Some(Ok(Change::Apply(lease) | Change::InitApply(lease))) => {
                let rv = revision(&lease.metadata);
                state.version("Lease", &lease.metadata, rv, relisting);
                let spec = lease.spec.unwrap_or_default();
                let holder = spec.holder_identity.filter(|h| !h.is_empty());
                let transitions = spec.lease_transitions.unwrap_or(0);
                let State {
                    fencing,
                    violations,
                    ..
                } = &mut *state;
                fencing.lease(rv, holder, transitions, relisting);
                fencing.judge(false, violations);
            }
            Some(Ok(Change::Delete(_))) => {}
            Some(Err(_)) => state.watch_errors += 1,
            None => return,
        }
    }
}

/// Follow every pod: fencing, versions and the pod invariants.
async fn follow_pods(client: kube::Client, state: Arc<Mutex<State>>, stop: CancellationToken) {
    let api: Api<Pod> = Api::all(client);
    let mut changes = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut last = 0;
    let mut relist_after = None;
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = changes.next() => next,
        };
        let mut guard = state.lock().expect("the invariants lock");
        let state = &mut *guard;
        match next {
            Some(Ok(Change::Init)) => {
                relist_after = Some(last);
                state.pods.relist();
            }
            Some(Ok(Change::InitDone)) => {
                relist_after = None;
                state.pods.relisted(last, &mut state.violations);
            }
            Some(Ok(Change::Apply(pod) | Change::InitApply(pod))) => {
                let rv = revision(&pod.metadata);
                let seen = match relist_after {
                    Some(after) => Seen::Listed { after },
                    None => Seen::Watched {
                        after: rv.saturating_sub(1),
                    },
                };
                state.pods.seen(&pod, rv, &mut state.violations);
                record(state, "Pod", &pod.metadata, None, rv, seen);
                last = last.max(rv);
            }
            Some(Ok(Change::Delete(pod))) => {
                let rv = revision(&pod.metadata);
                state.pods.deleted(&pod, rv, &mut state.violations);
                state.fencing.forget(&pod.metadata);
                if let Some(uid) = &pod.metadata.uid {
                    state.versions.remove(uid);
                }
                last = last.max(rv);
            }
            Some(Err(_)) => state.watch_errors += 1,
            None => return,
        }
    }
}

/// Record a revision of an object for the version and fencing invariants.
fn record(
    state: &mut State,
    kind: &str,
    meta: &ObjectMeta,
    event: Option<&serde_json::Value>,
    rv: u64,
    seen: Seen,
) {
    let (after, listed) = match seen {
        Seen::Watched { after } => (after, false),
        Seen::Listed { after } => (after, true),
    };
    // A relisted revision the watch saw before the relist was judged then.
    if listed && rv <= after {
        if event.is_none() {
            state.version(kind, meta, rv, true);
        }
        return;
    }
    match event {
        Some(body) => state.fencing.event(meta, body, rv, after),
        None => {
            state.version(kind, meta, rv, listed);
            state.fencing.object(kind, meta, rv, after);
        }
    }
}

/// Follow one kind: fencing and versions (Events: fencing only; they are many and written once).
async fn follow(
    kind: &'static str,
    api: Api<DynamicObject>,
    state: Arc<Mutex<State>>,
    stop: CancellationToken,
) {
    let mut changes = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut last = 0;
    let mut relist_after = None;
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = changes.next() => next,
        };
        let mut state = state.lock().expect("the invariants lock");
        match next {
            Some(Ok(Change::Init)) => relist_after = Some(last),
            Some(Ok(Change::InitDone)) => relist_after = None,
            Some(Ok(Change::Apply(object) | Change::InitApply(object))) => {
                let rv = revision(&object.metadata);
                let seen = match relist_after {
                    Some(after) => Seen::Listed { after },
                    None => Seen::Watched {
                        after: rv.saturating_sub(1),
                    },
                };
                if kind == "Shim" {
                    state.pods.shim(
                        object.metadata.name.as_deref().unwrap_or_default(),
                        max_update(&object.data),
                    );
                }
                let event = (kind == "Event").then_some(&object.data);
                record(&mut state, kind, &object.metadata, event, rv, seen);
                last = last.max(rv);
            }
            Some(Ok(Change::Delete(object))) => {
                state.fencing.forget(&object.metadata);
                if let Some(uid) = &object.metadata.uid {
                    state.versions.remove(uid);
                }
                last = last.max(revision(&object.metadata));
            }
            Some(Err(_)) => state.watch_errors += 1,
            None => return,
        }
    }
}

/// `maxUpdate` of a rolling Shim, when it is a count.
fn max_update(shim: &serde_json::Value) -> Option<usize> {
    let strategy = shim.pointer("/spec/rolloutStrategy")?;
    if strategy.get("type")?.as_str()? != "rolling" {
        return None;
    }
    let count = strategy.pointer("/rolling/maxUpdate")?.as_u64()?;
    usize::try_from(count.max(1)).ok()
}
