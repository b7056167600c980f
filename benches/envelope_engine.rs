//! The engine on the `envelope` scenario: `kmm-tui serve --scenario envelope` (5,000 nodes, 150,000 pods of ordinary
//! workloads, 50 replaced a second with their Events) and `kmm-tui controller` beside it as a process of its own, so
//! its memory and CPU are its own and what it watches is counted by the server as one client's.
//!
//! Measures, in order:
//! - the controller idle on the busy cluster before it has anything to do: its share of a core, its memory;
//! - a Module (its image in the registry) until it is loaded on all 5,000 nodes (`status.moduleLoader.available`);
//! - a rolling Shim (`maxUpdate: "10%"`) until it is provisioned on all 5,000 nodes (`status.nodesReady`);
//! - the controller idle again with both in place: its share of a core, its memory, and what the server sent it of
//!   the churning kinds (pods and Events, from `apiserver_watch_events_total` and
//!   `apiserver_storage_list_returned_objects_total` by client), next to what the churn made meanwhile.
//!
//! Run with `cargo bench --bench envelope_engine`; `IDLE_SECONDS` (60) sets each idle window. Linux only.
//!
//! The controller's client sends no User-Agent, so the server's metrics name it `unknown`, with every other client
//! that sends none (this benchmark's reads of a Module's and a Shim's status, the simulation's clients inside
//! `serve`): what that label is sent over the last window bounds what the controller took in.
//!
//! First run (release, 2-core machine, 30 s windows, right after leading rather than after [`SETTLE`]): idle before
//! any object 2.67 % of a core at 90 MiB (its start-up lists); the Module on all 5,000 nodes in 49.1 s; the Shim in
//! 36.5 s; peak 198 MiB; idle with both in place 0.37 % at 150 MiB, sent 0 pods and 0 Events while the churn
//! replaced 1,500 pods and recorded about 10,000 Events.

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kmm_api::kmm::Module;
use kmm_api::shim::Shim;
use kmm_testing::metrics::samples;
use kmm_testing::process::{cpu_time, peak_mib, rss_mib};
use kmm_testing::serve::Serve;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

/// Nodes of the scenario.
const NODES: usize = 5000;
/// The kernel every node of the scenario runs.
const KERNEL: &str = "5.14.0-284.el9.x86_64";
/// The Shim's archive, in the scenario's registry.
const ARCHIVE: &str = "https://shims.example.com/spin-v2.tar.gz";
/// The controller's name in the Lease.
const IDENTITY: &str = "envelope-bench";
/// Time left to the controller once it leads, for its first lists, before its idling is measured.
const SETTLE: Duration = Duration::from_secs(15);
/// The longest a rollout may take before the run gives up on it.
const ROLLOUT_LIMIT: Duration = Duration::from_secs(300);

/// The built-in `envelope` scenario with the Module's image and the Shim's archive in its registry.
fn scenario() -> String {
    format!(
        "{}\nregistry:\n  images:\n    - {{name: \"quay.io/bench/kmod-a:{KERNEL}\", sizeMiB: 20}}\n  shims:\n    - {{url: \"{ARCHIVE}\", binary: containerd-shim-spin-v2}}\n",
        include_str!("../crates/sim/src/scenarios/envelope.yaml")
    )
}

/// `kmm-tui controller` as a child, killed when dropped.
struct Controller(Child);

impl Controller {
    fn start(kubeconfig: &Path, log: &Path) -> Controller {
        let log = std::fs::File::create(log).expect("creating the controller's log");
        Controller(
            Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
                .args(["controller", "--identity", IDENTITY, "--kubeconfig"])
                .arg(kubeconfig)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("the log"))
                .stderr(log)
                .spawn()
                .expect("starting kmm-tui controller"),
        )
    }

    fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What one idle window cost the controller.
struct Idle {
    cpu_percent: f64,
    rss_mib: f64,
}

/// Leave the controller `window` and measure its share of a core and its memory at the end.
async fn idle(pid: u32, window: Duration) -> Idle {
    let before = cpu_time(pid);
    let started = Instant::now();
    tokio::time::sleep(window).await;
    Idle {
        cpu_percent: (cpu_time(pid) - before).as_secs_f64() / started.elapsed().as_secs_f64()
            * 100.0,
        rss_mib: rss_mib(pid),
    }
}

/// Objects of pods and Events the server has sent each client, watch events and listed objects together.
async fn sent_by_client(client: &kube::Client) -> BTreeMap<String, f64> {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("a request");
    let text = client
        .request_text(request)
        .await
        .expect("the server's metrics");
    let mut sent = BTreeMap::new();
    for metric in [
        "apiserver_watch_events_total",
        "apiserver_storage_list_returned_objects_total",
    ] {
        for sample in samples(&text, metric) {
            if matches!(sample.label("resource"), Some("pods" | "events")) {
                let client = sample.label("client").unwrap_or("(none)").to_owned();
                *sent.entry(client).or_default() += sample.value;
            }
        }
    }
    sent
}

