//! `kill -9` durability of `kmm-tui serve --state-dir`: writers create ConfigMaps over HTTPS while the server is
//! killed with SIGKILL mid-way, then restarted on the same state directory. Every create the server acknowledged
//! must be there with the resourceVersion it was acknowledged with, and later writes must get higher
//! resourceVersions. The writers go on across restarts until 1,000 creates have been issued.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::mpsc;

use crate::serve_process::ServeProcess;

/// Creates issued in total, across every run of the server.
const TOTAL_CREATES: usize = 1_000;

/// Acknowledgements a run receives before its server is killed.
const KILL_AFTER_ACKS: usize = 400;

/// Writers running side by side, each creating one object after another, so that the kill finds writes in flight.
const WRITERS: usize = 4;

const NAMESPACE: &str = "default";

/// A bound on the whole test; reaching it means something hangs.
const TEST_LIMIT: Duration = Duration::from_secs(180);

/// A create the server acknowledged.
#[derive(Debug, Clone)]
struct Ack {
    name: String,
    resource_version: u64,
}

/// Start a server on `state` and connect to it over HTTPS with the kubeconfig it wrote.
async fn start_server(dir: &Path, state: &Path, run: usize) -> (ServeProcess, kube::Client) {
    let server = ServeProcess::start(dir, state, &format!("server-{run}.log"));
    let config = Kubeconfig::read_from(server.kubeconfig()).expect("the written kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .expect("the written kubeconfig is usable by kube-rs");
    let client = kube::Client::try_from(config).expect("building a client from the kubeconfig");
    (server, client)
}

fn config_map(name: &str, seq: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        data: Some([("seq".to_string(), seq.to_string())].into()),
        ..ConfigMap::default()
    }
}

fn resource_version(object: &ConfigMap) -> u64 {
    let rv = object
        .metadata
        .resource_version
        .as_deref()
        .unwrap_or_default();
    rv.parse().unwrap_or_else(|_| {
        panic!(
            "resourceVersion {rv:?} of {:?} is not a number",
            object.metadata.name
        )
    })
}

/// Claim sequence numbers until `TOTAL_CREATES` have been issued, creating one ConfigMap per number and reporting
/// each acknowledgement; stop at the first error (the server is gone).
async fn writer(api: Api<ConfigMap>, issued: Arc<AtomicUsize>, acks: mpsc::UnboundedSender<Ack>) {
    while let Ok(seq) = issued.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
        (n < TOTAL_CREATES).then_some(n + 1)
    }) {
        let name = format!("crash-{seq:04}");
        let Ok(created) = api
            .create(&PostParams::default(), &config_map(&name, seq))
            .await
        else {
            return;
        };
        if acks
            .send(Ack {
                name,
                resource_version: resource_version(&created),
            })
            .is_err()
        {
            return;
        }
    }
}

/// Run the writers until they stop, killing `server` once `KILL_AFTER_ACKS` creates are acknowledged (or when the
/// writers are done, if they finish first). Returns this run's acknowledgements.
async fn write_until_killed(
    api: &Api<ConfigMap>,
    server: ServeProcess,
    issued: &Arc<AtomicUsize>,
) -> Vec<Ack> {
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| tokio::spawn(writer(api.clone(), issued.clone(), sender.clone())))
        .collect();
    drop(sender);
    let mut server = Some(server);
    let mut acks = Vec::new();
    while let Some(ack) = receiver.recv().await {
        acks.push(ack);
        if acks.len() == KILL_AFTER_ACKS
            && let Some(server) = server.take()
        {
            server.kill_9();
        }
    }
    for writer in writers {
        writer.await.expect("a writer panicked");
    }
    if let Some(server) = server.take() {
        server.kill_9();
    }
    acks
}

/// Every acknowledged create is present, unchanged, and nothing beyond what was issued appeared.
async fn assert_acknowledged_creates_survived(api: &Api<ConfigMap>, acked: &[Ack], issued: usize) {
    let listed = api
        .list(&ListParams::default())
        .await
        .expect("listing after the restart");
    let stored: HashMap<String, u64> = listed
        .items
        .iter()
        .filter_map(|cm| {
            cm.metadata
                .name
                .clone()
                .filter(|n| n.starts_with("crash-"))
                .map(|n| (n, resource_version(cm)))
        })
        .collect();
    let lost: Vec<&Ack> = acked
        .iter()
        .filter(|ack| stored.get(&ack.name) != Some(&ack.resource_version))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged creates are missing or changed after kill -9, e.g. {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(5)]
    );
    assert!(
        stored.len() >= acked.len(),
        "{} objects stored, {} acknowledged",
        stored.len(),
        acked.len()
    );
    assert!(
        stored.len() <= issued,
        "{} objects stored, only {issued} creates issued",
        stored.len()
    );
}

async fn kill_and_restart_until_all_creates_issued() {
    let dir = tempfile::tempdir().expect("creating a temporary directory");
    let state = dir.path().join("state");
    let issued = Arc::new(AtomicUsize::new(0));
    let mut acked: Vec<Ack> = Vec::new();
    let mut kills = 0;
    for run in 0.. {
        let (server, client) = start_server(dir.path(), &state, run).await;
        let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
        let newest_before = acked.iter().map(|a| a.resource_version).max().unwrap_or(0);
        assert_acknowledged_creates_survived(&api, &acked, issued.load(Ordering::SeqCst)).await;

        if issued.load(Ordering::SeqCst) >= TOTAL_CREATES {
            let after = api
                .create(
                    &PostParams::default(),
                    &config_map("after-restart", TOTAL_CREATES),
                )
                .await
                .expect("a write after the restarts");
            assert!(
                resource_version(&after) > newest_before,
                "a write after {kills} restarts got resourceVersion {} <= {newest_before}",
                resource_version(&after)
            );
            drop(server);
            break;
        }

        let acks = write_until_killed(&api, server, &issued).await;
        kills += 1;
        let oldest_now = acks
            .iter()
            .map(|a| a.resource_version)
            .min()
            .expect("every run acknowledges some creates");
        assert!(
            oldest_now > newest_before,
            "run {run} handed out resourceVersion {oldest_now}, not above the {newest_before} of earlier runs"
        );
        acked.extend(acks);
    }
    println!(
        "{} creates issued, {} acknowledged, {kills} kill -9s",
        issued.load(Ordering::SeqCst),
        acked.len()
    );
    assert!(
        kills >= 2,
        "the server was killed mid-way at least once and again at the end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_creates_survive_kill_9() {
    tokio::time::timeout(TEST_LIMIT, kill_and_restart_until_all_creates_issued())
        .await
        .expect("the crash test finished in time");
}
