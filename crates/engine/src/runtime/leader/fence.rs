//! The write fence: an engine's reconcilers write only while their engine holds the Lease.
//!
//! Cancelling the work when a term ends is not enough on its own: a reconcile in flight may be between its read and
//! its write, and a leader whose renewals stall may not notice in time that its term is over. So every request the
//! reconcilers send goes through a client that refuses writes unless the fence is open, and the fence is open only
//! until the last successful renewal plus the renew deadline — a point in time before any other candidate can see
//! the Lease expire — and is shut before the Lease is released or handed on. Reads and watches always pass.
//!
//! The same client records every write under a field manager that names the engine's identity, so `managedFields`
//! says which engine wrote what.

use std::sync::{Arc, Mutex};

use http::{Method, Request, Uri};
use kube::client::Body;
use prometheus_client::metrics::counter::Counter;
use tokio::time::Instant;

use crate::runtime::writes::MANAGER;

/// Until when this engine's writes may go out; shared by the election (which moves it) and the fenced clients.
#[derive(Clone, Debug, Default)]
pub struct Fence {
    open_until: Arc<Mutex<Option<Instant>>>,
    refused: Counter,
}

/// A write refused because the engine does not hold the Lease.
#[derive(Debug, thiserror::Error)]
#[error("not written: {identity} does not hold the engine Lease")]
pub struct Fenced {
    /// The engine whose write was refused.
    pub identity: String,
}

impl Fence {
    /// A closed fence.
    pub fn new() -> Self {
        Self::default()
    }

    /// Let writes through until `until` (the term's renew deadline).
    pub(super) fn open_until(&self, until: Instant) {
        *self.lock() = Some(until);
    }

    /// Refuse every write from now on.
    pub(super) fn close(&self) {
        *self.lock() = None;
    }

    /// Whether a write may go out now.
    pub fn is_open(&self) -> bool {
        self.lock().is_some_and(|until| Instant::now() < until)
    }

    /// The writes refused so far, counting on: what the engine's metrics report.
    pub fn refused(&self) -> Counter {
        self.refused.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.open_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `client` as the reconcilers of `identity` use it: writes only while the fence is open, recorded under
    /// [`field_manager`]`(identity)`.
    pub fn client(&self, client: kube::Client, identity: &str) -> kube::Client {
        let fence = self.clone();
        let identity = identity.to_owned();
        let manager = field_manager(&identity);
        let namespace = client.default_namespace().to_owned();
        let service = tower::service_fn(move |mut request: Request<Body>| {
            let client = client.clone();
            let fence = fence.clone();
            let identity = identity.clone();
            let manager = manager.clone();
            async move {
                if writes(request.method()) {
                    if !fence.is_open() {
                        fence.refused.inc();
                        return Err(kube::Error::Service(Box::new(Fenced { identity })));
                    }
                    if let Some(uri) = with_field_manager(request.uri(), &manager) {
                        *request.uri_mut() = uri;
                    }
                }
                client.send(request).await
            }
        });
        kube::Client::new(service, namespace)
    }
}

/// The field manager an engine's writes are recorded under: the engine's name and its identity.
pub fn field_manager(identity: &str) -> String {
    format!("{MANAGER}@{identity}")
}

/// Whether a request changes the cluster.
fn writes(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// `uri` with the engine's `fieldManager` replaced by `manager`; `None` when it names another manager or none.
fn with_field_manager(uri: &Uri, manager: &str) -> Option<Uri> {
    let query = uri.query()?;
    let ours = format!("fieldManager={MANAGER}");
    if !query.split('&').any(|pair| pair == ours) {
        return None;
    }
    let replaced: Vec<String> = query
        .split('&')
        .map(|pair| {
            if pair == ours {
                format!("fieldManager={}", percent_encode(manager))
            } else {
                pair.to_owned()
            }
        })
        .collect();
    let path_and_query = format!("{}?{}", uri.path(), replaced.join("&"));
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// Percent-encode everything but RFC 3986's unreserved characters.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(byte).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn the_fence_is_open_until_the_deadline_or_until_closed() {
        let fence = Fence::new();
        assert!(!fence.is_open());
        fence.open_until(Instant::now() + Duration::from_secs(2));
        assert!(fence.is_open());
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(!fence.is_open(), "past the deadline nothing is written");
        fence.open_until(Instant::now() + Duration::from_secs(2));
        fence.close();
        assert!(!fence.is_open());
    }

    #[test]
    fn the_engines_field_manager_is_replaced_by_one_naming_the_identity() {
        let uri: Uri = "/api/v1/namespaces/a/pods?fieldManager=kmm-tui-engine&dryRun=All"
            .parse()
            .expect("a uri");
        let rewritten = with_field_manager(&uri, &field_manager("pod a/1")).expect("rewritten");
        assert_eq!(
            rewritten.to_string(),
            "/api/v1/namespaces/a/pods?fieldManager=kmm-tui-engine%40pod%20a%2F1&dryRun=All"
        );
    }

    #[test]
    fn other_managers_and_plain_requests_are_left_alone() {
        for uri in [
            "/api/v1/pods?fieldManager=kubectl",
            "/api/v1/pods",
            "/api/v1/pods?fieldManager=kmm-tui-engine-x",
        ] {
            let uri: Uri = uri.parse().expect("a uri");
            assert_eq!(with_field_manager(&uri, "m"), None);
        }
    }

    #[test]
    fn only_reads_pass_a_closed_fence() {
        assert!(!writes(&Method::GET));
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(writes(&method));
        }
    }
}
