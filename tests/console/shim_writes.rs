//! The console's Shim rollout writes against the embedded cluster, through a real `kube::Client`: approving raises
//! `approvedBatch` (never lowers it) and survives concurrent writers, pause and resume flip `rolling.paused`, and a
//! retry removes the failed installer pods the engine reads as a failure.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Pod;
use kmm_api::shim::Shim;
use kmm_api::shim::names::SHIM_NAME as INSTALLER_SHIM_LABEL;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_tui::tui::access::{self, Capability};
use kmm_tui::tui::data::Kind;
use kmm_tui::tui::target::Target;
use kmm_tui::tui::writes::{self, WriteError, WriteRequest};
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const SCENARIO: &str = r#"
seed: 5
timeScale: 10
nodes:
  - namePrefix: worker-
    count: 2
    labels: {wasm: "true"}
    kernelVersion: 6.1.0-18-amd64
    osImage: Debian GNU/Linux 12 (bookworm)
    diskGiB: 40
"#;

async fn start_cluster() -> EmbeddedCluster {
    let scenario = Scenario::parse(SCENARIO, "tui_shim_writes", None).expect("the scenario parses");
    EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts")
}

/// Create the Shim `name` rolled out with `rollout`.
async fn create_shim(client: &Client, name: &str, rollout: serde_json::Value) {
    let shim: Shim = serde_json::from_value(json!({
        "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"wasm": "true"},
            "fetchStrategy": {"anonHttp": {"location": "https://example.com/spin.tar.gz"}},
            "runtimeClass": {"name": format!("wasmtime-{name}"), "handler": name},
            "rolloutStrategy": rollout,
        },
    }))
    .expect("a Shim");
    Api::<Shim>::all(client.clone())
        .create(&PostParams::default(), &shim)
        .await
        .expect("the Shim is created");
}

async fn rolling(client: &Client, name: &str) -> serde_json::Value {
    let shim = Api::<Shim>::all(client.clone())
        .get(name)
        .await
        .expect("the Shim");
    serde_json::to_value(shim.spec.rollout_strategy.rolling).expect("json")
}

async fn perform(client: &Client, request: WriteRequest) -> Result<String, WriteError> {
    writes::perform(client, request).await.result
}

fn approve(name: &str, batch: i32) -> WriteRequest {
    WriteRequest::ApproveBatch {
        shim: Target::cluster(Kind::Shim, name),
        batch,
    }
}

#[tokio::test]
async fn approve_raises_approved_batch_and_never_lowers_it() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_shim(
        &client,
        "spin-v2",
        json!({"type": "rolling", "rolling": {"maxUpdate": 1, "approval": "Manual", "approvedBatch": 1}}),
    )
    .await;

    let message = perform(&client, approve("spin-v2", 2))
        .await
        .expect("approved");
    assert_eq!(
        message,
        "Approved batch 2 of Shim spin-v2 (approvedBatch 1→2)"
    );
    assert_eq!(rolling(&client, "spin-v2").await["approvedBatch"], 2);

    // Batch 3 approved as well: approving 2 again writes nothing.
    let message = perform(&client, approve("spin-v2", 3))
        .await
        .expect("approved");
    assert!(message.contains("approvedBatch 2→3"), "{message}");
    let message = perform(&client, approve("spin-v2", 2))
        .await
        .expect("nothing to do");
    assert!(message.contains("approved already"), "{message}");
    assert_eq!(rolling(&client, "spin-v2").await["approvedBatch"], 3);

    // A Shim that does not roll in batches has nothing to approve.
    create_shim(&client, "lunatic", json!({"type": "recreate"})).await;
    let error = perform(&client, approve("lunatic", 1))
        .await
        .expect_err("recreate has no batches");
    assert!(
        error.message.contains("not rolled out in batches"),
        "{}",
        error.message
    );

    // A Shim that is gone says so.
    let error = perform(&client, approve("nowhere", 1))
        .await
        .expect_err("no such Shim");
    assert_eq!(error.code, Some(404));
    cluster.shutdown().await;
}

/// A client that has another writer change the Shim just before each of the console's first `meddle` Shim
/// patches, so each of them carries a stale resourceVersion.
fn meddler(inner: Client, meddle: usize) -> (Client, Arc<AtomicUsize>) {
    let patches = Arc::new(AtomicUsize::new(0));
    let seen = patches.clone();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let seen = seen.clone();
        async move {
            if request.method() == http::Method::PATCH && request.uri().path().contains("/shims/") {
                let attempt = seen.fetch_add(1, Ordering::SeqCst);
                if attempt < meddle {
                    let label = json!({"metadata": {"labels": {"meddled": attempt.to_string()}}});
                    Api::<Shim>::all(inner.clone())
                        .patch("spin-v2", &PatchParams::default(), &Patch::Merge(&label))
                        .await?;
                }
            }
            inner.send(request).await
        }
    });
    (Client::new(service, "default"), patches)
}

