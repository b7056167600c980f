//! Malformed and oversized requests get the 4xx kube-apiserver answers, never a dropped connection, and change
//! nothing: patches that are not objects, patches that multiply themselves, bodies and objects over the limits,
//! renames, and type metadata or media types the server cannot read.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use super::common::cluster;

const CONFIGMAP: &str = "/api/v1/namespaces/default/configmaps/settings";

/// Send one request through `client` and return its status and body.
async fn send(
    client: &Client,
    method: Method,
    uri: &str,
    content_type: &str,
    body: impl Into<Vec<u8>>,
) -> (u16, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(kube::client::Body::from(body.into()))
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

async fn settings(client: &Client) -> ConfigMap {
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), "default");
    match configmaps.get_opt("settings").await.expect("a read") {
        Some(found) => found,
        None => {
            let created: ConfigMap = serde_json::from_value(
                json!({"metadata": {"name": "settings"}, "data": {"a": "b"}}),
            )
            .expect("a ConfigMap");
            configmaps
                .create(&PostParams::default(), &created)
                .await
                .expect("created")
        }
    }
}

#[tokio::test]
async fn patches_that_are_not_objects_are_refused_and_change_nothing() {
    let cluster = cluster().await;
    let client = cluster.client();
    let before = settings(&client).await;
    for body in ["[1]", "42", "\"x\""] {
        let (code, status) = send(
            &client,
            Method::PATCH,
            CONFIGMAP,
            "application/merge-patch+json",
            body,
        )
        .await;
        assert_eq!(code, 400, "merge patch {body}: {status}");
        let (code, status) = send(
            &client,
            Method::PATCH,
            CONFIGMAP,
            "application/strategic-merge-patch+json",
            body,
        )
        .await;
        assert_eq!(code, 400, "strategic merge patch {body}: {status}");
        let root = format!(r#"[{{"op": "replace", "path": "", "value": {body}}}]"#);
        let (code, status) = send(
            &client,
            Method::PATCH,
            CONFIGMAP,
            "application/json-patch+json",
            root,
        )
        .await;
        assert_eq!(code, 422, "JSON patch of the root to {body}: {status}");
    }
    let (code, status) = send(
        &client,
        Method::PATCH,
        CONFIGMAP,
        "application/merge-patch+json",
        "null",
    )
    .await;
    assert_eq!(
        code, 400,
        "a merge patch of null would leave no object: {status}"
    );
    let after = settings(&client).await;
    assert_eq!(after.data, before.data);
    assert_eq!(
        after.metadata.resource_version,
        before.metadata.resource_version
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn json_patches_are_bounded_in_operations_and_in_what_they_copy() {
    let cluster = cluster().await;
    let client = cluster.client();
    settings(&client).await;
    let tests: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/data/a", "value": "b"}))
        .collect();
    let (code, status) = send(
        &client,
        Method::PATCH,
        CONFIGMAP,
        "application/json-patch+json",
        serde_json::to_vec(&tests).unwrap(),
    )
    .await;
    assert_eq!(code, 413, "{status}");
    let mut doubling = vec![
        json!({"op": "add", "path": "/data/x", "value": "x".repeat(1024)}),
        json!({"op": "add", "path": "/metadata/annotations", "value": {"k": []}}),
    ];
    doubling
        .push(json!({"op": "add", "path": "/metadata/annotations/k/-", "value": "x".repeat(1024)}));
    for _ in 0..24 {
        doubling.push(json!({"op": "copy", "from": "/metadata/annotations/k", "path": "/metadata/annotations/k/-"}));
    }
    let started = std::time::Instant::now();
    let (code, status) = send(
        &client,
        Method::PATCH,
        CONFIGMAP,
        "application/json-patch+json",
        serde_json::to_vec(&doubling).unwrap(),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert!(started.elapsed().as_secs() < 5, "refused at once");
    assert_eq!(settings(&client).await.data.unwrap().len(), 1);
    cluster.shutdown().await;
}

#[tokio::test]
async fn bodies_and_objects_are_bounded_as_in_kube_apiserver() {
    let cluster = cluster().await;
    let client = cluster.client();
    let big = |name: &str, bytes: usize| {
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"a": "x".repeat(bytes)}}))
        .unwrap()
    };
    // An Event's message has no limit of its own, so only the store's bounds it.
    let event = |name: &str, bytes: usize| {
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "message": "x".repeat(bytes)}))
        .unwrap()
    };
    let collection = "/api/v1/namespaces/default/configmaps";
    let events = "/api/v1/namespaces/default/events";
    let (code, status) = send(
        &client,
        Method::POST,
        collection,
        "application/json",
        big("huge", 3 << 20),
    )
    .await;
    assert_eq!(code, 413, "{status}");
    let (code, status) = send(
        &client,
        Method::POST,
        collection,
        "application/json",
        big("large", 1600 << 10),
    )
    .await;
    assert_eq!(code, 422, "a ConfigMap holds at most 1 MiB: {status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .contains("Too long: may not be more than 1048576 bytes"),
        "{status}"
    );
    let (code, status) = send(
        &client,
        Method::POST,
        events,
        "application/json",
        event("large", 1600 << 10),
    )
    .await;
    assert_eq!(code, 413, "{status}");
    let (code, status) = send(
        &client,
        Method::POST,
        events,
        "application/json",
        event("grown", 1 << 20),
    )
    .await;
    assert_eq!(code, 201, "{status}");
    let grow = json!({"message": "y".repeat((1 << 20) + (700 << 10))}).to_string();
    let (code, status) = send(
        &client,
        Method::PATCH,
        &format!("{events}/grown"),
        "application/merge-patch+json",
        grow,
    )
    .await;
    assert_eq!(code, 413, "{status}");
    cluster.shutdown().await;
}

