//! The hostile-client suite's attacks, run longer and with the server's default limits: for `HOSTILE_SECONDS`
//! (60 by default) attackers hold idle TCP sockets past the connection cap, send TLS request headers a byte at a
//! time and send self-doubling JSON patches, while an honest kube-rs client writes and reads over HTTPS. Reports
//! the honest client's p50, p99 and slowest answer, whether every acknowledged write is there, the descriptors on
//! the server's side and the growth of resident memory.
//!
//! Run with `cargo bench --bench hostile`.

// Links the binary's allocator (mimalloc, `src/allocator.rs`): what is measured is what `kmm-tui` does.
use kmm_tui as _;

#[path = "../tests/hostile/client.rs"]
mod client;
#[path = "../tests/hostile/process.rs"]
mod process;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use client::Raw;

fn main() -> anyhow::Result<()> {
    kmm_tui::allocator::return_freed_memory_promptly();
    let seconds: u64 = std::env::var("HOSTILE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run(Duration::from_secs(seconds)))
}

async fn run(length: Duration) -> anyhow::Result<()> {
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        listen: Some(([127, 0, 0, 1], 0).into()),
        ..EmbeddedOptions::default()
    })
    .await?;
    let raw = Raw::new(&cluster);
    let kubeconfig = kube::config::Kubeconfig::from_yaml(cluster.kubeconfig().unwrap_or_default())?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    let configmaps = Api::<ConfigMap>::namespaced(kube::Client::try_from(config)?, "default");
    configmaps.list(&ListParams::default()).await?;
    let seed: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "target"}}))?;
    configmaps.create(&PostParams::default(), &seed).await?;
    let before = process::descriptors();
    let memory_before = process::resident_bytes();
    let attacking = Arc::new(AtomicBool::new(true));
    let held = Arc::new(AtomicUsize::new(0));
    let attacks = vec![
        tokio::spawn(hold_sockets(raw.clone(), attacking.clone(), held.clone())),
        tokio::spawn(slow_headers(raw.clone(), attacking.clone(), held.clone())),
        tokio::spawn(doubling_patches(
            raw.clone(),
            cluster.server().auth().admin_token().to_owned(),
            attacking.clone(),
        )),
    ];
    let mut latencies = Vec::new();
    let mut acknowledged = Vec::new();
    let mut server_side = 0;
    let until = Instant::now() + length;
    let mut i = 0;
    while Instant::now() < until {
        let started = Instant::now();
        let created: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("honest-{i}")}}))?;
        configmaps.create(&PostParams::default(), &created).await?;
        acknowledged.push(format!("honest-{i}"));
        configmaps.get("target").await?;
        latencies.push(started.elapsed());
        let now = process::descriptors();
        server_side = server_side.max(now.saturating_sub(before + held.load(Ordering::SeqCst)));
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    attacking.store(false, Ordering::SeqCst);
    for attack in attacks {
        attack.await?;
    }
    let names: Vec<String> = configmaps
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let lost = acknowledged.iter().filter(|n| !names.contains(n)).count();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    println!(
        "{} honest writes and reads in {length:?}: p50 {:?}, p99 {:?}, slowest {:?}; {lost} acknowledged writes lost",
        latencies.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
    println!(
        "descriptors on the server's side: at most {server_side} (cap 512); resident memory grew by {} MiB",
        process::resident_bytes().saturating_sub(memory_before) >> 20
    );
    cluster.shutdown().await;
    Ok(())
}

/// Keep 600 TCP sockets open (more than the cap), opening new ones as the server closes old ones.
async fn hold_sockets(raw: Raw, attacking: Arc<AtomicBool>, held: Arc<AtomicUsize>) {
    let mut sockets = Vec::new();
    while attacking.load(Ordering::SeqCst) {
        while sockets.len() < 600 {
            match tokio::time::timeout(
                Duration::from_millis(50),
                tokio::net::TcpStream::connect(raw.address()),
            )
            .await
            {
                Ok(Ok(socket)) => sockets.push(socket),
                _ => break,
            }
            held.fetch_add(1, Ordering::SeqCst);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = sockets.len();
        // A socket the server has closed reads as end of file; one it keeps open has nothing to read.
        sockets.retain(|s| {
            let mut byte = [0u8; 1];
            matches!(s.try_read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
        });
        held.fetch_sub(before - sockets.len(), Ordering::SeqCst);
    }
    held.fetch_sub(sockets.len(), Ordering::SeqCst);
}

/// Fifty connections sending request headers a byte every 100 ms, reconnecting when closed.
async fn slow_headers(raw: Raw, attacking: Arc<AtomicBool>, held: Arc<AtomicUsize>) {
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let raw = raw.clone();
        let attacking = attacking.clone();
        let held = held.clone();
        tasks.push(tokio::spawn(async move {
            while attacking.load(Ordering::SeqCst) {
                let mut stream = raw.tls().await;
                held.fetch_add(1, Ordering::SeqCst);
                for byte in b"GET /version HTTP/1.1\r\nX-Slow: ".iter().cycle() {
                    if !attacking.load(Ordering::SeqCst)
                        || stream.write_all(&[*byte]).await.is_err()
                    {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                held.fetch_sub(1, Ordering::SeqCst);
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}

/// A JSON patch of 24 self-doubling copies every half second.
async fn doubling_patches(raw: Raw, token: String, attacking: Arc<AtomicBool>) {
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
        "PATCH /api/v1/namespaces/default/configmaps/target HTTP/1.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json-patch+json"
    );
    while attacking.load(Ordering::SeqCst) {
        raw.request(&head, &body).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