#[tokio::test]
async fn a_conflicting_approval_is_read_again_and_retried() {
    let cluster = start_cluster().await;
    create_shim(
        &cluster.client(),
        "spin-v2",
        json!({"type": "rolling", "rolling": {"maxUpdate": 1, "approval": "Manual"}}),
    )
    .await;
    let (client, patches) = meddler(cluster.client(), 2);
    let message = perform(&client, approve("spin-v2", 1))
        .await
        .expect("approved after two conflicts");
    assert!(message.contains("0→1"), "{message}");
    assert_eq!(patches.load(Ordering::SeqCst), 3);
    assert_eq!(
        rolling(&cluster.client(), "spin-v2").await["approvedBatch"],
        1
    );

    let (hopeless, _) = meddler(cluster.client(), usize::MAX);
    let error = perform(&hopeless, approve("spin-v2", 2))
        .await
        .expect_err("always stale");
    assert_eq!(error.code, Some(409));
    assert!(error.message.contains("kept changing"), "{}", error.message);
    assert_eq!(
        rolling(&cluster.client(), "spin-v2").await["approvedBatch"],
        1
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn pause_and_resume_flip_rolling_paused() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_shim(
        &client,
        "slight",
        json!({"type": "rolling", "rolling": {"maxUpdate": "50%"}}),
    )
    .await;
    let shim = Target::cluster(Kind::Shim, "slight");
    let pause = |paused| WriteRequest::SetPaused {
        shim: shim.clone(),
        paused,
    };
    let message = perform(&client, pause(true)).await.expect("paused");
    assert_eq!(message, "Paused the rollout of Shim slight");
    assert_eq!(rolling(&client, "slight").await["paused"], true);
    let message = perform(&client, pause(true)).await.expect("no change");
    assert!(message.contains("paused already"), "{message}");
    perform(&client, pause(false)).await.expect("resumed");
    assert!(rolling(&client, "slight").await.get("paused").is_none());
    assert_eq!(rolling(&client, "slight").await["maxUpdate"], "50%");
    cluster.shutdown().await;
}

/// An installer pod of `shim` on `node`, finished in `phase`.
async fn installer_pod(client: &Client, shim: &str, node: &str, phase: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let name = format!("{node}-{shim}-install");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {INSTALLER_SHIM_LABEL: shim}},
        "spec": {"nodeName": node, "restartPolicy": "Never",
            "containers": [{"name": "provisioner", "image": "ghcr.io/spinframework/node-installer:latest",
                "args": ["install", "-H", "/mnt/node-root", "-r", shim]}]},
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("the pod is created");
    pods.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": phase}})),
    )
    .await
    .expect("the phase is set");
}

async fn installer_pods(client: &Client, shim: &str) -> Vec<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let mut names: Vec<String> = pods
        .list(&ListParams::default().labels(&format!("{INSTALLER_SHIM_LABEL}={shim}")))
        .await
        .expect("pods")
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn retry_removes_the_failed_installer_pods_only() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_shim(&client, "broken-spin", json!({"type": "recreate"})).await;
    installer_pod(&client, "broken-spin", "worker-0", "Failed").await;
    installer_pod(&client, "broken-spin", "worker-1", "Succeeded").await;
    let shim = Target::cluster(Kind::Shim, "broken-spin");
    let retry = |nodes: &[&str]| WriteRequest::RetryNodes {
        shim: shim.clone(),
        nodes: nodes.iter().map(|n| (*n).to_owned()).collect(),
    };

    let error = perform(&client, retry(&["worker-1"]))
        .await
        .expect_err("worker-1 did not fail");
    assert!(
        error
            .message
            .contains("no failed installer pod on worker-1"),
        "{}",
        error.message
    );
    let message = perform(&client, retry(&[])).await.expect("retried");
    assert_eq!(
        message,
        "Retrying Shim broken-spin on worker-0: its failed installer pods were removed"
    );
    assert_eq!(
        installer_pods(&client, "broken-spin").await,
        ["worker-1-broken-spin-install"]
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn the_embedded_cluster_lets_the_console_steer_shims() {
    let cluster = start_cluster().await;
    let report = access::review(&cluster.client(), "embedded").await;
    assert_eq!(report.allowed.get(&Capability::SteerShim), Some(&true));
    assert_eq!(
        report.allowed.get(&Capability::Delete(Kind::Shim)),
        Some(&true)
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_cluster_without_the_shim_crd_has_no_shims_rather_than_a_failing_watch() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kmm_tui::tui::action::Action;
    use kmm_tui::tui::data::{FeedState, KindSnapshot};

    let cluster = start_cluster().await;
    let client = cluster.client();
    Api::<CustomResourceDefinition>::all(client.clone())
        .delete("shims.runtime.spinkube.dev", &Default::default())
        .await
        .expect("the Shim CRD is deleted");
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    kmm_tui::tui::feed::start(&client, None, None, &sender, &cancel);
    let shims = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            match receiver.recv().await.expect("the feeds run") {
                Action::Data(KindSnapshot::Shims(list)) => return list,
                Action::Feed(Kind::Shim, FeedState::Failing(why)) => {
                    panic!("the Shim watch reports a failure: {why}")
                }
                _ => {}
            }
        }
    })
    .await
    .expect("an empty list of Shims");
    assert!(shims.is_empty());
    cancel.cancel();
    cluster.shutdown().await;
}
