//! How soon the console shows the cluster: the time from starting the binary in a pseudo-terminal to the first
//! frame with the node count of `kmm-tui serve --scenario large` (5,000 nodes), next to kdash's time on the same
//! cluster in the same run.
//!
//! The cluster is one `kmm-tui serve` process, started once and left [`SETTLE`] to finish its start-up work. Each
//! console is then started [`RUNS`] times in turn in a pty of 200x50 with `KUBECONFIG` pointing at it; its output
//! goes through a terminal emulator (`vt100`), and the clock stops at the first screen that shows the mark:
//!
//! - kmm-tui: the header's `Nodes N/M ready` with N above zero, then (a second figure) once no list is loading;
//! - kdash: its first cluster data (a namespace of the cluster in the Namespaces block), then the `Nodes: N Ready`
//!   of its Context Info.
//!
//! kdash is looked for as `$KDASH`, then `kdash` on the `PATH`; without it the run says so and measures kmm-tui
//! alone. To repeat the comparison: `cargo install kdash --locked --version 2.1.1`, then
//! `cargo bench --bench console_first_frame`. `RUNS` sets the number of starts of each, `SCENARIO` the cluster
//! (`large` by default; `envelope` adds 150,000 churning pods). With `IDLE_SECONDS`, each console is then started
//! once more and left running that long once all is on screen: its share of a core and its memory meanwhile.
//! Linux only.
//!
//! Where the time went (release build, 2-core machine): the console used to send a kind's list only once the
//! whole of it had arrived and then after a 100 ms pause to gather changes, so 5,000 nodes (ten pages of 500,
//! 23 MB of JSON) reached the screen after 344 to 685 ms; kdash 2.1.1 showed its namespaces after about 515 ms and
//! its node count after about 766 ms. The first list of a kind now goes to the screen as its pages arrive: the
//! first page at once, the next ones at most every 100 ms, the whole list at once. On `envelope` (150,000 other
//! pods churning) every list was whole after 1,198 ms (p50 of 5): the server tested every pod for each of the
//! console's five label-selected pod lists and parsed every Event kept for each of its thirteen Event lists. With
//! pods indexed by label key and Events by kind and reporter: 367 ms (p50 of 10), and 347 ms on `large`. With
//! managed fields passed over as the JSON is read (on a node they were 70 % of its parse): 310 ms on `envelope`,
//! 230 and 273 ms on `large` (two runs of 10).

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{LazyLock, mpsc};
use std::time::{Duration, Instant};

use kmm_testing::process::{cpu_time, peak_mib, rss_mib};
use kmm_testing::serve::Serve;
use nix::pty::{Winsize, openpty};
use regex::Regex;

/// Starts of each console.
const RUNS: usize = 10;
/// Time left to `serve` after it is ready, for its start-up work to die down.
const SETTLE: Duration = Duration::from_secs(15);
/// How long one start may take to show its marks before it counts as failed.
const LIMIT: Duration = Duration::from_secs(20);
/// The pseudo-terminal's size: rows, columns.
const SIZE: (u16, u16) = (50, 200);
/// A terminal's query of the cursor position (DSR 6), which kdash sends at start and waits to have answered.
const CURSOR_QUERY: &[u8] = b"\x1b[6n";

/// kmm-tui's header once it counts nodes.
static KMM_NODES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Nodes [1-9][0-9]*/").expect("pattern"));
/// kdash's Context Info once it counts nodes.
static KDASH_NODES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Nodes:\s+[1-9][0-9]* Ready").expect("pattern"));

/// A console to time: how to start it and what on its screen marks data from the cluster.
struct Console {
    /// Name in the table.
    name: &'static str,
    /// The program.
    program: PathBuf,
    /// The first mark: the first cluster data on screen.
    first: fn(&str) -> bool,
    /// The second mark, later or at the same time.
    second: fn(&str) -> bool,
    /// What the second mark means, for the table.
    second_means: &'static str,
}

/// Start `kmm-tui serve --scenario <SCENARIO>` (`large` unless the environment names another, such as
/// `envelope`) and wait until it is ready and settled; its kubeconfig is written to `dir`.
fn serve(dir: &Path) -> (Serve, PathBuf) {
    let kubeconfig = dir.join("kubeconfig");
    let started = Instant::now();
    let scenario = std::env::var("SCENARIO").unwrap_or_else(|_| "large".to_owned());
    let serve = Serve::start(
        Path::new(env!("CARGO_BIN_EXE_kmm-tui")),
        ["--scenario", scenario.as_str()],
        &kubeconfig,
        dir,
        Duration::from_secs(600),
    );
    println!(
        "serve --scenario {scenario}: ready after {:.1?}; settling for {SETTLE:?}",
        started.elapsed()
    );
    std::thread::sleep(SETTLE);
    (serve, kubeconfig)
}

