//! `pods/portforward` over WebSocket: each port the client names gets a connection to what listens on it inside
//! the pod, as the kubelet dials `localhost:PORT` in the pod's network namespace. The i-th port speaks on channel
//! 2i (its data, both ways) and 2i+1 (its errors, from the server); the first message on every channel is the port
//! number, two bytes little-endian, which is what clients wait for before they send. A port nothing listens on
//! gets the kubelet's "connection refused" on its error channel. The session ends when every port's connection
//! has ended, or when the client leaves.

use http::{HeaderMap, Response};
use serde_json::Value;

use super::forwarding::{Forward, Port};
use super::session;
use super::{ApiServer, ResponseBody, upgrade_required, websocket, websocket_key};
use crate::apiserver::context::RequestContext;
use crate::apiserver::errors::ApiError;
use crate::apiserver::long_running::Permit;
use crate::apiserver::request::Query;

/// The most ports one session forwards: two channels each must fit the one channel byte, with room to spare.
pub(super) const MAX_PORTS: usize = 64;

/// Serve `pods/portforward` of `pod`, which the request `ctx` names; the session holds `permit` until it ends.
pub(super) fn serve(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::streams::forwarding::channels;

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
