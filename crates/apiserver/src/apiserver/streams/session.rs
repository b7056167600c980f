//! One exec or attach session once the connection speaks WebSocket: what the container wrote goes out on the
//! channels the client asked for, each message one channel byte and the data, as the kubelet writes them.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::sync::broadcast;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Error;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Message, Role};
use tokio_util::sync::CancellationToken;

use super::forwarding::{self, Forward};
use super::idle::{LastTraffic, Watched};
use super::socket::{Socket, send};
use super::status::exit_status;
use super::websocket;
use super::{AttachedStdin, ExecProcess};
use crate::apiserver::logs::{LogLine, Stream};
use crate::apiserver::long_running::Permit;
use crate::apiserver::request::Query;

/// Channel numbers of the `channel.k8s.io` protocols (stdin, resize and close are the client's).
const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
/// `v5.channel.k8s.io`: a message on this channel closes the channel its one data byte names.
const CLOSE: u8 = 255;

/// How long a command whose client left may still run before it is killed.
const ORPHAN_GRACE: Duration = Duration::from_secs(5);

/// How long the client has to answer the closing handshake before the connection is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The output channels a client asked for in its query.
#[derive(Debug, Clone, Copy)]
pub(super) struct Channels {
    stdout: bool,
    stderr: bool,
    /// With a terminal, standard error is written to standard output, as on a terminal.
    tty: bool,
}

impl Channels {
    /// The channels of a request's `stdout`, `stderr` and `tty` parameters.
    pub(super) fn of(query: &Query) -> Self {
        Self {
            stdout: query.flag("stdout"),
            stderr: query.flag("stderr"),
            tty: query.flag("tty"),
        }
    }
}

/// What a session streams.
pub(super) enum Work {
    /// A command started in the container: its input from the client, its output to it, then its exit status.
    Exec(ExecProcess),
    /// The container's log lines from now on, until the container exits or the client leaves; and its main
    /// process's standard input, when it keeps one and the client sends one.
    Attach {
        lines: broadcast::Receiver<LogLine>,
        stdin: Option<AttachedStdin>,
    },
    /// Connections to ports inside the pod, each on its pair of channels.
    PortForward(Forward),
}

/// Take over the connection once it is upgraded and stream `work` on it, holding `permit` until the session ends.
/// The session ends early when the server stops, when the client sends more than [`websocket::config`] allows, or
/// after `idle` with no traffic either way.
pub(super) async fn run(
    upgrade: OnUpgrade,
    channels: Channels,
    work: Work,
    stop: CancellationToken,
    idle: Duration,
    permit: Option<Permit>,
) {
    let _permit = permit;
    let upgraded = match upgrade.await {
        Ok(upgraded) => upgraded,
        Err(e) => {
            tracing::debug!("exec connection not upgraded: {e}");
            return;
        }
    };
    let traffic = LastTraffic::now();
    let connection = Watched::new(TokioIo::new(upgraded), traffic.clone());
    let mut socket =
        WebSocketStream::from_raw_socket(connection, Role::Server, Some(websocket::config())).await;
    let streamed = async {
        match work {
            Work::Exec(process) => exec(&mut socket, channels, process, stop).await,
            Work::Attach { lines, stdin } => {
                attach(&mut socket, channels, lines, stdin, stop).await
            }
            Work::PortForward(forward) => forwarding::stream(&mut socket, forward, stop).await,
        }
    };
    let ending = tokio::select! {
        result = streamed => result,
        () = traffic.idle_for(idle) => {
            let reason = format!("no traffic for {}s", idle.as_secs());
            close(&mut socket, CloseCode::Away, &reason).await;
            return;
        }
    };
    match ending {
        // Close normally (clients read a close without a code as an error), then read until the client answers,
        // so its last reads see a clean end rather than a reset.
        Ok(()) => {
            let _ = tokio::time::timeout(CLOSE_GRACE, async {
                if socket
                    .send(Message::Close(Some(close_frame(CloseCode::Normal, ""))))
                    .await
                    .is_ok()
                {
                    while let Some(Ok(_)) = socket.next().await {}
                }
            })
            .await;
        }
        Err(Error::Capacity(too_large)) => {
            close(&mut socket, CloseCode::Size, &too_large.to_string()).await;
        }
        Err(e) => tracing::debug!("exec stream ended: {e}"),
    }
}

/// End a session the server gives up on with `code` and `reason`. What the client still sends is read and
/// discarded (never framed, so never buffered) for a while, so that it reads the close rather than a reset.
async fn close(socket: &mut Socket, code: CloseCode, reason: &str) {
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        if socket
            .send(Message::Close(Some(close_frame(code, reason))))
            .await
            .is_ok()
        {
            let _ = tokio::io::copy(socket.get_mut(), &mut tokio::io::sink()).await;
        }
    })
    .await;
}

fn close_frame(code: CloseCode, reason: &str) -> CloseFrame {
    CloseFrame {
        code,
        reason: reason.to_owned().into(),
    }
}

