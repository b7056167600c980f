//! `kmm-tui serve`'s options, seen from outside: the real binary serving HTTPS, a kube-rs client on its kubeconfig.

mod certificates;
mod full_disk;
mod names;
mod tokens;

use std::process::Command;
use std::time::{Duration, Instant};

use crate::serve_process::ServeProcess;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

#[tokio::test]
async fn event_ttl_sets_how_long_events_live() {
    let ttl = Duration::from_secs(2);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start_with(
        dir.path(),
        &dir.path().join("state"),
        "serve.log",
        &["--event-ttl", "2s"],
    );
    let config = Kubeconfig::read_from(server.kubeconfig()).expect("the kubeconfig reads");
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .expect("the kubeconfig loads");
    let events: Api<Event> =
        Api::namespaced(kube::Client::try_from(config).expect("a client"), "default");
    let event: Event = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "short-lived"},
        "involvedObject": {"kind": "Pod", "name": "worker", "namespace": "default"},
        "reason": "Pulled", "message": "image pulled", "type": "Normal",
    }))
    .expect("an event");
    let written = Instant::now();
    events
        .create(&PostParams::default(), &event)
        .await
        .expect("created");
    let limit = ttl * 5;
    loop {
        let present = events.get_opt("short-lived").await.expect("read");
        if present.is_none() {
            break;
        }
        assert!(
            written.elapsed() < limit,
            "the event still lives after {limit:?}:\n{}",
            server.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lived = written.elapsed();
    assert!(lived >= ttl, "the event went after {lived:?}");
}

#[test]
fn an_event_ttl_that_is_not_a_duration_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
        .args(["serve", "--event-ttl", "soon"])
        .output()
        .expect("running kmm-tui serve");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`soon` is not a positive duration"),
        "{stderr}"
    );
}
