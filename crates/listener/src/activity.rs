//! What a connection is doing: how many of its requests are in flight (a watch stays in flight until its stream
//! ends) and when the last one ended, so a connection with nothing in flight for too long can be closed while a
//! quiet watch is left alone.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};
use tokio::sync::Notify;

/// The requests in flight on one connection.
#[derive(Clone, Default)]
pub(crate) struct Activity {
    in_flight: Arc<AtomicUsize>,
    changed: Arc<Notify>,
}

impl Activity {
    /// Count a request in flight until its response body (given to [`InFlight::new`]) is done or dropped.
    pub(crate) fn start(&self) -> Guard {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_one();
        Guard(self.clone())
    }

    /// Resolve once the connection has had no request in flight for `idle` in a row.
    pub(crate) async fn idle_for(&self, idle: Duration) {
        loop {
            let changed = self.changed.notified();
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                if tokio::time::timeout(idle, changed).await.is_err() {
                    return;
                }
            } else {
                changed.await;
            }
        }
    }
}

/// One request in flight; dropping it ends the request.
pub struct Guard(Activity);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_one();
    }
}

/// A response body that keeps its request counted in flight until it ends.
pub struct InFlight<B> {
    body: B,
    guard: Option<Guard>,
}

impl<B> InFlight<B> {
    /// `body`, counted in flight through `guard`.
    pub fn new(body: B, guard: Guard) -> Self {
        Self {
            body,
            guard: Some(guard),
        }
    }
}

impl<B: Body + Unpin> Body for InFlight<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(None) = frame {
            this.guard = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
