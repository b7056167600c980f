//! kubectl against `kmm-tui serve`: the real binary serves HTTPS, and `tests/kubectl/e2e.sh` drives it the way a
//! user would (get/list/watch, wait, label, annotate, the three patch types, apply, server-side apply, replace,
//! CRDs, finalizers, garbage collection, namespace deletion, pagination). Skipped where kubectl is not installed.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to write its kubeconfig.
const STARTUP_LIMIT: Duration = Duration::from_secs(30);

/// An upper bound for the whole script; its own waits are bounded far below this, so hitting it means a hang.
const SCRIPT_LIMIT: Duration = Duration::from_secs(240);

/// A `kmm-tui serve` process, killed when dropped so a failing test never leaves it behind.
struct Server {
    child: Child,
    log: PathBuf,
}

impl Server {
    /// Start the binary on a free loopback port and wait until its kubeconfig is complete.
    fn start(dir: &Path) -> (Self, PathBuf) {
        let kubeconfig = dir.join("kubeconfig");
        let log = dir.join("server.log");
        let log_file = File::create(&log).expect("creating the server log");
        let child = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .arg("--state-dir")
            .arg(dir.join("state"))
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("sharing the server log"))
            .stderr(log_file)
            .spawn()
            .expect("starting kmm-tui serve");
        let mut server = Self { child, log };
        server.wait_for_kubeconfig(&kubeconfig);
        (server, kubeconfig)
    }

    /// The kubeconfig is written in place after the listener is up; it is complete once it names its context.
    fn wait_for_kubeconfig(&mut self, path: &Path) {
        let deadline = Instant::now() + STARTUP_LIMIT;
        loop {
            let written = std::fs::read_to_string(path).unwrap_or_default();
            if written.contains("current-context: kmm-tui-embedded") && written.contains("token:") {
                return;
            }
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

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl_installed() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Run the script with its stdout and stderr interleaved in one file, killing it if it outlives `SCRIPT_LIMIT`.
fn run_script(script: &Path, kubeconfig: &Path, dir: &Path) -> (Option<ExitStatus>, String) {
    let output = dir.join("e2e.out");
    let file = File::create(&output).expect("creating the script output file");
    let mut child = Command::new("bash")
        .arg(script)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", dir.join("kube-cache"))
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("sharing the script output file"))
        .stderr(file)
        .spawn()
        .expect("starting bash");
    let deadline = Instant::now() + SCRIPT_LIMIT;
    let status = loop {
        match child.try_wait().expect("waiting for the script") {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    (status, std::fs::read_to_string(&output).unwrap_or_default())
}

#[test]
fn kubectl_end_to_end() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    let dir = tempfile::tempdir().expect("creating a temporary directory");
    let (server, kubeconfig) = Server::start(dir.path());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kubectl/e2e.sh");
    let started = Instant::now();
    let (status, output) = run_script(&script, &kubeconfig, dir.path());
    println!("{output}");
    println!("e2e.sh took {:.1?}", started.elapsed());
    match status {
        Some(status) if status.success() => {}
        Some(status) => panic!(
            "e2e.sh failed ({status}):\n{output}\n--- server log ---\n{}",
            server.log_text()
        ),
        None => panic!(
            "e2e.sh did not finish within {SCRIPT_LIMIT:?}:\n{output}\n--- server log ---\n{}",
            server.log_text()
        ),
    }
}
