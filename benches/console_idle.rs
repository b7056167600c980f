//! Idle CPU and memory of the console on the `large` scenario (5,000 nodes), in a tmux session of 120x40.
//!
//! The console process carries the embedded cluster and its node simulation, so the same figures are taken from
//! `kmm-tui serve` on the same scenario, and the difference is the console's own share: its watches, its state and
//! its drawing. Each pair runs with the engine off, and with the engine in the foreground (for `serve`,
//! `--with-engine`) once a Module that targets every node has converged: the scenario is `large` with the Module's
//! image in the registry, the Module is created through the kubeconfig the process writes, and the measurement
//! starts when its `availableNumber` equals the node count. A rollout that has not converged within
//! [`ROLLOUT_LIMIT`] is measured anyway and the table says how far it got. The same runs are made on smaller node
//! counts (the scenario's node group shrunk, nothing else changed) where a 5,000-node rollout takes too long.
//! Linux only (figures from /proc); skipped, saying why, where tmux is not installed.
//!
//! Run with `cargo bench --bench console_idle`; `cargo bench --bench console_idle -- 500` runs only the given node
//! counts.
//!
//! Where the time goes (release build, 2-core machine shared with other builds, load average 5 to 10):
//!
//! - 500 nodes, Module converged (29 s under the console, 28 s under `serve`): console with the engine in the
//!   foreground 0.20 % of a core and 770 MiB, `serve --with-engine` 0.17 % and 717 MiB: the console's own share is
//!   0.03 % of a core and 53 MiB. Engine off: 0.00 % for both, 141 and 126 MiB.
//! - 5,000 nodes: the rollout ran at about 1.5 nodes per second (176 of 5,000 available after 154 s), so it did not
//!   converge within [`ROLLOUT_LIMIT`] and that run was stopped. Idle on `large` with the engine in the foreground
//!   and no Module: 0.30 % of a core with `perf record -g --call-graph dwarf` attached. Of its samples, 68 % are the
//!   embedded cluster's controllers task (its periodic sweep 24 %, `serde_json::Value::pointer` 21 %); the console's
//!   event loop and ratatui about 3 %. A lease renewal every 3 s was the console's only wake-up, and it redrew the
//!   whole screen each time.
//! - During the 5,000-node rollout (the process at 49 % of a core), the console's `App::update` took 14.5 % of the
//!   samples: every node row made afresh on each change of any Node or NodeModulesConfig (7.1 %, up to ten times a
//!   second) and the lists sorted as they arrive (3.4 %); the cluster's owner-reference lookups
//!   (`controllers::on_deleted` and `dependents_of`, a scan of every object per deletion) took 20 to 30 %.
//! - Since then the node rows made from the very same Node and NodeModulesConfig objects as before (the watches
//!   hand over an unchanged object as the same shared pointer) are moved over instead of made again, and a lease
//!   renewal redraws only when it changes what the header, footer or `:engine` show.
//! - Once a 5,000-node rollout took about a minute (mimalloc, shared engine watches, slimmed caches), the 5,000-node
//!   run converged: 103 s in the console, 84 s under `serve --with-engine`, beside a test suite's build. Idle
//!   afterwards, the console with the engine in the foreground 0.10 % of a core and 1,286 MiB, `serve
//!   --with-engine` 0.10 % and 768 MiB; engine off, 0.03 % and 490 MiB (`serve` 0.00 %, 365 MiB).
//! - The console's own share was then its copies: every Node with its `managedFields` (half of each Node's JSON),
//!   and every Event of the cluster (a 5,000-node rollout writes about 40,000) though it shows the newest 1,000.
//!   The console now drops `managedFields` as objects arrive and keeps only the newest events: its own share went
//!   from 518 to 137 MiB with the engine in the foreground (peak 1,089 MiB for console, engine and cluster) and from
//!   125 to 41 MiB with the engine off, measured beside other builds. The rest of the peak is the cluster's: the
//!   Events the rollout writes, kept an hour as kube-apiserver keeps them.
//! - Then the simulation watched and cached pods and nodes once for all its components, and the store kept Nodes
//!   and NodeModulesConfigs serialised only: the console with the engine in the foreground peaked at 874 MiB
//!   (idle 791 MiB, 0.43 % of a core), `serve --with-engine` at 720 MiB; engine off, 294 and 244 MiB. The
//!   console's own share is 129 MiB with the engine and 47 MiB without.
//! - A heap profile of the console with its engine in the foreground, during the 5,000-node rollout (heaptrack on
//!   a build with the C library's malloc; 583 MB of heap at the peak): the store's JSON about 130 MB and its parsed
//!   trees about 65 MB, the simulation's shared pod and node caches 115 MB, the console's copies 101 MB (pods 34,
//!   NodeModulesConfigs 26, nodes 25, the shared pointers 14), the engine's shared caches 47 MB, the API server's
//!   owner graph and built-in objects 24 MB. The simulation's 115 MB was more than one copy of each object, which
//!   pointed at its components' queues, holding whole old objects while they were busy. They now read what they need of each change
//!   (a name, a fingerprint) as it arrives: the console with the engine peaked at 808 MiB (idle 715 MiB),
//!   `serve --with-engine` at 663 MiB; engine off, 296 and 242 MiB. The console's own share is 124 MiB with the
//!   engine and 51 MiB without.
//! - The next profile (the same way, new tree) put the console's copies at about 70 MB of heap two fifths into the
//!   rollout, though it had dropped `managedFields`: whole pods with their volumes and the worker configuration in
//!   their annotations, every condition and ID of each node, the tolerations NMCs repeat per module, and lists
//!   read from JSON with room for four items where they hold one (an NMC's one module, a pod's one container).
//!   The console now keeps only what its panes draw, in lists of their length, and its YAML view and editor read
//!   the object whole from the API server; the engine's NMC and node caches and the simulation's pod cache keep
//!   their lists at their length too. And mimalloc hands freed memory back at once instead of after a second.
//!   Measured one run each with a tmux script (Module created at once, peak read 30 s after convergence): 787 MiB
//!   on the tree before, 734 with the console keeping what it draws, 709 with the lists at their length, 674 with
//!   the purge delay at zero. This benchmark: console with the engine 690 MiB at the peak (idle 651), `serve
//!   --with-engine` 620 MiB; engine off, 264 and 229 MiB.
//! - A third profile (the same way; 494 MB of heap at the peak) put the console's copies at 39 MB, and found 51 MB
//!   in the simulation kept for little: its kubelets kept the whole status and machine record they last wrote
//!   for each node, only to tell whether anything changed, and its node cache kept each node's status whole where
//!   placement reads the allocatable resources and the Ready condition. With fingerprints and those fields only:
//!   console with the engine 651 MiB at the peak (idle 603), `serve --with-engine` 577 MiB; engine off, 247 and
//!   215 MiB. The tmux script gave 673 MiB on the tree before and 632 MiB on this one.

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kmm_api::kmm::Module;
use kmm_testing::process::{cpu_time, peak_mib, rss_mib};
use kube::Api;
use kube::api::PostParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::runtime::Runtime;

