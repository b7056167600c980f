//! `pods/portforward` over WebSocket: each port the client names gets a connection to what listens on it inside
//! the pod, as the kubelet dials `localhost:PORT` in the pod's network namespace. The i-th port speaks on channel
//! 2i (its data, both ways) and 2i+1 (its errors, from the server); the first message on every channel is the port
//! number, two bytes little-endian, which is what clients wait for before they send. A port nothing listens on
//! gets the kubelet's "connection refused" on its error channel. The session ends when every port's connection
//! has ended, or when the client leaves.

use futures::StreamExt;
use http::{HeaderMap, Response};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, WriteHalf};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_util::sync::CancellationToken;

use super::session::{self, Socket, send};
use super::{ApiServer, ResponseBody, upgrade_required, websocket, websocket_key};
use crate::apiserver::context::RequestContext;
use crate::apiserver::errors::ApiError;
use crate::apiserver::long_running::Permit;
use crate::apiserver::request::Query;

/// The most ports one session forwards: two channels each must fit the one channel byte, with room to spare.
const MAX_PORTS: usize = 64;

/// The most bytes read from a port's connection into one message.
const READ_CHUNK: usize = 32 * 1024;

/// One forwarded port: a connection to its listener, or the kubelet's words for why there is none.
struct Port {
    number: u16,
    connection: Result<DuplexStream, String>,
}

/// The ports of one session, in the order the client named them.
pub struct Forward {
    ports: Vec<Port>,
}

/// Serve `pods/portforward` of `pod`, which the request `ctx` names; the session holds `permit` until it ends.
pub fn serve(
    server: &ApiServer,
    mut ctx: RequestContext,
    pod: &Value,
    permit: Option<Permit>,
) -> Result<Response<ResponseBody>, ApiError> {
    let name = ctx.name().to_owned();
    let namespace = ctx.namespace().to_owned();
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending");
    if phase != "Running" {
        return Err(ApiError::bad_request(format!(
            "unable to upgrade connection: pod {name} is not running (phase {phase}): ports are forwarded only \
             into a running pod"
        )));
    }
    let key = websocket_key(&ctx.headers)?;
    if tunnels_spdy(&ctx.headers) {
        return Err(ApiError::bad_request(SPDY_TUNNEL_REFUSED));
    }
    let protocol = websocket::negotiate(&ctx.headers, &websocket::PORT_FORWARD_PROTOCOLS)?;
    let numbers = ports(&ctx.query).map_err(ApiError::bad_request)?;
    let upgrade = ctx.upgrade.take().ok_or_else(upgrade_required)?;
    let uid = pod
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let runtime = server.runtime();
    let ports = numbers
        .into_iter()
        .map(|number| Port {
            number,
            connection: runtime
                .as_ref()
                .and_then(|r| r.connect(&namespace, &name, number))
                .ok_or_else(|| refused(number, uid, &namespace, &name)),
        })
        .collect();
    let session = session::run(
        upgrade,
        session::Channels::of(&ctx.query),
        session::Work::PortForward(Forward { ports }),
        server.inner().shutdown.clone(),
        server.long_running_limits().session_idle,
        permit,
    );
    // The upgraded socket counts against the listener's connection cap until the session ends.
    let connection = ctx.connection.take();
    tokio::spawn(async move {
        session.await;
        drop(connection);
    });
    Ok(websocket::switching_protocols(&key, protocol))
}

/// Why `kubectl port-forward` is refused when it tunnels SPDY through WebSocket (kubectl 1.31 and later).
const SPDY_TUNNEL_REFUSED: &str = "SPDY is not served, over WebSocket either: kubectl port-forward, which speaks \
     SPDY/3.1+portforward.k8s.io, is not served; portforward speaks WebSocket's v4.channel.k8s.io";

/// Whether the client offers only SPDY tunnelled through WebSocket, as kubectl does; it names its ports in SPDY
/// stream headers, not in the query.
fn tunnels_spdy(headers: &HeaderMap) -> bool {
    let offered: Vec<String> = headers
        .get_all(http::header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_ascii_lowercase())
        .collect();
    !offered.is_empty() && offered.iter().all(|p| p.starts_with("spdy/"))
}

/// The ports a request names: `ports=80`, `ports=80,443` or the parameter repeated, as the kubelet reads them.
fn ports(query: &Query) -> Result<Vec<u16>, String> {
    let given = query.all("ports");
    if given.is_empty() {
        return Err("query parameter \"ports\" is required".to_owned());
    }
    let mut numbers = Vec::new();
    for text in given.iter().flat_map(|v| v.split(',')) {
        let text = text.trim();
        let number: u16 = text
            .parse()
            .map_err(|_| format!("unable to parse {text:?} as a port"))?;
        if number == 0 {
            return Err(format!("port {text:?} must be > 0"));
        }
        numbers.push(number);
    }
    if numbers.len() > MAX_PORTS {
        return Err(format!(
            "{} ports asked for: at most {MAX_PORTS} are forwarded in one connection",
            numbers.len()
        ));
    }
    Ok(numbers)
}

/// What the kubelet writes on a port's error channel when nothing listens on it inside the pod.
fn refused(port: u16, uid: &str, namespace: &str, pod: &str) -> String {
    format!(
        "error forwarding port {port} to pod {uid}, uid : failed to connect to localhost:{port} inside namespace \
         of pod {namespace}/{pod}: connection refused"
    )
}

/// Stream `forward`'s ports on the session's socket until every connection has ended, the client leaves or the
/// server stops.
pub async fn stream(
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
fn channels(index: usize) -> (u8, u8) {
    // MAX_PORTS keeps both within a byte.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn query(text: &str) -> Query {
        Query::parse(Some(text))
    }

    #[test]
    fn ports_come_repeated_or_comma_separated() {
        assert_eq!(ports(&query("ports=80")), Ok(vec![80]));
        assert_eq!(
            ports(&query("ports=80%2C1234&ports=6379")),
            Ok(vec![80, 1234, 6379])
        );
        assert!(ports(&query("")).unwrap_err().contains("required"));
        assert!(ports(&query("ports=http")).unwrap_err().contains("parse"));
        assert!(ports(&query("ports=0")).unwrap_err().contains("> 0"));
        assert!(ports(&query("ports=70000")).is_err());
    }

    #[test]
    fn kubectls_spdy_tunnel_is_told_apart() {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::SEC_WEBSOCKET_PROTOCOL,
            "SPDY/3.1+portforward.k8s.io".parse().unwrap(),
        );
        assert!(tunnels_spdy(&headers));
        headers.insert(
            http::header::SEC_WEBSOCKET_PROTOCOL,
            "v4.channel.k8s.io".parse().unwrap(),
        );
        assert!(!tunnels_spdy(&headers));
    }

    #[test]
    fn each_port_has_a_data_and_an_error_channel() {
        assert_eq!(channels(0), (0, 1));
        assert_eq!(channels(3), (6, 7));
        let message = refused(1236, "0a1b", "default", "web");
        assert!(message.starts_with(
            "error forwarding port 1236 to pod 0a1b, uid : failed to connect to localhost:1236"
        ));
        assert!(message.ends_with("connection refused"));
    }
}
