//! kubectl against `kmm-tui serve`: the real binary serves HTTPS, and `tests/kubectl/e2e.sh` drives it the way a
//! user would (get/list/watch, wait, label, annotate, the three patch types, apply, server-side apply, replace,
//! CRDs, finalizers, garbage collection, namespace deletion, authorization: the `viewer` context, `--as`,
//! `auth can-i`, `create token`; pagination). Skipped where kubectl is not installed.

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

mod support;

use support::ServeProcess;

/// An upper bound for the whole script; its own waits are bounded far below this, so hitting it means a hang.
const SCRIPT_LIMIT: Duration = Duration::from_secs(240);

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
    let server = ServeProcess::start(dir.path(), &dir.path().join("state"), "server.log");
    let kubeconfig = server.kubeconfig().to_path_buf();
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
