//! Evictions consult PodDisruptionBudgets: discovery names `pods/eviction` a `policy/v1` Eviction (so `kubectl
//! drain` evicts rather than deletes), the simulated disruption controller keeps each budget's status, and an
//! eviction that would break a budget is answered 429 with the cause `DisruptionBudget`, as kube-apiserver does.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::BodyExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kmm_cluster::EmbeddedOptions;
use kmm_cluster::sim::scenario::Scenario;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::common::{cluster, eventually};
use super::with_kubectl::{kubectl_installed, serve};

const SCENARIO: &str = r#"
seed: 7
timeScale: 10
nodes:
  - {namePrefix: node-, count: 2, kernelVersion: 5.14.0-284.30.1.el9_2.x86_64, osImage: RHCOS}
"#;

/// One request's status and body as JSON.
async fn raw(client: &Client, method: Method, uri: &str, body: &str) -> (u16, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .expect("a request");
    let response = client.send(request).await.expect("an answer");
    let status = response.status().as_u16();
    let bytes: Bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn discovery_names_the_eviction_kind_in_policy_v1() {
    let cluster = cluster().await;
    let (_, core) = raw(&cluster.client(), Method::GET, "/api/v1", "").await;
    let eviction = core["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["name"] == "pods/eviction")
        .expect("pods/eviction is listed");
    assert_eq!(eviction["group"], "policy", "{eviction}");
    assert_eq!(eviction["version"], "v1", "{eviction}");
    assert_eq!(eviction["kind"], "Eviction", "{eviction}");
    assert_eq!(eviction["verbs"], json!(["create"]), "{eviction}");
    cluster.shutdown().await;
}

async fn running_pods(client: &Client) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels("app=guarded"))
        .await
        .expect("listing pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .collect()
}

/// The budget's (expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed) once it has seen its spec.
async fn budget_counts(client: &Client) -> Option<(i32, i32, i32, i32)> {
    let budget = Api::<PodDisruptionBudget>::namespaced(client.clone(), "default")
        .get("guarded")
        .await
        .ok()?;
    let status = budget.status?;
    (status.observed_generation? == budget.metadata.generation?).then_some((
        status.expected_pods,
        status.current_healthy,
        status.desired_healthy,
        status.disruptions_allowed,
    ))
}

fn eviction(pod: &str) -> String {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": "default"}})
        .to_string()
}

async fn set_min_available(client: &Client, min_available: i32) {
    Api::<PodDisruptionBudget>::namespaced(client.clone(), "default")
        .patch(
            "guarded",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"minAvailable": min_available}})),
        )
        .await
        .expect("the budget changes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_and_kubectl_drain_respect_disruption_budgets() {
    let scenario = Scenario::parse(SCENARIO, "test", None).expect("the scenario parses");
    let served = serve(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await;
    let client = served.cluster.client();
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "guarded"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "guarded"}},
            "template": {
                "metadata": {"labels": {"app": "guarded"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    }))
    .expect("a Deployment");
    Api::<Deployment>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .expect("the Deployment is created");
    let budget: PodDisruptionBudget = serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}}
    }))
    .expect("a budget");
    Api::<PodDisruptionBudget>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &budget)
        .await
        .expect("the budget is created");
    eventually(
        120,
        "two healthy pods and no disruption allowed",
        || async { budget_counts(&client).await == Some((2, 2, 2, 0)) },
    )
    .await;

    let pods = running_pods(&client).await;
    let victim = pods[0].metadata.name.clone().expect("a name");
    let uri = format!("/api/v1/namespaces/default/pods/{victim}/eviction");
    let (code, body) = raw(&client, Method::POST, &uri, &eviction(&victim)).await;
    assert_eq!(code, 429, "{body}");
    assert_eq!(body["reason"], "TooManyRequests", "{body}");
    assert_eq!(
        body["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        body["details"]["causes"],
        json!([{"reason": "DisruptionBudget", "message": "The disruption budget guarded needs 2 healthy pods and has 2 currently"}]),
        "{body}"
    );
    assert!(
        Api::<Pod>::namespaced(client.clone(), "default")
            .get_opt(&victim)
            .await
            .expect("reading the pod")
            .is_some(),
        "a refused eviction leaves the pod"
    );

    if kubectl_installed() {
        let node = pods[0]
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .expect("the pod is scheduled");
        let drain = [
            "drain",
            node.as_str(),
            "--ignore-daemonsets",
            "--force",
            "--delete-emptydir-data",
            "--timeout=4s",
        ];
        let (ok, stdout, stderr) = served.kubectl(&drain, None).await;
        assert!(!ok, "the budget blocks the drain: {stdout}{stderr}");
        assert!(
            stderr.contains("Cannot evict pod as it would violate the pod's disruption budget"),
            "kubectl drain evicts rather than deletes: {stdout}{stderr}"
        );
        assert!(
            Api::<Pod>::namespaced(client.clone(), "default")
                .get_opt(&victim)
                .await
                .expect("reading the pod")
                .is_some(),
            "a blocked drain leaves the pod"
        );
        set_min_available(&client, 1).await;
        let drain = [
            "drain",
            node.as_str(),
            "--ignore-daemonsets",
            "--force",
            "--delete-emptydir-data",
            "--timeout=100s",
        ];
        let (ok, stdout, stderr) = served.kubectl(&drain, None).await;
        assert!(
            ok,
            "the drain completes once the budget allows: {stdout}{stderr}"
        );
        assert!(stdout.contains("evicted"), "{stdout}{stderr}");
    } else {
        println!("kubectl not found on PATH: evicting through the API only");
        set_min_available(&client, 1).await;
    }

    eventually(120, "one disruption allowed", || async {
        budget_counts(&client).await == Some((2, 2, 1, 1))
    })
    .await;
    let pods = running_pods(&client).await;
    let first = pods[0].metadata.name.clone().expect("a name");
    let second = pods[1].metadata.name.clone().expect("a name");
    let (code, body) = raw(
        &client,
        Method::POST,
        &format!("/api/v1/namespaces/default/pods/{first}/eviction"),
        &eviction(&first),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"], "Success", "{body}");
    let (code, body) = raw(
        &client,
        Method::POST,
        &format!("/api/v1/namespaces/default/pods/{second}/eviction"),
        &eviction(&second),
    )
    .await;
    assert_eq!(
        code, 429,
        "the disruption just spent is not there to spend twice: {body}"
    );
    served.cluster.shutdown().await;
}
