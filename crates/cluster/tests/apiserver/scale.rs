//! The `scale` subresource: Deployments, ReplicaSets, ReplicationControllers and custom resources that declare
//! `subresources.scale` answer `autoscaling/v1` Scales on GET, PUT and PATCH, discovery lists them as
//! kube-apiserver's does, and `kubectl scale` changes the workload.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::BodyExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kmm_cluster::EmbeddedOptions;
use kmm_cluster::sim::scenario::Scenario;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

use super::common::{cluster, eventually};
use super::with_kubectl::{kubectl_installed, serve};

/// One request's status, content type and body as JSON.
async fn raw(
    client: &Client,
    method: Method,
    uri: &str,
    content_type: &str,
    body: &str,
) -> (u16, String, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .expect("a request");
    let response = client.send(request).await.expect("an answer");
    let status = response.status().as_u16();
    let media = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes: Bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (
        status,
        media,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name, "tier": "front"}},
            "template": {
                "metadata": {"labels": {"app": name, "tier": "front"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    }))
    .expect("a Deployment")
}

fn discovered<'a>(document: &'a Value, name: &str) -> &'a Value {
    document["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in {document}"))
}

#[tokio::test]
async fn discovery_lists_scale_as_an_autoscaling_v1_scale() {
    let cluster = cluster().await;
    let client = cluster.client();
    let (_, _, apps) = raw(
        &client,
        Method::GET,
        "/apis/apps/v1",
        "application/json",
        "",
    )
    .await;
    let (_, _, core) = raw(&client, Method::GET, "/api/v1", "application/json", "").await;
    for (document, name) in [
        (&apps, "deployments/scale"),
        (&apps, "replicasets/scale"),
        (&apps, "statefulsets/scale"),
        (&core, "replicationcontrollers/scale"),
    ] {
        let entry = discovered(document, name);
        assert_eq!(entry["group"], "autoscaling", "{entry}");
        assert_eq!(entry["version"], "v1", "{entry}");
        assert_eq!(entry["kind"], "Scale", "{entry}");
        assert_eq!(entry["verbs"], json!(["get", "patch", "update"]), "{entry}");
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_deployment_is_read_and_scaled_through_its_scale() {
    let cluster = cluster().await;
    let client = cluster.client();
    let deployments = Api::<Deployment>::namespaced(client.clone(), "default");
    let created = deployments
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .expect("the Deployment is created");

    let scale = deployments.get_scale("web").await.expect("its Scale");
    assert_eq!(scale.metadata.name.as_deref(), Some("web"));
    assert_eq!(scale.metadata.uid, created.metadata.uid);
    assert_eq!(
        scale.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(2));
    let status = scale.status.expect("a status");
    assert_eq!(status.replicas, 0);
    assert_eq!(status.selector.as_deref(), Some("app=web,tier=front"));

    let patched = deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("the Scale is patched");
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(5));
    let stored = deployments.get("web").await.expect("the Deployment");
    assert_eq!(stored.spec.and_then(|s| s.replicas), Some(5));
    assert_eq!(
        stored.metadata.generation,
        Some(2),
        "scaling is a change of spec"
    );

    // PUT with a stale resourceVersion conflicts; with none it replaces the count.
    let stale: Scale = serde_json::from_value(json!({
        "apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default", "resourceVersion": created.metadata.resource_version},
        "spec": {"replicas": 1}
    }))
    .expect("a Scale");
    let error = deployments
        .replace_scale("web", &PostParams::default(), &stale)
        .await
        .expect_err("a stale Scale is refused");
    assert!(
        matches!(error, kube::Error::Api(ref s) if s.code == 409),
        "{error:?}"
    );
    let (code, media, body) = raw(
        &client,
        Method::PUT,
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        "application/json",
        r#"{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":0}}"#,
    )
    .await;
    assert_eq!((code, media.as_str()), (200, "application/json"), "{body}");
    assert_eq!(body["kind"], "Scale");
    assert_eq!(body["apiVersion"], "autoscaling/v1");
    assert_eq!(body["spec"]["replicas"], 0);

    let (code, _, body) = raw(
        &client,
        Method::PATCH,
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        "application/merge-patch+json",
        r#"{"spec":{"replicas":-1}}"#,
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    let (code, _, _) = raw(
        &client,
        Method::GET,
        "/apis/apps/v1/namespaces/default/deployments/missing/scale",
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 404);
    let (code, _, _) = raw(
        &client,
        Method::GET,
        "/api/v1/namespaces/default/pods/p/scale",
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 404, "pods have no scale");
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_replication_controller_scale_prints_its_map_selector() {
    let cluster = cluster().await;
    let controllers = Api::<ReplicationController>::namespaced(cluster.client(), "default");
    let controller: ReplicationController = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "old"},
        "spec": {
            "replicas": 3,
            "selector": {"app": "old"},
            "template": {
                "metadata": {"labels": {"app": "old"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    }))
    .expect("a ReplicationController");
    controllers
        .create(&PostParams::default(), &controller)
        .await
        .expect("created");
    let scale = controllers.get_scale("old").await.expect("its Scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(
        scale.status.and_then(|s| s.selector).as_deref(),
        Some("app=old")
    );
    cluster.shutdown().await;
}

fn foo_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.clux.dev"},
        "spec": {
            "group": "clux.dev",
            "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas",
                    "labelSelectorPath": ".status.selector"
                }},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "name": {"type": "string"}, "replicas": {"type": "integer"}}},
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"}, "selector": {"type": "string"}}}
                    }
                }}
            }]
        }
    }))
    .expect("a CRD")
}

