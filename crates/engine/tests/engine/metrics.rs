//! The engine's metrics endpoint during a Shim rollout: scraped over HTTP from the real listener while the engine
//! acts, its counters move, its names and labels are controller-runtime's, its probes answer, and the activity the
//! engine publishes on its Lease says what it did.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::coordination::v1::Lease;
use kmm_api::shim::Shim;
use kmm_engine::runtime::endpoint::{self, Reported};
use kmm_engine::runtime::health::{self, Health};
use kmm_engine::runtime::leader::Candidacy;
use kmm_engine::runtime::metrics::activity::Activity;
use kmm_engine::{EngineConfig, LeaseConfig, PodImages, Settings};
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Harness, eventually};

/// `GET path` on `address` with hyper's HTTP/1.1 client: the status code and the body.
async fn get(address: std::net::SocketAddr, path: &str) -> (u16, String) {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connecting to the endpoint");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("an HTTP/1.1 handshake");
    tokio::spawn(connection);
    let request = http::Request::get(path)
        .header("host", address.to_string())
        .body(Empty::<Bytes>::new())
        .expect("a request");
    let response = sender.send_request(request).await.expect("a response");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the body")
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The value of the sample `series` (name and labels exactly as exposed), if present.
fn sample(scrape: &str, series: &str) -> Option<f64> {
    scrape.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// The sum of every sample of metric `name` whose labels contain `label`.
fn total(scrape: &str, name: &str, label: &str) -> f64 {
    scrape
        .lines()
        .filter(|line| line.starts_with(&format!("{name}{{")) && line.contains(label))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A Shim rolled out two nodes at a time over the scenario's pool `a`.
fn shim() -> Shim {
    serde_json::from_value(json!({
        "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
        "metadata": {"name": "spin-a"},
        "spec": {
            "nodeSelector": {"pool": "a"},
            "fetchStrategy": {"anonHttp": {"location": "https://shims.example.com/spin-a-v1.tar.gz"}},
            "runtimeClass": {"name": "wasm-spin-a", "handler": "spin-a"},
            "rolloutStrategy": {"type": "rolling", "rolling": {"maxUpdate": 2}},
        },
    }))
    .expect("a Shim")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_during_a_rollout_shows_controller_runtime_metrics_moving() {
    let harness = Harness::start("shims.yaml").await;
    let client = harness.client();
    let stop = CancellationToken::new();
    let candidacy = Candidacy::default();
    let reported = Reported {
        health: Arc::new(Health::default()),
        metrics: candidacy.metrics.clone(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binding a loopback port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(endpoint::serve(listener, reported.clone(), stop.clone()));
    tokio::spawn(health::check_api(
        client.clone(),
        reported.health.clone(),
        stop.clone(),
    ));
    let (status, _) = get(address, "/healthz").await;
    assert_eq!(status, 503, "no engine runs yet");

    let config = EngineConfig {
        images: PodImages::default(),
        lease: LeaseConfig::new(
            "kube-system",
            "kmm-tui-engine",
            "metrics-test",
            Duration::from_secs(5),
        ),
        settings: Settings::default(),
    };
    let engine = {
        let (client, health, stop) = (client.clone(), reported.health.clone(), stop.clone());
        tokio::spawn(async move {
            health::track(
                &health,
                kmm_engine::run_steered(client, config, candidacy, stop),
            )
            .await
        })
    };
    eventually(20, "the engine leads and reports it", || async {
        let (_, scrape) = get(address, "/metrics").await;
        sample(
            &scrape,
            r#"leader_election_master_status{name="kmm-tui-engine"}"#,
        ) == Some(1.0)
    })
    .await;
    let (_, before) = get(address, "/metrics").await;

    Api::<Shim>::all(client.clone())
        .create(&PostParams::default(), &shim())
        .await
        .expect("the Shim is created");
    // Scrape while the rollout runs, until the Shim's passes show in the counters.
    eventually(30, "the shim reconciler's passes are counted", || async {
        let (_, scrape) = get(address, "/metrics").await;
        total(
            &scrape,
            "controller_runtime_reconcile_total",
            r#"controller="shim""#,
        ) > total(
            &before,
            "controller_runtime_reconcile_total",
            r#"controller="shim""#,
        )
    })
    .await;
    eventually(60, "the rollout completes", || async {
        let shim = Api::<Shim>::all(client.clone())
            .get("spin-a")
            .await
            .expect("the Shim");
        shim.status
            .is_some_and(|s| s.nodes > 0 && s.nodes == s.nodes_ready)
    })
    .await;
    let (status, after) = get(address, "/metrics").await;
    assert_eq!(status, 200);

    // controller-runtime's names, labels and buckets.
    for family in [
        "controller_runtime_reconcile",
        "controller_runtime_reconcile_errors",
        "controller_runtime_reconcile_time_seconds",
        "controller_runtime_active_workers",
        "controller_runtime_max_concurrent_reconciles",
        "workqueue_depth",
        "workqueue_adds",
        "workqueue_retries",
        "workqueue_longest_running_processor_seconds",
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
        "leader_election_master_status",
        "kmm_tui_engine_objects_waiting",
        "kmm_tui_engine_watch_restarts",
        "kmm_tui_engine_fenced_writes_refused",
        "kmm_tui_engine_rollout_batches_started",
        "kmm_tui_engine_pulls_failed",
        "kmm_tui_engine_oldest_waiting_seconds",
        "workqueue_unfinished_work_seconds",
    ] {
        assert!(
            after.contains(&format!("# TYPE {family} ")),
            "{family} is exposed:\n{after}"
        );
    }
    for result in ["success", "error", "requeue", "requeue_after"] {
        assert!(
            sample(
                &after,
                &format!(
                    r#"controller_runtime_reconcile_total{{controller="shim",result="{result}"}}"#
                )
            )
            .is_some(),
            "result {result} is counted"
        );
    }
    assert_eq!(
        sample(
            &after,
            r#"controller_runtime_max_concurrent_reconciles{controller="nodemodulesconfig"}"#
        ),
        Some(64.0)
    );
    assert!(
        after.contains(
            r#"controller_runtime_reconcile_time_seconds_bucket{le="0.005",controller="shim"}"#
        ) || after.contains(
            r#"controller_runtime_reconcile_time_seconds_bucket{controller="shim",le="0.005"}"#
        ),
        "controller-runtime's first bucket:\n{after}"
    );

    // The counters moved during the rollout.
    let moved = |name: &str, label: &str| total(&after, name, label) > total(&before, name, label);
    assert!(moved(
        "controller_runtime_reconcile_total",
        r#"controller="shim""#
    ));
    assert!(moved(
        "controller_runtime_reconcile_time_seconds_count",
        r#"controller="shim""#
    ));
    assert!(moved("workqueue_adds_total", r#"name="shim""#));
    assert!(moved(
        "workqueue_work_duration_seconds_count",
        r#"name="shim""#
    ));
    assert!(moved(
        "kmm_tui_engine_rollout_batches_started_total",
        r#"family="shims""#
    ));
    let passes = total(
        &after,
        "controller_runtime_reconcile_total",
        r#"controller="shim""#,
    );
    let adds = total(&after, "workqueue_adds_total", r#"name="shim""#);
    assert!(
        adds >= passes,
        "every pass was added first: {adds} adds, {passes} passes"
    );

    // The acting engine is ready once its caches listed; it publishes what it did on its Lease.
    let (status, body) = get(address, "/readyz").await;
    assert_eq!((status, body.as_str()), (200, "ok: acting\n"));
    let (status, _) = get(address, "/nowhere").await;
    assert_eq!(status, 404);
    eventually(20, "the Lease carries the engine's activity", || async {
        let lease = Api::<Lease>::namespaced(client.clone(), "kube-system")
            .get("kmm-tui-engine")
            .await
            .expect("the Lease");
        Activity::of(&lease)
            .and_then(|activity| activity.families.get("shims").cloned())
            .is_some_and(|shims| shims.reconciles > 0 && shims.last_minute > 0)
    })
    .await;

    stop.cancel();
    engine
        .await
        .expect("the engine task")
        .expect("the engine stops cleanly");
    assert!(
        !reported.metrics.leading(),
        "a stopped engine reports it no longer leads"
    );
    harness.shutdown().await;
}
