//! Deployment revisions: the simulated Deployment controller numbers each template's ReplicaSet
//! (`deployment.kubernetes.io/revision`), copies the change cause, renumbers a template that comes back and keeps
//! only `revisionHistoryLimit` old ReplicaSets, so `kubectl rollout history`, `--revision` and `rollout undo` work.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kmm_cluster::EmbeddedOptions;
use kmm_cluster::sim::scenario::Scenario;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::with_kubectl::{kubectl_installed, serve};

const SCENARIO: &str = r#"
seed: 5
timeScale: 10
nodes:
  - {namePrefix: node-, count: 2, kernelVersion: 5.14.0-284.30.1.el9_2.x86_64, osImage: RHCOS}
"#;

const REVISION: &str = "deployment.kubernetes.io/revision";
const CHANGE_CAUSE: &str = "kubernetes.io/change-cause";

/// The Deployment's ReplicaSets by the image of their template: (revision, change cause, revision history).
async fn revisions_by_image(client: &kube::Client) -> BTreeMap<String, (String, String, String)> {
    Api::<ReplicaSet>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("listing ReplicaSets")
        .items
        .into_iter()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none())
        .map(|rs| {
            let image = rs
                .spec
                .and_then(|s| s.template)
                .and_then(|t| t.spec)
                .and_then(|s| s.containers.into_iter().next())
                .and_then(|c| c.image)
                .unwrap_or_default();
            let annotations = rs.metadata.annotations.unwrap_or_default();
            let read = |key: &str| annotations.get(key).cloned().unwrap_or_default();
            (
                image,
                (
                    read(REVISION),
                    read(CHANGE_CAUSE),
                    read("deployment.kubernetes.io/revision-history"),
                ),
            )
        })
        .collect()
}

async fn deployment_revision(client: &kube::Client) -> Option<String> {
    Api::<Deployment>::namespaced(client.clone(), "default")
        .get("web")
        .await
        .ok()?
        .metadata
        .annotations?
        .get(REVISION)
        .cloned()
}

fn entry(revision: &str, cause: &str, history: &str) -> (String, String, String) {
    (revision.into(), cause.into(), history.into())
}

/// The ReplicaSets by image, as [`revisions_by_image`] reads them.
type Revisions = BTreeMap<String, (String, String, String)>;

/// Wait (up to two minutes) until the Deployment carries `revision` and its ReplicaSets are `want`; fail with what
/// was seen last.
async fn settle(client: &kube::Client, revision: &str, want: Revisions) {
    let mut seen = (None, Revisions::new());
    for _ in 0..240 {
        seen = (
            deployment_revision(client).await,
            revisions_by_image(client).await,
        );
        if seen.0.as_deref() == Some(revision) && seen.1 == want {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    panic!("wanted revision {revision} and {want:?}, last saw {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_number_templates_and_kubectl_rolls_back() {
    let scenario = Scenario::parse(SCENARIO, "test", None).expect("the scenario parses");
    let served = serve(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await;
    let client = served.cluster.client();
    let deployments = Api::<Deployment>::namespaced(client.clone(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {CHANGE_CAUSE: "first"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "hostNetwork": false,
                    "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10", "stdin": false}]
                }
            }
        }
    }))
    .expect("a Deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("the Deployment is created");
    let first = BTreeMap::from([("registry.k8s.io/pause:3.10".into(), entry("1", "first", ""))]);
    settle(&client, "1", first).await;

    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({
                "metadata": {"annotations": {CHANGE_CAUSE: "second"}},
                "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.9"}]}}}
            })),
        )
        .await
        .expect("the template changes");
    let second = BTreeMap::from([
        ("registry.k8s.io/pause:3.10".into(), entry("1", "first", "")),
        ("registry.k8s.io/pause:3.9".into(), entry("2", "second", "")),
    ]);
    settle(&client, "2", second).await;

    if kubectl_installed() {
        let (ok, stdout, stderr) = served
            .kubectl(&["rollout", "history", "deployment/web"], None)
            .await;
        assert!(ok, "rollout history: {stdout}{stderr}");
        let rows: Vec<Vec<&str>> = stdout
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert!(rows.contains(&vec!["REVISION", "CHANGE-CAUSE"]), "{stdout}");
        assert!(rows.contains(&vec!["1", "first"]), "{stdout}");
        assert!(rows.contains(&vec!["2", "second"]), "{stdout}");
        let (ok, stdout, stderr) = served
            .kubectl(
                &["rollout", "history", "deployment/web", "--revision=1"],
                None,
            )
            .await;
        assert!(ok, "rollout history --revision=1: {stdout}{stderr}");
        assert!(stdout.contains("registry.k8s.io/pause:3.10"), "{stdout}");
        let (ok, stdout, stderr) = served
            .kubectl(&["rollout", "undo", "deployment/web"], None)
            .await;
        assert!(ok, "rollout undo: {stdout}{stderr}");
        assert!(stdout.contains("rolled back"), "{stdout}");
    } else {
        println!(
            "kubectl not found on PATH: rolling back as `kubectl rollout undo` would, by a patch"
        );
        deployments
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Strategic(json!({
                    "metadata": {"annotations": {CHANGE_CAUSE: "first"}},
                    "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]}}}
                })),
            )
            .await
            .expect("the template goes back");
    }
    let rolled_back = BTreeMap::from([
        (
            "registry.k8s.io/pause:3.10".into(),
            entry("3", "first", "1"),
        ),
        ("registry.k8s.io/pause:3.9".into(), entry("2", "second", "")),
    ]);
    settle(&client, "3", rolled_back).await;

    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"revisionHistoryLimit": 0}})),
        )
        .await
        .expect("the history limit changes");
    let kept = BTreeMap::from([(
        "registry.k8s.io/pause:3.10".into(),
        entry("3", "first", "1"),
    )]);
    settle(&client, "3", kept).await;
    served.cluster.shutdown().await;
}
