//! The upgraded connection every stream session speaks WebSocket on, and the one way anything is written to it: a
//! channel byte followed by the data, as the kubelet frames it.

use futures::SinkExt;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::{Error, Message};

use super::idle::Watched;

/// A session's connection, once upgraded, watched for traffic so an idle one can be closed.
pub(super) type Socket = WebSocketStream<Watched<TokioIo<hyper::upgrade::Upgraded>>>;

/// Write `data` on `channel`; nothing is written for no data, as a stream that wrote nothing sends nothing.
pub(super) async fn send(socket: &mut Socket, channel: u8, data: &[u8]) -> Result<(), Error> {
    if data.is_empty() {
        return Ok(());
    }
    let mut message = Vec::with_capacity(data.len() + 1);
    message.push(channel);
    message.extend_from_slice(data);
    socket.send(Message::Binary(message.into())).await
}