use kmm_testing::serve::Serve;
use kmm_testing::tmux::{self, TmuxConsole};

/// Time allowed for start-up work to die down once the process is ready (or its Module has converged).
const SETTLE: Duration = Duration::from_secs(20);
/// Idle measurement window.
const WINDOW: Duration = Duration::from_secs(30);
/// How long 5,000 nodes may take to come up and reach the console, on a busy two-core machine.
const STARTUP_LIMIT: Duration = Duration::from_secs(600);
/// How long the Module may take to become available on every node before the process is measured regardless: ten
/// times the minute a 5,000-node rollout should take.
const ROLLOUT_LIMIT: Duration = Duration::from_secs(600);
/// Node counts measured by default: `large` itself, and a tenth of it, where a rollout converges quickly.
const NODE_COUNTS: [usize; 2] = [5000, 500];
/// The `large` scenario, whose node count and registry the runs adjust.
const LARGE: &str = include_str!("../crates/sim/src/scenarios/large.yaml");
/// The Module's image in the registry, for `large`'s kernel, and the namespace the Module lives in.
const REGISTRY_AND_NAMESPACE: &str = "
registry:
  images:
    - {name: quay.io/bench/kmod:5.14.0-284.el9.x86_64, sizeMiB: 20}
objects:
  - {apiVersion: v1, kind: Namespace, metadata: {name: bench}}
