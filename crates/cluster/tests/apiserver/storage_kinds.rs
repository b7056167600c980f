//! The kinds of kubectl's default prune list and of `kubectl autoscale` that the server stores: PersistentVolumeClaims,
//! PersistentVolumes, Ingresses and IngressClasses, HorizontalPodAutoscalers in both `autoscaling` versions; and the
//! reported ComponentStatuses. Each is discoverable, defaulted and validated for the essentials as kube-apiserver
//! does, and printed with kube-apiserver's Table columns.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ComponentStatus, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kmm_cluster::EmbeddedOptions;
use kube::api::{Api, ListParams, PostParams};
use kube::discovery::Discovery;
use kube::{Client, Error};
use serde_json::{Value, json};

use crate::common::cluster;
use crate::with_kubectl::{kubectl_installed, serve};

pub(crate) const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// A raw request through `client`: the status code and the JSON body.
pub(crate) async fn send(
    client: &Client,
    method: &str,
    path: &str,
    accept: &str,
    body: Option<Value>,
) -> (u16, Value, http::HeaderMap) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("accept", accept)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(
            body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        ))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        headers,
    )
}

/// The column names of a Table.
pub(crate) fn columns(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .unwrap_or_else(|| panic!("not a Table: {table}"))
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

/// The cells of a Table's first row, as text.
pub(crate) fn first_row(table: &Value) -> Vec<String> {
    table["rows"][0]["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows: {table}"))
        .iter()
        .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
        .collect()
}

/// The fields a 422 names.
pub(crate) fn invalid_fields(body: &Value) -> Vec<String> {
    body["details"]["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("not a 422 with causes: {body}"))
        .iter()
        .map(|c| c["field"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn claims_and_volumes_are_defaulted_validated_and_printed() {
    let cluster = cluster().await;
    let client = cluster.client();
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast"},
    }))
    .unwrap();
    let created = Api::<PersistentVolumeClaim>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &claim)
        .await
        .unwrap();
    assert_eq!(
        created.spec.unwrap().volume_mode.as_deref(),
        Some("Filesystem")
    );
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Pending"));
    let (code, body, _) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/persistentvolumeclaims",
        "application/json",
        Some(
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "bad"},
            "spec": {"accessModes": ["ReadWriteSometimes"]}}),
        ),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let fields = invalid_fields(&body);
    assert!(
        fields.contains(&"spec.accessModes[0]".to_owned()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"spec.resources[storage]".to_owned()),
        "{fields:?}"
    );
    let (code, table, _) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/persistentvolumeclaims",
        TABLE,
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        columns(&table),
        [
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode"
        ]
    );
    assert_eq!(
        first_row(&table)[..7],
        ["data", "Pending", "", "", "", "fast", "<unset>"]
    );

    let volume: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": "disk"},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "hostPath": {"path": "/data"},
            "claimRef": {"namespace": "default", "name": "data"}},
    }))
    .unwrap();
    let created = Api::<PersistentVolume>::all(client.clone())
        .create(&PostParams::default(), &volume)
        .await
        .unwrap();
    assert_eq!(
        created
            .spec
            .unwrap()
            .persistent_volume_reclaim_policy
            .as_deref(),
        Some("Retain")
    );
    let (code, body, _) = send(
        &client,
        "POST",
        "/api/v1/persistentvolumes",
        "application/json",
        Some(
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "nowhere"},
            "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"]}}),
        ),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert!(invalid_fields(&body).contains(&"spec".to_owned()), "{body}");
    let (_, table, _) = send(&client, "GET", "/api/v1/persistentvolumes", TABLE, None).await;
    assert_eq!(
        columns(&table),
        [
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age",
            "VolumeMode"
        ]
    );
    assert_eq!(
        first_row(&table)[..6],
        [
            "disk",
            "5Gi",
            "RWO,ROX",
            "Retain",
            "Pending",
            "default/data"
        ]
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn ingresses_and_their_classes_are_validated_and_printed() {
    let cluster = cluster().await;
    let client = cluster.client();
    let class: IngressClass = serde_json::from_value(json!({
        "metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"},
    }))
    .unwrap();
    Api::<IngressClass>::all(client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let ingress: Ingress = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": "web.example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]},
    }))
    .unwrap();
    Api::<Ingress>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &ingress)
        .await
        .unwrap();
    let (code, body, _) = send(&client, "POST", "/apis/networking.k8s.io/v1/namespaces/default/ingresses", "application/json",
        Some(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "bad"},
            "spec": {"rules": [{"http": {"paths": [{"path": "relative", "pathType": "Exact", "backend": {"service": {"name": "web", "port": {}}}}]}}]}}))).await;
    assert_eq!(code, 422, "{body}");
    let fields = invalid_fields(&body);
    assert!(
        fields.contains(&"spec.rules[0].http.paths[0].path".to_owned()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"spec.rules[0].http.paths[0].backend.service.port".to_owned()),
        "{fields:?}"
    );
    let (_, table, _) = send(
        &client,
        "GET",
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        TABLE,
        None,
    )
    .await;
    assert_eq!(
        columns(&table),
        ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    );
    assert_eq!(
        first_row(&table)[..5],
        ["web", "nginx", "web.example.com", "", "80"]
    );
    let (_, table, _) = send(
        &client,
        "GET",
        "/apis/networking.k8s.io/v1/ingressclasses",
        TABLE,
        None,
    )
    .await;
    assert_eq!(columns(&table), ["Name", "Controller", "Parameters", "Age"]);
    cluster.shutdown().await;
}

