//! Long-running requests as a tenant abuses them: a namespace editor opening watches, attach sessions and followed
//! logs by the hundred, sending WebSocket messages of many MiB, or leaving sessions idle. Each user holds a bounded
//! number of long-running requests (the administrator is never locked out), a session's messages are bounded, and an
//! idle session is closed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kmm_cluster::EmbeddedCluster;
use kmm_cluster::apiserver::long_running::LongRunningLimits;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchParams};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::client::Raw;
use crate::{closed_within, editor_token, https_client, process, serving};

/// Long-running requests one user may hold in these tests: small enough to reach with a few sockets.
const PER_USER: usize = 4;

/// How long a session may stay idle in these tests.
const IDLE: Duration = Duration::from_secs(2);

/// How long a followed log is streamed in these tests.
const FOLLOW: Duration = Duration::from_secs(2);

/// A WebSocket message larger than any limit sized for the protocol, and within the library's default of 64 MiB.
const HUGE_MESSAGE: usize = 60 << 20;

/// One fragment of a message sent in parts: under any frame limit, so only the message limit can stop it.
const FRAGMENT: usize = 256 << 10;

/// The limits these tests reach: a few long-running requests per user and a short idle deadline.
fn limit_long_running(cluster: &EmbeddedCluster) {
    cluster.server().set_long_running_limits(LongRunningLimits {
        per_user: PER_USER,
        in_all: 64,
        session_idle: IDLE,
        log_follow: FOLLOW,
    });
}

/// A response head as read from the socket, and the socket to keep reading (or holding) the stream.
struct Opened {
    status: u16,
    head: String,
    stream: TlsStream<TcpStream>,
}