#[tokio::test]
async fn a_custom_resource_scales_through_the_paths_its_crd_declares() {
    let cluster = cluster().await;
    let client = cluster.client();
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &foo_crd())
        .await
        .expect("the CRD is created");
    let (_, _, discovery) = raw(
        &client,
        Method::GET,
        "/apis/clux.dev/v1",
        "application/json",
        "",
    )
    .await;
    let entry = discovered(&discovery, "foos/scale");
    assert_eq!(
        (&entry["group"], &entry["version"], &entry["kind"]),
        (&json!("autoscaling"), &json!("v1"), &json!("Scale"))
    );

    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("clux.dev", "v1", "Foo"));
    let foos = Api::<DynamicObject>::namespaced_with(client.clone(), "default", &resource);
    let foo: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "clux.dev/v1", "kind": "Foo",
        "metadata": {"name": "baz"},
        "spec": {"name": "baz", "replicas": 2}
    }))
    .expect("a Foo");
    foos.create(&PostParams::default(), &foo)
        .await
        .expect("created");
    let scale = foos.get_scale("baz").await.expect("its Scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(2));
    assert_eq!(scale.status.as_ref().map(|s| s.replicas), Some(0));
    foos.patch_status(
        "baz",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 1, "selector": "app=baz"}})),
    )
    .await
    .expect("status is patched");
    let scaled = foos
        .patch_scale(
            "baz",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("the Scale is patched");
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(3));
    let status = scaled.status.expect("a status");
    assert_eq!(status.replicas, 1);
    assert_eq!(status.selector.as_deref(), Some("app=baz"));
    let stored = foos.get("baz").await.expect("the Foo");
    assert_eq!(stored.data["spec"]["replicas"], 3);
    assert_eq!(stored.data["spec"]["name"], "baz");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_scale_changes_the_workload() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    let served = serve(Default::default()).await;
    let deployments = Api::<Deployment>::namespaced(served.cluster.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .expect("the Deployment is created");
    let (ok, stdout, stderr) = served
        .kubectl(&["scale", "deployment/web", "--replicas=4"], None)
        .await;
    assert!(ok, "kubectl scale: {stdout}{stderr}");
    assert!(stdout.contains("deployment.apps/web scaled"), "{stdout}");
    let stored = deployments.get("web").await.expect("the Deployment");
    assert_eq!(stored.spec.and_then(|s| s.replicas), Some(4));
    // The preconditioned form reads the Scale and writes it back with PUT.
    let (ok, stdout, stderr) = served
        .kubectl(
            &[
                "scale",
                "deployment/web",
                "--current-replicas=4",
                "--replicas=2",
            ],
            None,
        )
        .await;
    assert!(ok, "kubectl scale --current-replicas: {stdout}{stderr}");
    let stored = deployments.get("web").await.expect("the Deployment");
    assert_eq!(stored.spec.and_then(|s| s.replicas), Some(2));
    let (ok, _, stderr) = served
        .kubectl(
            &[
                "scale",
                "deployment/web",
                "--current-replicas=7",
                "--replicas=3",
            ],
            None,
        )
        .await;
    assert!(!ok, "a wrong --current-replicas is refused");
    assert!(
        stderr.contains("Expected replicas to be 7, was 2"),
        "{stderr}"
    );
    served.cluster.shutdown().await;
}

