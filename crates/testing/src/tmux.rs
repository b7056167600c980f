//! The console in a detached tmux session, for tests and benchmarks that drive `kmm-tui` the way a user does: keys
//! go in with `send-keys`, the screen comes out with `capture-pane`. Each session runs on its own tmux server
//! (`tmux -L <socket>`), which is killed when the [`TmuxConsole`] is dropped, so a failing test leaves nothing
//! behind.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Terminal size every session gets, so screens are the same on every machine.
pub const COLUMNS: u16 = 120;
/// See [`COLUMNS`].
pub const ROWS: u16 = 40;

/// How often the screen is read while waiting for something to appear.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// Name of the one session on each tmux server.
const SESSION: &str = "console";

/// Sessions started by this process, to give each its own socket.
static SESSIONS: AtomicUsize = AtomicUsize::new(0);

/// Why tmux cannot be used here, or `None` when it can.
pub fn unavailable() -> Option<String> {
    match Command::new("tmux").arg("-V").output() {
        Ok(output) if output.status.success() => None,
        Ok(output) => Some(format!(
            "`tmux -V` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Err(error) => Some(format!("tmux is not installed ({error})")),
    }
}

/// What tmux knows about the session's only pane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaneState {
    /// The process the pane runs (`kmm-tui` itself: `env` execs it).
    pub pid: u32,
    /// Whether that process has exited (the pane stays, as `remain-on-exit` is on).
    pub dead: bool,
    /// Its exit status, once dead.
    pub exit_status: Option<i32>,
    /// Whether the pane is on the alternate screen, where full-screen programs draw.
    pub alternate_screen: bool,
}

/// A program (`kmm-tui`) running in a detached tmux session of [`COLUMNS`]x[`ROWS`].
pub struct TmuxConsole {
    socket: String,
    dir: PathBuf,
}

impl TmuxConsole {
    /// Start `<program> <args>` (the `kmm-tui` binary a test was built with) with HOME, TMPDIR and XDG_STATE_HOME
    /// set to `dir` (so it reads no user configuration and logs to `dir/kmm-tui/kmm-tui.log`) and NO_COLOR set, so
    /// the screen text is all there is to compare.
    pub fn start<I, S>(program: impl AsRef<OsStr>, dir: &Path, args: I) -> TmuxConsole
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let socket = format!(
            "kmm-tui-e2e-{}-{}",
            std::process::id(),
            SESSIONS.fetch_add(1, Ordering::SeqCst)
        );
        // The pane outlives the program, so its exit status and the screen it leaves behind can be read.
        let config = dir.join("tmux.conf");
        std::fs::write(&config, "set-option -g remain-on-exit on\n").expect("writing tmux.conf");
        let console = TmuxConsole {
            socket,
            dir: dir.to_owned(),
        };
        let mut command = console.tmux();
        command
            .arg("-f")
            .arg(&config)
            .args(["new-session", "-d", "-s", SESSION])
            .args(["-x", &COLUMNS.to_string(), "-y", &ROWS.to_string()])
            .arg("env")
            .arg(format!("HOME={}", dir.display()))
            .arg(format!("TMPDIR={}", dir.display()))
            .arg(format!("XDG_STATE_HOME={}", dir.display()))
            .arg("NO_COLOR=1")
            .arg(program)
            .args(args);
        let output = command.output().expect("running tmux new-session");
        assert!(
            output.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        console
    }

    /// A tmux command on this session's server, untouched by any tmux the tests themselves run in.
    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command
            .env_remove("TMUX")
            .args(["-L", &self.socket])
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        let output = self.tmux().args(args).output().expect("running tmux");
        assert!(
            output.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// The text on screen now, one line per row.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", SESSION]).stdout)
            .into_owned()
    }

    /// Press keys, in tmux's names (`Enter`, `Escape`, `C-c`) or as the characters themselves (`R`, `:`, `?`).
    pub fn press(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// The pane's process and screen mode.
    pub fn pane(&self) -> PaneState {
        let output = self.run(&[
            "list-panes",
            "-t",
            SESSION,
            "-F",
            "#{pane_pid} #{pane_dead} #{pane_dead_status} #{alternate_on}",
        ]);
        let text = String::from_utf8_lossy(&output.stdout);
        let fields: Vec<&str> = text.split_whitespace().collect();
        let flag = |index: usize| fields.get(index).is_some_and(|f| *f == "1");
        let dead = flag(1);
        PaneState {
            pid: fields
                .first()
                .and_then(|pid| pid.parse().ok())
                .unwrap_or_else(|| panic!("tmux listed no pane pid: {text:?}")),
            dead,
            exit_status: if dead {
                fields.get(2).and_then(|status| status.parse().ok())
            } else {
                None
            },
            alternate_screen: flag(if dead { 3 } else { 2 }),
        }
    }

    /// Read the screen until `ready` accepts it, and return that screen; fail after `limit` with `what`, the last
    /// screen and the console's log.
    pub fn wait_for(&self, what: &str, limit: Duration, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            if Instant::now() >= deadline {
                self.fail(&format!("timed out after {limit:?} waiting for {what}"));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Poll `check` (the cluster, usually) until it gives `Some`, and return that; fail after `limit` with `what`
    /// and the last error `check` gave.
    pub fn poll<T>(
        &self,
        what: &str,
        limit: Duration,
        mut check: impl FnMut() -> Result<Option<T>, String>,
    ) -> T {
        let deadline = Instant::now() + limit;
        loop {
            match check() {
                Ok(Some(found)) => return found,
                Ok(None) if Instant::now() >= deadline => {
                    self.fail(&format!("{what}: not after {limit:?}"))
                }
                Err(error) if Instant::now() >= deadline => self.fail(&format!("{what}: {error}")),
                _ => std::thread::sleep(POLL_INTERVAL),
            }
        }
    }

    /// Wait until the program has exited, and return the pane then; fail after `limit`.
    pub fn wait_for_exit(&self, limit: Duration) -> PaneState {
        let deadline = Instant::now() + limit;
        loop {
            let pane = self.pane();
            if pane.dead {
                return pane;
            }
            if Instant::now() >= deadline {
                self.fail(&format!("kmm-tui still running after {limit:?}"));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Fail the test with `message`, the screen and the end of the console's log.
    pub fn fail(&self, message: &str) -> ! {
        panic!(
            "{message}\n--- screen ---\n{}\n--- end of {} ---\n{}",
            self.screen(),
            self.log_path().display(),
            self.log_tail(40)
        );
    }

    /// Where the console logs.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("kmm-tui").join("kmm-tui.log")
    }

    /// The last `lines` lines of the console's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for TmuxConsole {
    fn drop(&mut self) {
        let _ = self
            .tmux()
            .arg("kill-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
