//! The embedded API server under attack over HTTPS, as a hostile or careless client would attack it: sockets that
//! never finish a handshake, send headers or bodies a byte at a time or sit idle; floods of connections; patches
//! that multiply themselves; bodies that are not objects; escalation through RBAC; impersonation headers that are
//! not text. While the attacks run, an honest client keeps reading and writing: it must be served within its
//! latency budget, and every write the server acknowledged must be there afterwards. Memory and descriptors must
//! stay bounded and nothing may panic (a panic in a handler would drop the connection without an answer).
// Test helpers outside `#[test]` functions unwrap too: a failed step fails the test.
#![allow(clippy::unwrap_used)]

mod client;
mod connection_cap;
mod descriptors;
mod engine_endpoint;
mod process;
#[path = "../support/serve_process.rs"]
mod serve_process;
mod sessions;
mod unauthenticated;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kmm_cluster::https::{ConnectionLimits, UnauthenticatedBudget};
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use client::Raw;

/// Deadlines short enough to watch them act within a test.
const LIMITS: ConnectionLimits = ConnectionLimits {
    handshake: Duration::from_secs(1),
    headers: Duration::from_secs(1),
    body: Duration::from_secs(1),
    idle: Duration::from_secs(1),
    max_connections: 64,
    unauthenticated: UnauthenticatedBudget {
        total: 16,
        per_peer: 8,
    },
};

/// The tests run one at a time: each counts the descriptors and memory of the whole process.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long the honest client may wait for any one answer while attacks run.
const LATENCY_BUDGET: Duration = Duration::from_millis(750);

async fn serving() -> (EmbeddedCluster, tokio::sync::MutexGuard<'static, ()>) {
    serving_within(LIMITS).await
}

/// [`serving`] within `limits` instead of [`LIMITS`].
async fn serving_within(
    limits: ConnectionLimits,
) -> (EmbeddedCluster, tokio::sync::MutexGuard<'static, ()>) {
    let turn = ONE_AT_A_TIME.lock().await;
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        listen: Some(([127, 0, 0, 1], 0).into()),
        connection_limits: Some(limits),
        ..EmbeddedOptions::default()
    })
    .await
    .expect("the embedded cluster starts");
    (cluster, turn)
}

