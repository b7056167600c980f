//! How the engine stops on a signal: it stops its reconcilers, releases its Lease if it can, and exits within the
//! Lease's renew deadline, even when its API server goes away at the same moment or stops answering; a second
//! signal ends it at once. Real processes on the wall clock: `kmm-tui serve` runs a cluster over HTTPS and
//! `kmm-tui controller` acts on it, or `serve --with-engine` runs both; and, on tokio time, a leader whose work
//! never stops inside one process.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::serve_process::ServeProcess;
use k8s_openapi::api::coordination::v1::Lease;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::LeaseConfig;
use kmm_engine::runtime::leader::run_as_leader;
use tokio_util::sync::CancellationToken;

/// What an engine logs once its reconcilers run (from `engine::run_reconcilers`).
const ACTING: &str = "engine acting";

/// How long a cluster may take to start and its engine to act, on a loaded machine.
const STARTUP_LIMIT: Duration = Duration::from_secs(60);

/// Slack on top of a deadline for a process to be gone and reaped, on a loaded machine.
const EXIT_SLACK: Duration = Duration::from_millis(1500);

/// Lease duration, in seconds, of the `serve --with-engine` engine (fixed in `main.rs`).
const EMBEDDED_LEASE_SECS: u64 = 15;

/// The renew deadline of a Lease of `seconds`: the most a shutdown may take.
fn renew_deadline(seconds: u64) -> Duration {
    let lease = LeaseConfig::new("ns", "lease", "me", Duration::from_secs(seconds));
    lease.lease_duration - lease.retry_period
}

/// A `kmm-tui controller` process, killed when dropped.
struct Controller {
    child: Child,
    log: PathBuf,
}