#[tokio::test]
async fn autoscalers_are_served_in_both_versions() {
    let cluster = cluster().await;
    let client = cluster.client();
    // Written as autoscaling/v1 (what `kubectl autoscale` writes), read as v2.
    let (code, body, _) = send(&client, "POST", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", "application/json",
        Some(json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 4,
                "targetCPUUtilizationPercentage": 70}}))).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["apiVersion"], "autoscaling/v1");
    assert_eq!(body["spec"]["targetCPUUtilizationPercentage"], 70);
    assert_eq!(body["spec"]["minReplicas"], 1);
    let v2 = Api::<HorizontalPodAutoscaler>::namespaced(client.clone(), "default")
        .get("web")
        .await
        .unwrap();
    let metrics = v2.spec.unwrap().metrics.unwrap();
    let cpu = metrics[0].resource.as_ref().unwrap();
    assert_eq!(
        (cpu.name.as_str(), cpu.target.average_utilization),
        ("cpu", Some(70))
    );

    // Written as v2, read as v1.
    let autoscaler: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "api"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}, "minReplicas": 2, "maxReplicas": 6,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 55}}}]},
    }))
    .unwrap();
    Api::<HorizontalPodAutoscaler>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &autoscaler)
        .await
        .unwrap();
    let (code, v1, _) = send(
        &client,
        "GET",
        "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/api",
        "application/json",
        None,
    )
    .await;
    assert_eq!(code, 200, "{v1}");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 55);
    assert!(v1["spec"].get("metrics").is_none(), "{v1}");

    let (code, body, _) = send(&client, "POST", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", "application/json",
        Some(json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "bad"},
            "spec": {"scaleTargetRef": {"kind": "Deployment"}, "minReplicas": 3, "maxReplicas": 2}}))).await;
    assert_eq!(code, 422, "{body}");
    let fields = invalid_fields(&body);
    assert!(
        fields.contains(&"spec.scaleTargetRef.name".to_owned()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"spec.maxReplicas".to_owned()),
        "{fields:?}"
    );

    for version in ["v1", "v2"] {
        let (_, table, _) = send(
            &client,
            "GET",
            &format!("/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers/web"),
            TABLE,
            None,
        )
        .await;
        assert_eq!(
            columns(&table),
            [
                "Name",
                "Reference",
                "Targets",
                "MinPods",
                "MaxPods",
                "Replicas",
                "Age"
            ]
        );
        assert_eq!(
            first_row(&table)[..6],
            ["web", "Deployment/web", "cpu: <unknown>/70%", "1", "4", "0"]
        );
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn component_statuses_report_a_healthy_control_plane() {
    let cluster = cluster().await;
    let client = cluster.client();
    let statuses = Api::<ComponentStatus>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut names: Vec<String> = statuses
        .items
        .iter()
        .map(|s| s.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["controller-manager", "etcd-0", "scheduler"]);
    for status in &statuses.items {
        let healthy = status
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == "Healthy")
            .unwrap();
        assert_eq!(healthy.status, "True");
    }
    let (code, one, headers) = send(
        &client,
        "GET",
        "/api/v1/componentstatuses/etcd-0",
        "application/json",
        None,
    )
    .await;
    assert_eq!(code, 200, "{one}");
    assert!(
        headers
            .get("warning")
            .is_some_and(|w| w.to_str().unwrap().contains("deprecated"))
    );
    assert!(
        matches!(Api::<ComponentStatus>::all(client.clone()).get("nope").await, Err(Error::Api(s)) if s.code == 404)
    );
    let (_, table, _) = send(&client, "GET", "/api/v1/componentstatuses", TABLE, None).await;
    assert_eq!(columns(&table), ["Name", "Status", "Message", "Error"]);
    assert_eq!(first_row(&table)[..2], ["controller-manager", "Healthy"]);
    cluster.shutdown().await;
}

