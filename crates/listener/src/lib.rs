//! The accept loop every listener of the project shares (the API server, the engine's metrics and probe port,
//! the console's metrics port): one implementation of what keeps a listener serving under hostile clients.
//!
//! - **Back-off**: when accepting fails (out of descriptors), the loop waits, longer each time, and logs rarely,
//!   instead of spinning a core and flooding the log.
//! - **An authenticated cap** ([`Limits::max_connections`]): at the cap, new clients wait in the kernel's queue.
//!   A connection holds its slot for as long as any [`Connection`] handle lives, so a session that outlives its
//!   request (an upgraded exec or attach stream) keeps counting.
//! - **An unauthenticated budget** ([`UnauthenticatedBudget`]): a connection starts there and leaves it when the
//!   server [promotes](Connection::promote) it. A full budget evicts rather than refuses, silent sockets first: a
//!   flood of sockets cannot keep a client that speaks and authenticates from being served.
//! - **Deadlines**: a socket that stays silent, or a connection idle with no request in flight, is closed; request
//!   bodies can be held to a deadline ([`DeadlineBody`]) and responses counted in flight ([`InFlight`]).

mod activity;
mod backoff;
mod budget;
mod connection;
mod deadline;
mod limits;
mod peek;

use std::future::Future;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub use activity::{Guard, InFlight};
pub use connection::{Census, Connection};
pub use deadline::{BodyTimeout, DeadlineBody};
pub use limits::{Limits, UnauthenticatedBudget};

use backoff::AcceptBackoff;
use connection::Registry;

/// A running accept loop, for reading its [`Census`].
#[derive(Clone)]
pub struct Listening(Arc<Registry>);

impl Listening {
    /// The listener's connections now.
    pub fn census(&self) -> Census {
        self.0.census()
    }
}

/// Accept connections on `listener` within `limits` until `stop`, handing each to `serve` once its client has
/// spoken. A connection ends when `serve` returns, when it is evicted, silent or idle too long, or at `stop`.
pub fn spawn<S, F>(
    listener: TcpListener,
    limits: Limits,
    stop: CancellationToken,
    serve: S,
) -> Listening
where
    S: Fn(TcpStream, Connection) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let registry = Arc::new(Registry::new(&limits));
    tokio::spawn(accept(
        listener,
        registry.clone(),
        limits,
        stop,
        Arc::new(serve),
    ));
    Listening(registry)
}

async fn accept<S, F>(
    listener: TcpListener,
    registry: Arc<Registry>,
    limits: Limits,
    stop: CancellationToken,
    serve: Arc<S>,
) where
    S: Fn(TcpStream, Connection) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let mut backoff = AcceptBackoff::default();
    loop {
        tokio::select! {
            () = registry.room_for_authenticated() => {}
            () = stop.cancelled() => return,
        }
        let (socket, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    let wait = backoff.failed(&error);
                    tokio::select! {
                        () = tokio::time::sleep(wait) => continue,
                        () = stop.cancelled() => return,
                    }
                }
            },
            () = stop.cancelled() => return,
        };
        backoff.succeeded();
        let connection = registry.admit(peer, socket.as_raw_fd());
        tokio::spawn(run(socket, connection, limits, stop.clone(), serve.clone()));
        // A flood keeps the kernel's queue full, so accepting never waits: let the connections taken in, and
        // the rest of the process, run between two accepts rather than after a burst of hundreds.
        tokio::task::yield_now().await;
    }
}

/// One connection from accept to close: wait for the client's first bytes (every protocol served here speaks
/// first from the client), note that it spoke, then serve it, while any of eviction, idleness or `stop` ends it.
async fn run<S, F>(
    socket: TcpStream,
    connection: Connection,
    limits: Limits,
    stop: CancellationToken,
    serve: Arc<S>,
) where
    S: Fn(TcpStream, Connection) -> F,
    F: Future<Output = ()>,
{
    let peer = connection.peer();
    let serving = async {
        // Readiness alone is no proof of bytes: the first byte is peeked, and left for `serve` to read.
        let mut first = [0u8; 1];
        match tokio::time::timeout(limits.silence, socket.peek(&mut first)).await {
            Ok(Ok(0)) => return,
            Ok(Ok(_)) => connection.spoke(),
            Ok(Err(error)) => {
                tracing::debug!(%peer, "connection failed before it spoke: {error}");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "closing a connection silent for {:?}", limits.silence);
                return;
            }
        }
        serve(socket, connection.clone()).await;
    };
    tokio::select! {
        () = serving => {}
        () = connection.evicted() => {
            tracing::debug!(%peer, "evicted an unauthenticated connection for a newer one");
        }
        () = connection.idle_for(limits.idle) => {
            tracing::debug!(%peer, "closing a connection idle for {:?}", limits.idle);
        }
        () = stop.cancelled() => {}
    }
}