impl Controller {
    /// Start a controller logging to `dir/<log_name>`. Every controller of these tests has the same identity, so a
    /// restarted one reclaims the Lease its predecessor held at once, as a restarted pod does.
    fn start(dir: &Path, log_name: &str, kubeconfig: &Path, lease_secs: u64) -> Self {
        let log = dir.join(log_name);
        let file = File::create(&log).expect("creating the controller log");
        let child = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
            .arg("controller")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--identity", "stopping"])
            .args(["--lease-duration", &lease_secs.to_string()])
            .args(["--log", "info"])
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("sharing the controller log"))
            .stderr(file)
            .spawn()
            .expect("starting kmm-tui controller");
        Self { child, log }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("waiting for the controller")
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Send `signal` (`TERM`, `STOP`, `CONT`) to every process in `pids` with one `kill`, so they get it together.
fn signal(name: &str, pids: &[u32]) {
    let sent = Command::new("kill")
        .arg(format!("-{name}"))
        .args(pids.iter().map(u32::to_string))
        .status()
        .expect("running kill");
    assert!(sent.success(), "kill -{name} {pids:?} failed");
}

/// Poll `probe` every 20 ms until it yields a value or `limit` has passed.
fn within<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until `log` (read afresh each time) contains `line`, failing with `who`'s log after [`STARTUP_LIMIT`].
fn wait_for_log(who: &str, line: &str, log: impl Fn() -> String) {
    let seen = within(STARTUP_LIMIT, || log().contains(line).then_some(()));
    assert!(seen.is_some(), "{who} never logged {line:?}:\n{}", log());
}

/// Whether the binary runs here; tests that need it are skipped otherwise.
fn binary_unavailable() -> Option<String> {
    match Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
        .arg("--version")
        .output()
    {
        Ok(output) if output.status.success() => None,
        Ok(output) => Some(format!("kmm-tui --version exited with {}", output.status)),
        Err(error) => Some(format!("kmm-tui cannot be started: {error}")),
    }
}

/// A term whose work ignores its cancellation (a pass waiting on something that never comes) holds a shutdown up
/// for the shutdown limit less the release's share, no longer; the Lease is then released all the same.
#[tokio::test(start_paused = true)]
async fn a_leader_whose_work_never_stops_shuts_down_within_the_limit_and_releases() {
    let cluster = EmbeddedCluster::start(EmbeddedOptions::default())
        .await
        .expect("the embedded cluster starts");
    let config = LeaseConfig::new("kube-system", "stuck", "stuck", Duration::from_secs(10));
    let limit = config.lease_duration - config.retry_period;
    let shutdown = CancellationToken::new();
    let (leading, led) = tokio::sync::oneshot::channel();
    let mut leading = Some(leading);
    let candidate = tokio::spawn(run_as_leader(
        cluster.client(),
        config,
        shutdown.clone(),
        move |_term| {
            if let Some(leading) = leading.take() {
                let _ = leading.send(());
            }
            std::future::pending::<()>()
        },
    ));
    led.await.expect("the candidate leads");

    let signalled = tokio::time::Instant::now();
    shutdown.cancel();
    tokio::time::timeout(limit * 10, candidate)
        .await
        .expect("the shutdown ends")
        .expect("the candidate does not panic")
        .expect("the candidate stops cleanly");
    let took = signalled.elapsed();
    assert!(
        took <= limit,
        "the shutdown took {took:?}, past its {limit:?} limit"
    );
    let lease = kube::Api::<Lease>::namespaced(cluster.client(), "kube-system")
        .get("stuck")
        .await
        .expect("the Lease is there");
    let holder = lease.spec.and_then(|spec| spec.holder_identity);
    assert_eq!(holder, None, "the Lease is released");
    cluster.shutdown().await;
}

#[test]
fn a_restarted_controller_signalled_with_its_api_server_exits_within_the_renew_deadline() {
    if let Some(reason) = binary_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    let _alone = crate::ONE_AT_A_TIME.blocking_lock();
    let lease_secs = 5;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start_scenario(
        dir.path(),
        &dir.path().join("state"),
        "serve.log",
        "demo",
        &[],
    );
    // A first controller takes the demo cluster over, then crashes: the cluster is the one a controller usually
    // starts on, with its objects already taken in hand (finalizers, labels, statuses).
    let mut crashed = Controller::start(dir.path(), "crashed.log", server.kubeconfig(), lease_secs);
    wait_for_log("the first controller", ACTING, || crashed.log_text());
    std::thread::sleep(Duration::from_secs(3));
    crashed.child.kill().expect("sending SIGKILL");
    crashed
        .child
        .wait()
        .expect("reaping the crashed controller");
    let mut controller = Controller::start(
        dir.path(),
        "controller.log",
        server.kubeconfig(),
        lease_secs,
    );
    wait_for_log("the restarted controller", ACTING, || controller.log_text());
    // Let the passes of its term get under way: the reconcilers have work in flight when the signal comes.
    std::thread::sleep(Duration::from_secs(2));

    signal("TERM", &[controller.child.id(), server.id()]);
    let signalled = Instant::now();
    let limit = renew_deadline(lease_secs) + EXIT_SLACK;
    let status = within(limit, || controller.try_wait());
    let took = signalled.elapsed();
    let log = controller.log_text();
    let status = status.unwrap_or_else(|| {
        panic!("the controller still runs {took:?} after SIGTERM (limit {limit:?}):\n{log}")
    });
    println!("the controller exited {took:?} after SIGTERM with {status}");
    assert!(status.success(), "exit {status}:\n{log}");
    assert!(log.contains("reconcilers stopped"), "{log}");
}

#[test]
fn a_controller_whose_api_server_stops_answering_exits_within_the_renew_deadline() {
    if let Some(reason) = binary_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    let _alone = crate::ONE_AT_A_TIME.blocking_lock();
    // Long enough that a release waited for up to the lease duration (a retry period past the renew deadline)
    // shows beyond the slack.
    let lease_secs = 10;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start_scenario(
        dir.path(),
        &dir.path().join("state"),
        "serve.log",
        "demo",
        &[],
    );
    let mut controller = Controller::start(
        dir.path(),
        "controller.log",
        server.kubeconfig(),
        lease_secs,
    );
    wait_for_log("the controller", ACTING, || controller.log_text());
    std::thread::sleep(Duration::from_secs(2));

    // The API server stops answering but keeps its connections: passes in flight and the Lease release wait for
    // answers that never come.
    signal("STOP", &[server.id()]);
    signal("TERM", &[controller.child.id()]);
    let signalled = Instant::now();
    let limit = renew_deadline(lease_secs) + EXIT_SLACK;
    let status = within(limit, || controller.try_wait());
    let took = signalled.elapsed();
    signal("CONT", &[server.id()]);
    let log = controller.log_text();
    let status = status.unwrap_or_else(|| {
        panic!("the controller still runs {took:?} after SIGTERM (limit {limit:?}):\n{log}")
    });
    println!("the controller exited {took:?} after SIGTERM with {status}");
    assert!(status.success(), "exit {status}:\n{log}");
    assert!(
        log.contains("releasing the lease timed out"),
        "the release was not given up on:\n{log}"
    );
}

#[test]
fn a_second_signal_ends_a_blocked_shutdown_at_once() {
    if let Some(reason) = binary_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    let _alone = crate::ONE_AT_A_TIME.blocking_lock();
    // A long lease: the first shutdown may take its whole renew deadline, and the second signal must not wait for it.
    let lease_secs = 15;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start(dir.path(), &dir.path().join("state"), "serve.log");
    let mut controller = Controller::start(
        dir.path(),
        "controller.log",
        server.kubeconfig(),
        lease_secs,
    );
    wait_for_log("the controller", ACTING, || controller.log_text());

    // The API server stops answering but keeps its connections: the Lease release waits for an answer.
    signal("STOP", &[server.id()]);
    signal("TERM", &[controller.child.id()]);
    std::thread::sleep(Duration::from_millis(500));
    let early = controller.try_wait();
    assert!(
        early.is_none(),
        "the first shutdown was not blocked (exit {early:?}):\n{}",
        controller.log_text()
    );
    signal("TERM", &[controller.child.id()]);
    let signalled = Instant::now();
    let status = within(EXIT_SLACK, || controller.try_wait());
    let took = signalled.elapsed();
    signal("CONT", &[server.id()]);
    let log = controller.log_text();
    let status = status.unwrap_or_else(|| {
        panic!("the controller still runs {took:?} after a second SIGTERM:\n{log}")
    });
    println!("the controller exited {took:?} after a second SIGTERM with {status}");
    assert!(!status.success(), "a cut-short shutdown exits 0:\n{log}");
    assert!(log.contains("second signal"), "not said why:\n{log}");
}

#[test]
fn a_restarted_serve_with_engine_signalled_exits_within_the_renew_deadline() {
    if let Some(reason) = binary_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    let _alone = crate::ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let state = dir.path().join("state");
    // The first run takes the demo cluster over and is killed; the second starts on what it left, as a restarted
    // server does.
    let first =
        ServeProcess::start_scenario(dir.path(), &state, "first.log", "demo", &["--with-engine"]);
    wait_for_log("the first serve --with-engine", ACTING, || first.log_text());
    std::thread::sleep(Duration::from_secs(3));
    first.kill_9();
    let mut server =
        ServeProcess::start_scenario(dir.path(), &state, "serve.log", "demo", &["--with-engine"]);
    wait_for_log("serve --with-engine", ACTING, || server.log_text());
    std::thread::sleep(Duration::from_secs(2));

    signal("TERM", &[server.id()]);
    let signalled = Instant::now();
    let limit = renew_deadline(EMBEDDED_LEASE_SECS) + EXIT_SLACK;
    let status = within(limit, || server.try_wait());
    let took = signalled.elapsed();
    let log = server.log_text();
    let status = status.unwrap_or_else(|| {
        panic!("serve still runs {took:?} after SIGTERM (limit {limit:?}):\n{log}")
    });
    println!("serve --with-engine exited {took:?} after SIGTERM with {status}");
    assert!(status.success(), "exit {status}:\n{log}");
    assert!(log.contains("released lease"), "{log}");
}
