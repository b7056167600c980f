//! Set-up shared by the engine tests: an embedded cluster running a scenario from `tests/engine/scenarios`, an
//! engine that can be started, stopped and killed, and polling helpers on tokio time.
// Each test module uses a different part of this one.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::{Context, PodImages};
use tokio::task::JoinHandle;

pub(crate) use kmm_testing::{eventually, wait_for};
use tokio_util::sync::CancellationToken;

/// Path of a scenario file of these tests.
pub(crate) fn scenario_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/engine/scenarios")
        .join(file)
}

/// An embedded cluster simulating a scenario, and the engine acting on it.
pub(crate) struct Harness {
    /// The cluster; its client is what tests and engine use.
    pub cluster: EmbeddedCluster,
    engine: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Harness {
    /// Start the cluster for `tests/engine/scenarios/<file>` (or a built-in scenario name), without an engine.
    pub(crate) async fn start(scenario: &str) -> Self {
        Self::start_announcing(scenario, None).await
    }

    /// [`Harness::start`] on a cluster announcing Kubernetes `1.<minor>` (the current release when None), to see
    /// the engine meet an older cluster.
    pub(crate) async fn start_announcing(scenario: &str, minor: Option<u32>) -> Self {
        let path = scenario_path(scenario);
        let source = if path.exists() {
            path.to_string_lossy().into_owned()
        } else {
            scenario.to_owned()
        };
        let scenario = Scenario::load(&source).expect("the scenario loads");
        let cluster = EmbeddedCluster::start(EmbeddedOptions {
            scenario: Some(scenario),
            kubernetes_minor: minor,
            ..Default::default()
        })
        .await
        .expect("the embedded cluster starts");
        Self {
            cluster,
            engine: None,
        }
    }

    /// Start the cluster for `tests/engine/scenarios/<file>`, also served over HTTPS on a free loopback port with
    /// its kubeconfig written to `kubeconfig`, for kubectl.
    pub(crate) async fn start_serving(scenario: &str, kubeconfig: &std::path::Path) -> Self {
        let scenario =
            Scenario::load(&scenario_path(scenario).to_string_lossy()).expect("the scenario loads");
        let cluster = EmbeddedCluster::start(EmbeddedOptions {
            scenario: Some(scenario),
            listen: Some(([127, 0, 0, 1], 0).into()),
            kubeconfig_out: Some(kubeconfig.to_path_buf()),
            ..Default::default()
        })
        .await
        .expect("the embedded cluster starts");
        Self {
            cluster,
            engine: None,
        }
    }

    /// The cluster's client.
    pub(crate) fn client(&self) -> kube::Client {
        self.cluster.client()
    }

    /// A fresh engine context on this cluster, with the default pod images.
    pub(crate) fn context(&self) -> Arc<Context> {
        Arc::new(Context::new(
            self.client(),
            PodImages::default(),
            Some("test".to_owned()),
        ))
    }

    /// Start every reconciler (no leader election: the test is the only engine).
    pub(crate) fn start_engine(&mut self) {
        assert!(self.engine.is_none(), "the engine is already running");
        let stop = CancellationToken::new();
        let task = tokio::spawn(kmm_engine::run_reconcilers(self.context(), stop.clone()));
        self.engine = Some((stop, task));
    }

    /// Start every reconciler `context` runs, with its client and settings (a client presenting another identity, a
    /// shorter resync).
    pub(crate) fn start_context(&mut self, context: Context) {
        assert!(self.engine.is_none(), "the engine is already running");
        let stop = CancellationToken::new();
        let task = tokio::spawn(kmm_engine::run_reconcilers(Arc::new(context), stop.clone()));
        self.engine = Some((stop, task));
    }

    /// Start only the reconcilers `start` spawns (for tests of one reconciler).
    pub(crate) fn start_with<F, Fut>(&mut self, start: F)
    where
        F: FnOnce(Arc<Context>, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        assert!(self.engine.is_none(), "the engine is already running");
        let stop = CancellationToken::new();
        let task = tokio::spawn(start(self.context(), stop.clone()));
        self.engine = Some((stop, task));
    }

    /// Stop the engine gracefully and wait for it.
    pub(crate) async fn stop_engine(&mut self) {
        if let Some((stop, task)) = self.engine.take() {
            stop.cancel();
            let _ = task.await;
        }
    }

    /// Kill the engine wherever it is: its task is aborted mid-pass, as a crash would.
    pub(crate) async fn kill_engine(&mut self) {
        if let Some((_, task)) = self.engine.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// Stop the engine and the cluster.
    pub(crate) async fn shutdown(mut self) {
        self.kill_engine().await;
        self.cluster.shutdown().await;
    }
}

/// Every pod a label selector matched while it ran, and the most that were alive at once per key — for
/// assertions like "never two pull pods for one image".
pub(crate) struct PodRecorder {
    seen: Arc<std::sync::Mutex<PodRecord>>,
    task: JoinHandle<()>,
}

/// What a [`PodRecorder`] saw.
#[derive(Default, Clone, Debug)]
pub(crate) struct PodRecord {
    /// Names of every pod created, in order (a name used twice appears twice).
    pub created: Vec<String>,
    /// UIDs of every pod seen.
    pub uids: std::collections::BTreeSet<String>,
    /// Alive pods (UIDs) per key.
    pub alive: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
    /// The most pods alive at once for each key.
    pub most_alive: std::collections::BTreeMap<String, usize>,
}

impl PodRecorder {
    /// Watch pods in every namespace matching `selector`, keyed by `key(pod)`.
    pub(crate) fn start(
        client: kube::Client,
        selector: &str,
        key: impl Fn(&k8s_openapi::api::core::v1::Pod) -> String + Send + 'static,
    ) -> Self {
        use futures::StreamExt;
        use kube::runtime::{WatchStreamExt, watcher};
        let seen = Arc::new(std::sync::Mutex::new(PodRecord::default()));
        let record = seen.clone();
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(client);
        // With a back-off, a watch that fails (the server gone at the end of a test) waits between attempts: without
        // one the failures come back at once and the task never yields, so the test's runtime can never stop it.
        let stream = watcher(pods, watcher::Config::default().labels(selector)).default_backoff();
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let Ok(event) = event else { continue };
                let mut record = record.lock().expect("pod record");
                match event {
                    watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => {
                        let name = pod.metadata.name.clone().unwrap_or_default();
                        let uid = pod.metadata.uid.clone().unwrap_or_default();
                        let key = key(&pod);
                        let alive = record.alive.entry(key.clone()).or_default();
                        alive.insert(uid.clone());
                        let count = alive.len();
                        if record.uids.insert(uid) {
                            record.created.push(name);
                        }
                        let most = record.most_alive.entry(key).or_default();
                        *most = (*most).max(count);
                    }
                    watcher::Event::Delete(pod) => {
                        let uid = pod.metadata.uid.clone().unwrap_or_default();
                        let key = key(&pod);
                        if let Some(alive) = record.alive.get_mut(&key) {
                            alive.remove(&uid);
                        }
                    }
                    watcher::Event::Init | watcher::Event::InitDone => {}
                }
            }
        });
        Self { seen, task }
    }

    /// What was seen so far.
    pub(crate) fn record(&self) -> PodRecord {
        self.seen.lock().expect("pod record").clone()
    }
}

impl Drop for PodRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}
