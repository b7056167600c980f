//! What every cluster has: Services with cluster IPs that stay, and APIService objects stored.

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use serde_json::json;

use super::common::cluster;

#[tokio::test]
async fn services_get_cluster_ips_that_stay() {
    let cluster = cluster().await;
    let services = Api::<Service>::namespaced(cluster.client(), "default");
    let service = |name: &str| -> Service {
        serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}))
        .unwrap()
    };
    let first = services
        .create(&PostParams::default(), &service("one"))
        .await
        .unwrap();
    let second = services
        .create(&PostParams::default(), &service("two"))
        .await
        .unwrap();
    let ip = |s: &Service| {
        s.spec
            .as_ref()
            .and_then(|s| s.cluster_ip.clone())
            .unwrap_or_default()
    };
    assert!(ip(&first).starts_with("10.9"), "{first:?}");
    assert_ne!(ip(&first), ip(&second));
    let spec = first.spec.clone().unwrap();
    assert_eq!(spec.cluster_ips, Some(vec![ip(&first)]));
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    assert_eq!(spec.ports.unwrap()[0].protocol.as_deref(), Some("TCP"));
    let applied = services
        .patch(
            "one",
            &PatchParams::apply("test").force(),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "one"},
                "spec": {"selector": {"app": "one"}, "ports": [{"port": 81}]}}),
            ),
        )
        .await
        .expect("an apply without the address keeps it");
    assert_eq!(ip(&applied), ip(&first));
    cluster.shutdown().await;
}

#[tokio::test]
async fn api_services_are_stored() {
    let cluster = cluster().await;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
    ));
    let api = Api::<DynamicObject>::all_with(cluster.client(), &resource);
    let object: DynamicObject = serde_json::from_value(json!({"apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService", "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
                 "service": {"name": "metrics-server", "namespace": "kube-system"}}}))
    .unwrap();
    api.create(&PostParams::default(), &object)
        .await
        .expect("stored");
    let read = api.get("v1beta1.metrics.k8s.io").await.expect("read back");
    assert_eq!(read.data["spec"]["group"], "metrics.k8s.io");
    cluster.shutdown().await;
}
