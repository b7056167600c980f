//! Idle CPU and memory of the console on the `large` scenario (5,000 nodes), in a tmux session of 120x40.
//!
//! The console process carries the embedded cluster and its node simulation (kubelet heartbeats and the like), so
//! the same figures are taken from `kmm-tui serve` on the same scenario, and the difference is the console's own
//! share: its watches, its state and its drawing. Each pair runs with the engine off and in the foreground (for
//! `serve`, `--with-engine`). Linux only (figures from /proc); skipped, saying why, where tmux is not installed.
//!
//! Run with `cargo bench --bench console_idle`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../tests/support/tmux.rs"]
mod tmux;

use tmux::TmuxConsole;

/// Time allowed for start-up work to die down once the process is ready.
const SETTLE: Duration = Duration::from_secs(20);
/// Idle measurement window.
const WINDOW: Duration = Duration::from_secs(30);
/// How long 5,000 nodes may take to come up and reach the console, on a busy two-core machine.
const STARTUP_LIMIT: Duration = Duration::from_secs(600);
/// Nodes in the `large` scenario.
const NODES: usize = 5000;

/// CPU and memory of one process over [`WINDOW`].
#[derive(Clone, Copy)]
struct Figures {
    /// Share of one core, in percent.
    cpu_percent: f64,
    /// Resident memory at the end of the window.
    rss_mib: f64,
}

/// Clock ticks per second, the unit of /proc/<pid>/stat's times.
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100.0)
}

/// User plus system CPU time of a process in clock ticks: fields 14 and 15 of /proc/<pid>/stat.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|error| panic!("reading /proc/{pid}/stat: {error}"));
    let after_name = stat
        .rfind(')')
        .map(|end| &stat[end + 1..])
        .expect("/proc/<pid>/stat names the command in parentheses");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |index: usize| -> u64 {
        fields
            .get(index)
            .and_then(|value| value.parse().ok())
            .expect("utime and stime in /proc/<pid>/stat")
    };
    field(11) + field(12)
}

/// Resident set size in MiB, from /proc/<pid>/status.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|error| panic!("reading /proc/{pid}/status: {error}"));
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|value| value.parse().ok())
        .expect("VmRSS in /proc/<pid>/status");
    kib / 1024.0
}

/// Let start-up work settle, then measure `pid` over [`WINDOW`].
fn measure(pid: u32) -> Figures {
    std::thread::sleep(SETTLE);
    let before = cpu_ticks(pid);
    let started = Instant::now();
    std::thread::sleep(WINDOW);
    let ticks = cpu_ticks(pid) - before;
    let wall = started.elapsed().as_secs_f64();
    Figures {
        cpu_percent: ticks as f64 / clock_ticks() / wall * 100.0,
        rss_mib: rss_mib(pid),
    }
}

/// Whether the header says every node of the scenario has arrived: `Nodes <ready>/5000 ready` and nothing loading.
fn nodes_loaded(screen: &str) -> bool {
    let header = screen.lines().next().unwrap_or_default();
    let total = header
        .split_once("Nodes ")
        .and_then(|(_, rest)| rest.split_once(" ready"))
        .and_then(|(counts, _)| counts.split_once('/'))
        .and_then(|(_, total)| total.parse::<usize>().ok());
    total == Some(NODES) && !header.contains("loading")
}

/// The console on `large` with `--engine <engine>`, measured once every node is on screen.
fn console(dir: &Path, engine: &str) -> Figures {
    let started = Instant::now();
    let console = TmuxConsole::start(
        dir,
        ["--embedded", "--scenario", "large", "--engine", engine],
    );
    console.wait_for("every node in the header", STARTUP_LIMIT, nodes_loaded);
    println!(
        "  console, engine {engine}: nodes on screen after {:.1?}",
        started.elapsed()
    );
    let pid = console.pane().pid;
    let figures = measure(pid);
    if console.pane().dead {
        console.fail("the console exited while it was measured");
    }
    console.press(&["C-c"]);
    console.wait_for_exit(Duration::from_secs(60));
    figures
}

/// `kmm-tui serve` on `large`, killed when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `kmm-tui serve --scenario large` (with `extra` arguments), measured once it is ready.
fn serve(dir: &Path, extra: &[&str]) -> Figures {
    let kubeconfig = dir.join("serve.kubeconfig");
    let _ = std::fs::remove_file(&kubeconfig);
    let started = Instant::now();
    let mut serve = Serve(
        Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
            .args(["serve", "--scenario", "large", "--listen", "127.0.0.1:0"])
            .args(["--log", "warn", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(extra)
            .env("TMPDIR", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("starting kmm-tui serve"),
    );
    while !kubeconfig.exists() {
        if let Ok(Some(status)) = serve.0.try_wait() {
            panic!("kmm-tui serve exited during start-up: {status}");
        }
        assert!(
            started.elapsed() < STARTUP_LIMIT,
            "kmm-tui serve not ready after {STARTUP_LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "  serve {}: ready after {:.1?}",
        extra.join(" "),
        started.elapsed()
    );
    let figures = measure(serve.0.id());
    if let Ok(Some(status)) = serve.0.try_wait() {
        panic!("kmm-tui serve exited while it was measured: {status}");
    }
    figures
}

fn main() {
    if let Some(why) = tmux::unavailable() {
        println!("skipping the console idle benchmark: {why}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    println!(
        "console idle on large ({NODES} nodes): {}s settle, then {}s measured",
        SETTLE.as_secs(),
        WINDOW.as_secs()
    );
    let runs = [
        ("off", console(dir.path(), "off"), serve(dir.path(), &[])),
        (
            "foreground",
            console(dir.path(), "foreground"),
            serve(dir.path(), &["--with-engine"]),
        ),
    ];
    println!();
    println!(
        "{:<44} {:>14} {:>10}",
        "process", "CPU % of core", "RSS MiB"
    );
    for (engine, console, serve) in runs {
        let serve_name = if engine == "off" {
            "kmm-tui serve (same cluster, no console)".to_owned()
        } else {
            "kmm-tui serve --with-engine".to_owned()
        };
        for (name, figures) in [
            (format!("console, engine {engine}"), console),
            (serve_name, serve),
        ] {
            println!(
                "{name:<44} {:>14.2} {:>10.1}",
                figures.cpu_percent, figures.rss_mib
            );
        }
        println!(
            "{:<44} {:>14.2} {:>10.1}",
            format!("console's own share, engine {engine}"),
            console.cpu_percent - serve.cpu_percent,
            console.rss_mib - serve.rss_mib
        );
    }
    println!();
    for (engine, console, serve) in runs {
        println!(
            "console idle on large (engine {engine}): {:.2}% of a core over {}s, RSS {:.0} MiB \
             (console's own share: {:+.2}% of a core, {:+.0} MiB)",
            console.cpu_percent,
            WINDOW.as_secs(),
            console.rss_mib,
            console.cpu_percent - serve.cpu_percent,
            console.rss_mib - serve.rss_mib
        );
    }
}
