//! Sockets without a token against an authenticated client: an attacker holds hundreds of raw TCP connections
//! open (no TLS handshake, no request) and opens new ones as the server closes them. They must not keep a client
//! that presents a token from being served: sockets without a token get a budget of their own.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kmm_cluster::https::ConnectionLimits;
use kube::api::{Api, ListParams};
use tokio::net::TcpStream;

/// Sockets the attacker keeps open: many times the test's connection cap.
const ATTACKER_SOCKETS: usize = 600;

/// How long the authenticated client may wait for an answer: generous for a loaded machine, yet far shorter than
/// the queue of attacking sockets takes to drain when each holds a slot until the handshake deadline.
const ANSWER_BOUND: Duration = Duration::from_secs(5);

/// Fresh connections the authenticated client makes during the attack.
const REQUESTS: usize = 10;

/// Whether the server has not closed `socket` yet.
fn still_open(socket: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match socket.try_read(&mut byte) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
    }
}

/// Keep [`ATTACKER_SOCKETS`] sockets open on `address` until `stop`, opening new ones as the server closes
/// them; returns how many were opened in all.
async fn hold_and_reopen(address: SocketAddr, stop: Arc<AtomicBool>) -> usize {
    let mut held: Vec<TcpStream> = Vec::new();
    let mut opened = 0;
    while !stop.load(Ordering::SeqCst) {
        held.retain(still_open);
        while held.len() < ATTACKER_SOCKETS && !stop.load(Ordering::SeqCst) {
            match tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(address)).await {
                Ok(Ok(socket)) => {
                    held.push(socket);
                    opened += 1;
                }
                _ => break,
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    opened
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_without_a_token_do_not_keep_an_authenticated_client_out() {
    // The default handshake deadline: a socket that never starts TLS may hold on for that long.
    let limits = ConnectionLimits {
        handshake: Duration::from_secs(10),
        ..crate::LIMITS
    };
    let (cluster, _turn) = crate::serving_within(limits).await;
    let address = cluster.address().expect("served over HTTPS");
    let stop = Arc::new(AtomicBool::new(false));
    let attack = tokio::spawn(hold_and_reopen(address, stop.clone()));
    // The attack is under way: the attacker holds its sockets.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut slowest = Duration::ZERO;
    let mut failed = Vec::new();
    for i in 0..REQUESTS {
        // A new client each time: a new connection, which must get through the attacker's sockets.
        let client = crate::https_client(&cluster, kmm_cluster::kubeconfig::DEFAULT_NAME).await;
        let started = Instant::now();
        let answer = tokio::time::timeout(
            ANSWER_BOUND,
            Api::<Namespace>::all(client).list(&ListParams::default()),
        )
        .await;
        match answer {
            Ok(Ok(_)) => slowest = slowest.max(started.elapsed()),
            Ok(Err(e)) => failed.push(format!("request {i}: {e}")),
            Err(_) => failed.push(format!("request {i}: no answer within {ANSWER_BOUND:?}")),
        }
    }
    stop.store(true, Ordering::SeqCst);
    let opened = attack.await.expect("the attacker ends");
    eprintln!(
        "{ATTACKER_SOCKETS} sockets without a token ({opened} opened in all): {} of {REQUESTS} authenticated \
         requests answered, the slowest in {slowest:?}; census {:?}",
        REQUESTS - failed.len(),
        cluster.https_census()
    );
    assert!(failed.is_empty(), "{failed:#?}");
    cluster.shutdown().await;
}