impl Channels {
    /// The channel bytes written on `stream` go out on, if the client reads it: with a terminal, standard error is
    /// written to standard output, as on a terminal.
    fn of_stream(self, stream: Stream) -> Option<u8> {
        match stream {
            Stream::Stdout => self.stdout.then_some(STDOUT),
            Stream::Stderr if self.tty => self.stdout.then_some(STDOUT),
            Stream::Stderr => self.stderr.then_some(STDERR),
        }
    }
}

/// What a client's message means for the session.
enum FromClient {
    /// Bytes for standard input.
    Input(Vec<u8>),
    /// The end of standard input (v5's close of channel 0).
    EndOfInput,
    /// The client is gone or closed the connection.
    Gone,
    /// Nothing for the container (a terminal resize, a ping).
    Nothing,
}

fn from_client(message: Option<Result<Message, Error>>) -> Result<FromClient, Error> {
    Ok(match message {
        None | Some(Ok(Message::Close(_))) => FromClient::Gone,
        Some(Err(e)) => return Err(e),
        // Clients send text frames too (the Python client sends what it was given as text): the kubelet reads
        // both alike, the first byte the channel.
        Some(Ok(Message::Binary(data))) => on_channel(&data),
        Some(Ok(Message::Text(text))) => on_channel(text.as_bytes()),
        Some(Ok(_)) => FromClient::Nothing,
    })
}

fn on_channel(data: &[u8]) -> FromClient {
    match data.split_first() {
        Some((&STDIN, input)) => FromClient::Input(input.to_vec()),
        Some((&CLOSE, [STDIN])) => FromClient::EndOfInput,
        _ => FromClient::Nothing,
    }
}

async fn exec(
    socket: &mut Socket,
    channels: Channels,
    process: ExecProcess,
    stop: CancellationToken,
) -> Result<(), Error> {
    let ExecProcess {
        mut stdin,
        mut output,
        exit,
        kill,
    } = process;
    loop {
        tokio::select! {
            written = output.recv() => match written {
                Some((stream, bytes)) => {
                    if let Some(channel) = channels.of_stream(stream) {
                        send(socket, channel, &bytes).await?;
                    }
                }
                // The command exited: everything it wrote has been sent.
                None => break,
            },
            message = socket.next() => match from_client(message)? {
                FromClient::Input(bytes) => {
                    if let Some(sender) = &stdin
                        && sender.send(bytes).await.is_err()
                    {
                        stdin = None;
                    }
                }
                FromClient::EndOfInput => stdin = None,
                FromClient::Gone => {
                    // A client that leaves closes the command's input; the command may still finish what that
                    // input asked (a `tar x` of what was sent), as under the kubelet, but not for long.
                    drop(stdin);
                    tokio::spawn(async move {
                        tokio::time::sleep(ORPHAN_GRACE).await;
                        drop(kill);
                    });
                    return Ok(());
                }
                FromClient::Nothing => {}
            },
            _ = stop.cancelled() => return Ok(()),
        }
    }
    drop(kill);
    // No status means the command was killed with its container, which the kubelet reports as exit 137.
    let code = exit.await.unwrap_or(137);
    let status = exit_status(code).to_string();
    send(socket, ERROR, status.as_bytes()).await
}

async fn attach(
    socket: &mut Socket,
    channels: Channels,
    mut lines: broadcast::Receiver<LogLine>,
    mut stdin: Option<AttachedStdin>,
    stop: CancellationToken,
) -> Result<(), Error> {
    loop {
        tokio::select! {
            line = lines.recv() => match line {
                Ok(line) => {
                    if let Some(channel) = channels.of_stream(line.stream) {
                        send(socket, channel, format!("{}\n", line.text).as_bytes()).await?;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                // The container exited: the attach is over and, as the kubelet reports it, succeeded.
                Err(broadcast::error::RecvError::Closed) => {
                    let status = exit_status(0).to_string();
                    return send(socket, ERROR, status.as_bytes()).await;
                }
            },
            message = socket.next() => match from_client(message)? {
                FromClient::Input(bytes) => {
                    if let Some(attached) = &stdin
                        && attached.sender.send(bytes).await.is_err()
                    {
                        stdin = None;
                    }
                }
                FromClient::EndOfInput => stdin = None,
                FromClient::Gone => return Ok(()),
                FromClient::Nothing => {}
            },
            _ = stop.cancelled() => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_and_its_end_come_in_binary_and_text_frames() {
        let read = |message: Message| from_client(Some(Ok(message))).unwrap();
        assert!(matches!(
            read(Message::Binary(b"\x00ls\n".to_vec().into())),
            FromClient::Input(input) if input == b"ls\n"
        ));
        assert!(matches!(
            read(Message::Text("\u{0}echo hi\n".into())),
            FromClient::Input(input) if input == b"echo hi\n"
        ));
        assert!(matches!(
            read(Message::Binary(vec![CLOSE, STDIN].into())),
            FromClient::EndOfInput
        ));
        assert!(matches!(
            read(Message::Text("\u{ff}\u{0}".into())),
            FromClient::Nothing
        ));
        assert!(matches!(
            read(Message::Binary(vec![4, b'{'].into())),
            FromClient::Nothing
        ));
        assert!(matches!(read(Message::Close(None)), FromClient::Gone));
    }
}
