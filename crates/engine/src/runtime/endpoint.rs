//! The engine's HTTP endpoint, for Prometheus and the kubelet's probes: `/metrics` (see [`crate::runtime::metrics`]),
//! `/healthz` (also `/livez`) and `/readyz` (see [`crate::runtime::health`]). Plain HTTP/1.1 served by hyper; it carries no
//! secrets, so it is meant for the pod network, behind the metrics Service `kmm-tui install` creates. Reachable
//! by anyone on that network, it is served through the accept loop every listener shares ([`kmm_listener`]): a
//! cap, deadlines, and back-off when descriptors run out.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use kmm_listener::{Connection, InFlight, Limits, UnauthenticatedBudget};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::runtime::health::{Health, Readiness};
use crate::runtime::metrics::{CONTENT_TYPE, EngineMetrics};

/// How long a client may take to send its request's headers.
const HEADER_LIMIT: Duration = Duration::from_secs(5);

/// What the endpoint's accept loop enforces. Nobody authenticates here, so every connection stays in the
/// unauthenticated budget, which is the endpoint's cap. A scrape or a probe takes one connection and answers in
/// milliseconds: 64 connections, 16 from any one address (Prometheus and the kubelet each come from their own),
/// leave room for every honest scraper while capping what a flood of sockets holds. A client must start its
/// request within the header deadline, and a kept-alive connection is closed after 90 s without a request (as
/// kube-apiserver does; Prometheus scrapes every 15 to 60 s, so its connection lives on between scrapes).
const LIMITS: Limits = Limits {
    // Never reached: no connection is promoted out of the budget.
    max_connections: 64,
    unauthenticated: UnauthenticatedBudget {
        total: 64,
        per_peer: 16,
    },
    silence: HEADER_LIMIT,
    idle: Duration::from_secs(90),
};

/// What the endpoint reports on.
#[derive(Clone)]
pub struct Reported {
    /// Whether the engine runs and reaches the API server.
    pub health: Arc<Health>,
    /// What the engine does.
    pub metrics: Arc<EngineMetrics>,
}

/// Serve the endpoint on each of `addresses` (once per distinct address) until `stop`, and check the API server
/// through `client` for readiness meanwhile. Fails when an address cannot be bound.
pub async fn start(
    addresses: impl IntoIterator<Item = SocketAddr>,
    client: kube::Client,
    reported: Reported,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let mut distinct: Vec<SocketAddr> = addresses.into_iter().collect();
    distinct.sort();
    distinct.dedup();
    if distinct.is_empty() {
        return Ok(());
    }
    for address in distinct {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|error| anyhow::anyhow!("serving metrics and probes on {address}: {error}"))?;
        tokio::spawn(serve(listener, reported.clone(), stop.clone()));
    }
    tokio::spawn(crate::runtime::health::check_api(
        client,
        reported.health,
        stop,
    ));
    Ok(())
}

/// Answer on `listener` until `stop`, within [`LIMITS`].
pub async fn serve(listener: TcpListener, reported: Reported, stop: CancellationToken) {
    kmm_listener::spawn(listener, LIMITS, stop.clone(), move |stream, connection| {
        serve_connection(stream, connection, reported.clone())
    });
    stop.cancelled().await;
}

async fn serve_connection(stream: TcpStream, connection: Connection, reported: Reported) {
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let in_flight = connection.start_request();
        let response = respond(request.method(), request.uri().path(), &reported)
            .map(|body| InFlight::new(body, in_flight));
        async move { Ok::<_, Infallible>(response) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_LIMIT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(error) = served {
        tracing::debug!(%error, "metrics connection ended");
    }
}

/// The response to `method path`.
fn respond(method: &Method, path: &str, reported: &Reported) -> Response<Full<Bytes>> {
    if method != Method::GET && method != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "only GET\n".to_owned());
    }
    match path {
        "/metrics" => Response::builder()
            .header(header::CONTENT_TYPE, CONTENT_TYPE)
            .body(Full::new(Bytes::from(reported.metrics.encode())))
            .unwrap_or_default(),
        "/healthz" | "/livez" => {
            if reported.health.live() {
                text(StatusCode::OK, "ok\n".to_owned())
            } else {
                text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "not ok: the engine stopped\n".to_owned(),
                )
            }
        }
        "/readyz" => match reported.health.readiness(&reported.metrics) {
            Readiness::Ready(how) => text(StatusCode::OK, format!("ok: {how}\n")),
            Readiness::NotReady(why) => {
                text(StatusCode::SERVICE_UNAVAILABLE, format!("not ok: {why}\n"))
            }
        },
        _ => text(StatusCode::NOT_FOUND, "not found\n".to_owned()),
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_default()
}