/// Send `request` (a request head without its blank line) and read the response head.
async fn open(raw: &Raw, request: &str) -> Opened {
    let mut stream = raw.tls().await;
    stream
        .write_all(format!("{request}\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .expect("sent");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut byte))
            .await
            .expect("a response head in time")
            .expect("read");
        assert_eq!(read, 1, "closed before the response head: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head}"));
    Opened {
        status,
        head,
        stream,
    }
}

/// A watch of ConfigMaps in `default` with `token`.
async fn watch(raw: &Raw, token: &str) -> Opened {
    open(
        raw,
        &format!(
            "GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nAuthorization: Bearer {token}\r\nConnection: close"
        ),
    )
    .await
}

/// A WebSocket upgrade of pod `app`'s `subresource` (with its query) with `token`.
async fn session(raw: &Raw, token: &str, subresource: &str) -> Opened {
    open(
        raw,
        &format!(
            "GET /api/v1/namespaces/default/pods/app/{subresource} HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
             Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v5.channel.k8s.io"
        ),
    )
    .await
}

/// An attach to pod `app`'s standard input and output.
async fn attach(raw: &Raw, token: &str) -> Opened {
    session(raw, token, "attach?container=main&stdin=true&stdout=true").await
}

/// The body of a refused request: the server sends it and then closes the connection (or leaves it idle).
async fn body_of(opened: &mut Opened) -> String {
    let mut body = Vec::new();
    let _ = tokio::time::timeout(
        Duration::from_secs(20),
        opened.stream.read_to_end(&mut body),
    )
    .await;
    String::from_utf8_lossy(&body).into_owned()
}

/// Pod `app` in `default`, its container `main` running: what exec, attach and logs need (no kubelet runs here:
/// its status is written as one would write it).
pub(crate) async fn running_pod(cluster: &EmbeddedCluster) {
    let pods = Api::<Pod>::namespaced(cluster.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "app"},
        "spec": {"nodeName": "worker-0", "containers": [{"name": "main", "image": "quay.io/org/app:1"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("a pod");
    let status = json!({"status": {"phase": "Running", "containerStatuses": [{
        "name": "main", "image": "quay.io/org/app:1", "imageID": "", "ready": true, "restartCount": 0,
        "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
    }]}});
    pods.patch_status("app", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("its container runs");
}

/// Assert a refusal is kube-apiserver's 429: a Status naming the limit, and when to retry.
fn assert_too_many(opened: &Opened, body: &str, what: &str) {
    assert_eq!(opened.status, 429, "{what}: {}{body}", opened.head);
    assert!(
        opened.head.to_ascii_lowercase().contains("retry-after: "),
        "{what}: no Retry-After in {}",
        opened.head
    );
    let status: serde_json::Value = serde_json::from_str(body.trim())
        .unwrap_or_else(|e| panic!("{what}: a Status, not {body:?}: {e}"));
    assert_eq!(status["reason"], "TooManyRequests", "{what}: {status}");
    assert_eq!(status["code"], 429, "{what}: {status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Too many requests") && message.contains(&PER_USER.to_string()),
        "{what}: the message names the limit: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_watches_are_limited_and_the_administrator_is_not() {
    let (cluster, _turn) = serving().await;
    limit_long_running(&cluster);
    let raw = Raw::new(&cluster);
    let token = editor_token(&cluster).await;
    let mut held = Vec::new();
    for i in 0..PER_USER {
        let opened = watch(&raw, &token).await;
        assert_eq!(opened.status, 200, "watch {i}: {}", opened.head);
        held.push(opened);
    }
    let mut refused = watch(&raw, &token).await;
    let body = body_of(&mut refused).await;
    assert_too_many(&refused, &body, "a watch beyond the limit");

    // The administrator is exempt: it still watches and reads, over HTTPS as kubectl does.
    let admin = https_client(&cluster, kmm_cluster::kubeconfig::DEFAULT_NAME).await;
    let configmaps = Api::<ConfigMap>::namespaced(admin, "default");
    let mut admin_watches = Vec::new();
    for _ in 0..PER_USER + 2 {
        admin_watches.push(
            configmaps
                .watch(&WatchParams::default(), "0")
                .await
                .expect("the administrator watches"),
        );
    }
    configmaps
        .list(&Default::default())
        .await
        .expect("the administrator reads");

    // Closing the watches gives the count back.
    drop(held);
    let reopened = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let opened = watch(&raw, &token).await;
            if opened.status == 200 {
                return opened;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("a watch is served once the others are closed");
    let mut again = vec![reopened];
    for i in 1..PER_USER {
        let opened = watch(&raw, &token).await;
        assert_eq!(opened.status, 200, "watch {i} after the others closed");
        again.push(opened);
    }
    drop(admin_watches);
    drop(again);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_sessions_and_followed_logs_are_limited() {
    let (cluster, _turn) = serving().await;
    limit_long_running(&cluster);
    running_pod(&cluster).await;
    let raw = Raw::new(&cluster);
    let token = editor_token(&cluster).await;
    let mut held = Vec::new();
    for i in 0..PER_USER {
        let opened = attach(&raw, &token).await;
        assert_eq!(opened.status, 101, "attach {i}: {}", opened.head);
        held.push(opened);
    }
    for (what, subresource) in [
        (
            "an attach beyond the limit",
            "attach?container=main&stdout=true",
        ),
        (
            "an exec beyond the limit",
            "exec?container=main&command=true&stdout=true",
        ),
    ] {
        let mut refused = session(&raw, &token, subresource).await;
        let body = body_of(&mut refused).await;
        assert_too_many(&refused, &body, what);
    }
    let mut follow = open(
        &raw,
        &format!(
            "GET /api/v1/namespaces/default/pods/app/log?follow=true HTTP/1.1\r\nAuthorization: Bearer {token}\r\nConnection: close"
        ),
    )
    .await;
    let body = body_of(&mut follow).await;
    assert_too_many(&follow, &body, "a followed log beyond the limit");
    // A log read without following is not long-running.
    let plain = open(
        &raw,
        &format!(
            "GET /api/v1/namespaces/default/pods/app/log HTTP/1.1\r\nAuthorization: Bearer {token}\r\nConnection: close"
        ),
    )
    .await;
    assert_eq!(plain.status, 200, "{}", plain.head);
    drop(held);
    cluster.shutdown().await;
}

/// Write `total` bytes of one WebSocket message in fragments of `fragment` bytes (the first fragment's first byte
/// is stdin's channel, 0) until the server closes the session; what was written before it did.
async fn send_message(
    writer: &mut (impl tokio::io::AsyncWrite + Unpin),
    total: usize,
    fragment: usize,
    closed: &AtomicBool,
) -> usize {
    let payload = vec![0u8; fragment];
    let mut sent = 0;
    let mut peak_growth = 0;
    let before = process::resident_bytes();
    while sent < total && !closed.load(Ordering::SeqCst) {
        let last = sent + fragment >= total;
        let opcode = if sent == 0 { 0x2 } else { 0x0 };
        let header = client_frame_header(opcode, last, fragment);
        if writer.write_all(&header).await.is_err() || writer.write_all(&payload).await.is_err() {
            break;
        }
        sent += fragment;
        peak_growth = peak_growth.max(process::resident_bytes().saturating_sub(before));
    }
    eprintln!(
        "sent {} KiB in fragments of {} KiB before the server closed; resident memory grew by at most {} KiB",
        sent >> 10,
        fragment >> 10,
        peak_growth >> 10
    );
    sent
}

/// The header of a client's frame: masked, as clients must, with a mask of zeros so the payload goes as it is.
fn client_frame_header(opcode: u8, fin: bool, len: usize) -> Vec<u8> {
    let mut header = vec![if fin { 0x80 } else { 0 } | opcode];
    match len {
        0..=125 => header.push(0x80 | len as u8),
        126..=0xffff => {
            header.push(0x80 | 126);
            header.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            header.push(0x80 | 127);
            header.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    header.extend_from_slice(&[0; 4]);
    header
}

/// Read the server's frames until its close frame: its code, or None when the connection ends without one.
async fn close_code(reader: &mut (impl AsyncRead + Unpin)) -> Option<u16> {
    loop {
        let mut head = [0u8; 2];
        reader.read_exact(&mut head).await.ok()?;
        let len = match head[1] & 0x7f {
            126 => u64::from(reader.read_u16().await.ok()?),
            127 => reader.read_u64().await.ok()?,
            n => u64::from(n),
        };
        let mut payload = vec![0u8; len as usize];
        reader.read_exact(&mut payload).await.ok()?;
        if head[0] & 0x0f == 0x8 {
            return payload
                .get(..2)
                .map(|code| u16::from_be_bytes([code[0], code[1]]));
        }
    }
}

/// Attach and send one message of `total` bytes in `fragment`s: the bytes sent before the server closed, and the
/// close code it sent.
async fn oversized(raw: &Raw, token: &str, total: usize, fragment: usize) -> (usize, Option<u16>) {
    let opened = attach(raw, token).await;
    assert_eq!(opened.status, 101, "{}", opened.head);
    let (mut reader, mut writer) = tokio::io::split(opened.stream);
    let closed = Arc::new(AtomicBool::new(false));
    let seen = closed.clone();
    let reading = tokio::spawn(async move {
        let code = tokio::time::timeout(Duration::from_secs(60), close_code(&mut reader)).await;
        seen.store(true, Ordering::SeqCst);
        code.ok().flatten()
    });
    let sent = send_message(&mut writer, total, fragment, &closed).await;
    let code = tokio::time::timeout(Duration::from_secs(30), reading)
        .await
        .ok()
        .and_then(|read| read.expect("the reader ends"));
    (sent, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_websocket_message_closes_the_session() {
    let (cluster, _turn) = serving().await;
    limit_long_running(&cluster);
    running_pod(&cluster).await;
    let raw = Raw::new(&cluster);
    let token = editor_token(&cluster).await;

    // A message in small fragments: closed once it passes the message limit, long before the whole is sent.
    let (sent, code) = oversized(&raw, &token, HUGE_MESSAGE, FRAGMENT).await;
    assert!(
        sent < 16 << 20,
        "{} KiB of one message sent before the session closed",
        sent >> 10
    );
    assert_eq!(code, Some(1009), "the close says the message is too big");

    // One frame of 2 MiB, more than any stdin chunk or resize a client sends.
    let (_, code) = oversized(&raw, &token, 2 << 20, 2 << 20).await;
    assert_eq!(
        code,
        Some(1009),
        "a frame over the limit closes the session"
    );

    // Sessions that keep to the limits are served.
    let mut kept = attach(&raw, &token).await;
    assert_eq!(kept.status, 101, "{}", kept.head);
    let stdin = [client_frame_header(0x2, true, 1024), vec![0u8; 1024]].concat();
    kept.stream.write_all(&stdin).await.expect("stdin is taken");
    assert!(
        !closed_within(&mut kept.stream, Duration::from_millis(500)).await,
        "a 1 KiB stdin message is taken"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_is_closed() {
    let (cluster, _turn) = serving().await;
    limit_long_running(&cluster);
    running_pod(&cluster).await;
    let raw = Raw::new(&cluster);
    let token = editor_token(&cluster).await;
    let mut idle = attach(&raw, &token).await;
    assert_eq!(idle.status, 101, "{}", idle.head);
    assert!(
        closed_within(&mut idle.stream, IDLE * 10).await,
        "a session idle for {IDLE:?} is closed"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_log_ends() {
    let (cluster, _turn) = serving().await;
    limit_long_running(&cluster);
    running_pod(&cluster).await;
    let raw = Raw::new(&cluster);
    let token = editor_token(&cluster).await;
    let mut follow = open(
        &raw,
        &format!(
            "GET /api/v1/namespaces/default/pods/app/log?follow=true HTTP/1.1\r\nAuthorization: Bearer {token}\r\nConnection: close"
        ),
    )
    .await;
    assert_eq!(follow.status, 200, "{}", follow.head);
    assert!(
        closed_within(&mut follow.stream, FOLLOW * 10).await,
        "a log followed for {FOLLOW:?} ends"
    );
    cluster.shutdown().await;
}
