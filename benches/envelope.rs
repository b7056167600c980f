//! The `envelope` scenario at Kubernetes' published limits: `kmm-tui serve --scenario envelope` (5,000 nodes,
//! 150,000 pods of ordinary workloads churning 50 pods a second).
//!
//! Measures the time until the cluster is ready (every node registered and every background object written, the
//! kubeconfig out), then over `ENVELOPE_SECONDS` (120) of churn: the server's resident memory at the start and the
//! end of the window and its CPU share, and, from a watch of every Event over HTTPS, the pods replaced and the
//! Events recorded a second. Linux only.
//!
//! Run with `cargo bench --bench envelope`; `ENVELOPE_EVENT_TTL` (1h) sets how long Events live, which decides
//! where the server's memory levels off.

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Event;
use kmm_testing::process::{cpu_time, rss_mib};
use kmm_testing::serve::Serve;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

#[tokio::main]
async fn main() {
    kmm_tui::allocator::return_freed_memory_promptly();
    let window = Duration::from_secs(
        std::env::var("ENVELOPE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(120),
    );
    let event_ttl = std::env::var("ENVELOPE_EVENT_TTL").unwrap_or_else(|_| "1h".to_owned());
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let started = Instant::now();
    let serve = Serve::start(
        Path::new(env!("CARGO_BIN_EXE_kmm-tui")),
        ["--scenario", "envelope", "--event-ttl", &event_ttl],
        &kubeconfig,
        dir.path(),
        Duration::from_secs(600),
    );
    let ready = started.elapsed();
    let pid = serve.id();
    let rss_ready = rss_mib(pid);

    let config = Kubeconfig::read_from(&kubeconfig).expect("reading the written kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .expect("the kubeconfig is usable");
    let client = kube::Client::try_from(config).expect("a client");
    let events: Api<Event> = Api::all(client);
    let now = events
        .list_metadata(&ListParams::default().limit(1))
        .await
        .expect("Events are listed")
        .metadata
        .resource_version
        .expect("a resourceVersion");
    let cpu_before = cpu_time(pid);
    let watching = Instant::now();
    let mut recorded = 0_u64;
    let mut replaced = 0_u64;
    let mut resource_version = now;
    while watching.elapsed() < window {
        let left = window.saturating_sub(watching.elapsed()).as_secs().max(1);
        let params = WatchParams::default().timeout(u32::try_from(left).unwrap_or(u32::MAX));
        let mut stream = events
            .watch(&params, &resource_version)
            .await
            .expect("a watch")
            .boxed();
        while let Some(event) = stream.next().await {
            match event {
                Ok(WatchEvent::Added(event)) => {
                    recorded += 1;
                    replaced += u64::from(event.reason.as_deref() == Some("Killing"));
                    if let Some(version) = event.metadata.resource_version {
                        resource_version = version;
                    }
                }
                Ok(WatchEvent::Bookmark(bookmark)) => {
                    resource_version = bookmark.metadata.resource_version
                }
                Ok(_) => {}
                Err(error) => panic!("the watch of Events failed: {error}"),
            }
        }
    }
    let watched = watching.elapsed();
    let cpu = cpu_time(pid) - cpu_before;
    let rss_end = rss_mib(pid);
    drop(serve);
    let seconds = watched.as_secs_f64();
    println!("envelope scenario (5,000 nodes, 150,000 background pods, --event-ttl {event_ttl})");
    println!("  start-up until ready      {ready:>10.2?}");
    println!("  resident memory at ready  {rss_ready:>10.1} MiB");
    println!(
        "  over {seconds:.0} s of churn       {:.1} pods replaced and {:.1} Events recorded a second",
        replaced as f64 / seconds,
        recorded as f64 / seconds
    );
    println!(
        "  server CPU                {:>10.1} % of one core",
        cpu.as_secs_f64() / seconds * 100.0
    );
    println!(
        "  resident memory at end    {rss_end:>10.1} MiB ({:+.1} MiB a minute)",
        (rss_end - rss_ready) / seconds * 60.0
    );
}
