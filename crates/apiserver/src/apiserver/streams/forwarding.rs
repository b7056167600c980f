//! Moving bytes between a port-forward session's socket and the pod's ports: the i-th port speaks on channel 2i
//! (its data, both ways) and 2i+1 (its errors), each first announcing the port number, two bytes little-endian.
//! Kept apart from the request handling in [`portforward`](super::portforward) so the session can stream it
//! without depending on that handling.

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, WriteHalf};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_util::sync::CancellationToken;

use super::socket::{Socket, send};

/// The most bytes read from a port's connection into one message.
const READ_CHUNK: usize = 32 * 1024;

/// One forwarded port: a connection to its listener, or the kubelet's words for why there is none.
pub(super) struct Port {
    /// The port inside the pod.
    pub(super) number: u16,
    /// The connection to its listener, or why there is none.
    pub(super) connection: Result<DuplexStream, String>,
}

/// The ports of one session, in the order the client named them.
pub(super) struct Forward {
    /// The ports, in the order the client named them.
    pub(super) ports: Vec<Port>,
}

/// Stream `forward`'s ports on the session's socket until every connection has ended, the client leaves or the
/// server stops.
pub(super) async fn stream(
    socket: &mut Socket,
    forward: Forward,
    stop: CancellationToken,
) -> Result<(), Error> {
    let (from_ports, mut read) = mpsc::channel::<(usize, Option<Vec<u8>>)>(forward.ports.len());
    // The readers stop with the session: dropping the set aborts them, which closes the connections.
    let mut readers = JoinSet::new();
    let mut writers: Vec<Option<WriteHalf<DuplexStream>>> = Vec::new();
    let mut open = 0;
    for (index, port) in forward.ports.into_iter().enumerate() {
        let (data, errors) = channels(index);
        let number = port.number.to_le_bytes();
        send(socket, data, &number).await?;
        send(socket, errors, &number).await?;
        match port.connection {
            Ok(connection) => {
                let (reader, writer) = tokio::io::split(connection);
                readers.spawn(read_port(index, reader, from_ports.clone()));
                writers.push(Some(writer));
                open += 1;
            }
            Err(message) => {
                send(socket, errors, message.as_bytes()).await?;
                writers.push(None);
            }
        }
    }
    while open > 0 {
        tokio::select! {
            Some((index, chunk)) = read.recv() => match chunk {
                Some(bytes) => send(socket, channels(index).0, &bytes).await?,
                // What listens closed the connection: nothing more goes to it either.
                None => {
                    writers[index] = None;
                    open -= 1;
                }
            },
            message = socket.next() => {
                let data = match message {
                    None | Some(Ok(Message::Close(_))) => return Ok(()),
                    Some(Err(e)) => return Err(e),
                    Some(Ok(Message::Binary(data))) => data.to_vec(),
                    Some(Ok(Message::Text(text))) => text.as_bytes().to_vec(),
                    Some(Ok(_)) => continue,
                };
                if let Some((&channel, bytes)) = data.split_first()
                    && channel % 2 == 0
                    && let Some(Some(writer)) = writers.get_mut(usize::from(channel / 2))
                    && writer.write_all(bytes).await.is_err()
                {
                    // The connection is closing: its reader reports the end.
                    writers[usize::from(channel / 2)] = None;
                }
            }
            () = stop.cancelled() => return Ok(()),
        }
    }
    Ok(())
}

/// The data and error channels of the `index`-th port.
pub(super) fn channels(index: usize) -> (u8, u8) {
    // The request handling forwards at most MAX_PORTS ports, which keeps both within a byte.
    let data = u8::try_from(index * 2).unwrap_or(u8::MAX - 1);
    (data, data + 1)
}

/// Send what the `index`-th port's connection writes, then None at its end.
async fn read_port(
    index: usize,
    mut reader: tokio::io::ReadHalf<DuplexStream>,
    to_session: mpsc::Sender<(usize, Option<Vec<u8>>)>,
) {
    let mut buffer = vec![0u8; READ_CHUNK];
    loop {
        let chunk = match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(buffer[..n].to_vec()),
        };
        let ended = chunk.is_none();
        if to_session.send((index, chunk)).await.is_err() || ended {
            return;
        }
    }
}
