//! The accept loop over real sockets, serving a line protocol: a client says `auth` to be promoted, `hand-over` to
//! leave its connection to a session that outlives the socket, and anything else is echoed.

// Test helpers outside `#[test]` functions unwrap too: a failure there is a failed test.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kmm_listener::{Connection, Limits, Listening, UnauthenticatedBudget};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Generous for a loaded machine: what must happen happens well within it.
const PATIENCE: Duration = Duration::from_secs(10);

/// Sessions that took over their connection, kept until the test drops them.
type Sessions = Arc<Mutex<Vec<Connection>>>;

async fn serve_lines(stream: TcpStream, connection: Connection, sessions: Sessions) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let _request = connection.start_request();
        match line.as_str() {
            "auth" => connection.promote().await,
            "hand-over" => {
                sessions.lock().unwrap().push(connection.clone());
                return;
            }
            _ => {}
        }
        if write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}

struct Served {
    address: SocketAddr,
    listening: Listening,
    sessions: Sessions,
    stop: CancellationToken,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serving(limits: Limits) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let sessions = Sessions::default();
    let stop = CancellationToken::new();
    let shared = sessions.clone();
    let listening =
        kmm_listener::spawn(listener, limits, stop.clone(), move |stream, connection| {
            serve_lines(stream, connection, shared.clone())
        });
    Served {
        address,
        listening,
        sessions,
        stop,
    }
}

fn limits(max_connections: usize, total: usize, per_peer: usize) -> Limits {
    Limits {
        max_connections,
        unauthenticated: UnauthenticatedBudget { total, per_peer },
        silence: Duration::from_secs(30),
        idle: Duration::from_secs(30),
    }
}

/// Send `line` and read its echo; None when the connection was closed or nothing came within `wait`.
async fn say(stream: &mut TcpStream, line: &str, wait: Duration) -> Option<String> {
    stream
        .write_all(format!("{line}\n").as_bytes())
        .await
        .ok()?;
    let mut echo = vec![0u8; line.len() + 1];
    match tokio::time::timeout(wait, stream.read_exact(&mut echo)).await {
        Ok(Ok(_)) => Some(String::from_utf8_lossy(&echo).trim_end().to_owned()),
        _ => None,
    }
}

/// Whether the server closes `stream` within `wait`.
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut buffer = [0u8; 64];
    matches!(
        tokio::time::timeout(wait, stream.read(&mut buffer)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_sockets_does_not_evict_a_client_that_spoke() {
    let served = serving(limits(8, 4, 4)).await;
    let mut honest = TcpStream::connect(served.address).await.unwrap();
    assert_eq!(
        say(&mut honest, "hello", PATIENCE).await.as_deref(),
        Some("hello")
    );
    let mut flood = Vec::new();
    for _ in 0..100 {
        flood.push(TcpStream::connect(served.address).await.unwrap());
    }
    let census = tokio::time::timeout(PATIENCE, async {
        loop {
            let census = served.listening.census();
            if census.evicted >= 97 {
                return census;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the flood is taken in, evicting among itself");
    assert!(census.unauthenticated <= 4, "{census:?}");
    assert_eq!(
        say(&mut honest, "again", PATIENCE).await.as_deref(),
        Some("again")
    );
    assert_eq!(
        say(&mut honest, "auth", PATIENCE).await.as_deref(),
        Some("auth")
    );
    assert_eq!(served.listening.census().authenticated, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_over_its_share_evicts_its_own_oldest() {
    let served = serving(limits(8, 8, 2)).await;
    let mut first = TcpStream::connect(served.address).await.unwrap();
    assert_eq!(
        say(&mut first, "one", PATIENCE).await.as_deref(),
        Some("one")
    );
    let mut second = TcpStream::connect(served.address).await.unwrap();
    assert_eq!(
        say(&mut second, "two", PATIENCE).await.as_deref(),
        Some("two")
    );
    let mut third = TcpStream::connect(served.address).await.unwrap();
    assert_eq!(
        say(&mut third, "three", PATIENCE).await.as_deref(),
        Some("three")
    );
    assert!(
        closed_within(&mut first, PATIENCE).await,
        "the oldest of the peer's three is evicted"
    );
    assert_eq!(
        say(&mut second, "still", PATIENCE).await.as_deref(),
        Some("still")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promoted_connections_hold_the_cap_until_every_handle_is_dropped() {
    let served = serving(limits(2, 8, 8)).await;
    let mut first = TcpStream::connect(served.address).await.unwrap();
    assert_eq!(
        say(&mut first, "auth", PATIENCE).await.as_deref(),
        Some("auth")
    );
    let mut handed_over = TcpStream::connect(served.address).await.unwrap();
    assert_eq!(
        say(&mut handed_over, "auth", PATIENCE).await.as_deref(),
        Some("auth")
    );
    handed_over.write_all(b"hand-over\n").await.unwrap();
    assert!(
        closed_within(&mut handed_over, PATIENCE).await,
        "the socket's serving ends"
    );
    assert_eq!(served.listening.census().authenticated, 2);
    // At the cap a client that authenticates waits for a slot.
    let mut waiting = TcpStream::connect(served.address).await.unwrap();
    assert_eq!(
        say(&mut waiting, "auth", Duration::from_secs(1)).await,
        None
    );
    served.sessions.lock().unwrap().clear();
    let mut echo = [0u8; 5];
    tokio::time::timeout(PATIENCE, waiting.read_exact(&mut echo))
        .await
        .expect("served once the session ended")
        .unwrap();
    assert_eq!(&echo, b"auth\n");
    assert_eq!(served.listening.census().authenticated, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_idle_connections_are_closed() {
    let served = serving(Limits {
        silence: Duration::from_millis(200),
        idle: Duration::from_millis(300),
        ..limits(8, 8, 8)
    })
    .await;
    let mut silent = TcpStream::connect(served.address).await.unwrap();
    let mut idle = TcpStream::connect(served.address).await.unwrap();
    assert_eq!(
        say(&mut idle, "hello", PATIENCE).await.as_deref(),
        Some("hello")
    );
    assert!(
        closed_within(&mut silent, PATIENCE).await,
        "a silent socket is closed"
    );
    assert!(
        closed_within(&mut idle, PATIENCE).await,
        "an idle connection is closed"
    );
    assert_eq!(served.listening.census().unauthenticated, 0);
}
