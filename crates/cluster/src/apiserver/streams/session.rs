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

use super::ExecOutput;
use super::idle::{LastTraffic, Watched};
use super::status::exit_status;
use super::websocket;
use crate::apiserver::logs::LogLine;
use crate::apiserver::long_running::Permit;
use crate::apiserver::request::Query;

/// Channel numbers of the `channel.k8s.io` protocols (stdin, 0, and resize, 4, are the client's).
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;

/// How long the client has to answer the closing handshake before the connection is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The output channels a client asked for in its query.
#[derive(Debug, Clone, Copy)]
pub struct Channels {
    stdout: bool,
    stderr: bool,
    /// With a terminal, standard error is written to standard output, as on a terminal.
    tty: bool,
}

impl Channels {
    /// The channels of a request's `stdout`, `stderr` and `tty` parameters.
    pub fn of(query: &Query) -> Self {
        Self {
            stdout: query.flag("stdout"),
            stderr: query.flag("stderr"),
            tty: query.flag("tty"),
        }
    }
}

/// What a session streams.
pub enum Work {
    /// The output of a command that has already run.
    Exec(ExecOutput),
    /// The container's log lines from now on, until the container exits or the client leaves.
    Attach(broadcast::Receiver<LogLine>),
}

type Socket = WebSocketStream<Watched<TokioIo<hyper::upgrade::Upgraded>>>;

/// Take over the connection once it is upgraded and stream `work` on it, holding `permit` until the session ends.
/// The session ends early when the server stops, when the client sends more than [`websocket::config`] allows, or
/// after `idle` with no traffic either way.
pub async fn run(
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
            Work::Exec(output) => exec(&mut socket, channels, &output).await,
            Work::Attach(lines) => attach(&mut socket, channels, lines, stop).await,
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

async fn exec(socket: &mut Socket, channels: Channels, output: &ExecOutput) -> Result<(), Error> {
    if channels.stdout {
        send(socket, STDOUT, output.stdout.as_bytes()).await?;
    }
    match channels {
        Channels {
            tty: true,
            stdout: true,
            ..
        } => send(socket, STDOUT, output.stderr.as_bytes()).await?,
        Channels { stderr: true, .. } => send(socket, STDERR, output.stderr.as_bytes()).await?,
        _ => {}
    }
    let status = exit_status(output.exit_code).to_string();
    send(socket, ERROR, status.as_bytes()).await
}

async fn attach(
    socket: &mut Socket,
    channels: Channels,
    mut lines: broadcast::Receiver<LogLine>,
    stop: CancellationToken,
) -> Result<(), Error> {
    loop {
        tokio::select! {
            line = lines.recv() => match line {
                Ok((_, line)) if channels.stdout => send(socket, STDOUT, format!("{line}\n").as_bytes()).await?,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                // The container exited: the attach is over and, as the kubelet reports it, succeeded.
                Err(broadcast::error::RecvError::Closed) => {
                    let status = exit_status(0).to_string();
                    return send(socket, ERROR, status.as_bytes()).await;
                }
            },
            message = socket.next() => match message {
                None | Some(Ok(Message::Close(_))) => return Ok(()),
                Some(Err(e)) => return Err(e),
                // Standard input and terminal resizes have nothing to go to in a simulated container.
                Some(Ok(_)) => {}
            },
            _ = stop.cancelled() => return Ok(()),
        }
    }
}

/// Write `data` on `channel`; nothing is written for no data, as a stream that wrote nothing sends nothing.
async fn send(socket: &mut Socket, channel: u8, data: &[u8]) -> Result<(), Error> {
    if data.is_empty() {
        return Ok(());
    }
    let mut message = Vec::with_capacity(data.len() + 1);
    message.push(channel);
    message.extend_from_slice(data);
    socket.send(Message::Binary(message.into())).await
}
