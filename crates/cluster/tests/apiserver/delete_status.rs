//! What a DELETE answers: a Success `Status` naming the object (group, resource, uid) when it is gone at once, the
//! object itself while its deletion waits on finalizers (and, as kube-apiserver, for pods), and a list for a
//! collection. kube-rs tells the two apart as `Either::Right` and `Either::Left`.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kmm_cluster::apiserver::protobuf::{self, MEDIA_TYPE};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

use super::common::cluster;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

async fn create(client: &kube::Client, uri: &str, object: Value) -> Value {
    let request = http::Request::post(uri)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&object).unwrap())
        .unwrap();
    client
        .request::<Value>(request)
        .await
        .unwrap_or_else(|e| panic!("create at {uri}: {e}"))
}

/// The body of a DELETE of `uri`, sent with `content_type` and `body`.
async fn delete(client: &kube::Client, uri: &str, content_type: &str, body: Vec<u8>) -> Value {
    let request = http::Request::delete(uri)
        .header("content-type", content_type)
        .body(body)
        .unwrap();
    client
        .request::<Value>(request)
        .await
        .unwrap_or_else(|e| panic!("delete of {uri}: {e}"))
}

fn config_map(name: &str, finalizers: &[&str]) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "finalizers": finalizers}, "data": {"a": "1"}})
}

#[tokio::test]
async fn an_object_gone_at_once_is_answered_with_a_status() {
    let cluster = cluster().await;
    let client = cluster.client();
    let created = create(&client, CONFIGMAPS, config_map("gone", &[])).await;
    let answer = delete(
        &client,
        &format!("{CONFIGMAPS}/gone"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(
        answer,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "gone", "kind": "configmaps", "uid": created["metadata"]["uid"]},
        })
    );

    // A group's resource names its group; DeleteOptions in protobuf get the same answer.
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
    let role = create(
        &client,
        roles,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "reader"}, "rules": []}),
    )
    .await;
    let options =
        json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"});
    let answer = delete(
        &client,
        &format!("{roles}/reader"),
        MEDIA_TYPE,
        protobuf::encode_body(&options).unwrap(),
    )
    .await;
    assert_eq!(answer["kind"], "Status", "{answer}");
    assert_eq!(answer["status"], "Success", "{answer}");
    assert_eq!(
        answer["details"],
        json!({"name": "reader", "group": "rbac.authorization.k8s.io", "kind": "roles",
               "uid": role["metadata"]["uid"]})
    );

    // A dry run answers as the deletion would, and leaves the object.
    create(&client, CONFIGMAPS, config_map("kept", &[])).await;
    let answer = delete(
        &client,
        &format!("{CONFIGMAPS}/kept?dryRun=All"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(answer["kind"], "Status", "{answer}");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert!(configmaps.get("kept").await.is_ok());

    // kube-rs reads the Status as Right.
    let deleted = configmaps
        .delete("kept", &DeleteParams::default())
        .await
        .expect("deleted");
    let status = deleted
        .right()
        .expect("a ConfigMap removed at once is answered with a Status");
    assert_eq!(
        status.status,
        Some(kube::core::response::StatusSummary::Success)
    );
    assert_eq!(status.details.map(|d| d.name).as_deref(), Some("kept"));
}

#[tokio::test]
async fn an_object_whose_deletion_waits_is_answered_with_itself() {
    let cluster = cluster().await;
    let client = cluster.client();
    create(
        &client,
        CONFIGMAPS,
        config_map("held", &["example.com/hold"]),
    )
    .await;
    let answer = delete(
        &client,
        &format!("{CONFIGMAPS}/held"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(answer["kind"], "ConfigMap", "{answer}");
    assert!(
        answer["metadata"]["deletionTimestamp"].is_string(),
        "{answer}"
    );
    // Deleting it again while it waits answers with it again.
    let again = delete(
        &client,
        &format!("{CONFIGMAPS}/held"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(again["kind"], "ConfigMap", "{again}");

    // Foreground deletion waits on its dependents, even with none.
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    create(&client, CONFIGMAPS, config_map("owner", &[])).await;
    let deleted = configmaps
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("deleted");
    assert!(deleted.is_left(), "{deleted:?}");

    // Pods are answered with the pod, as kube-apiserver's pod storage does.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "app"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let deleted = pods
        .delete("app", &DeleteParams::default())
        .await
        .expect("deleted");
    assert!(deleted.is_left(), "{deleted:?}");

    // A collection is answered with the list of what was deleted.
    create(&client, CONFIGMAPS, config_map("one", &[])).await;
    let answer = delete(
        &client,
        &format!("{CONFIGMAPS}?fieldSelector=metadata.name%3Done"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(answer["kind"], "ConfigMapList", "{answer}");
    assert_eq!(answer["items"][0]["metadata"]["name"], "one", "{answer}");
    let left = configmaps
        .list(&ListParams::default().fields("metadata.name=one"))
        .await
        .unwrap();
    assert!(left.items.is_empty());
}
