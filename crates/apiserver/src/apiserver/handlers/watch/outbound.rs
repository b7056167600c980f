//! A watch's lines on their way to the client, bounded in bytes.
//!
//! A queue bounded in lines holds a thousand lines of a megabyte as readily as a thousand of a hundred bytes, so a
//! client that stops reading a watch of large objects kept a gigabyte queued for it. Here each queued line holds
//! its size in permits of a byte budget until the response body hands it on to the connection, and a watch that
//! finds no room waits (and is closed if it falls behind the live feed meanwhile, see [`super`]).

use std::sync::Arc;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_stream::wrappers::UnboundedReceiverStream;

/// How many bytes of lines may wait for one watch's client. A line larger than that still goes, alone.
pub(super) const WATCH_BUFFER_BYTES: usize = 1 << 20;

/// The sending side of a watch's lines.
pub(super) struct Outbound {
    lines: mpsc::UnboundedSender<(Bytes, OwnedSemaphorePermit)>,
    room: Arc<Semaphore>,
    budget: usize,
}

/// A queue of lines holding at most `budget` bytes (or one larger line), and the stream of its lines for the
/// response body.
pub(super) fn outbound(budget: usize) -> (Outbound, impl Stream<Item = Bytes> + Send + 'static) {
    let (lines, received) = mpsc::unbounded_channel();
    let room = Arc::new(Semaphore::new(budget));
    let stream = UnboundedReceiverStream::new(received).map(|(line, _room): (Bytes, _)| line);
    (
        Outbound {
            lines,
            room,
            budget,
        },
        stream,
    )
}

impl Outbound {
    /// The permits `line` holds while queued.
    fn size(&self, line: &Bytes) -> u32 {
        u32::try_from(line.len().clamp(1, self.budget.max(1))).unwrap_or(u32::MAX)
    }

    /// Queue `line` once there is room for it; false when the client is gone. Dropping the future before it
    /// completes queues nothing.
    pub(super) async fn send(&self, line: Bytes) -> bool {
        let size = self.size(&line);
        let Ok(room) = self.room.clone().acquire_many_owned(size).await else {
            return false;
        };
        self.lines.send((line, room)).is_ok()
    }

    /// Queue `line` if there is room for it now.
    pub(super) fn try_send(&self, line: Bytes) -> bool {
        let size = self.size(&line);
        match self.room.clone().try_acquire_many_owned(size) {
            Ok(room) => self.lines.send((line, room)).is_ok(),
            Err(_) => false,
        }
    }

    /// Resolves when the client is gone (the response body was dropped).
    pub(super) async fn closed(&self) {
        self.lines.closed().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_wait_for_room_and_room_returns_as_they_are_read() {
        let (out, mut stream) = outbound(100);
        assert!(out.try_send(Bytes::from(vec![b'a'; 60])));
        assert!(
            !out.try_send(Bytes::from(vec![b'b'; 60])),
            "no room for a second line"
        );
        assert!(out.try_send(Bytes::from(vec![b'c'; 40])));
        assert_eq!(stream.next().await.map(|l| l.len()), Some(60));
        assert!(!out.try_send(Bytes::from(vec![b'd'; 500])));
        assert_eq!(stream.next().await.map(|l| l.len()), Some(40));
        assert!(
            out.try_send(Bytes::from(vec![b'd'; 500])),
            "a line larger than the budget goes alone"
        );
        drop(stream);
        assert!(!out.send(Bytes::from_static(b"x")).await);
    }
}
