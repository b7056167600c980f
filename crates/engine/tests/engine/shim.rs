//! The Shim engine on the embedded cluster: rolling batches bounded by `maxUpdate` through engine kills, manual
//! approval, re-rolls on spec changes, a containerd restart that fails and is rolled back, uninstall on deletion
//! and on leaving the selector, and runtime-class-manager's own samples.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::node::v1::RuntimeClass;
use kmm_api::shim::Shim;
use kmm_api::shim::names::{INSTALLER_NAMESPACE, node_hash_annotation};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use crate::common::{Harness, eventually, wait_for};

const SCENARIO: &str = "shims.yaml";

/// A Shim on the nodes labelled `pool=<pool>`, from the scenario's archive `<name>-v1`.
fn shim(name: &str, pool: &str, rollout: serde_json::Value) -> Shim {
    serde_json::from_value(json!({
        "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"pool": pool},
            "fetchStrategy": {"anonHttp": {"location": format!("https://shims.example.com/{name}-v1.tar.gz")}},
            "runtimeClass": {"name": format!("wasm-{name}"), "handler": name},
            "rolloutStrategy": rollout,
        },
    }))
    .expect("a Shim")
}

async fn create(client: &kube::Client, shim: &Shim) {
    Api::<Shim>::all(client.clone())
        .create(&PostParams::default(), shim)
        .await
        .expect("the Shim is created");
}

async fn get(client: &kube::Client, name: &str) -> Shim {
    Api::<Shim>::all(client.clone())
        .get(name)
        .await
        .expect("the Shim")
}

async fn patch_spec(client: &kube::Client, name: &str, spec: serde_json::Value) {
    Api::<Shim>::all(client.clone())
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": spec})),
        )
        .await
        .expect("the Shim is patched");
}

fn condition(shim: &Shim, type_: &str) -> Option<(String, String, String)> {
    shim.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Wait until the Shim's `Ready` condition has `reason`, and return the Shim.
async fn wait_ready_reason(client: &kube::Client, name: &str, reason: &str, secs: u64) -> Shim {
    let what = format!("Shim {name} Ready reason {reason}");
    wait_for(secs, &what, || async {
        let shim = get(client, name).await;
        let fresh =
            shim.status.as_ref().and_then(|s| s.observed_generation) == shim.metadata.generation;
        (fresh && condition(&shim, "Ready").is_some_and(|c| c.1 == reason)).then_some(shim)
    })
    .await
}

async fn nodes_with(client: &kube::Client, selector: &str) -> Vec<Node> {
    Api::<Node>::all(client.clone())
        .list(&ListParams::default().labels(selector))
        .await
        .expect("nodes")
        .items
}

async fn machine(client: &kube::Client, node: &str) -> BTreeMap<String, String> {
    Api::<ConfigMap>::namespaced(client.clone(), "kmm-tui-sim")
        .get(&format!("machine-{node}"))
        .await
        .expect("the machine ConfigMap")
        .data
        .unwrap_or_default()
}

/// Reasons of the events published on the Shim.
async fn event_reasons(client: &kube::Client, shim: &str) -> BTreeSet<String> {
    Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(shim))
        .filter_map(|e| e.reason)
        .collect()
}

/// Notes of the events with `reason` published on the Shim.
async fn event_notes(client: &kube::Client, shim: &str, reason: &str) -> Vec<String> {
    Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(shim))
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.note)
        .collect()
}

async fn installer_pods(client: &kube::Client, shim: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), INSTALLER_NAMESPACE)
        .list(&ListParams::default().labels(&format!("spinkube.dev/shimName={shim}")))
        .await
        .expect("installer pods")
        .items
}

/// Installer pods per Shim sampled from a watch: the most unfinished at once, and every pod created.
struct InstallerSampler {
    seen: Arc<Mutex<Sampled>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default, Clone, Debug)]
struct Sampled {
    unfinished: BTreeMap<String, BTreeSet<String>>,
    most_unfinished: BTreeMap<String, usize>,
    created: BTreeMap<String, BTreeSet<String>>,
}

