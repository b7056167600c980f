//! kubectl against `kmm-tui serve`: the real binary serves HTTPS, and `tests/end_to_end/kubectl/e2e.sh` drives it the
//! way a user would (get/list/watch, wait, label, annotate, the three patch types, apply, server-side apply, replace,
//! CRDs, finalizers, garbage collection, namespace deletion, authorization: the `viewer` context, `--as`, `auth can-i`,
//! `create token`; pagination), and `tests/end_to_end/kubectl/everyday.sh` types the commands of an administrator's
//! working day against the demo scenario (scale, rollouts and their history, autoscale, expose, debug, drain, diff,
//! `apply -k`, `--prune` and `--server-side`, events, proxy, certificates). Skipped where kubectl is not installed.

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::serve_process::ServeProcess;

/// An upper bound for the whole script; its own waits are bounded far below this, so hitting it means a hang.
const SCRIPT_LIMIT: Duration = Duration::from_secs(240);

/// Whether kubectl is on the PATH and runs: the tests that drive it skip, saying so, where it does not.
pub(crate) fn kubectl_installed() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Run the script with its stdout and stderr interleaved in one file, killing it if it outlives `SCRIPT_LIMIT`.
fn run_script(script: &Path, kubeconfig: &Path, dir: &Path) -> (Option<ExitStatus>, String) {
    let output = dir.join("script.out");
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
    run_script_against_serve("e2e.sh", "empty");
}

/// The commands of an administrator's working day, each as typed: every one must work.
#[test]
fn kubectl_everyday_commands() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    run_script_against_serve("everyday.sh", "demo");
}

/// Run `tests/end_to_end/kubectl/SCRIPT` against a fresh `kmm-tui serve` of `scenario`, failing with the script's
/// output and the server's log unless it succeeds within `SCRIPT_LIMIT`.
fn run_script_against_serve(script: &str, scenario: &str) {
    let dir = tempfile::tempdir().expect("creating a temporary directory");
    let state = dir.path().join("state");
    let server = ServeProcess::start_scenario(dir.path(), &state, "server.log", scenario, &[]);
    let kubeconfig = server.kubeconfig().to_path_buf();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/end_to_end/kubectl")
        .join(script);
    let started = Instant::now();
    let (status, output) = run_script(&path, &kubeconfig, dir.path());
    println!("{output}");
    println!("{script} took {:.1?}", started.elapsed());
    match status {
        Some(status) if status.success() => {}
        Some(status) => panic!(
            "{script} failed ({status}):\n{output}\n--- server log ---\n{}",
            server.log_text()
        ),
        None => panic!(
            "{script} did not finish within {SCRIPT_LIMIT:?}:\n{output}\n--- server log ---\n{}",
            server.log_text()
        ),
    }
}

/// Run kubectl with `args` against the server of `kubeconfig`: its exit code, stdout and stderr.
fn kubectl(kubeconfig: &Path, dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", dir.join("kube-cache"))
        .stdin(Stdio::null())
        .output()
        .expect("running kubectl");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `kubectl exec` into a simulated pod, over the WebSocket protocol kubectl speaks by default: the container answers
/// from its node's machine, and kubectl exits with the command's exit code.
#[test]
fn kubectl_exec_runs_in_the_simulated_node() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/end_to_end/kubectl");
    let dir = tempfile::tempdir().expect("creating a temporary directory");
    let scenario = fixtures.join("exec-scenario.yaml");
    let server = ServeProcess::start_scenario(
        dir.path(),
        &dir.path().join("state"),
        "server.log",
        scenario.to_str().expect("a UTF-8 path"),
        &[],
    );
    let kubeconfig = server.kubeconfig().to_path_buf();
    let run = |args: &[&str]| kubectl(&kubeconfig, dir.path(), args);
    let pod = fixtures.join("exec-pod.yaml");
    let (code, _, err) = run(&["apply", "-f", pod.to_str().expect("a UTF-8 path")]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = run(&["wait", "--for=condition=Ready", "pod/app", "--timeout=60s"]);
    assert_eq!(
        code,
        Some(0),
        "{err}\n--- server log ---\n{}",
        server.log_text()
    );

    let (code, kernel, err) = run(&["exec", "app", "--", "uname", "-r"]);
    assert_eq!(
        (code, kernel.as_str()),
        (Some(0), "5.14.0-284.30.1.el9_2.x86_64\n"),
        "{err}\n--- server log ---\n{}",
        server.log_text()
    );
    let (code, modules, err) = run(&["exec", "app", "--", "lsmod"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(modules.starts_with("Module"), "{modules}");
    let (code, config, err) = run(&[
        "exec",
        "app",
        "--",
        "sh",
        "-c",
        "cat /host/etc/containerd/config.toml",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(config.contains("[plugins"), "{config}");

    let (code, _, _) = run(&["exec", "app", "--", "false"]);
    assert_eq!(code, Some(1), "kubectl exits with the command's exit code");
    let (code, _, err) = run(&["exec", "app", "--", "vi", "/etc/hosts"]);
    assert_eq!(code, Some(127));
    assert!(err.contains("vi: not simulated"), "{err}");
    // Reading pods does not let one run commands in them: exec is authorized as `create` on `pods/exec`.
    // The state directory `state` names the cluster, and so its read-only context.
    let (code, _, err) = run(&["--context", "state-viewer", "exec", "app", "--", "true"]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("cannot create resource \"pods/exec\""),
        "{err}"
    );
    let (code, _, err) = run(&["port-forward", "pod/app", "18080:80"]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("kubectl port-forward, which speaks SPDY"),
        "{err}"
    );
}
