//! Serving the API over HTTPS for kubectl and out-of-process clients, each request authenticated by its connection's
//! client certificate or its bearer token (see [`super::apiserver::auth`] and [`super::tls::client_auth`]), within [`ConnectionLimits`]: the shared accept loop ([`kmm_listener`])
//! caps connections, keeps sockets without a token to a budget of their own and backs off when accepting fails;
//! here each stage of TLS and HTTP gets its deadline.

mod limits;

use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use kmm_listener::{Connection, DeadlineBody, InFlight, Listening};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

pub use kmm_listener::{Census, UnauthenticatedBudget};
pub use limits::ConnectionLimits;

use super::apiserver::{ApiServer, Authenticated};
use super::tls::TlsMaterial;
use super::tls::client_auth::RequestedCertificate;

/// Accept connections on `listener` until `stop` is cancelled.
pub fn spawn(
    listener: TcpListener,
    server: ApiServer,
    tls: &TlsMaterial,
    limits: ConnectionLimits,
    stop: CancellationToken,
) -> anyhow::Result<Listening> {
    let acceptor = TlsAcceptor::from(tls.server_config()?);
    let certificates = RequestedCertificate::new(&tls.ca_pem)?;
    let server = Authenticated(server);
    Ok(kmm_listener::spawn(
        listener,
        limits.accept_loop(),
        stop,
        move |socket, connection| {
            let accept = Accept {
                acceptor: acceptor.clone(),
                certificates: certificates.clone(),
                limits,
            };
            serve_connection(socket, connection, accept, server.clone())
        },
    ))
}

/// How a connection is taken on: its TLS handshake, the judge of the client certificate it presents, its limits.
#[derive(Clone)]
struct Accept {
    acceptor: TlsAcceptor,
    certificates: std::sync::Arc<RequestedCertificate>,
    limits: ConnectionLimits,
}

async fn serve_connection(
    socket: TcpStream,
    connection: Connection,
    accept: Accept,
    server: Authenticated,
) {
    let Accept {
        acceptor,
        certificates,
        limits,
    } = accept;
    let peer = connection.peer();
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
    // The certificate is judged once per connection, and every request on it carries the verdict.
    let presented = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| certificates.judge(chain));
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let server = server.clone();
        let in_flight = connection.start_request();
        // The request carries its connection: authenticating it promotes the connection, and a session that
        // outlives the request keeps the connection counted.
        let mut request = request.map(|body| DeadlineBody::new(body, limits.body));
        request.extensions_mut().insert(connection.clone());
        if let Some(presented) = &presented {
            request.extensions_mut().insert(presented.clone());
        }
        async move {
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
    if let Err(e) = builder
        .serve_connection_with_upgrades(TokioIo::new(stream), service)
        .await
    {
        tracing::debug!(%peer, "connection ended: {e}");
    }
}