const SCENARIO: &str = r#"
seed: 11
timeScale: 10
nodes:
  - {namePrefix: node-, count: 2, kernelVersion: 5.14.0-284.30.1.el9_2.x86_64, osImage: RHCOS}
"#;

/// The names of the StatefulSet's running pods, in order.
async fn running_members(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels("app=db"))
        .await
        .expect("listing pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_set_runs_ordered_pods_and_kubectl_scales_it() {
    let scenario = Scenario::parse(SCENARIO, "test", None).expect("the scenario parses");
    let served = serve(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await;
    let client = served.cluster.client();
    let sets = Api::<StatefulSet>::namespaced(client.clone(), "default");
    let set: StatefulSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    }))
    .expect("a StatefulSet");
    let created = sets
        .create(&PostParams::default(), &set)
        .await
        .expect("the StatefulSet is created");
    let spec = created.spec.expect("a spec");
    assert_eq!(spec.pod_management_policy.as_deref(), Some("OrderedReady"));
    assert_eq!(spec.revision_history_limit, Some(10));
    eventually(
        120,
        "db-0, db-1 and db-2 run and are counted ready",
        || async {
            running_members(&client).await == ["db-0", "db-1", "db-2"]
                && sets
                    .get("db")
                    .await
                    .ok()
                    .and_then(|s| s.status)
                    .and_then(|s| s.ready_replicas)
                    == Some(3)
        },
    )
    .await;
    let pod = Api::<Pod>::namespaced(client.clone(), "default")
        .get("db-1")
        .await
        .expect("db-1");
    let labels = pod.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("statefulset.kubernetes.io/pod-name")
            .map(String::as_str),
        Some("db-1")
    );
    assert_eq!(
        labels
            .get("apps.kubernetes.io/pod-index")
            .map(String::as_str),
        Some("1")
    );
    let pod_spec = pod.spec.expect("a pod spec");
    assert_eq!(pod_spec.hostname.as_deref(), Some("db-1"));
    assert_eq!(pod_spec.subdomain.as_deref(), Some("db"));

    let (code, _, invalid) = raw(
        &client,
        Method::POST,
        "/apis/apps/v1/namespaces/default/statefulsets",
        "application/json",
        r#"{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"bad"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"y"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}"#,
    )
    .await;
    assert_eq!(code, 422, "{invalid}");
    assert_eq!(invalid["details"]["kind"], "StatefulSet", "{invalid}");

    if !kubectl_installed() {
        println!("skipping the kubectl half: kubectl not found on PATH");
        served.cluster.shutdown().await;
        return;
    }
    let (ok, stdout, stderr) = served.kubectl(&["get", "statefulsets"], None).await;
    assert!(ok, "kubectl get statefulsets: {stdout}{stderr}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["NAME", "READY", "AGE"], "{stdout}");
    assert_eq!(rows[1][..2], ["db", "3/3"], "{stdout}");
    let (ok, stdout, stderr) = served
        .kubectl(&["scale", "sts/db", "--replicas=1"], None)
        .await;
    assert!(ok, "kubectl scale sts: {stdout}{stderr}");
    assert!(stdout.contains("statefulset.apps/db scaled"), "{stdout}");
    eventually(120, "only db-0 is left", || async {
        running_members(&client).await == ["db-0"]
    })
    .await;
    served.cluster.shutdown().await;
}
