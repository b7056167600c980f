//! Create, get, list, update, delete; names; optimistic concurrency; malformed requests.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;

use super::common::cluster;

fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Default::default()
    }
}

#[tokio::test]
async fn typed_round_trip_sets_server_metadata() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let created = api
        .create(
            &PostParams::default(),
            &configmap("settings", &[("a", "1")]),
        )
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.as_ref().is_some_and(|u| u.len() == 36));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    let rv: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();
    assert!(rv > 0);

    let fetched = api.get("settings").await.unwrap();
    assert_eq!(fetched.data.unwrap()["a"], "1");

    let mut changed = created.clone();
    changed.data = Some([("a".to_string(), "2".to_string())].into());
    let updated = api
        .replace("settings", &PostParams::default(), &changed)
        .await
        .unwrap();
    let rv2: u64 = updated
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv, "resourceVersion grows: {rv} -> {rv2}");

    // Beside the namespace's root CA, which every namespace has.
    let list = api.list(&ListParams::default()).await.unwrap();
    let listed: Vec<_> = list
        .items
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .collect();
    assert_eq!(listed, ["kube-root-ca.crt", "settings"]);
    assert!(list.metadata.resource_version.is_some());

    api.delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    let err = api.get("settings").await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404 && s.reason == "NotFound"),
        "{err:?}"
    );
}

#[tokio::test]
async fn stale_update_conflicts_and_retry_loop_converges() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    api.create(&PostParams::default(), &configmap("counter", &[("n", "0")]))
        .await
        .unwrap();
    let stale = api.get("counter").await.unwrap();
    let mut first = stale.clone();
    first.data = Some([("n".to_string(), "1".to_string())].into());
    api.replace("counter", &PostParams::default(), &first)
        .await
        .unwrap();
    let err = api
        .replace("counter", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "Conflict"),
        "{err:?}"
    );

    // Eight writers each add 10 with read-modify-write and retry on 409: no increment may be lost.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let api = api.clone();
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0;
            for _ in 0..10 {
                loop {
                    let mut cm = api.get("counter").await.unwrap();
                    let n: u64 = cm.data.as_ref().unwrap()["n"].parse().unwrap();
                    cm.data = Some([("n".to_string(), (n + 1).to_string())].into());
                    match api.replace("counter", &PostParams::default(), &cm).await {
                        Ok(_) => break,
                        Err(kube::Error::Api(s)) if s.code == 409 => conflicts += 1,
                        Err(e) => panic!("unexpected error: {e}"),
                    }
                }
            }
            conflicts
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let n: u64 = api.get("counter").await.unwrap().data.unwrap()["n"]
        .parse()
        .unwrap();
    assert_eq!(n, 81);
}

#[tokio::test]
async fn names_are_validated_generated_and_unique() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let mut generated = configmap("", &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("pull-".into());
    let a = api
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let b = api
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let (a, b) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(a.starts_with("pull-") && a.len() == 10 && a != b, "{a} {b}");

    api.create(&PostParams::default(), &configmap("dup", &[]))
        .await
        .unwrap();
    let err = api
        .create(&PostParams::default(), &configmap("dup", &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err:?}"
    );

    let err = api
        .create(&PostParams::default(), &configmap("Not_Valid", &[]))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error")
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status.message.contains("metadata.name"),
        "{}",
        status.message
    );

    let missing: Api<ConfigMap> = Api::namespaced(cluster.client(), "nowhere");
    let err = missing
        .create(&PostParams::default(), &configmap("x", &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err:?}"
    );
}

#[tokio::test]
async fn dynamic_objects_and_dry_run() {
    let cluster = cluster().await;
    let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
    let api: Api<DynamicObject> =
        Api::namespaced_with(cluster.client(), "default", &ApiResource::from_gvk(&gvk));
    let obj: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"}, "data": {"k": "v"}
    }))
    .unwrap();
    let dry = api
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &obj,
        )
        .await
        .unwrap();
    assert_eq!(dry.data["data"]["k"], "v");
    assert!(
        api.get_opt("dyn").await.unwrap().is_none(),
        "dry run stores nothing"
    );
    api.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(api.get("dyn").await.unwrap().data["data"]["k"], "v");
}

#[tokio::test]
async fn malformed_requests_get_400_and_the_server_keeps_serving() {
    let cluster = cluster().await;
    let client = cluster.client();
    let bodies: [&[u8]; 5] = [
        b"{not json",
        b"[1,2,3]",
        b"",
        b"\xff\xfe",
        b"{\"metadata\": 5}",
    ];
    for body in bodies {
        let request = http::Request::post("/api/v1/namespaces/default/configmaps")
            .header("content-type", "application/json")
            .body(body.to_vec())
            .unwrap();
        let err = client.request::<ConfigMap>(request).await.unwrap_err();
        let kube::Error::Api(status) = err else {
            panic!("expected an API error for {body:?}, got {err:?}")
        };
        assert_eq!(status.code, 400, "{body:?}: {}", status.message);
    }
    let request = http::Request::get("/api/v1/namespaces/default/configmaps?limit=abc")
        .body(Vec::new())
        .unwrap();
    let err = client
        .request::<serde_json::Value>(request)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 400),
        "{err:?}"
    );
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let err = pods
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                serde_json::json!({"metadata": {"name": "p"}, "spec": {"containers": []}}),
            )
            .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422 && s.message.contains("spec.containers")),
        "{err:?}"
    );
    let namespaces: Api<Namespace> = Api::all(cluster.client());
    assert!(namespaces.get("default").await.is_ok(), "still serving");
}
