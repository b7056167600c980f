//! A `kmm-tui serve` child process for tests that drive the real binary (kubectl, crash recovery, hostile clients).
// Each test binary that mounts this module uses a different part of it.
#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to write its kubeconfig.
const STARTUP_LIMIT: Duration = Duration::from_secs(30);

/// A `kmm-tui serve` process on a free loopback port, killed when dropped so a failing test never leaves it behind.
pub(crate) struct ServeProcess {
    child: Child,
    log: PathBuf,
    kubeconfig: PathBuf,
}

impl ServeProcess {
    /// Start the binary with its state in `state`, logging to `dir/<log_name>`, and wait until the kubeconfig it
    /// writes to `dir/kubeconfig` is there (it is written atomically once the server is ready).
    pub(crate) fn start(dir: &Path, state: &Path, log_name: &str) -> Self {
        Self::start_with(dir, state, log_name, &[])
    }

    /// [`ServeProcess::start`] with more arguments for `kmm-tui serve`.
    pub(crate) fn start_with(
        dir: &Path,
        state: &Path,
        log_name: &str,
        extra_args: &[&str],
    ) -> Self {
        Self::start_scenario(dir, state, log_name, "empty", extra_args)
    }

    /// [`ServeProcess::start_with`] simulating `scenario` (a built-in name or a file) instead of an empty cluster.
    pub(crate) fn start_scenario(
        dir: &Path,
        state: &Path,
        log_name: &str,
        scenario: &str,
        extra_args: &[&str],
    ) -> Self {
        Self::start_listening(dir, state, log_name, scenario, "127.0.0.1:0", extra_args)
    }

    /// [`ServeProcess::start_scenario`] serving on `listen` (a restarted server keeps its port, as a real one does).
    pub(crate) fn start_listening(
        dir: &Path,
        state: &Path,
        log_name: &str,
        scenario: &str,
        listen: &str,
        extra_args: &[&str],
    ) -> Self {
        let kubeconfig = dir.join("kubeconfig");
        // A restarted server writes the file again: remove the old one so that waiting for it waits for the new one.
        let _ = std::fs::remove_file(&kubeconfig);
        let log = dir.join(log_name);
        let log_file = File::create(&log).expect("creating the server log");
        let child = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
            .arg("serve")
            .args(["--scenario", scenario, "--listen", listen])
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .arg("--state-dir")
            .arg(state)
            .args(extra_args)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("sharing the server log"))
            .stderr(log_file)
            .spawn()
            .expect("starting kmm-tui serve");
        let mut server = Self {
            child,
            log,
            kubeconfig,
        };
        server.wait_for_kubeconfig();
        server
    }

    fn wait_for_kubeconfig(&mut self) {
        let deadline = Instant::now() + STARTUP_LIMIT;
        while !self.kubeconfig.exists() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "kmm-tui serve exited early ({status}):\n{}",
                    self.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no kubeconfig after {STARTUP_LIMIT:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Path of the kubeconfig the server wrote.
    pub(crate) fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The server's log once it holds `text`, waiting for it: the server prints its banner after it writes the
    /// kubeconfig, so a test that reads the log straight away can run ahead of it on a loaded machine.
    pub(crate) fn wait_for_log(&self, text: &str) -> String {
        let deadline = Instant::now() + STARTUP_LIMIT;
        loop {
            let log = self.log_text();
            if log.contains(text) {
                return log;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not print {text:?} in {STARTUP_LIMIT:?}:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id, for signals.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// The server's exit status, once it has exited.
    pub(crate) fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("waiting for the server")
    }

    /// Everything the server printed so far.
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL (what `Child::kill` sends on unix): no shutdown path runs.
    pub(crate) fn kill_9(mut self) {
        self.child.kill().expect("sending SIGKILL");
        self.child.wait().expect("reaping the killed server");
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
