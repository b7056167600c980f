//! The controller's health endpoint, for the kubelet's probes: `/healthz` answers 200 while the engine loop runs
//! (leading or standing by) and 503 once it has ended; `/readyz` answers 200 while the engine runs and the API
//! server answered the last check (every [`API_CHECK_PERIOD`]), 503 otherwise. A process whose runtime is stuck
//! answers neither, which is what the liveness probe catches.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// How often the API server is checked for readiness.
pub const API_CHECK_PERIOD: Duration = Duration::from_secs(5);

/// How long one API check may take before it counts as failed.
const API_CHECK_LIMIT: Duration = Duration::from_secs(4);

/// How long a probe may take to send its request.
const REQUEST_LIMIT: Duration = Duration::from_secs(2);

/// What the probes report; the engine's runner and the API check update it.
#[derive(Debug, Default)]
pub struct Health {
    engine_running: AtomicBool,
    api_reachable: AtomicBool,
}

impl Health {
    /// Record whether the engine loop runs.
    pub fn set_engine_running(&self, running: bool) {
        self.engine_running.store(running, Ordering::SeqCst);
    }

    /// Whether the engine loop runs: the liveness answer.
    pub fn live(&self) -> bool {
        self.engine_running.load(Ordering::SeqCst)
    }

    /// Whether the engine runs and can reach the API server: the readiness answer.
    pub fn ready(&self) -> bool {
        self.live() && self.api_reachable.load(Ordering::SeqCst)
    }
}

/// Run `engine` with `health` saying it runs until it returns.
pub async fn track<F: std::future::Future>(health: &Health, engine: F) -> F::Output {
    health.set_engine_running(true);
    let output = engine.await;
    health.set_engine_running(false);
    output
}

/// Check the API server every [`API_CHECK_PERIOD`] until `stop`.
pub async fn check_api(client: kube::Client, health: Arc<Health>, stop: CancellationToken) {
    let mut ticker = tokio::time::interval(API_CHECK_PERIOD);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let answered = tokio::time::timeout(API_CHECK_LIMIT, client.apiserver_version())
            .await
            .is_ok_and(|r| r.is_ok());
        health.api_reachable.store(answered, Ordering::SeqCst);
    }
}

/// Bind the health endpoint.
pub async fn bind(address: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(address).await
}

/// Answer probes on `listener` until `stop`.
pub async fn serve(listener: TcpListener, health: Arc<Health>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                let health = health.clone();
                tokio::spawn(async move {
                    let _ = answer(stream, &health).await;
                });
            }
            Err(error) => tracing::warn!(%error, "accepting a health probe"),
        }
    }
}

/// The status line and body for a request path.
fn response(path: &str, health: &Health) -> (&'static str, &'static str) {
    let healthy = match path {
        "/healthz" | "/livez" => health.live(),
        "/readyz" => health.ready(),
        _ => return ("404 Not Found", "not found\n"),
    };
    if healthy {
        ("200 OK", "ok\n")
    } else {
        ("503 Service Unavailable", "not ok\n")
    }
}

async fn answer(mut stream: TcpStream, health: &Health) -> std::io::Result<()> {
    let mut request = Vec::new();
    let mut buffer = [0u8; 1024];
    let read = async {
        while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 8192 {
            let n = stream.read(&mut buffer).await?;
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buffer[..n]);
        }
        std::io::Result::Ok(())
    };
    tokio::time::timeout(REQUEST_LIMIT, read)
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    let text = String::from_utf8_lossy(&request);
    let path = text
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .map(|target| target.split('?').next().unwrap_or(target))
        .unwrap_or("/");
    let (status, body) = response(path, health);
    let reply = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(address: SocketAddr, path: &str) -> String {
        let mut stream = TcpStream::connect(address).await.expect("connecting");
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .expect("sending");
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.expect("reading");
        reply.lines().next().unwrap_or_default().to_owned()
    }

    #[tokio::test]
    async fn probes_follow_the_engine_and_the_api() {
        let health = Arc::new(Health::default());
        let listener = bind("127.0.0.1:0".parse().expect("an address"))
            .await
            .expect("binding");
        let address = listener.local_addr().expect("an address");
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, health.clone(), stop.clone()));
        assert_eq!(
            get(address, "/healthz").await,
            "HTTP/1.1 503 Service Unavailable"
        );
        health.set_engine_running(true);
        assert_eq!(get(address, "/healthz").await, "HTTP/1.1 200 OK");
        assert_eq!(
            get(address, "/readyz").await,
            "HTTP/1.1 503 Service Unavailable"
        );
        health.api_reachable.store(true, Ordering::SeqCst);
        assert_eq!(get(address, "/readyz").await, "HTTP/1.1 200 OK");
        assert_eq!(get(address, "/other").await, "HTTP/1.1 404 Not Found");
        stop.cancel();
    }
}
