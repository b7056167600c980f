//! The WebSocket side of the stream protocols: choosing the channel protocol a client offers and answering the
//! upgrade (RFC 6455's handshake; the framing afterwards is tokio-tungstenite's).

use base64::Engine;
use http::{HeaderMap, Response, StatusCode, header};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::apiserver::errors::ApiError;
use crate::apiserver::{ResponseBody, full};

/// The channel protocols served, preferred first. v5 adds the client's "close this channel" message to v4; both
/// frame every message as one channel byte and the data, and end with a `Status` on the error channel.
pub(super) const CHANNEL_PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/// The protocols `portforward` speaks: the kubelet's port forwarding over WebSocket has no v5 (its channels are
/// never closed one by one), and kube-apiserver also accepts it under the name `portforward.k8s.io`.
pub(super) const PORT_FORWARD_PROTOCOLS: [&str; 2] = ["v4.channel.k8s.io", "portforward.k8s.io"];

/// RFC 6455's GUID, appended to the client's key before hashing.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The largest message a client may send. Clients send standard input a read at a time (kube-rs in chunks of
/// 1 KiB by default, kubectl as much as one read of its input gives) and terminal resizes of a few bytes, so 4 MiB
/// is room to spare while a session buffers no more than that for an unfinished message (the library's default is
/// 64 MiB).
const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// The largest frame a client may send; a message may come in several.
const MAX_FRAME_BYTES: usize = 1 << 20;

/// The framing limits of every session: a client going over them gets the session closed with 1009 (message too
/// big).
pub(super) fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES))
}

/// The channel protocol to speak: the first of `served` the client offers, or 400 naming those served.
pub(super) fn negotiate(
    headers: &HeaderMap,
    served: &[&'static str],
) -> Result<&'static str, ApiError> {
    let offered: Vec<&str> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    served
        .iter()
        .copied()
        .find(|p| offered.contains(p))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "none of the offered WebSocket subprotocols [{}] is served; the server speaks {}",
                offered.join(", "),
                served.join(", ")
            ))
        })
}

/// The `101 Switching Protocols` answer to a WebSocket upgrade with `key`, speaking `protocol`.
pub(super) fn switching_protocols(key: &str, protocol: &str) -> Response<ResponseBody> {
    let mut response = Response::new(full(bytes::Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(
        header::UPGRADE,
        header::HeaderValue::from_static("websocket"),
    );
    headers.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("Upgrade"),
    );
    if let Ok(accept) = header::HeaderValue::from_str(&accept_key(key)) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Ok(protocol) = header::HeaderValue::from_str(protocol) {
        headers.insert(header::SEC_WEBSOCKET_PROTOCOL, protocol);
    }
    response
}

/// `Sec-WebSocket-Accept`: base64 of the SHA-1 of the client's key and the GUID.
fn accept_key(key: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}{ACCEPT_GUID}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_key_is_rfc_6455s() {
        // The example of RFC 6455, section 1.3.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn the_newest_offered_protocol_is_chosen() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            "v4.channel.k8s.io, v5.channel.k8s.io, channel.k8s.io"
                .parse()
                .unwrap(),
        );
        assert_eq!(
            negotiate(&headers, &CHANNEL_PROTOCOLS).unwrap(),
            "v5.channel.k8s.io"
        );
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            "base64.channel.k8s.io".parse().unwrap(),
        );
        let refused = negotiate(&headers, &CHANNEL_PROTOCOLS)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("v5.channel.k8s.io"), "{refused}");
    }
}