impl InstallerSampler {
    fn start(client: kube::Client) -> Self {
        let seen = Arc::new(Mutex::new(Sampled::default()));
        let record = seen.clone();
        let pods = Api::<Pod>::namespaced(client, INSTALLER_NAMESPACE);
        let stream = watcher(
            pods,
            watcher::Config::default().labels("spinkube.dev/shimName"),
        )
        .default_backoff();
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let Ok(event) = event else { continue };
                let mut record = record.lock().expect("sample");
                let (pod, gone) = match event {
                    watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => (pod, false),
                    watcher::Event::Delete(pod) => (pod, true),
                    watcher::Event::Init | watcher::Event::InitDone => continue,
                };
                let shim = pod
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("spinkube.dev/shimName"))
                    .cloned()
                    .unwrap_or_default();
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                let phase = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.phase.clone())
                    .unwrap_or_default();
                let finished = gone || phase == "Succeeded" || phase == "Failed";
                record
                    .created
                    .entry(shim.clone())
                    .or_default()
                    .insert(uid.clone());
                let unfinished = record.unfinished.entry(shim.clone()).or_default();
                if finished {
                    unfinished.remove(&uid);
                } else {
                    unfinished.insert(uid);
                }
                let count = unfinished.len();
                let most = record.most_unfinished.entry(shim).or_default();
                *most = (*most).max(count);
            }
        });
        Self { seen, task }
    }

    fn sampled(&self) -> Sampled {
        self.seen.lock().expect("sample").clone()
    }
}

