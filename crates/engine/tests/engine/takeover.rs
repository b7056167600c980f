//! Takeovers under load: the acting engine is killed again and again while Modules roll out (one of their images
//! still being built), on a machine kept busy, and each time the engine that takes the Lease over brings every
//! rollout to its end. Real time, a multi-threaded runtime and engines talking HTTPS to the cluster, so passes race
//! each other and the watches' first lists as they do in a `kmm-tui controller` that takes over a busy cluster.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kmm_api::kmm::Module;
use kmm_engine::{EngineConfig, LeaseConfig, PodImages, Settings};
use kube::api::{Api, PostParams};
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::common::{Harness, eventually};

/// Clusters taken through the kill loop, [`AT_ONCE`] at a time.
const ROUNDS: u64 = 3;
/// Clusters run side by side: they load the machine for each other.
const AT_ONCE: u64 = 3;
/// Engines killed per round, each replaced by a new one.
const KILLS: usize = 5;
/// Short, so a takeover after a kill comes quickly.
const LEASE: Duration = Duration::from_secs(2);
const BUILT_KERNEL: &str = "5.14.0-362.el9.x86_64";
/// Modules besides the one with a build: the more passes start at once, the more wait for the same caches.
const PREBUILT: usize = 3;

/// Modules that each pass of a new leader reconciles at once: the one with a build, and others whose image exists
/// for one kernel only.
fn modules() -> Vec<(String, Value, i32)> {
    let prebuilt = |name: &str| {
        json!({
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": name},
                "kernelMappings": [
                    {"literal": "5.14.0-284.el9.x86_64", "containerImage": "quay.io/acme/accmod:5.14.0-284.el9.x86_64"},
                ],
            }},
        })
    };
    let mut modules = vec![(
        "accmod".to_owned(),
        json!({
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "accmod"},
                "kernelMappings": [
                    {"literal": "5.14.0-284.el9.x86_64",
                     "containerImage": "quay.io/acme/accmod:5.14.0-284.el9.x86_64"},
                    {"regexp": "^.+$", "containerImage": "quay.io/acme/accmod:${KERNEL_FULL_VERSION}",
                     "build": {"dockerfileConfigMap": {"name": "accmod-dockerfile"}}},
                ],
            }},
        }),
        16,
    )];
    modules.extend((0..PREBUILT).map(|i| {
        let name = format!("prebuilt{i}");
        let spec = prebuilt(&name);
        (name, spec, 8)
    }));
    modules
}

/// Busy loops on every core until dropped: the machine a takeover meets in production is rarely idle.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// An engine candidate with its own identity, on the shared Lease.
fn start_engine(client: kube::Client, identity: String) -> JoinHandle<()> {
    let config = EngineConfig {
        images: PodImages::default(),
        lease: LeaseConfig::new("kube-system", "kmm-tui-engine", identity, LEASE),
        settings: Settings::default(),
    };
    tokio::spawn(async move {
        kmm_engine::run(client, config, CancellationToken::new())
            .await
            .expect("the engine runs");
    })
}

/// A client of the cluster's HTTPS endpoint, as a `kmm-tui controller` process has.
async fn https_client(kubeconfig: &std::path::Path) -> kube::Client {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).expect("the kubeconfig reads");
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .expect("the kubeconfig loads");
    kube::Client::try_from(config).expect("a client")
}

/// One cluster through the kill loop: every Module must reach all the nodes it can after the last takeover.
async fn round(seed: u64) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    let harness = Harness::start_serving("takeover.yaml", &kubeconfig).await;
    let client = https_client(&kubeconfig).await;
    let api: Api<Module> = Api::namespaced(client.clone(), "acme");
    let modules = modules();
    for (name, spec, _) in &modules {
        let module: Module = serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": name, "namespace": "acme"},
            "spec": spec,
        }))
        .expect("a Module");
        api.create(&PostParams::default(), &module)
            .await
            .expect("the Module is created");
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut engine = start_engine(client.clone(), format!("round{seed}-engine0"));
    for kill in 1..=KILLS {
        tokio::time::sleep(Duration::from_millis(rng.random_range(300..3000))).await;
        // Killed wherever it is, its Lease left to expire.
        engine.abort();
        let _ = engine.await;
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..1000))).await;
        engine = start_engine(client.clone(), format!("round{seed}-engine{kill}"));
    }
    for (name, _, nodes) in &modules {
        eventually(
            90,
            &format!(
                "round {seed}: Module {name} available on {nodes} nodes after the last takeover"
            ),
            || {
                let api = api.clone();
                async move {
                    api.get(name)
                        .await
                        .ok()
                        .and_then(|m| m.status)
                        .and_then(|s| s.module_loader)
                        .is_some_and(|counts| counts.available_number == *nodes)
                }
            },
        )
        .await;
    }
    let module = api.get("accmod").await.expect("the Module");
    let kernels = module.status.map(|s| s.kernels).unwrap_or_default();
    assert!(
        kernels.iter().any(|kernel| kernel == BUILT_KERNEL),
        "round {seed}: the built kernel is reported: {kernels:?}"
    );
    engine.abort();
    let _ = engine.await;
    harness.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_takeover_under_load_finishes_the_rollouts() {
    let _load = Load::start();
    for batch in 0..ROUNDS / AT_ONCE {
        let rounds: Vec<_> = (0..AT_ONCE)
            .map(|i| tokio::spawn(round(batch * AT_ONCE + i)))
            .collect();
        for round in rounds {
            round.await.expect("the round passes");
        }
    }
}
