//! Serving the API over HTTPS for kubectl and out-of-process clients, each request authenticated by its bearer
//! token (see [`super::apiserver::auth`]), within [`ConnectionLimits`]: every stage of a connection has a deadline,
//! connections are capped, and the accept loop backs off when it fails.

mod activity;
mod backoff;
mod deadline;
mod limits;

use std::net::SocketAddr;
use std::sync::Arc;

use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

pub use limits::ConnectionLimits;

use super::apiserver::{ApiServer, Authenticated};
use super::tls::TlsMaterial;
use activity::{Activity, InFlight};
use backoff::AcceptBackoff;
use deadline::DeadlineBody;

/// Accept connections on `listener` until `stop` is cancelled.
pub fn spawn(
    listener: TcpListener,
    server: ApiServer,
    tls: &TlsMaterial,
    limits: ConnectionLimits,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let acceptor = TlsAcceptor::from(tls.server_config()?);
    let server = Authenticated(server);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    tokio::spawn(async move {
        let mut backoff = AcceptBackoff::default();
        loop {
            // A free slot first: at the cap, new clients wait in the kernel's queue, holding no descriptor here.
            let slot = tokio::select! {
                slot = slots.clone().acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => return,
                },
                _ = stop.cancelled() => return,
            };
            let (socket, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        let wait = backoff.failed(&e);
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => continue,
                            _ = stop.cancelled() => return,
                        }
                    }
                },
                _ = stop.cancelled() => return,
            };
            backoff.succeeded();
            let acceptor = acceptor.clone();
            let server = server.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                serve_connection(socket, peer, acceptor, server, limits, stop).await;
                drop(slot);
            });
        }
    });
    Ok(())
}

async fn serve_connection(
    socket: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    server: Authenticated,
    limits: ConnectionLimits,
    stop: CancellationToken,
) {
    let stream = match tokio::time::timeout(limits.handshake, acceptor.accept(socket)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!(%peer, "TLS handshake failed: {e}");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake not finished within {:?}", limits.handshake);
            return;
        }
    };
    let activity = Activity::default();
    let requests = activity.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let server = server.clone();
        let in_flight = requests.start();
        async move {
            let request = request.map(|body| DeadlineBody::new(body, limits.body));
            let response = match server.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok::<_, std::convert::Infallible>(response.map(|body| InFlight::new(body, in_flight)))
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.headers);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.idle / 3)
        .keep_alive_timeout(limits.handshake);
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        }
        _ = activity.idle_for(limits.idle) => {
            tracing::debug!(%peer, "closing a connection idle for {:?}", limits.idle);
        }
        _ = stop.cancelled() => {}
    }
}
