//! The idle deadline of a session: its connection is watched for bytes moving in either direction, whatever the
//! session is doing (waiting for output, writing to a client that stopped reading, waiting for the close handshake),
//! so a session nobody uses is closed and gives back its socket and its count.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// When bytes last moved on a session's connection.
#[derive(Clone)]
pub(super) struct LastTraffic(Arc<Mutex<Instant>>);

impl LastTraffic {
    /// Traffic as of now: a new session starts its idle time when it starts.
    pub(super) fn now() -> Self {
        Self(Arc::new(Mutex::new(Instant::now())))
    }

    fn moved(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn last(&self) -> Instant {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves once no byte has moved for `limit`.
    pub(super) async fn idle_for(&self, limit: Duration) {
        loop {
            let due = self.last() + limit;
            if Instant::now() >= due {
                return;
            }
            tokio::time::sleep_until(due).await;
        }
    }
}

/// A connection that records in [`LastTraffic`] every byte read from it or written to it.
pub(super) struct Watched<S> {
    inner: S,
    traffic: LastTraffic,
}

impl<S> Watched<S> {
    /// Watch `inner`, recording its traffic in `traffic`.
    pub(super) fn new(inner: S, traffic: LastTraffic) -> Self {
        Self { inner, traffic }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.traffic.moved();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(written)) if written > 0) {
            this.traffic.moved();
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