#[tokio::test]
async fn the_kinds_are_discoverable() {
    let cluster = cluster().await;
    let discovery = Discovery::new(cluster.client()).run().await.unwrap();
    for (group, version, kind) in [
        ("", "v1", "PersistentVolumeClaim"),
        ("", "v1", "PersistentVolume"),
        ("", "v1", "ComponentStatus"),
        ("networking.k8s.io", "v1", "Ingress"),
        ("networking.k8s.io", "v1", "IngressClass"),
        ("autoscaling", "v1", "HorizontalPodAutoscaler"),
        ("autoscaling", "v2", "HorizontalPodAutoscaler"),
        ("authentication.k8s.io", "v1", "TokenReview"),
        ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    ] {
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        assert!(
            discovery.resolve_gvk(&gvk).is_some(),
            "{gvk:?} is not discoverable"
        );
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn kubectl_lists_these_kinds() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    let served = serve(EmbeddedOptions::default()).await;
    let kubectl = |args: &'static [&'static str]| served.kubectl(args, None);
    let manifest = "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec:\n  \
         scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 3\n  \
         targetCPUUtilizationPercentage: 60\n";
    let (ok, out, err) = served.kubectl(&["create", "-f", "-"], Some(manifest)).await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) = kubectl(&["get", "hpa", "web"]).await;
    assert!(
        ok && out.contains("Deployment/web") && out.contains("60%"),
        "{out}{err}"
    );
    let (ok, out, err) = kubectl(&["get", "pvc,pv,ingress,ingressclass,hpa,csr"]).await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) = kubectl(&["get", "componentstatuses"]).await;
    assert!(
        ok && out.contains("etcd-0") && out.contains("Healthy"),
        "{out}{err}"
    );
    let (ok, out, err) = kubectl(&["api-resources", "-o", "name"]).await;
    assert!(ok, "{err}");
    for resource in [
        "persistentvolumeclaims",
        "persistentvolumes",
        "ingresses.networking.k8s.io",
        "horizontalpodautoscalers.autoscaling",
        "certificatesigningrequests.certificates.k8s.io",
        "tokenreviews.authentication.k8s.io",
    ] {
        assert!(
            out.lines().any(|l| l == resource),
            "{resource} missing from:\n{out}"
        );
    }
    served.cluster.shutdown().await;
}
