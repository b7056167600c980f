//! Aggregated discovery: `/api` and `/apis` answer `apidiscovery.k8s.io` `APIGroupDiscoveryList` to clients that
//! ask for it (kube-rs's aggregated calls and `Discovery::run_aggregated`, kubectl), the classic lists to clients
//! that ask for plain JSON, the first acceptable form of an `Accept` list, and 406 when none is acceptable.

use http::Request;
use kube::Client;
use kube::discovery::{Discovery, verbs};
use serde_json::Value;

use super::common::cluster;

const V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const V2BETA1: &str = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// GET `path` with `accept`: the status, the `Content-Type` and the body as JSON.
async fn get(client: &Client, path: &str, accept: &str) -> (u16, String, Value) {
    let request = Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .unwrap();
    let response = client.send(request.map(Into::into)).await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect_bytes().await.unwrap();
    (status, content_type, serde_json::from_slice(&body).unwrap())
}

fn find<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .find(|item| item.pointer(key).and_then(Value::as_str) == Some(value))
        .unwrap_or_else(|| panic!("no {key}={value} in {list}"))
}

#[tokio::test]
async fn kube_rs_reads_every_group_from_aggregated_discovery() {
    let cluster = cluster().await;
    let client = cluster.client();

    let apis = client.list_api_groups_aggregated().await.unwrap();
    let apps = apis
        .items
        .iter()
        .find(|g| g.metadata.as_ref().and_then(|m| m.name.as_deref()) == Some("apps"))
        .expect("the apps group");
    let v1 = apps
        .versions
        .iter()
        .find(|v| v.version.as_deref() == Some("v1"))
        .expect("apps/v1");
    assert!(
        v1.resources
            .iter()
            .any(|r| r.resource.as_deref() == Some("deployments"))
    );

    let core = client.list_core_api_versions_aggregated().await.unwrap();
    let core_v1 = core.items[0]
        .versions
        .iter()
        .find(|v| v.version.as_deref() == Some("v1"))
        .expect("core v1");
    let pods = core_v1
        .resources
        .iter()
        .find(|r| r.resource.as_deref() == Some("pods"))
        .expect("pods");
    assert_eq!(pods.scope.as_deref(), Some("Namespaced"));
    assert!(pods.verbs.iter().any(|v| v == "list"));

    let discovery = Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    assert!(discovery.has_group("") && discovery.has_group("apps"));
    assert!(
        discovery.has_group("kmm.sigs.x-k8s.io"),
        "the project's CRDs"
    );
    let (resource, capabilities) = discovery
        .get("apps")
        .unwrap()
        .recommended_kind("Deployment")
        .unwrap();
    assert_eq!(resource.plural, "deployments");
    assert!(capabilities.supports_operation(verbs::LIST));
    let (_, capabilities) = discovery.get("").unwrap().recommended_kind("Pod").unwrap();
    assert!(capabilities.supports_operation(verbs::GET));
    assert!(
        capabilities
            .subresources
            .iter()
            .any(|(r, _)| r.plural == "log")
    );
}

#[tokio::test]
async fn aggregated_documents_describe_resources_as_kube_apiserver_does() {
    let cluster = cluster().await;
    let client = cluster.client();

    let (status, content_type, apis) = get(&client, "/apis", V2).await;
    assert_eq!(status, 200, "{apis}");
    assert_eq!(content_type, V2);
    assert_eq!(apis["kind"], "APIGroupDiscoveryList");
    assert_eq!(apis["apiVersion"], "apidiscovery.k8s.io/v2");
    let apps = find(&apis["items"], "/metadata/name", "apps");
    let v1 = &apps["versions"][0];
    assert_eq!(v1["version"], "v1");
    assert_eq!(v1["freshness"], "Current");
    let deployments = find(&v1["resources"], "/resource", "deployments");
    assert_eq!(deployments["scope"], "Namespaced");
    assert_eq!(deployments["singularResource"], "deployment");
    assert_eq!(deployments["responseKind"]["group"], "apps");
    assert_eq!(deployments["responseKind"]["version"], "v1");
    assert_eq!(deployments["responseKind"]["kind"], "Deployment");
    assert_eq!(deployments["shortNames"], serde_json::json!(["deploy"]));
    assert_eq!(deployments["categories"], serde_json::json!(["all"]));
    assert!(deployments["verbs"].as_array().unwrap().len() >= 7);
    let status_sub = find(&deployments["subresources"], "/subresource", "status");
    assert_eq!(status_sub["responseKind"]["kind"], "Deployment");
    assert_eq!(
        status_sub["verbs"],
        serde_json::json!(["get", "patch", "update"])
    );
    assert!(
        apis["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["metadata"]["name"] != ""),
        "no core group under /apis"
    );

    let (status, content_type, core) = get(&client, "/api", V2BETA1).await;
    assert_eq!(status, 200, "{core}");
    assert_eq!(content_type, V2BETA1);
    assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    assert_eq!(core["items"].as_array().unwrap().len(), 1);
    assert!(core["items"][0]["metadata"].get("name").is_none());
    let namespaces = find(
        &core["items"][0]["versions"][0]["resources"],
        "/resource",
        "namespaces",
    );
    assert_eq!(namespaces["scope"], "Cluster");
    assert!(find(&namespaces["subresources"], "/subresource", "finalize").is_object());
    let pods = find(
        &core["items"][0]["versions"][0]["resources"],
        "/resource",
        "pods",
    );
    let log = find(&pods["subresources"], "/subresource", "log");
    assert_eq!(log["responseKind"]["kind"], "Pod");
    assert_eq!(log["verbs"], serde_json::json!(["get"]));
}

#[tokio::test]
async fn the_accept_header_chooses_between_classic_and_aggregated() {
    let cluster = cluster().await;
    let client = cluster.client();

    let (_, content_type, classic) = get(&client, "/apis", "application/json").await;
    assert_eq!(classic["kind"], "APIGroupList");
    assert!(content_type.starts_with("application/json"));
    let (_, _, classic) = get(&client, "/api", "application/json").await;
    assert_eq!(classic["kind"], "APIVersions");

    let (_, _, first) = get(&client, "/apis", &format!("application/json, {V2}")).await;
    assert_eq!(first["kind"], "APIGroupList", "plain JSON listed first");
    let (_, _, first) = get(&client, "/apis", &format!("{V2}, application/json")).await;
    assert_eq!(first["kind"], "APIGroupDiscoveryList");
    let unknown = "application/json;g=apidiscovery.k8s.io;v=v9;as=APIGroupDiscoveryList";
    let (_, _, fallback) = get(&client, "/apis", &format!("{unknown}, {V2BETA1}")).await;
    assert_eq!(fallback["apiVersion"], "apidiscovery.k8s.io/v2beta1");

    let (status, _, refused) = get(&client, "/apis", unknown).await;
    assert_eq!(status, 406, "{refused}");
    assert_eq!(refused["kind"], "Status");
    assert_eq!(refused["reason"], "NotAcceptable");
}
