//! Metadata-only answers (`as=PartialObjectMetadata` / `PartialObjectMetadataList`): GET, LIST, WATCH and PATCH
//! answer `meta.k8s.io/v1` objects that carry only `apiVersion`, `kind` and `metadata`, through kube-rs's metadata
//! API and on the wire; a form that does not fit the request, or an unknown `as=`, is refused with 406.

use futures::{StreamExt, TryStreamExt};
use http::Request;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use super::common::cluster;

const OBJECT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

async fn config_map(client: &Client, name: &str) {
    let object: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "data": {"secret-ish": "payload"}
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
}

/// `method` `path` with `accept` (and a merge patch `body` when there is one): status, `Content-Type`, JSON body.
async fn send(
    client: &Client,
    method: &str,
    path: &str,
    accept: &str,
    body: Option<Value>,
) -> (u16, String, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::ACCEPT, accept);
    if body.is_some() {
        request = request.header(http::header::CONTENT_TYPE, "application/merge-patch+json");
    }
    let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let response = client
        .send(request.body(body).unwrap().map(Into::into))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect_bytes().await.unwrap();
    (status, content_type, serde_json::from_slice(&body).unwrap())
}

/// Only type and metadata: no `data`, no `spec`, and the kind erased.
fn assert_partial(object: &Value) {
    assert_eq!(object["apiVersion"], "meta.k8s.io/v1", "{object}");
    assert_eq!(object["kind"], "PartialObjectMetadata", "{object}");
    let keys: Vec<&String> = object.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 3, "only apiVersion, kind, metadata: {object}");
    assert!(object["metadata"]["name"].is_string(), "{object}");
}

#[tokio::test]
async fn kube_rs_metadata_api_gets_only_metadata() {
    let cluster = cluster().await;
    let client = cluster.client();
    config_map(&client, "first").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let got = api.get_metadata("first").await.unwrap();
    assert_eq!(got.types.unwrap().kind, "PartialObjectMetadata");
    assert_eq!(got.metadata.labels.unwrap()["app"], "web");

    let listed = api.list_metadata(&Default::default()).await.unwrap();
    assert_eq!(listed.types.kind, "PartialObjectMetadataList");
    assert!(listed.metadata.resource_version.is_some());
    let first = listed
        .items
        .iter()
        .find(|i| i.metadata.name.as_deref() == Some("first"))
        .expect("first is listed");
    assert_eq!(first.types.as_ref().unwrap().kind, "PartialObjectMetadata");

    let patched = api
        .patch_metadata(
            "first",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.types.unwrap().kind, "PartialObjectMetadata");
    assert_eq!(patched.metadata.labels.unwrap()["tier"], "front");

    let mut events = api
        .watch_metadata(&WatchParams::default().timeout(10), "0")
        .await
        .unwrap()
        .boxed();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(object)) => {
            assert_eq!(object.types.unwrap().kind, "PartialObjectMetadata");
        }
        other => panic!("expected the first ADDED event, got {other:?}"),
    }
}

#[tokio::test]
async fn metadata_only_answers_on_the_wire() {
    let cluster = cluster().await;
    let client = cluster.client();
    config_map(&client, "wire").await;
    let path = "/api/v1/namespaces/default/configmaps/wire";

    let (status, content_type, got) = send(&client, "GET", path, OBJECT, None).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(content_type, OBJECT);
    assert_partial(&got);

    let (status, content_type, listed) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        LIST,
        None,
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(content_type, LIST);
    assert_eq!(listed["kind"], "PartialObjectMetadataList");
    assert_eq!(listed["apiVersion"], "meta.k8s.io/v1");
    assert!(listed["metadata"]["resourceVersion"].is_string());
    listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .for_each(assert_partial);

    let patch = json!({"metadata": {"annotations": {"seen": "yes"}}});
    let (status, _, patched) = send(&client, "PATCH", path, OBJECT, Some(patch)).await;
    assert_eq!(status, 200, "{patched}");
    assert_partial(&patched);
    assert_eq!(patched["metadata"]["annotations"]["seen"], "yes");

    let watch = "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&allowWatchBookmarks=true";
    let request = Request::get(watch)
        .header(http::header::ACCEPT, LIST)
        .body(Vec::new())
        .unwrap();
    let lines = client
        .request_events::<Value>(request)
        .await
        .unwrap()
        .take(1)
        .collect::<Vec<_>>()
        .await;
    match &lines[0] {
        Ok(WatchEvent::Added(object)) => assert_partial(object),
        other => panic!("expected an ADDED event, got {other:?}"),
    }
}

#[tokio::test]
async fn forms_that_do_not_fit_are_not_acceptable() {
    let cluster = cluster().await;
    let client = cluster.client();
    config_map(&client, "refused").await;
    let path = "/api/v1/namespaces/default/configmaps/refused";

    let (status, _, body) = send(&client, "GET", path, LIST, None).await;
    assert_eq!(status, 406, "a list form for one object: {body}");
    assert_eq!(body["reason"], "NotAcceptable");
    let (status, _, body) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        OBJECT,
        None,
    )
    .await;
    assert_eq!(status, 406, "one object's form for a list: {body}");

    let unknown = "application/json;as=Deployment;g=apps;v=v1";
    let (status, _, body) = send(&client, "GET", path, unknown, None).await;
    assert_eq!(status, 406, "an unknown as=: {body}");
    assert_eq!(body["kind"], "Status");
    let (status, _, body) = send(
        &client,
        "GET",
        path,
        &format!("{unknown}, application/json"),
        None,
    )
    .await;
    assert_eq!(status, 200, "plain JSON after it is acceptable: {body}");
    assert_eq!(body["kind"], "ConfigMap");
    assert_eq!(body["data"]["secret-ish"], "payload");

    let patch = json!({"metadata": {"annotations": {"refused": "yes"}}});
    let (status, _, _) = send(&client, "PATCH", path, LIST, Some(patch)).await;
    assert_eq!(status, 406);
    let (_, _, after) = send(&client, "GET", path, "application/json", None).await;
    assert!(
        after["metadata"]["annotations"]["refused"].is_null(),
        "a refused PATCH writes nothing: {after}"
    );
}
