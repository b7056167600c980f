//! Error bodies are byte for byte what kube-apiserver writes: the Status's fields in its order (`code` last, after
//! `details`), empty detail fields left out, and a trailing newline; some clients compare them as text.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::BodyExt;
use kube::Client;

use super::common::cluster;

/// The raw body of one request's answer.
async fn raw(client: &Client, method: Method, uri: &str, body: &str) -> (u16, String) {
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
    (status, String::from_utf8(bytes.to_vec()).expect("text"))
}

#[tokio::test]
async fn error_bodies_are_kube_apiservers_byte_for_byte() {
    let cluster = cluster().await;
    let client = cluster.client();
    let (code, body) = raw(
        &client,
        Method::GET,
        "/api/v1/namespaces/default/pods/missing",
        "",
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"pods \\\"missing\\\" not found\",\"reason\":\"NotFound\",\
         \"details\":{\"name\":\"missing\",\"kind\":\"pods\"},\"code\":404}\n"
    );
    let (code, body) = raw(
        &client,
        Method::GET,
        "/apis/apps/v1/namespaces/default/deployments/missing",
        "",
    )
    .await;
    assert_eq!(code, 404);
    assert!(
        body.contains("\"details\":{\"name\":\"missing\",\"group\":\"apps\",\"kind\":\"deployments\"},\"code\":404}\n"),
        "{body}"
    );
    let lease = r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"leaseDurationSeconds":0}}"#;
    let (code, body) = raw(
        &client,
        Method::POST,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        lease,
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"Lease.coordination.k8s.io \\\"l\\\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0\",\
         \"reason\":\"Invalid\",\"details\":{\"name\":\"l\",\"group\":\"coordination.k8s.io\",\"kind\":\"Lease\",\
         \"causes\":[{\"reason\":\"FieldValueInvalid\",\"message\":\"Invalid value: 0: must be greater than 0\",\
         \"field\":\"spec.leaseDurationSeconds\"}]},\"code\":422}\n"
    );
    cluster.shutdown().await;
}
