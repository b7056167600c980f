//! Serving the API over HTTPS on loopback, behind a bearer token, for kubectl and out-of-process clients.

use std::net::SocketAddr;
use std::sync::Arc;

use http::{Request, Response, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::apiserver::errors::ApiError;
use super::apiserver::{ApiServer, ResponseBody, error_response};
use super::tls::TlsMaterial;

/// Accept connections on `listener` until `stop` is cancelled.
pub fn spawn(
    listener: TcpListener,
    server: ApiServer,
    tls: &TlsMaterial,
    token: String,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let acceptor = TlsAcceptor::from(tls.server_config()?);
    let token = Arc::new(format!("Bearer {token}"));
    tokio::spawn(async move {
        loop {
            let (socket, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        tracing::warn!("accepting a connection failed: {e}");
                        continue;
                    }
                },
                _ = stop.cancelled() => return,
            };
            let acceptor = acceptor.clone();
            let server = server.clone();
            let token = token.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                serve_connection(socket, peer, acceptor, server, token, stop).await
            });
        }
    });
    Ok(())
}

async fn serve_connection(
    socket: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    server: ApiServer,
    token: Arc<String>,
    stop: CancellationToken,
) {
    let stream = match acceptor.accept(socket).await {
        Ok(stream) => stream,
        Err(e) => {
            tracing::debug!(%peer, "TLS handshake failed: {e}");
            return;
        }
    };
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let server = server.clone();
        let token = token.clone();
        async move { Ok::<_, std::convert::Infallible>(authorised(request, &token, server).await) }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        }
        _ = stop.cancelled() => {}
    }
}

async fn authorised(
    request: Request<Incoming>,
    token: &str,
    server: ApiServer,
) -> Response<ResponseBody> {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !presented.is_some_and(|p| constant_time_eq(p.as_bytes(), token.as_bytes())) {
        return error_response(&ApiError::unauthorized());
    }
    match server.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Compare secrets without leaking their common prefix length through timing.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
