//! The real `kmm-tui serve` run out of file descriptors by idle connections. Its accept loop must wait rather than
//! retry at once: retrying spins a core and writes a warning per attempt (millions of lines) while no client is
//! served. Once the connections close, it must serve again.

use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::client::Raw;
use crate::serve_process::ServeProcess;

/// Descriptors the server may open beyond those it holds once started: fewer than the connections without a
/// token it keeps from one address (16), so idle connections exhaust them before any is evicted.
const HEADROOM: usize = 12;

/// How long the server is watched while out of descriptors.
const WATCHED: Duration = Duration::from_secs(3);

/// `/proc/<pid>/stat` counts CPU time in USER_HZ ticks, 100 a second on Linux.
const TICKS_PER_SECOND: u64 = 100;

/// Lower the descriptor limit of process `pid` to `limit` with `prlimit`; false, saying why the test is skipped,
/// where that cannot be done.
pub(crate) fn limit_descriptors(pid: u32, limit: usize) -> bool {
    let lowered = Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--nofile={limit}:{limit}"))
        .status();
    match lowered {
        Ok(status) if status.success() => true,
        other => {
            eprintln!(
                "skipped: cannot lower the server's descriptor limit with prlimit: {other:?}"
            );
            false
        }
    }
}

/// Descriptors the process `pid` holds.
pub(crate) fn descriptors_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| entries.count())
        .expect("reading the server's descriptors")
}

/// CPU time the process has used, user and system.
pub(crate) fn cpu_time_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the server's stat");
    // The command name may hold spaces; the fields after it are plain: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("a stat line")
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND)
}

/// A kube-rs client on the server's kubeconfig.
async fn client_of(server: &ServeProcess) -> kube::Client {
    let config = Kubeconfig::read_from(server.kubeconfig()).expect("the kubeconfig reads");
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .expect("the kubeconfig loads");
    kube::Client::try_from(config).expect("a client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_the_server_waits_quietly_and_serves_again() {
    let _turn = crate::ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start(dir.path(), &dir.path().join("state"), "serve.log");
    let pid = server.id();
    let namespaces = Api::<Namespace>::all(client_of(&server).await);
    namespaces
        .list(&ListParams::default())
        .await
        .expect("served before");
    let limit = descriptors_of(pid) + HEADROOM;
    if !limit_descriptors(pid, limit) {
        return;
    }
    let kubeconfig = std::fs::read_to_string(server.kubeconfig()).unwrap();
    let address = Kubeconfig::from_yaml(&kubeconfig).unwrap().clusters[0]
        .cluster
        .as_ref()
        .unwrap()
        .server
        .clone()
        .unwrap();
    let address = address
        .trim_start_matches("https://")
        .parse()
        .expect("an address");
    let raw = Raw::trusting(&kubeconfig, address);
    // Idle TLS connections until one is no longer accepted (its handshake waits in the kernel's queue), then a few
    // more waiting there.
    let mut idle = Vec::new();
    loop {
        assert!(
            idle.len() <= 4 * HEADROOM,
            "{} idle connections accepted",
            idle.len()
        );
        match tokio::time::timeout(Duration::from_secs(2), raw.handshake(raw.tcp().await)).await {
            Ok(stream) => idle.push(stream),
            Err(_) => break,
        }
    }
    let mut waiting = Vec::new();
    for _ in 0..8 {
        waiting.push(raw.tcp().await);
    }
    let lines_before = server.log_text().lines().count();
    let cpu_before = cpu_time_of(pid);
    tokio::time::sleep(WATCHED).await;
    let cpu = cpu_time_of(pid) - cpu_before;
    let lines = server.log_text().lines().count() - lines_before;
    let held = descriptors_of(pid);
    eprintln!(
        "{} idle connections: the server holds {held} of {limit} descriptors; in {WATCHED:?} it used {cpu:?} of CPU \
         and logged {lines} lines",
        idle.len()
    );
    assert!(
        held + 2 >= limit,
        "the server holds {held} of {limit} descriptors"
    );
    assert!(cpu < WATCHED / 5, "{cpu:?} of CPU in {WATCHED:?}");
    assert!(lines <= 5, "{lines} lines logged:\n{}", server.log_text());

    drop(idle);
    drop(waiting);
    let started = Instant::now();
    let served = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if namespaces.list(&ListParams::default()).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(served.is_ok(), "not served again:\n{}", server.log_text());
    eprintln!(
        "served again {:?} after the connections closed",
        started.elapsed()
    );
}