/// Make the child's end of the pty its controlling terminal, as a terminal emulator does, so a console that reads
/// `/dev/tty` or asks the terminal questions finds it.
fn own_terminal() -> std::io::Result<()> {
    nix::unistd::setsid().map_err(std::io::Error::from)?;
    // SAFETY: TIOCSCTTY on the child's standard input (the pty), with no pointer argument.
    if unsafe { nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// What a console cost once all was on screen: its share of a core over the window, and its memory at the end.
struct Idle {
    cpu_percent: f64,
    rss_mib: f64,
    peak_mib: f64,
}

/// Start `console` once in a fresh pty and return when each mark first showed, measured from just before the
/// process was spawned; `None` for a mark that never showed within [`LIMIT`]. With `idle`, the console is left
/// running that long after the second mark, and what it cost meanwhile is returned too.
fn time_once(
    console: &Console,
    kubeconfig: &Path,
    idle: Option<Duration>,
) -> (Option<Duration>, Option<Duration>, Option<Idle>) {
    let (rows, columns) = SIZE;
    let size = Winsize {
        ws_row: rows,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = openpty(Some(&size), None).expect("opening a pty");
    let child_end = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("duplicating the pty"));
    let mut command = Command::new(&console.program);
    command
        .env("KUBECONFIG", kubeconfig)
        .env("TERM", "xterm-256color")
        .stdin(child_end(&pty.slave))
        .stdout(child_end(&pty.slave))
        .stderr(child_end(&pty.slave));
    // SAFETY: `own_terminal` only makes system calls that are safe between fork and exec.
    unsafe {
        command.pre_exec(own_terminal);
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("starting the console");
    // Only the child may hold the pty's other end, so reading ends when it exits.
    drop(command);
    drop(pty.slave);
    let mut reader = std::fs::File::from(pty.master);
    let mut writer = reader.try_clone().expect("duplicating the pty");
    // Reads block; a thread hands the output over so the clock can give up at the limit.
    let (output, arrivals) = mpsc::channel::<Vec<u8>>();
    let pump = std::thread::spawn(move || {
        let mut buffer = vec![0u8; 1 << 16];
        while let Ok(read) = reader.read(&mut buffer) {
            if read == 0 || output.send(buffer[..read].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut terminal = vt100::Parser::new(rows, columns, 0);
    let mut tail: Vec<u8> = Vec::new();
    let (mut first, mut second) = (None, None);
    while second.is_none() {
        let left = LIMIT.saturating_sub(started.elapsed());
        let Ok(bytes) = arrivals.recv_timeout(left) else {
            break;
        };
        let at = started.elapsed();
        // The query may be split over two reads: look in the end of the last one too.
        tail.extend_from_slice(&bytes);
        if tail.windows(CURSOR_QUERY.len()).any(|w| w == CURSOR_QUERY) {
            let _ = writer.write_all(b"\x1b[1;1R");
            tail.clear();
        }
        let keep = tail.len().saturating_sub(CURSOR_QUERY.len() - 1);
        tail.drain(..keep);
        terminal.process(&bytes);
        let screen = terminal.screen().contents();
        if first.is_none() && (console.first)(&screen) {
            first = Some(at);
        }
        if first.is_some() && (console.second)(&screen) {
            second = Some(at);
        }
    }
    let idle = idle.filter(|_| second.is_some()).map(|window| {
        let pid = child.id();
        let before = cpu_time(pid);
        let watched = Instant::now();
        // The console keeps drawing what changes; its output is taken in and dropped.
        while let Some(left) = window.checked_sub(watched.elapsed()) {
            let _ = arrivals.recv_timeout(left);
        }
        Idle {
            cpu_percent: (cpu_time(pid) - before).as_secs_f64() / watched.elapsed().as_secs_f64()
                * 100.0,
            rss_mib: rss_mib(pid),
            peak_mib: peak_mib(pid),
        }
    });
    let _ = child.kill();
    let _ = child.wait();
    drop(writer);
    drop(arrivals);
    let _ = pump.join();
    (first, second, idle)
}

/// When a mark showed in each start; `None` where it never did.
type Times = Vec<Option<Duration>>;

/// The middle value, and the smallest and largest, of the times that showed, in milliseconds.
fn spread(times: &[Option<Duration>]) -> String {
    let mut shown: Vec<f64> = times
        .iter()
        .flatten()
        .map(|t| t.as_secs_f64() * 1000.0)
        .collect();
    if shown.is_empty() {
        return "never".to_owned();
    }
    shown.sort_by(f64::total_cmp);
    let missing = times.len() - shown.len();
    let mut text = format!(
        "{:.0} ms ({:.0}–{:.0})",
        shown[shown.len() / 2],
        shown[0],
        shown[shown.len() - 1]
    );
    if missing > 0 {
        text.push_str(&format!(", {missing} of {} never", times.len()));
    }
    text
}

/// The middle value of the times that showed.
fn median(times: &[Option<Duration>]) -> Option<f64> {
    let mut shown: Vec<f64> = times.iter().flatten().map(Duration::as_secs_f64).collect();
    shown.sort_by(f64::total_cmp);
    shown.get(shown.len() / 2).copied()
}

/// How long each console is left running, once all is on screen, to measure what it costs while the cluster
/// changes underneath (`IDLE_SECONDS`; none by default).
fn idle_window() -> Option<Duration> {
    std::env::var("IDLE_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .filter(|&seconds| seconds > 0)
        .map(Duration::from_secs)
}

/// kdash, where it is installed.
fn kdash() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KDASH") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kdash"))
            .find(|candidate| candidate.is_file())
    })
}

fn main() {
    kmm_tui::allocator::return_freed_memory_promptly();
    if !cfg!(target_os = "linux") {
        println!("console_first_frame: skipped, Linux only");
        return;
    }
    let runs = std::env::var("RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(RUNS);
    let mut consoles = vec![Console {
        name: "kmm-tui",
        program: PathBuf::from(env!("CARGO_BIN_EXE_kmm-tui")),
        first: |screen| KMM_NODES.is_match(screen),
        second: |screen| screen.contains("Nodes 5000/") && !screen.contains("loading…"),
        second_means: "all 5,000 nodes listed",
    }];
    match kdash() {
        Some(program) => consoles.push(Console {
            name: "kdash",
            program,
            first: |screen| screen.contains("kube-system"),
            second: |screen| KDASH_NODES.is_match(screen),
            second_means: "node count",
        }),
        None => println!(
            "kdash: not found ($KDASH or the PATH); measuring kmm-tui alone \
             (`cargo install kdash --locked --version 2.1.1` adds it)"
        ),
    }
    let dir = std::env::temp_dir().join(format!("kmm-tui-first-frame-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("making a directory for the run");
    let (_serve, kubeconfig) = serve(&dir);
    let mut times: Vec<(Times, Times)> = vec![(Vec::new(), Vec::new()); consoles.len()];
    // Each round starts every console once, so a slow moment of the machine falls on all of them alike.
    for round in 0..runs {
        for (console, (firsts, seconds)) in consoles.iter().zip(&mut times) {
            let (first, second, _) = time_once(console, &kubeconfig, None);
            println!(
                "  {round:>2} {:<8} first data {:>6} ms, {} {:>6} ms",
                console.name,
                first.map_or("never".to_owned(), |t| t.as_millis().to_string()),
                console.second_means,
                second.map_or("never".to_owned(), |t| t.as_millis().to_string()),
            );
            firsts.push(first);
            seconds.push(second);
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    if let Some(window) = idle_window() {
        for console in &consoles {
            println!(
                "{}: left running {window:?} once all is on screen",
                console.name
            );
            match time_once(console, &kubeconfig, Some(window)).2 {
                Some(idle) => println!(
                    "  {:.2} % of a core, resident {:.0} MiB, peak {:.0} MiB",
                    idle.cpu_percent, idle.rss_mib, idle.peak_mib
                ),
                None => println!("  never showed everything"),
            }
        }
    }
    println!();
    println!(
        "| console | first cluster data on screen, p50 (min–max) | later mark, p50 (min–max) |"
    );
    println!("|---|---|---|");
    for (console, (firsts, seconds)) in consoles.iter().zip(&times) {
        println!(
            "| {} | {} | {}: {} |",
            console.name,
            spread(firsts),
            console.second_means,
            spread(seconds)
        );
    }
    if let [(ours, _), (theirs, their_nodes)] = times.as_slice()
        && let (Some(ours), Some(theirs), Some(their_nodes)) =
            (median(ours), median(theirs), median(their_nodes))
    {
        println!();
        println!(
            "kmm-tui's first data in {:.2}× kdash's first data, {:.2}× kdash's node count",
            ours / theirs,
            ours / their_nodes
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
