//! Serving the API over HTTPS on loopback for kubectl and out-of-process clients, each request authenticated by
//! its bearer token (see [`super::apiserver::auth`]).

use std::net::SocketAddr;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::apiserver::{ApiServer, Authenticated, ResponseBody};
use super::tls::TlsMaterial;

/// Accept connections on `listener` until `stop` is cancelled.
pub fn spawn(
    listener: TcpListener,
    server: ApiServer,
    tls: &TlsMaterial,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let acceptor = TlsAcceptor::from(tls.server_config()?);
    let server = Authenticated(server);
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
            let stop = stop.clone();
            tokio::spawn(
                async move { serve_connection(socket, peer, acceptor, server, stop).await },
            );
        }
    });
    Ok(())
}

async fn serve_connection(
    socket: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    server: Authenticated,
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
        async move { Ok::<_, std::convert::Infallible>(answer(request, server).await) }
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

async fn answer(request: Request<Incoming>, server: Authenticated) -> Response<ResponseBody> {
    match server.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
