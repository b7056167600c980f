//! `nc`, as busybox has it, inside the pod's network: `nc -l -p PORT` (or `nc -l PORT`) listens and, once a peer
//! connects, writes what the peer sends on standard output and sends standard input to the peer; `-k` goes on
//! listening after a peer leaves. `nc localhost PORT` connects to the pod's own listener. Other hosts are outside
//! the simulation: not simulated.

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::{Status, complain};
use crate::shell::io::Cx;

/// The most bytes read from a peer at once.
const READ_CHUNK: usize = 16 * 1024;

/// What the arguments ask for.
#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// Listen on the port; keep listening after each peer with `-k`.
    Listen { port: u16, keep: bool },
    /// Connect to `host`'s port.
    Connect { host: String, port: u16 },
}

/// `nc`; None for a host outside the pod (the shell says it is not simulated).
pub(super) async fn nc(cx: &mut Cx<'_>, args: &[String]) -> Option<Status> {
    let mode = match mode(args) {
        Ok(mode) => mode,
        Err(message) => return Some(complain(cx, "nc", &message).map(|()| 1)),
    };
    Some(match mode {
        Mode::Listen { port, keep } => listen(cx, port, keep).await,
        Mode::Connect { host, port } => {
            if !matches!(host.as_str(), "localhost" | "127.0.0.1" | "::1") {
                return None;
            }
            match cx.container.ports.connect(port) {
                Some(connection) => {
                    let mut stdin_open = true;
                    talk(cx, connection, &mut stdin_open, true)
                        .await
                        .map(|()| 0)
                }
                None => complain(
                    cx,
                    "nc",
                    &format!("can't connect to remote host ({host}): Connection refused"),
                )
                .map(|()| 1),
            }
        }
    })
}

async fn listen(cx: &mut Cx<'_>, port: u16, keep: bool) -> Status {
    let Ok(mut listener) = cx.container.ports.listen(port) else {
        complain(cx, "nc", "bind: Address already in use")?;
        return Ok(1);
    };
    let mut stdin_open = true;
    loop {
        let accepted = listener.accept().await;
        talk(cx, accepted.stream, &mut stdin_open, false).await?;
        if !keep {
            return Ok(0);
        }
    }
}

/// Copy what the peer sends to standard output and standard input to the peer, until the peer closes. At the end
/// of standard input, a client (`half_close`) tells the peer it will send no more; a listener just stops sending.
async fn talk(
    cx: &mut Cx<'_>,
    connection: DuplexStream,
    stdin_open: &mut bool,
    half_close: bool,
) -> Result<(), super::OutputLimit> {
    let (mut from_peer, mut to_peer) = tokio::io::split(connection);
    let mut buffer = vec![0u8; READ_CHUNK];
    loop {
        tokio::select! {
            read = from_peer.read(&mut buffer) => match read {
                Ok(0) | Err(_) => return Ok(()),
                Ok(n) => cx.stdout.write(&buffer[..n])?,
            },
            chunk = cx.stdin.chunk(), if *stdin_open => match chunk {
                Some(bytes) => {
                    // A peer that has gone is seen by the read above.
                    let _ = to_peer.write_all(&bytes).await;
                }
                None => {
                    *stdin_open = false;
                    if half_close {
                        let _ = to_peer.shutdown().await;
                    }
                }
            },
        }
    }
}

/// Read the arguments: `-l`, `-k`, `-p PORT` (also together, as `-lkp PORT`), `-v` and `-n` (which change nothing
/// here), then the port to listen on or the host and port to connect to.
fn mode(args: &[String]) -> Result<Mode, String> {
    let (mut listen, mut keep, mut port) = (false, false, None);
    let mut operands = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            operands.push(arg.as_str());
            continue;
        };
        for (at, flag) in flags.char_indices() {
            match flag {
                'l' => listen = true,
                'k' => keep = true,
                'v' | 'n' => {}
                'p' => {
                    let rest = &flags[at + 1..];
                    let value = if rest.is_empty() {
                        args.next().map(String::as_str)
                    } else {
                        Some(rest)
                    };
                    port = Some(number(value.ok_or("option requires an argument -- 'p'")?)?);
                    break;
                }
                other => return Err(format!("invalid option -- '{other}'")),
            }
        }
    }
    match (listen, operands.as_slice()) {
        (true, []) => Ok(Mode::Listen {
            port: port.ok_or("a port to listen on is needed (-p PORT)")?,
            keep,
        }),
        (true, [given]) if port.is_none() => Ok(Mode::Listen {
            port: number(given)?,
            keep,
        }),
        (false, [host, given]) => Ok(Mode::Connect {
            host: (*host).to_owned(),
            port: number(given)?,
        }),
        _ => Err("usage: nc [-lk] [-p PORT] [HOST] [PORT]".to_owned()),
    }
}