";

/// CPU and memory of one process over [`WINDOW`].
#[derive(Clone, Copy)]
struct Figures {
    /// Share of one core, in percent.
    cpu_percent: f64,
    /// Resident memory at the end of the window.
    rss_mib: f64,
    /// The most resident memory the process ever held (its rollout included).
    peak_mib: f64,
}

/// Let start-up work settle, then measure `pid` over [`WINDOW`].
fn measure(pid: u32) -> Figures {
    std::thread::sleep(SETTLE);
    println!("  measuring pid {pid} for {}s", WINDOW.as_secs());
    let before = cpu_time(pid);
    let started = Instant::now();
    std::thread::sleep(WINDOW);
    let used = cpu_time(pid) - before;
    let wall = started.elapsed().as_secs_f64();
    let figures = Figures {
        cpu_percent: used.as_secs_f64() / wall * 100.0,
        rss_mib: rss_mib(pid),
        peak_mib: peak_mib(pid),
    };
    println!(
        "  {:.2}% of a core, RSS {:.0} MiB, peak {:.0} MiB",
        figures.cpu_percent, figures.rss_mib, figures.peak_mib
    );
    figures
}

/// `large` with `nodes` nodes and the Module's image in the registry, written to a file in `dir`.
fn scenario_file(dir: &Path, nodes: usize) -> PathBuf {
    let resized = LARGE.replace("count: 5000", &format!("count: {nodes}"));
    assert!(
        resized.contains(&format!("count: {nodes}")),
        "the large scenario no longer has one group of 5000 nodes"
    );
    let path = dir.join(format!("large-{nodes}.yaml"));
    std::fs::write(&path, resized + REGISTRY_AND_NAMESPACE).expect("writing the scenario");
    path
}

/// Whether the header says every node of the scenario has arrived: `Nodes <ready>/<nodes> ready` and nothing
/// loading.
fn nodes_loaded(screen: &str, nodes: usize) -> bool {
    let header = screen.lines().next().unwrap_or_default();
    let total = header
        .split_once("Nodes ")
        .and_then(|(_, rest)| rest.split_once(" ready"))
        .and_then(|(counts, _)| counts.split_once('/'))
        .and_then(|(_, total)| total.parse::<usize>().ok());
    total == Some(nodes) && !header.contains("loading")
}