/// Poll `reached` every 250 ms until it holds; the time it took. Panics after [`ROLLOUT_LIMIT`].
async fn until<F: AsyncFn() -> usize>(what: &str, reached: F) -> Duration {
    let started = Instant::now();
    let mut reported = Instant::now();
    loop {
        let now = reached().await;
        if now == NODES {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < ROLLOUT_LIMIT,
            "{what}: {now} of {NODES} after {ROLLOUT_LIMIT:?}"
        );
        if reported.elapsed() >= Duration::from_secs(10) {
            reported = Instant::now();
            println!(
                "  {:.0} s: {what} {now} of {NODES}",
                started.elapsed().as_secs_f64()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::main]
async fn main() {
    kmm_tui::allocator::return_freed_memory_promptly();
    let window = Duration::from_secs(
        std::env::var("IDLE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario_file = dir.path().join("envelope-with-images.yaml");
    std::fs::write(&scenario_file, scenario()).expect("writing the scenario");
    let kubeconfig = dir.path().join("kubeconfig");
    let started = Instant::now();
    let serve = Serve::start(
        Path::new(env!("CARGO_BIN_EXE_kmm-tui")),
        [
            "--scenario".as_ref(),
            scenario_file.as_os_str(),
            "--event-ttl".as_ref(),
            "1h".as_ref(),
        ],
        &kubeconfig,
        dir.path(),
        Duration::from_secs(600),
    );
    println!(
        "serve --scenario envelope (with the Module's image and the Shim's archive): ready after {:.1?}",
        started.elapsed()
    );
    let config = Kubeconfig::read_from(&kubeconfig).expect("reading the written kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .expect("the kubeconfig is usable");
    let client = kube::Client::try_from(config).expect("a client");

    let controller = Controller::start(&kubeconfig, &dir.path().join("controller.log"));
    let pid = controller.id();
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let electing = Instant::now();
    loop {
        let holder = leases
            .get_opt("kmm-tui-engine")
            .await
            .ok()
            .flatten()
            .and_then(|lease| lease.spec?.holder_identity);
        if holder.as_deref() == Some(IDENTITY) {
            break;
        }
        assert!(
            electing.elapsed() < Duration::from_secs(120),
            "the controller did not take the Lease: see {}",
            dir.path().join("controller.log").display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("controller leads after {:.1?}", electing.elapsed());
    // Its first lists (every node, the kinds it watches) are start-up, not idling.
    tokio::time::sleep(SETTLE).await;
    let before = idle(pid, window).await;

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace =
        serde_json::from_value(json!({"metadata": {"name": "bench"}})).expect("a Namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("the namespace is created");
    let module: Module = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": "kmod-a", "namespace": "bench"},
        "spec": {
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "bench_kmod_a"},
                "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/bench/kmod-a:${KERNEL_FULL_VERSION}"}]
            }}
        }
    }))
    .expect("a Module");
    let modules: Api<Module> = Api::namespaced(client.clone(), "bench");
    modules
        .create(&PostParams::default(), &module)
        .await
        .expect("the Module is created");
    let module_took = until("Module loaded on", async || {
        modules
            .get("kmod-a")
            .await
            .ok()
            .and_then(|m| m.status?.module_loader)
            .map(|loader| loader.available_number as usize)
            .unwrap_or_default()
    })
    .await;

    let shim: Shim = serde_json::from_value(json!({
        "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
        "metadata": {"name": "spin-v2"},
        "spec": {
            "fetchStrategy": {"anonHttp": {"location": ARCHIVE}},
            "runtimeClass": {"name": "wasmtime-spin-v2", "handler": "spin-v2"},
            "rolloutStrategy": {"type": "rolling", "rolling": {"maxUpdate": "10%"}},
        },
    }))
    .expect("a Shim");
    let shims: Api<Shim> = Api::all(client.clone());
    shims
        .create(&PostParams::default(), &shim)
        .await
        .expect("the Shim is created");
    let shim_took = until("Shim provisioned on", async || {
        shims
            .get("spin-v2")
            .await
            .ok()
            .and_then(|s| s.status)
            .map(|s| s.nodes_ready as usize)
            .unwrap_or_default()
    })
    .await;
    let peak_rollouts = peak_mib(pid);

    let sent_before = sent_by_client(&client).await;
    let after = idle(pid, window).await;
    let sent_after = sent_by_client(&client).await;
    drop(controller);
    drop(serve);

    println!("the controller beside the envelope scenario, {window:?} windows:");
    println!(
        "  idle before any object      {:>6.2} % of a core, resident {:.0} MiB",
        before.cpu_percent, before.rss_mib
    );
    println!(
        "  Module loaded on {NODES} nodes  {:>6.1} s",
        module_took.as_secs_f64()
    );
    println!(
        "  Shim provisioned on {NODES}     {:>6.1} s",
        shim_took.as_secs_f64()
    );
    println!("  peak resident through both  {peak_rollouts:>6.0} MiB");
    println!(
        "  idle with both in place     {:>6.2} % of a core, resident {:.0} MiB",
        after.cpu_percent, after.rss_mib
    );
    println!("  pods and Events sent over the last window, by client:");
    for (client, total) in &sent_after {
        let sent = total - sent_before.get(client).copied().unwrap_or_default();
        println!("    {client:<40} {sent:>8.0}");
    }
}