#[tokio::test]
async fn type_metadata_media_types_and_names_are_checked() {
    let cluster = cluster().await;
    let client = cluster.client();
    settings(&client).await;
    let collection = "/api/v1/namespaces/default/configmaps";
    let numbered =
        json!({"apiVersion": 1, "kind": "ConfigMap", "metadata": {"name": "n"}}).to_string();
    let (code, status) = send(
        &client,
        Method::POST,
        collection,
        "application/json",
        numbered,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    let plain =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}}).to_string();
    let (code, status) = send(&client, Method::POST, collection, "text/plain", plain).await;
    assert_eq!(code, 415, "{status}");
    let renamed = json!({"metadata": {"name": "other"}}).to_string();
    let (code, status) = send(
        &client,
        Method::PATCH,
        CONFIGMAP,
        "application/merge-patch+json",
        renamed,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    let apply = "/api/v1/namespaces/default/configmaps/settings?fieldManager=test";
    let other_name =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}).to_string();
    let (code, status) = send(
        &client,
        Method::PATCH,
        apply,
        "application/apply-patch+yaml",
        other_name,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    let other_kind =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "settings"}}).to_string();
    let (code, status) = send(
        &client,
        Method::PATCH,
        apply,
        "application/apply-patch+yaml",
        other_kind,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), "default");
    assert!(configmaps.get_opt("other").await.unwrap().is_none());
    assert_eq!(settings(&client).await.data.unwrap()["a"], "b");
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_token_request_must_be_well_formed() {
    let cluster = cluster().await;
    let client = cluster.client();
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "bot"}})).unwrap();
    Api::<ServiceAccount>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &account)
        .await
        .expect("created");
    let uri = "/api/v1/namespaces/default/serviceaccounts/bot/token";
    for spec in [
        json!({"expirationSeconds": "abc"}),
        json!({"audiences": "x"}),
        json!(5),
    ] {
        let body =
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
        let (code, status) = send(
            &client,
            Method::POST,
            uri,
            "application/json",
            body.to_string(),
        )
        .await;
        assert_eq!(code, 400, "{spec}: {status}");
    }
    cluster.shutdown().await;
}