impl Drop for InstallerSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// Real time on two threads, unlike its neighbours on paused time: the kills land while passes race each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_never_exceeds_max_update_even_when_the_engine_is_killed() {
    let mut harness = Harness::start(SCENARIO).await;
    let client = harness.client();
    let sampler = InstallerSampler::start(client.clone());
    create(
        &client,
        &shim(
            "spin-a",
            "a",
            json!({"type": "rolling", "rolling": {"maxUpdate": 2}}),
        ),
    )
    .await;
    create(
        &client,
        &shim(
            "spin-b",
            "b",
            json!({"type": "rolling", "rolling": {"maxUpdate": "25%"}}),
        ),
    )
    .await;
    // Kill the engine mid-rollout several times, at different points of its passes.
    for run_for in [700u64, 450, 900, 300, 600] {
        harness.start_engine();
        tokio::time::sleep(Duration::from_millis(run_for)).await;
        harness.kill_engine().await;
    }
    harness.start_engine();
    let a = wait_ready_reason(&client, "spin-a", "Complete", 60).await;
    let b = wait_ready_reason(&client, "spin-b", "Complete", 60).await;
    let sampled = sampler.sampled();
    assert_eq!(
        sampled.most_unfinished.get("spin-a"),
        Some(&2),
        "{sampled:?}"
    );
    assert_eq!(
        sampled.most_unfinished.get("spin-b"),
        Some(&2),
        "{sampled:?}"
    );
    // Every node was installed once: no restart repeated work already done.
    assert_eq!(sampled.created.get("spin-a").map(BTreeSet::len), Some(6));
    assert_eq!(sampled.created.get("spin-b").map(BTreeSet::len), Some(8));
    let status = a.status.clone().expect("a status");
    assert_eq!((status.nodes, status.nodes_ready), (6, 6));
    let rollout = status.rollout.expect("a rollout");
    assert_eq!(
        (rollout.batch, rollout.batches, rollout.batch_size),
        (3, 3, Some(2))
    );
    let b_rollout = b.status.and_then(|s| s.rollout).expect("a rollout");
    assert_eq!((b_rollout.batches, b_rollout.batch_size), (4, Some(2)));
    for node in nodes_with(&client, "pool=a").await {
        let name = node.metadata.name.clone().unwrap_or_default();
        assert_eq!(
            node.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("spin-a"))
                .map(String::as_str),
            Some("provisioned")
        );
        assert!(
            machine(&client, &name).await["shims"].contains("containerd-shim-spin-a"),
            "{name}"
        );
    }
    let class = Api::<RuntimeClass>::all(client.clone())
        .get("wasm-spin-a")
        .await
        .expect("the RuntimeClass");
    assert_eq!(class.handler, "spin-a");
    assert_eq!(
        class.scheduling.and_then(|s| s.node_selector),
        Some(BTreeMap::from([(
            "spin-a".to_owned(),
            "provisioned".to_owned()
        )]))
    );
    eventually(10, "finished installer pods are cleaned up", || async {
        installer_pods(&client, "spin-a").await.is_empty()
    })
    .await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn manual_approval_holds_each_batch_and_a_spec_change_rolls_every_node_again() {
    let mut harness = Harness::start(SCENARIO).await;
    let client = harness.client();
    harness.start_engine();
    create(
        &client,
        &shim("spin-a", "a", json!({"type": "rolling", "rolling": {"maxUpdate": 2, "approval": "Manual", "approvedBatch": 1}})),
    )
    .await;
    let held = wait_ready_reason(&client, "spin-a", "AwaitingApproval", 30).await;
    let status = held.status.clone().expect("a status");
    assert_eq!(status.nodes_ready, 2);
    let rollout = status.rollout.expect("a rollout");
    assert_eq!(
        (rollout.batch, rollout.batches, rollout.awaiting_approval),
        (2, 3, true)
    );
    let (_, _, message) = condition(&held, "Ready").expect("Ready");
    assert!(
        message.starts_with("batch 2 of 3 waits for approval"),
        "{message}"
    );
    // Batch 2 stays held.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        get(&client, "spin-a").await.status.map(|s| s.nodes_ready),
        Some(2)
    );
    let installed: Vec<String> = installer_pods(&client, "spin-a")
        .await
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert!(
        installed
            .iter()
            .all(|p| p.starts_with("roll-a-0") || p.starts_with("roll-a-1")),
        "{installed:?}"
    );

    patch_spec(
        &client,
        "spin-a",
        json!({"rolloutStrategy": {"rolling": {"approvedBatch": 2}}}),
    )
    .await;
    let held = wait_ready_reason(&client, "spin-a", "AwaitingApproval", 30).await;
    assert_eq!(held.status.as_ref().map(|s| s.nodes_ready), Some(4));
    patch_spec(
        &client,
        "spin-a",
        json!({"rolloutStrategy": {"rolling": {"approvedBatch": 3}}}),
    )
    .await;
    let done = wait_ready_reason(&client, "spin-a", "Complete", 30).await;
    eventually(10, "batch events on the Shim", || async {
        let reasons = event_reasons(&client, "spin-a").await;
        [
            "BatchApproved",
            "BatchStarted",
            "BatchFinished",
            "RuntimeClassCreated",
        ]
        .iter()
        .all(|r| reasons.contains(*r))
    })
    .await;
    let first_hash = done
        .status
        .and_then(|s| s.rollout)
        .and_then(|r| r.spec_hash)
        .expect("a hash");

    // A new archive and runtime options: every node is installed again, numbered from batch 1 (approved
    // automatically this time).
    let restarts_before = machine(&client, "roll-a-3").await["containerd"].clone();
    patch_spec(
        &client,
        "spin-a",
        json!({
            "fetchStrategy": {"anonHttp": {"location": "https://shims.example.com/spin-a-v2.tar.gz"}},
            "containerdRuntimeOptions": {"SystemdCgroup": "true"},
            "rolloutStrategy": {"rolling": {"approval": "Automatic", "approvedBatch": 0}},
        }),
    )
    .await;
    let rerolled = wait_ready_reason(&client, "spin-a", "Complete", 60).await;
    let hash = rerolled
        .status
        .and_then(|s| s.rollout)
        .and_then(|r| r.spec_hash)
        .expect("a hash");
    assert_ne!(hash, first_hash);
    for node in nodes_with(&client, "pool=a").await {
        let name = node.metadata.name.clone().unwrap_or_default();
        assert_eq!(
            node.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(&node_hash_annotation("spin-a"))),
            Some(&hash),
            "{name}"
        );
        assert!(
            machine(&client, &name).await["config.toml"].contains("SystemdCgroup = true"),
            "{name}"
        );
    }
    assert_ne!(
        machine(&client, "roll-a-3").await["containerd"],
        restarts_before
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_paused_rollout_keeps_showing_the_batch_that_waits_for_approval() {
    let mut harness = Harness::start(SCENARIO).await;
    let client = harness.client();
    harness.start_engine();
    create(
        &client,
        &shim("spin-a", "a", json!({"type": "rolling", "rolling": {"maxUpdate": 2, "approval": "Manual", "approvedBatch": 2}})),
    )
    .await;
    wait_for(30, "batches 1 and 2 provisioned, batch 3 held", || async {
        let shim = get(&client, "spin-a").await;
        let status = shim.status?;
        let awaiting = status.rollout.as_ref().is_some_and(|r| r.awaiting_approval);
        (status.nodes_ready == 4 && awaiting).then_some(())
    })
    .await;
    patch_spec(
        &client,
        "spin-a",
        json!({"rolloutStrategy": {"rolling": {"paused": true}}}),
    )
    .await;
    let paused = wait_for(30, "the pause reported", || async {
        let shim = get(&client, "spin-a").await;
        let fresh =
            shim.status.as_ref().and_then(|s| s.observed_generation) == shim.metadata.generation;
        (fresh && condition(&shim, "Progressing").is_some_and(|c| c.1 == "Paused")).then_some(shim)
    })
    .await;
    let rollout = paused
        .status
        .clone()
        .and_then(|s| s.rollout)
        .expect("a rollout");
    assert_eq!(
        (rollout.batch, rollout.batches, rollout.awaiting_approval),
        (3, 3, true)
    );
    assert_eq!(paused.awaiting_batch(), Some(3));
    let (_, _, message) = condition(&paused, "Progressing").expect("Progressing");
    assert!(
        message.contains("batch 3 of 3 waits for approval"),
        "{message}"
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_containerd_restart_is_rolled_back_stops_the_rollout_and_is_retried() {
    let mut harness = Harness::start(SCENARIO).await;
    let client = harness.client();
    let config_before = machine(&client, "fragile-0").await["config.toml"].clone();
    harness.start_engine();
    create(
        &client,
        &shim(
            "spin-c",
            "c",
            json!({"type": "rolling", "rolling": {"maxUpdate": 1}}),
        ),
    )
    .await;
    let failed = wait_ready_reason(&client, "spin-c", "InstallFailed", 30).await;
    let (degraded, reason, message) = condition(&failed, "Degraded").expect("Degraded");
    assert_eq!(
        (degraded.as_str(), reason.as_str()),
        ("True", "InstallFailed")
    );
    assert!(
        message.starts_with("fragile-0: provisioner: failed to restart containerd"),
        "{message}"
    );
    assert!(
        message.contains("rolled back") && message.contains("the rollout stopped"),
        "{message}"
    );
    let node = Api::<Node>::all(client.clone())
        .get("fragile-0")
        .await
        .expect("the node");
    assert_eq!(
        node.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("spin-c"))
            .map(String::as_str),
        Some("failed")
    );
    let machine_after = machine(&client, "fragile-0").await;
    assert_eq!(machine_after["config.toml"], config_before);
    assert!(
        machine_after["containerd"].contains("failed"),
        "{}",
        machine_after["containerd"]
    );
    let status = failed.status.clone().expect("a status");
    assert_eq!(
        status.node_statuses.first().map(|n| n.node.as_str()),
        Some("fragile-0")
    );
    eventually(10, "a rollback event on the Shim", || async {
        event_reasons(&client, "spin-c")
            .await
            .contains("RolledBack")
    })
    .await;
    // The rollout stays stopped: nothing starts on the other nodes.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let pods = installer_pods(&client, "spin-c").await;
    assert_eq!(
        pods.len(),
        1,
        "{:?}",
        pods.iter().map(|p| &p.metadata.name).collect::<Vec<_>>()
    );
    assert_eq!(
        get(&client, "spin-c").await.status.map(|s| s.nodes_ready),
        Some(0)
    );

    // Retry: delete the failed installer pod. The fault fails one restart only, so the rollout completes.
    Api::<Pod>::namespaced(client.clone(), INSTALLER_NAMESPACE)
        .delete("fragile-0-spin-c-install", &DeleteParams::default())
        .await
        .expect("the failed pod is deleted");
    let done = wait_ready_reason(&client, "spin-c", "Complete", 30).await;
    assert_eq!(
        condition(&done, "Degraded").map(|c| c.0),
        Some("False".to_owned())
    );
    assert!(machine(&client, "fragile-0").await["config.toml"].contains("spin-c"));
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn deleting_uninstalls_everywhere_and_selector_changes_install_and_uninstall() {
    let mut harness = Harness::start(SCENARIO).await;
    let client = harness.client();
    harness.start_engine();
    create(&client, &shim("spin-b", "b", json!({"type": "recreate"}))).await;
    wait_ready_reason(&client, "spin-b", "Complete", 30).await;
    let nodes = Api::<Node>::all(client.clone());
    // A node joining the selector is installed; one leaving it is uninstalled.
    let label = |pool: &str| Patch::Merge(json!({"metadata": {"labels": {"pool": pool}}}));
    nodes
        .patch("roll-a-5", &PatchParams::default(), &label("b"))
        .await
        .expect("relabel");
    nodes
        .patch("roll-b-0", &PatchParams::default(), &label("gone"))
        .await
        .expect("relabel");
    eventually(
        30,
        "roll-a-5 installed and roll-b-0 uninstalled",
        || async {
            let joined =
                machine(&client, "roll-a-5").await["shims"].contains("containerd-shim-spin-b");
            let left =
                machine(&client, "roll-b-0").await["shims"].contains("containerd-shim-spin-b");
            let left_node = nodes.get("roll-b-0").await.expect("node");
            let unlabelled = left_node
                .metadata
                .labels
                .as_ref()
                .is_none_or(|l| !l.contains_key("spin-b"));
            joined && !left && unlabelled
        },
    )
    .await;
    wait_ready_reason(&client, "spin-b", "Complete", 30).await;
    // The install on the node that joined is its own record, naming that node only.
    eventually(10, "an Installing event naming roll-a-5 alone", || async {
        event_notes(&client, "spin-b", "Installing")
            .await
            .iter()
            .any(|note| note == "installing on 1 node: roll-a-5")
    })
    .await;

    Api::<Shim>::all(client.clone())
        .delete("spin-b", &DeleteParams::default())
        .await
        .expect("delete");
    eventually(30, "the Shim is gone", || async {
        Api::<Shim>::all(client.clone())
            .get_opt("spin-b")
            .await
            .expect("get")
            .is_none()
    })
    .await;
    assert!(
        Api::<RuntimeClass>::all(client.clone())
            .get_opt("wasm-spin-b")
            .await
            .expect("get")
            .is_none()
    );
    for node in nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .items
    {
        let name = node.metadata.name.clone().unwrap_or_default();
        assert!(
            node.metadata
                .labels
                .as_ref()
                .is_none_or(|l| !l.contains_key("spin-b")),
            "{name}"
        );
        assert!(
            node.metadata
                .annotations
                .as_ref()
                .is_none_or(|a| !a.contains_key(&node_hash_annotation("spin-b"))),
            "{name}"
        );
        let machine = machine(&client, &name).await;
        assert!(!machine["shims"].contains("spin-b"), "{name}");
        assert!(!machine["config.toml"].contains("spin-b"), "{name}");
    }
    assert!(installer_pods(&client, "spin-b").await.is_empty());
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn runtime_class_managers_samples_roll_out_unchanged() {
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/shim/config/samples");
    if !samples.exists() {
        eprintln!("skipped: {} is absent", samples.display());
        return;
    }
    let mut harness = Harness::start(SCENARIO).await;
    let client = harness.client();
    harness.start_engine();
    let load = |file: &str| -> Shim {
        let text = std::fs::read_to_string(samples.join(file)).expect("the sample reads");
        serde_saphyr::from_str(&text).expect("the sample is a Shim")
    };
    create(&client, &load("sample_shim_spin.yaml")).await;
    create(&client, &load("sample_shim_wasmtime.yaml")).await;
    for name in ["spin-v2", "wasmtime-v1"] {
        let shim = wait_ready_reason(&client, name, "Complete", 60).await;
        assert_eq!(
            shim.status.map(|s| (s.nodes, s.nodes_ready)),
            Some((3, 3)),
            "{name}"
        );
    }
    // The arm64 node got the aarch64 archive: its download checked that archive's sha256.
    assert!(machine(&client, "wasm-arm-0").await["config.toml"].contains("SystemdCgroup = true"));
    // The test sample replaces spin-v2's spec (platforms win over anonHttp): a re-roll that keeps every node.
    let mut replacement = load("test_shim_spin.yaml");
    let current = get(&client, "spin-v2").await;
    replacement.metadata.resource_version = current.metadata.resource_version.clone();
    replacement.metadata.finalizers = current.metadata.finalizers.clone();
    Api::<Shim>::all(client.clone())
        .replace("spin-v2", &PostParams::default(), &replacement)
        .await
        .expect("the test sample replaces the Shim");
    let shim = wait_ready_reason(&client, "spin-v2", "Complete", 60).await;
    assert_eq!(shim.status.map(|s| s.nodes_ready), Some(3));
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_demo_shows_a_held_batch_a_rolled_back_node_and_a_broken_download() {
    let mut harness = Harness::start("demo").await;
    let client = harness.client();
    harness.start_engine();
    let spin = wait_ready_reason(&client, "spin-v2", "AwaitingApproval", 60).await;
    let (_, _, message) = condition(&spin, "Ready").expect("Ready");
    assert!(
        message.starts_with("batch 3 of 3 waits for approval"),
        "{message}"
    );
    let (degraded, reason, message) = condition(&spin, "Degraded").expect("Degraded");
    assert_eq!(
        (degraded.as_str(), reason.as_str()),
        ("True", "InstallFailed")
    );
    assert!(
        message.starts_with("worker-b-2: ") && message.contains("rolled back"),
        "{message}"
    );
    let broken = wait_ready_reason(&client, "broken-spin", "InstallFailed", 60).await;
    let (_, _, message) = condition(&broken, "Degraded").expect("Degraded");
    assert!(message.contains("404"), "{message}");
    harness.shutdown().await;
}