fn number(text: &str) -> Result<u16, String> {
    text.parse::<u16>()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("bad port '{text}'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::testing::{container, run_in};

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn listening_and_connecting_are_read_from_the_arguments() {
        let listen = |port, keep| Ok(Mode::Listen { port, keep });
        assert_eq!(mode(&args(&["-l", "-p", "1234"])), listen(1234, false));
        assert_eq!(mode(&args(&["-lk", "-p", "80"])), listen(80, true));
        assert_eq!(mode(&args(&["-lkp", "8080"])), listen(8080, true));
        assert_eq!(mode(&args(&["-lp8080"])), listen(8080, false));
        assert_eq!(mode(&args(&["-l", "1234"])), listen(1234, false));
        assert_eq!(
            mode(&args(&["localhost", "6379"])),
            Ok(Mode::Connect {
                host: "localhost".into(),
                port: 6379
            })
        );
        assert!(mode(&args(&["-l"])).is_err());
        assert!(mode(&args(&["-l", "-p", "http"])).is_err());
        assert!(mode(&args(&["-x"])).is_err());
    }

    #[tokio::test]
    async fn a_listener_hands_what_it_receives_to_stdout_and_a_client_reaches_it() {
        let c = container();
        let server = {
            let c = c.clone();
            tokio::spawn(async move { run_in(&c, &["nc", "-l", "-p", "1234"], None).await })
        };
        let mut connection = loop {
            match c.ports.connect(1234) {
                Some(connection) => break connection,
                None => tokio::task::yield_now().await,
            }
        };
        connection.write_all(b"hello over tcp\n").await.unwrap();
        drop(connection);
        let ran = server.await.unwrap();
        assert_eq!((ran.stdout.as_str(), ran.status), ("hello over tcp\n", 0));

        let refused = run_in(&c, &["nc", "127.0.0.1", "1234"], None).await;
        assert_eq!(refused.status, 1);
        assert!(refused.stderr.contains("Connection refused"), "{refused:?}");
        let elsewhere = run_in(&c, &["nc", "example.com", "80"], None).await;
        assert_eq!(elsewhere.status, 127);
    }

    #[tokio::test]
    async fn servers_answer_on_their_ports_inside_the_pod() {
        let c = container();
        let nginx = {
            let c = c.clone();
            tokio::spawn(async move { run_in(&c, &["nginx", "-g", "daemon off;"], None).await })
        };
        let redis = {
            let c = c.clone();
            tokio::spawn(async move { run_in(&c, &["redis-server"], None).await })
        };
        while c.ports.connect(80).is_none() || c.ports.connect(6379).is_none() {
            tokio::task::yield_now().await;
        }
        let get = run_in(
            &c,
            &["nc", "localhost", "80"],
            Some(vec![b"GET / HTTP/1.0\r\n\r\n"]),
        )
        .await;
        assert!(get.stdout.starts_with("HTTP/1.1 200 OK\r\n"), "{get:?}");
        assert!(get.stdout.contains("<h1>Welcome to nginx!</h1>"));
        let ping = run_in(&c, &["nc", "localhost", "6379"], Some(vec![b"PING\r\n"])).await;
        assert_eq!((ping.stdout.as_str(), ping.status), ("+PONG\r\n", 0));
        let second = run_in(&c, &["nginx"], None).await;
        assert_eq!(second.status, 1, "port 80 is taken: {second:?}");
        nginx.abort();
        redis.abort();
    }
}
