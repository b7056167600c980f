//! Boolean query parameters read as kube-apiserver reads them: only `false` (any case) and `0` are false, so the
//! Python client's `watch=True` opens a watch rather than listing.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

use crate::common::cluster;

/// The first line of a GET's body: a watch starts with one event per line, a list is one JSON document.
async fn first_line(client: &kube::Client, query: &str) -> serde_json::Value {
    let request = http::Request::get(format!(
        "/api/v1/namespaces/default/configmaps?{query}&fieldSelector=metadata.name%3Dseen&timeoutSeconds=1"
    ))
    .body(Vec::new())
    .unwrap();
    let text = client
        .request_text(request)
        .await
        .expect("the GET succeeds");
    let line = text.lines().next().expect("a non-empty answer");
    serde_json::from_str(line).expect("a JSON line")
}

#[tokio::test]
async fn watch_flags_are_read_as_kube_apiserver_reads_them() {
    let cluster = cluster().await;
    let client = cluster.client();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let map = serde_json::from_value(serde_json::json!({"metadata": {"name": "seen"}})).unwrap();
    maps.create(&PostParams::default(), &map).await.unwrap();

    for truthy in [
        "watch=true",
        "watch=True",
        "watch=TRUE",
        "watch=1",
        "watch=t",
        "watch=",
    ] {
        let line = first_line(&client, truthy).await;
        assert_eq!(line["type"], "ADDED", "{truthy} opens a watch: {line}");
        assert_eq!(line["object"]["metadata"]["name"], "seen", "{truthy}");
    }
    for falsy in ["watch=false", "watch=False", "watch=0"] {
        let line = first_line(&client, falsy).await;
        assert_eq!(line["kind"], "ConfigMapList", "{falsy} lists: {line}");
    }
}
