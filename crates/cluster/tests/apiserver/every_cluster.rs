//! What every cluster has: a `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap in every namespace,
//! Services with cluster IPs that stay, and APIService objects stored.

use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use kmm_cluster::EmbeddedOptions;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use serde_json::json;

use super::common::{cluster, cluster_with, eventually};

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
                "spec": {"selector": {"app": "one"}, "ports": [{"port": 80, "targetPort": 8080}]}}),
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

/// The `ca.crt` of a namespace's `kube-root-ca.crt`, and the uids of that ConfigMap and of the `default`
/// ServiceAccount, when both exist.
async fn basics(client: &kube::Client, namespace: &str) -> Option<(String, String, String)> {
    let config_map = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt("kube-root-ca.crt")
        .await
        .ok()??;
    let account = Api::<ServiceAccount>::namespaced(client.clone(), namespace)
        .get_opt("default")
        .await
        .ok()??;
    Some((
        config_map.data.as_ref()?.get("ca.crt")?.clone(),
        config_map.uid()?,
        account.uid()?,
    ))
}

#[tokio::test]
async fn every_namespace_has_the_default_service_account_and_the_root_ca() {
    let state = tempfile::tempdir().unwrap();
    let cluster = cluster_with(EmbeddedOptions {
        state_dir: Some(state.path().to_owned()),
        listen: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    })
    .await;
    let client = cluster.client();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(cluster.kubeconfig().unwrap()).unwrap();
    let authority = kubeconfig.clusters[0]
        .cluster
        .as_ref()
        .and_then(|c| c.certificate_authority_data.clone())
        .unwrap();
    let served_ca = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(authority)
            .unwrap(),
    )
    .unwrap();
    for namespace in ["default", "kube-system"] {
        eventually(10, &format!("{namespace} has both"), || async {
            basics(&client, namespace).await.is_some()
        })
        .await;
    }
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "fresh"}})).unwrap(),
        )
        .await
        .unwrap();
    eventually(10, "a new namespace gets both", || async {
        basics(&client, "fresh").await.is_some()
    })
    .await;
    let (ca, config_map_uid, account_uid) = basics(&client, "fresh").await.unwrap();
    assert_eq!(ca, served_ca, "the CA the served kubeconfig trusts");

    // Deleted, both come back; a changed certificate is put back.
    Api::<ConfigMap>::namespaced(client.clone(), "fresh")
        .delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .unwrap();
    Api::<ServiceAccount>::namespaced(client.clone(), "fresh")
        .delete("default", &DeleteParams::default())
        .await
        .unwrap();
    eventually(10, "both come back", || async {
        basics(&client, "fresh")
            .await
            .is_some_and(|(_, config_map, account)| {
                config_map != config_map_uid && account != account_uid
            })
    })
    .await;
    Api::<ConfigMap>::namespaced(client.clone(), "fresh")
        .patch(
            "kube-root-ca.crt",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"ca.crt": "tampered"}})),
        )
        .await
        .unwrap();
    eventually(10, "the certificate is put back", || async {
        basics(&client, "fresh")
            .await
            .is_some_and(|(ca, _, _)| ca == served_ca)
    })
    .await;

    // A namespace being deleted still goes, and nothing is created in it meanwhile.
    Api::<Namespace>::all(client.clone())
        .delete("fresh", &DeleteParams::default())
        .await
        .unwrap();
    eventually(10, "the namespace goes", || async {
        Api::<Namespace>::all(client.clone())
            .get_opt("fresh")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    cluster.shutdown().await;
}