/// A client for the cluster the kubeconfig at `path` points at, once the file is there.
async fn client_from(path: &Path) -> kube::Client {
    let deadline = Instant::now() + STARTUP_LIMIT;
    while !path.exists() {
        assert!(Instant::now() < deadline, "no kubeconfig at {path:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kubeconfig = Kubeconfig::read_from(path).expect("reading the written kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("loading the written kubeconfig");
    kube::Client::try_from(config).expect("a client for the embedded cluster")
}

/// How far the rollout got when measuring began.
#[derive(Clone, Copy)]
struct Rollout {
    /// Nodes with the module available.
    available: usize,
    /// Time from the Module's creation until every node had it, or until measuring began regardless.
    took: Duration,
}

/// Create a Module that targets every node, and wait until it is available on all `nodes` (at most
/// [`ROLLOUT_LIMIT`]).
fn roll_out(runtime: &Runtime, kubeconfig: &Path, nodes: usize) -> Rollout {
    runtime.block_on(async {
        let client = client_from(kubeconfig).await;
        let modules: Api<Module> = Api::namespaced(client, "bench");
        let module: Module = serde_json::from_value(serde_json::json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": "kmod", "namespace": "bench"},
            "spec": {
                "selector": {"node-role.kubernetes.io/worker": ""},
                "moduleLoader": {"container": {
                    "modprobe": {"moduleName": "bench_kmod"},
                    "kernelMappings": [{
                        "regexp": "^.+$",
                        "containerImage": "quay.io/bench/kmod:${KERNEL_FULL_VERSION}"
                    }]
                }}
            }
        }))
        .expect("a Module");
        let started = Instant::now();
        modules
            .create(&PostParams::default(), &module)
            .await
            .expect("the Module is created");
        let mut reported = Instant::now();
        loop {
            let available = modules
                .get("kmod")
                .await
                .ok()
                .and_then(|m| m.status?.module_loader)
                .map_or(0, |loader| loader.available_number as usize);
            if available >= nodes || started.elapsed() >= ROLLOUT_LIMIT {
                println!(
                    "  Module available on {available}/{nodes} nodes after {:.1?}",
                    started.elapsed()
                );
                return Rollout {
                    available,
                    took: started.elapsed(),
                };
            }
            if reported.elapsed() >= Duration::from_secs(30) {
                reported = Instant::now();
                println!(
                    "  {:.0?}: available on {available}/{nodes}",
                    started.elapsed()
                );
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

/// The console on `scenario` with `--engine <engine>`, measured once every node is on screen and, with the engine
/// in the foreground, once the Module has rolled out.
fn console(runtime: &Runtime, dir: &Path, run: &Run, engine: &str) -> (Figures, Option<Rollout>) {
    let started = Instant::now();
    let kubeconfig = dir.join(format!("console-{}-{engine}.kubeconfig", run.nodes));
    let console = TmuxConsole::start(
        env!("CARGO_BIN_EXE_kmm-tui"),
        dir,
        [
            "--scenario".as_ref(),
            run.scenario.as_os_str(),
            "--engine".as_ref(),
            engine.as_ref(),
            "--kubeconfig-out".as_ref(),
            kubeconfig.as_os_str(),
        ],
    );
    console.wait_for("every node in the header", STARTUP_LIMIT, |screen| {
        nodes_loaded(screen, run.nodes)
    });
    println!(
        "  console, engine {engine}: nodes on screen after {:.1?}",
        started.elapsed()
    );
    let rollout = (engine == "foreground").then(|| roll_out(runtime, &kubeconfig, run.nodes));
    let pid = console.pane().pid;
    let figures = measure(pid);
    if console.pane().dead {
        console.fail("the console exited while it was measured");
    }
    console.press(&["C-c"]);
    console.wait_for_exit(Duration::from_secs(60));
    (figures, rollout)
}

/// `kmm-tui serve` on `scenario` (with the engine when `engine` is true), measured once it is ready and, with the
/// engine, once the Module has rolled out.
fn serve(runtime: &Runtime, dir: &Path, run: &Run, engine: bool) -> (Figures, Option<Rollout>) {
    let kubeconfig = dir.join(format!("serve-{}-{engine}.kubeconfig", run.nodes));
    let started = Instant::now();
    let mut args = vec![OsStr::new("--scenario"), run.scenario.as_os_str()];
    if engine {
        args.push(OsStr::new("--with-engine"));
    }
    let mut serve = Serve::start(
        Path::new(env!("CARGO_BIN_EXE_kmm-tui")),
        args,
        &kubeconfig,
        dir,
        STARTUP_LIMIT,
    );
    let name = if engine { "--with-engine" } else { "" };
    println!("  serve {name}: ready after {:.1?}", started.elapsed());
    let rollout = engine.then(|| roll_out(runtime, &kubeconfig, run.nodes));
    let figures = measure(serve.id());
    serve.assert_running("while it was measured");
    (figures, rollout)
}

/// One node count's scenario.
struct Run {
    nodes: usize,
    scenario: PathBuf,
}

/// The console and `serve` measured the same way, and what the rollout reached in each.
struct Pair {
    engine: &'static str,
    console: Figures,
    serve: Figures,
    rollouts: Option<(Rollout, Rollout)>,
}

fn row(name: &str, figures: Figures, note: &str) {
    println!(
        "{name:<48} {:>14.2} {:>10.1} {:>10.1}  {note}",
        figures.cpu_percent, figures.rss_mib, figures.peak_mib
    );
}

/// What a rollout reached, for the table.
fn reached(rollout: Option<Rollout>, nodes: usize) -> String {
    match rollout {
        None => String::new(),
        Some(r) if r.available >= nodes => format!("converged in {:.0?}", r.took),
        Some(r) => format!(
            "NOT converged: {}/{nodes} available after {:.0?}",
            r.available, r.took
        ),
    }
}

fn main() {
    kmm_tui::allocator::return_freed_memory_promptly();
    if let Some(why) = tmux::unavailable() {
        println!("skipping the console idle benchmark: {why}");
        return;
    }
    let counts: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|arg| arg.parse().ok())
        .collect();
    let counts = if counts.is_empty() {
        NODE_COUNTS.to_vec()
    } else {
        counts
    };
    let runtime = Runtime::new().expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut results = Vec::new();
    for nodes in counts {
        let run = Run {
            nodes,
            scenario: scenario_file(dir.path(), nodes),
        };
        println!(
            "console idle on large with {nodes} nodes: {}s settle, then {}s measured",
            SETTLE.as_secs(),
            WINDOW.as_secs()
        );
        let (console_off, _) = console(&runtime, dir.path(), &run, "off");
        let (serve_off, _) = serve(&runtime, dir.path(), &run, false);
        let (console_on, console_rollout) = console(&runtime, dir.path(), &run, "foreground");
        let (serve_on, serve_rollout) = serve(&runtime, dir.path(), &run, true);
        let pairs = [
            Pair {
                engine: "off",
                console: console_off,
                serve: serve_off,
                rollouts: None,
            },
            Pair {
                engine: "foreground",
                console: console_on,
                serve: serve_on,
                rollouts: console_rollout.zip(serve_rollout),
            },
        ];
        results.push((nodes, pairs));
    }
    println!();
    println!(
        "{:<48} {:>14} {:>10} {:>10}  module",
        "process", "CPU % of core", "RSS MiB", "peak MiB"
    );
    for (nodes, pairs) in &results {
        for pair in pairs {
            let engine = pair.engine;
            let (console_note, serve_note) = match pair.rollouts {
                Some((console, serve)) => {
                    (reached(Some(console), *nodes), reached(Some(serve), *nodes))
                }
                None => (String::new(), String::new()),
            };
            row(
                &format!("{nodes} nodes: console, engine {engine}"),
                pair.console,
                &console_note,
            );
            let serve_name = if engine == "off" {
                format!("{nodes} nodes: serve (same cluster, no console)")
            } else {
                format!("{nodes} nodes: serve --with-engine")
            };
            row(&serve_name, pair.serve, &serve_note);
            println!(
                "{:<48} {:>14.2} {:>10.1} {:>10.1}",
                format!("{nodes} nodes: console's own share, engine {engine}"),
                pair.console.cpu_percent - pair.serve.cpu_percent,
                pair.console.rss_mib - pair.serve.rss_mib,
                pair.console.peak_mib - pair.serve.peak_mib
            );
        }
    }
    println!();
    for (nodes, pairs) in &results {
        for pair in pairs {
            println!(
                "console idle on large, {nodes} nodes (engine {}): {:.2}% of a core over {}s, RSS {:.0} MiB, \
                 peak {:.0} MiB (console's own share: {:+.2}% of a core, {:+.0} MiB)",
                pair.engine,
                pair.console.cpu_percent,
                WINDOW.as_secs(),
                pair.console.rss_mib,
                pair.console.peak_mib,
                pair.console.cpu_percent - pair.serve.cpu_percent,
                pair.console.rss_mib - pair.serve.rss_mib
            );
        }
    }
}
