//! Leader election between engines: `kmm-tui controller` processes against one `kmm-tui serve` (killed, stopped,
//! measured on the wall clock), and `run_as_leader` candidates inside one process on an embedded cluster (tokio
//! time, with crashes and network partitions).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::serve_process::ServeProcess;
use k8s_openapi::api::coordination::v1::Lease;
use kmm_api::lease::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::LeaseConfig;
use kmm_engine::runtime::leader::run_as_leader;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Lease duration of the controller processes, in seconds.
const LEASE_SECS: u64 = 4;

/// What an engine logs once it acts (from `engine::run_reconcilers`).
const ACTING: &str = "engine acting";

/// What a candidate logs while another holds the Lease.
const STANDING_BY: &str = "standing by";

/// A `kmm-tui controller` process, killed when dropped.
struct Controller {
    identity: String,
    child: Child,
    log: PathBuf,
}

impl Controller {
    fn start(dir: &Path, kubeconfig: &Path, identity: &str) -> Self {
        let log = dir.join(format!("controller-{identity}.log"));
        let file = File::create(&log).expect("creating the controller log");
        let child = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
            .arg("controller")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--identity", identity])
            .args(["--lease-duration", &LEASE_SECS.to_string()])
            .args(["--log", "info"])
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("sharing the controller log"))
            .stderr(file)
            .spawn()
            .expect("starting kmm-tui controller");
        Self {
            identity: identity.to_owned(),
            child,
            log,
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn kill_9(&mut self) {
        self.child.kill().expect("sending SIGKILL");
        self.child.wait().expect("reaping the killed controller");
    }

    /// SIGTERM, then wait (up to the lease duration) for the process to exit.
    async fn terminate(&mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("running kill");
        assert!(sent.success(), "kill -TERM failed");
        let deadline = Instant::now() + Duration::from_secs(LEASE_SECS);
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting for the controller") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit after SIGTERM:\n{}",
                self.identity,
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Why the binary cannot run here, if it cannot.
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

/// A client of the cluster the kubeconfig points at.
async fn client_for(kubeconfig: &Path) -> kube::Client {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).expect("the kubeconfig reads");
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .expect("the kubeconfig loads");
    kube::Client::try_from(config).expect("a client")
}

/// Who holds the engine's Lease now.
async fn holder(client: &kube::Client) -> Option<String> {
    kube::Api::<Lease>::namespaced(client.clone(), DEFAULT_LEASE_NAMESPACE)
        .get_opt(DEFAULT_LEASE_NAME)
        .await
        .ok()
        .flatten()
        .and_then(|lease| lease.spec?.holder_identity)
        .filter(|holder| !holder.is_empty())
}

/// Poll `probe` every 20 ms for up to `limit`.
async fn within<T, F, Fut>(limit: Duration, mut probe: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe().await {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Wait until `controller`'s log contains `line`.
async fn wait_for_log(controller: &Controller, line: &str, limit: Duration) {
    let seen = within(limit, || async {
        controller.log_text().contains(line).then_some(())
    })
    .await;
    assert!(
        seen.is_some(),
        "{} never logged {line:?}:\n{}",
        controller.identity,
        controller.log_text()
    );
}

/// Wait until `identity` holds the Lease, and return how long that took.
async fn handover_to(client: &kube::Client, identity: &str, limit: Duration) -> Duration {
    let start = Instant::now();
    let acquired = within(limit, || async {
        (holder(client).await.as_deref() == Some(identity)).then_some(())
    })
    .await;
    assert!(
        acquired.is_some(),
        "{identity} did not take the lease within {limit:?}"
    );
    start.elapsed()
}

#[tokio::test]
async fn one_controller_acts_and_a_standby_takes_over_within_the_lease_duration_after_kill_9() {
    if let Some(reason) = binary_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    let _alone = crate::ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start(dir.path(), &dir.path().join("state"), "serve.log");
    let client = client_for(server.kubeconfig()).await;
    let mut controllers = [
        Controller::start(dir.path(), server.kubeconfig(), "a"),
        Controller::start(dir.path(), server.kubeconfig(), "b"),
    ];

    let leader = within(Duration::from_secs(15), || holder(&client))
        .await
        .expect("one controller takes the lease");
    let (leading, standing) = if leader == "a" { (0, 1) } else { (1, 0) };
    assert_eq!(controllers[leading].identity, leader);
    wait_for_log(&controllers[leading], ACTING, Duration::from_secs(5)).await;
    wait_for_log(&controllers[standing], STANDING_BY, Duration::from_secs(5)).await;
    // A few renewals later, still only one acts.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(holder(&client).await.as_deref(), Some(leader.as_str()));
    let standby_log = controllers[standing].log_text();
    assert!(
        !standby_log.contains(ACTING),
        "the standby acts while {leader} leads:\n{standby_log}"
    );
    // The server's metrics name the controllers by their User-Agent, as they do kube-apiserver's components.
    let metrics = client
        .request_text(
            http::Request::get("/metrics")
                .body(Vec::new())
                .expect("a request"),
        )
        .await
        .expect("the server's metrics");
    let agent = r#"client="kmm-tui-controller""#;
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("apiserver_request_total") && line.contains(agent)),
        "no request counted for {agent}"
    );

    controllers[leading].kill_9();
    let standby = controllers[standing].identity.clone();
    let handover = handover_to(&client, &standby, Duration::from_secs(LEASE_SECS + 5)).await;
    println!("handover after kill -9 of {leader}: {handover:?} (lease {LEASE_SECS} s)");
    assert!(
        handover <= Duration::from_secs(LEASE_SECS + 1),
        "handover took {handover:?}, more than the {LEASE_SECS} s lease and 1 s of slack"
    );
    wait_for_log(&controllers[standing], ACTING, Duration::from_secs(2)).await;
    let log = controllers[standing].log_text();
    let acquired = log
        .find("acquired lease")
        .expect("the new leader logs acquiring");
    let acting = log.find(ACTING).expect("the new leader logs acting");
    assert!(acquired < acting, "acting before acquiring:\n{log}");
}

#[tokio::test]
async fn a_leader_stopped_with_sigterm_releases_the_lease_at_once() {
    if let Some(reason) = binary_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    let _alone = crate::ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start(dir.path(), &dir.path().join("state"), "serve.log");
    let client = client_for(server.kubeconfig()).await;
    let mut first = Controller::start(dir.path(), server.kubeconfig(), "first");
    handover_to(&client, "first", Duration::from_secs(15)).await;
    wait_for_log(&first, ACTING, Duration::from_secs(5)).await;
    let second = Controller::start(dir.path(), server.kubeconfig(), "second");
    wait_for_log(&second, STANDING_BY, Duration::from_secs(15)).await;

    let status = first.terminate().await;
    assert!(
        status.success(),
        "SIGTERM exit: {status}\n{}",
        first.log_text()
    );
    // The release is a write the first controller logs once the API server took it; what is timed is the standby
    // noticing it. From the exit, not the signal: the work stopping first takes what the machine's load makes it.
    let exited = Instant::now();
    let at_exit = holder(&client).await;
    assert_ne!(
        at_exit.as_deref(),
        Some("first"),
        "the lease is still held by the controller that exited:\n{}",
        first.log_text()
    );
    handover_to(&client, "second", Duration::from_secs(LEASE_SECS + 5)).await;
    let handover = exited.elapsed();
    println!("handover after the SIGTERMed leader exited: {handover:?} (lease {LEASE_SECS} s)");
    assert!(
        handover < Duration::from_secs(LEASE_SECS),
        "the standby took {handover:?} after the exit, as long as waiting for the lease to expire"
    );
    let log = first.log_text();
    assert!(log.contains("released lease"), "no release logged:\n{log}");
    let Some(stopped) = log.find("reconcilers stopped") else {
        panic!("the work did not stop before the release:\n{log}")
    };
    let Some(released) = log.find("released lease") else {
        panic!("the lease is not released:\n{log}")
    };
    assert!(
        stopped < released,
        "released before the work stopped:\n{log}"
    );
    wait_for_log(&second, ACTING, Duration::from_secs(2)).await;
}

#[tokio::test]
async fn the_engine_of_serve_with_engine_leads_and_controllers_stand_by() {
    if let Some(reason) = binary_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    let _alone = crate::ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start_with(
        dir.path(),
        &dir.path().join("state"),
        "serve.log",
        &["--with-engine"],
    );
    let client = client_for(server.kubeconfig()).await;
    handover_to(&client, "embedded", Duration::from_secs(15)).await;
    let acting = within(Duration::from_secs(5), || async {
        server.log_text().contains(ACTING).then_some(())
    })
    .await;
    assert!(
        acting.is_some(),
        "the embedded engine does not act:\n{}",
        server.log_text()
    );
    let controller = Controller::start(dir.path(), server.kubeconfig(), "outside");
    wait_for_log(&controller, STANDING_BY, Duration::from_secs(15)).await;
    assert!(controller.log_text().contains("held by embedded"));
    assert!(!controller.log_text().contains(ACTING));
}

#[test]
fn a_controller_that_cannot_reach_its_cluster_exits_1_with_one_line() {
    if let Some(reason) = binary_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: gone\n\
             clusters: [{{name: gone, cluster: {{server: 'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}}}]\n\
             users: [{{name: gone, user: {{token: nothing}}}}]\n\
             contexts: [{{name: gone, context: {{cluster: gone, user: gone}}}}]\n"
        ),
    )
    .expect("writing the kubeconfig");
    let output = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
        .arg("controller")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stdin(Stdio::null())
        .output()
        .expect("running kmm-tui controller");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr:\n{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "not one line:\n{stderr}");
    assert!(
        lines[0].starts_with("kmm-tui: cannot reach the cluster at https://127.0.0.1:"),
        "unclear: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Terms of `work` over all candidates: how many run now, the most that ever ran at once, and who runs.
#[derive(Default)]
struct Terms {
    running: AtomicUsize,
    most: AtomicUsize,
    started: AtomicUsize,
    leader: Mutex<Option<String>>,
}

impl Terms {
    fn leader(&self) -> Option<String> {
        self.leader.lock().expect("the terms lock").clone()
    }
}

/// One running term; ends when dropped, so a term aborted mid-way (a crash) ends too.
struct Term {
    terms: Arc<Terms>,
    identity: String,
}

impl Term {
    fn begin(terms: Arc<Terms>, identity: String) -> Self {
        let running = terms.running.fetch_add(1, Ordering::SeqCst) + 1;
        terms.most.fetch_max(running, Ordering::SeqCst);
        terms.started.fetch_add(1, Ordering::SeqCst);
        *terms.leader.lock().expect("the terms lock") = Some(identity.clone());
        Self { terms, identity }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        self.terms.running.fetch_sub(1, Ordering::SeqCst);
        let mut leader = self.terms.leader.lock().expect("the terms lock");
        if leader.as_deref() == Some(self.identity.as_str()) {
            *leader = None;
        }
    }
}

/// A client whose requests fail while `connected` is false, as over a partitioned network.
fn partitionable(inner: kube::Client, connected: Arc<AtomicBool>) -> kube::Client {
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let up = connected.load(Ordering::SeqCst);
        async move {
            if !up {
                return Err(tower::BoxError::from("network partition"));
            }
            inner.send(request).await.map_err(tower::BoxError::from)
        }
    });
    kube::Client::new(service, "default")
}

/// An in-process candidate.
struct Candidate {
    identity: String,
    connected: Arc<AtomicBool>,
    shutdown: CancellationToken,
    task: JoinHandle<anyhow::Result<()>>,
}

impl Candidate {
    fn start(cluster: &EmbeddedCluster, identity: &str, terms: &Arc<Terms>) -> Self {
        let connected = Arc::new(AtomicBool::new(true));
        let client = partitionable(cluster.client(), connected.clone());
        let config = LeaseConfig::new(
            DEFAULT_LEASE_NAMESPACE,
            DEFAULT_LEASE_NAME,
            identity,
            Duration::from_secs(LEASE_SECS),
        );
        let shutdown = CancellationToken::new();
        let terms = terms.clone();
        let name = identity.to_owned();
        let work = move |term: CancellationToken| {
            let terms = terms.clone();
            let name = name.clone();
            async move {
                let _term = Term::begin(terms, name);
                term.cancelled().await;
                // Stopping takes a while; the lease must stay ours until it is done.
                tokio::time::sleep(Duration::from_millis(700)).await;
            }
        };
        let task = tokio::spawn(run_as_leader(client, config, shutdown.clone(), work));
        Self {
            identity: identity.to_owned(),
            connected,
            shutdown,
            task,
        }
    }
}

/// How the leader is disrupted in one round.
#[derive(Clone, Copy, Debug)]
enum Disruption {
    /// Graceful shutdown: the lease is released.
    Stop,
    /// The task is aborted wherever it is: the lease expires.
    Crash,
    /// Its requests fail: it must step down before the other candidate takes over.
    Partition,
}

async fn wait_for_leader(terms: &Terms, identity: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    while terms.leader().as_deref() != Some(identity) {
        assert!(
            Instant::now() < deadline,
            "{identity} did not lead within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn two_candidates_never_work_at_once_over_many_changes_of_leader() {
    let cluster = EmbeddedCluster::start(EmbeddedOptions::default())
        .await
        .expect("the embedded cluster starts");
    let terms = Arc::new(Terms::default());
    let mut candidates = [
        Candidate::start(&cluster, "left", &terms),
        Candidate::start(&cluster, "right", &terms),
    ];
    let first = within(Duration::from_secs(10), || async { terms.leader() })
        .await
        .expect("a leader is elected");

    // A steady leader renews: nobody takes over, its work runs on.
    tokio::time::sleep(Duration::from_secs(LEASE_SECS * 5)).await;
    assert_eq!(terms.leader(), Some(first));
    assert_eq!(terms.started.load(Ordering::SeqCst), 1);

    let lease = Duration::from_secs(LEASE_SECS);
    let disruptions = [Disruption::Stop, Disruption::Crash, Disruption::Partition];
    let rounds = disruptions.len() * 4;
    for round in 0..rounds {
        let disruption = disruptions[round % disruptions.len()];
        let leader = terms.leader().expect("someone leads between rounds");
        let (leading, standing) = if candidates[0].identity == leader {
            (0, 1)
        } else {
            (1, 0)
        };
        let other = candidates[standing].identity.clone();
        let disrupted = Instant::now();
        match disruption {
            Disruption::Stop => {
                candidates[leading].shutdown.cancel();
                let task = &mut candidates[leading].task;
                task.await
                    .expect("the candidate does not panic")
                    .expect("the candidate stops cleanly");
            }
            Disruption::Crash => candidates[leading].task.abort(),
            Disruption::Partition => candidates[leading].connected.store(false, Ordering::SeqCst),
        }
        wait_for_leader(&terms, &other, lease * 3).await;
        let handover = disrupted.elapsed();
        match disruption {
            // Released: the standby takes over as soon as the work has stopped.
            Disruption::Stop => assert!(handover < lease / 2, "round {round}: {handover:?}"),
            // Expired: the standby waits out the lease, and not much more.
            Disruption::Crash | Disruption::Partition => assert!(
                handover <= lease + Duration::from_secs(1),
                "round {round} ({disruption:?}): {handover:?}"
            ),
        }
        match disruption {
            Disruption::Stop | Disruption::Crash => {
                candidates[leading] = Candidate::start(&cluster, &leader, &terms);
            }
            Disruption::Partition => candidates[leading].connected.store(true, Ordering::SeqCst),
        }
        // The disrupted one comes back as a standby and does not disturb the new leader.
        tokio::time::sleep(lease * 2).await;
        assert_eq!(terms.leader(), Some(other), "round {round}");
    }

    assert_eq!(terms.most.load(Ordering::SeqCst), 1, "two terms overlapped");
    assert_eq!(terms.started.load(Ordering::SeqCst), rounds + 1);
    let lease = kube::Api::<Lease>::namespaced(cluster.client(), DEFAULT_LEASE_NAMESPACE)
        .get(DEFAULT_LEASE_NAME)
        .await
        .expect("the lease exists");
    let transitions = lease.spec.and_then(|s| s.lease_transitions);
    assert_eq!(
        transitions,
        Some(i32::try_from(rounds).expect("few rounds"))
    );
    for candidate in &candidates {
        candidate.shutdown.cancel();
    }
    for candidate in candidates {
        let _ = candidate.task.await;
    }
    cluster.shutdown().await;
}
