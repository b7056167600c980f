//! The engine's metrics and probe port under the same attacks as the API port, in the real `kmm-tui serve
//! --with-engine`: idle connections must be capped, and when descriptors run out its accept loop must wait rather
//! than retry at once (spinning a core and writing a warning per attempt), then serve again.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::descriptors::{cpu_time_of, descriptors_of, limit_descriptors};
use crate::serve_process::ServeProcess;

/// Kept-alive connections opened to the port: more than the port serves from one address at once.
const CONNECTIONS: usize = 48;

/// Connections the port keeps from one address (all of a test's come from loopback), and some slack for what the
/// process opens meanwhile.
const PER_PEER: usize = 16;
const SLACK: usize = 6;

/// Descriptors the server may open beyond those it holds once started: fewer than the port keeps from one
/// address, so connections exhaust them before any is evicted.
const HEADROOM: usize = 10;

/// How long the server is watched while out of descriptors.
const WATCHED: Duration = Duration::from_secs(3);

/// `kmm-tui serve` running the engine, with its metrics and probes on a free loopback port.
fn serve_with_engine(dir: &std::path::Path) -> (ServeProcess, SocketAddr) {
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let server = ServeProcess::start_with(
        dir,
        &dir.join("state"),
        "serve.log",
        &["--with-engine", "--metrics-listen", &address.to_string()],
    );
    (server, address)
}

/// A kept-alive connection that asked for `/healthz` and read its answer; None when no answer came in time.
async fn probed(address: SocketAddr, wait: Duration) -> Option<TcpStream> {
    tokio::time::timeout(wait, async {
        let mut stream = TcpStream::connect(address).await.ok()?;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .ok()?;
        let mut answer = [0u8; 512];
        let read = stream.read(&mut answer).await.ok()?;
        answer[..read].starts_with(b"HTTP/1.1 ").then_some(stream)
    })
    .await
    .ok()
    .flatten()
}

/// Wait up to `limit` for the port to answer a probe on a new connection.
async fn answers_within(address: SocketAddr, limit: Duration) -> bool {
    tokio::time::timeout(limit, async {
        while probed(address, Duration::from_secs(2)).await.is_none() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_endpoint_caps_idle_connections() {
    let _turn = crate::ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (server, address) = serve_with_engine(dir.path());
    assert!(
        answers_within(address, Duration::from_secs(30)).await,
        "the endpoint answers:\n{}",
        server.log_text()
    );
    let before = descriptors_of(server.id());
    let mut held = Vec::new();
    for _ in 0..CONNECTIONS {
        if let Some(stream) = probed(address, Duration::from_secs(5)).await {
            held.push(stream);
        }
    }
    let grown = descriptors_of(server.id()).saturating_sub(before);
    eprintln!(
        "{} of {CONNECTIONS} kept-alive connections answered; the server's descriptors grew by {grown}",
        held.len()
    );
    assert_eq!(held.len(), CONNECTIONS, "every probe is answered");
    assert!(
        grown <= PER_PEER + SLACK,
        "{grown} more descriptors for {CONNECTIONS} connections"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_the_engine_endpoint_waits_quietly_and_serves_again() {
    let _turn = crate::ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (server, address) = serve_with_engine(dir.path());
    let pid = server.id();
    assert!(
        answers_within(address, Duration::from_secs(30)).await,
        "the endpoint answers:\n{}",
        server.log_text()
    );
    let limit = descriptors_of(pid) + HEADROOM;
    if !limit_descriptors(pid, limit) {
        return;
    }
    // Kept-alive connections until one is no longer answered (it waits in the kernel's queue), then a few more
    // waiting there.
    let mut held = Vec::new();
    while let Some(stream) = probed(address, Duration::from_secs(2)).await {
        held.push(stream);
        assert!(
            held.len() <= 4 * HEADROOM,
            "{} connections answered",
            held.len()
        );
    }
    let mut waiting = Vec::new();
    for _ in 0..8 {
        waiting.push(TcpStream::connect(address).await.expect("queued"));
    }
    let lines_before = server.log_text().lines().count();
    let cpu_before = cpu_time_of(pid);
    tokio::time::sleep(WATCHED).await;
    let cpu = cpu_time_of(pid) - cpu_before;
    let lines = server.log_text().lines().count() - lines_before;
    eprintln!(
        "{} kept-alive connections: in {WATCHED:?} out of descriptors the server used {cpu:?} of CPU and logged \
         {lines} lines",
        held.len()
    );
    assert!(cpu < WATCHED / 5, "{cpu:?} of CPU in {WATCHED:?}");
    assert!(lines <= 5, "{lines} lines logged");
    drop(held);
    drop(waiting);
    assert!(
        answers_within(address, Duration::from_secs(10)).await,
        "not served again:\n{}",
        server.log_text()
    );
}