/// A kube-rs client over HTTPS, acting as whoever the kubeconfig's `context` names.
async fn https_client(cluster: &EmbeddedCluster, context: &str) -> kube::Client {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(cluster.kubeconfig().expect("a kubeconfig")).unwrap();
    let options = kube::config::KubeConfigOptions {
        context: Some(context.to_owned()),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("the kubeconfig loads");
    kube::Client::try_from(config).expect("a client")
}

/// A bearer token of a ServiceAccount allowed to edit the `default` namespace (ClusterRole `edit`).
async fn editor_token(cluster: &EmbeddedCluster) -> String {
    let admin = cluster.client();
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "editor"}})).unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &account)
        .await
        .expect("an account");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "editor"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": "editor", "namespace": "default"}],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin, "default")
        .create(&PostParams::default(), &binding)
        .await
        .expect("a binding");
    cluster
        .server()
        .auth()
        .issue_token(
            cluster.server().store(),
            "default",
            "editor",
            3600,
            Vec::new(),
        )
        .expect("a token")
        .token
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_closed() {
    let (cluster, _turn) = serving().await;
    let raw = Raw::new(&cluster);
    let wait = Duration::from_secs(4);
    let mut no_handshake = raw.tcp().await;
    let mut idle = raw.tls().await;
    let mut slow_headers = raw.tls().await;
    let mut slow_body = raw.tls().await;
    slow_body
        .write_all(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n{")
        .await
        .unwrap();
    let trickle = tokio::spawn(async move {
        for byte in b"GET /version HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
            .iter()
            .cycle()
            .take(40)
        {
            if slow_headers.write_all(&[*byte]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    });
    assert!(
        closed_within(&mut no_handshake, wait).await,
        "a socket that never starts TLS is closed"
    );
    assert!(
        closed_within(&mut idle, wait).await,
        "an idle connection is closed"
    );
    assert!(
        closed_within(&mut slow_body, wait).await,
        "a body sent too slowly ends the connection"
    );
    assert!(
        trickle.await.unwrap(),
        "headers sent a byte at a time end the connection"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_leave_descriptors_bounded_and_honest_clients_served() {
    let (cluster, _turn) = serving().await;
    let raw = Raw::new(&cluster);
    let honest = https_client(&cluster, kmm_cluster::kubeconfig::DEFAULT_NAME).await;
    let configmaps = Api::<ConfigMap>::namespaced(honest, "default");
    configmaps
        .list(&ListParams::default())
        .await
        .expect("served before the attack");
    let before = process::descriptors();
    let address = raw.address();
    let holding = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let attacker_holds = holding.clone();
    let attack = tokio::spawn(async move {
        let mut held = Vec::new();
        let until = Instant::now() + Duration::from_secs(4);
        while Instant::now() < until {
            for _ in 0..50 {
                if let Ok(Ok(socket)) = tokio::time::timeout(
                    Duration::from_millis(100),
                    tokio::net::TcpStream::connect(address),
                )
                .await
                {
                    held.push(socket);
                    attacker_holds.store(held.len(), std::sync::atomic::Ordering::SeqCst);
                }
            }
            held.truncate(400);
            attacker_holds.store(held.len(), std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        held.len()
    });
    let mut acknowledged = Vec::new();
    let mut slowest = Duration::ZERO;
    // The attacker's own sockets live in this process too: what is left is the server's side.
    let mut server_side = 0;
    let mut peak = before;
    for i in 0..40 {
        let started = Instant::now();
        let created: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("honest-{i}")}})).unwrap();
        configmaps
            .create(&PostParams::default(), &created)
            .await
            .expect("an honest write is served");
        acknowledged.push(format!("honest-{i}"));
        configmaps
            .list(&ListParams::default())
            .await
            .expect("an honest read is served");
        slowest = slowest.max(started.elapsed());
        let now = process::descriptors();
        peak = peak.max(now);
        let attacker = holding.load(std::sync::atomic::Ordering::SeqCst);
        server_side = server_side.max(now.saturating_sub(before + attacker));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let held = attack.await.unwrap();
    eprintln!(
        "descriptors: {before} before, peak {peak}, at most {server_side} on the server's side, {held} held by the attacker at the end; slowest answer {slowest:?}"
    );
    assert!(
        server_side <= LIMITS.max_connections + LIMITS.unauthenticated.total + 16,
        "{server_side} descriptors on the server's side"
    );
    assert!(
        slowest < LATENCY_BUDGET * 2,
        "the honest client waited {slowest:?}"
    );
    let names: Vec<String> = configmaps
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    for name in &acknowledged {
        assert!(names.contains(name), "acknowledged write {name} is there");
    }
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bodies_get_answers_and_memory_stays_bounded() {
    let (cluster, _turn) = serving().await;
    let raw = Raw::new(&cluster);
    let token = editor_token(&cluster).await;
    let admin = cluster.client();
    let seed: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "target"}, "data": {"a": "b"}}))
            .unwrap();
    Api::<ConfigMap>::namespaced(admin, "default")
        .create(&PostParams::default(), &seed)
        .await
        .unwrap();
    let patch = |content_type: &str| {
        format!(
            "PATCH /api/v1/namespaces/default/configmaps/target HTTP/1.1\r\nAuthorization: Bearer {token}\r\nContent-Type: {content_type}"
        )
    };
    for body in ["[1]", "42", "\"x\"", "{\"metadata\": 5}"] {
        let (status, answer) = raw
            .request(&patch("application/merge-patch+json"), body.as_bytes())
            .await;
        assert!(
            matches!(status, Some(400..=499)),
            "merge patch {body}: {status:?} {answer}"
        );
    }
    let root = br#"[{"op": "replace", "path": "", "value": 42}]"#;
    let (status, answer) = raw
        .request(&patch("application/json-patch+json"), root)
        .await;
    assert!(
        matches!(status, Some(400..=499)),
        "root replaced: {status:?} {answer}"
    );
    let many: Vec<serde_json::Value> = (0..10_002)
        .map(|_| json!({"op": "test", "path": "/data/a", "value": "b"}))
        .collect();
    let (status, _) = raw
        .request(
            &patch("application/json-patch+json"),
            &serde_json::to_vec(&many).unwrap(),
        )
        .await;
    assert_eq!(status, Some(413), "10,002 operations");
    let memory_before = process::resident_bytes();
    let mut doubling = vec![
        json!({"op": "add", "path": "/metadata/annotations", "value": {"k": "x".repeat(1024)}}),
        json!({"op": "add", "path": "/data/list", "value": []}),
    ];
    doubling.push(json!({"op": "copy", "from": "/metadata/annotations", "path": "/data/list/-"}));
    for _ in 0..17 {
        doubling.push(json!({"op": "copy", "from": "/data/list", "path": "/data/list/-"}));
    }
    let (status, answer) = raw
        .request(
            &patch("application/json-patch+json"),
            &serde_json::to_vec(&doubling).unwrap(),
        )
        .await;
    let grown = process::resident_bytes().saturating_sub(memory_before);
    eprintln!(
        "resident memory grew by {} KiB under the doubling patch",
        grown >> 10
    );
    assert!(
        matches!(status, Some(400..=499)),
        "doubling copies: {status:?} {answer}"
    );
    assert!(grown < 48 << 20, "resident memory grew by {grown} bytes");
    let escalate = br#"{"metadata": {"name": "mine"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}, "subjects": [{"kind": "ServiceAccount", "name": "editor", "namespace": "default"}]}"#;
    let (status, _) = raw
        .request(
            &format!("POST /apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings HTTP/1.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json"),
            escalate,
        )
        .await;
    assert_eq!(status, Some(403), "an editor binding cluster-admin");
    let viewer = cluster.server().auth().viewer_token().to_owned();
    let mut garbled = format!("GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nAuthorization: Bearer {viewer}\r\nImpersonate-User: bob").into_bytes();
    garbled.push(0xff);
    let (status, _) = raw.request_bytes(&garbled, b"").await;
    assert_eq!(
        status,
        Some(400),
        "an impersonation header that is not text"
    );
    let (status, _) = raw
        .request(&format!("GET /api/v1/namespaces/default/configmaps/target HTTP/1.1\r\nAuthorization: Bearer {token}"), b"")
        .await;
    assert_eq!(status, Some(200), "the server still answers");
    cluster.shutdown().await;
}

/// Whether the server closes `stream` within `limit` (reading gives end of file or an error).
pub async fn closed_within<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    limit: Duration,
) -> bool {
    let mut buffer = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}
