//! The four patch types, server-side apply with field ownership, generation and the status subresource.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use super::common::cluster;

fn deployment() -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "app", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}]},
                    {"name": "sidecar", "image": "busybox:1"}
                ]}
            }
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn merge_json_and_strategic_patches() {
    let cluster = cluster().await;
    let api: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    api.create(&PostParams::default(), &deployment())
        .await
        .unwrap();

    // Strategic merge: containers merge by name, env by name.
    let smp = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}]}}}});
    let d = api
        .patch("web", &PatchParams::default(), &Patch::Strategic(smp))
        .await
        .unwrap();
    let containers = d.spec.unwrap().template.spec.unwrap().containers;
    assert_eq!(
        containers.len(),
        2,
        "the sidecar survives a strategic merge"
    );
    let env: Vec<String> = containers[0]
        .env
        .clone()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    // Without `$setElementOrder`, kube-apiserver places the items a patch adds before the existing ones.
    assert_eq!(env, ["B", "A"]);

    // JSON merge patch: lists are replaced wholesale.
    let merge = json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "nginx:1.26"}]}}}});
    let d = api
        .patch("web", &PatchParams::default(), &Patch::Merge(merge))
        .await
        .unwrap();
    assert_eq!(d.spec.unwrap().template.spec.unwrap().containers.len(), 1);

    // JSON patch, including a failing test operation.
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/metadata/labels", "value": {"tier": "front"}}
    ]))
    .unwrap();
    let d = api
        .patch("web", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await
        .unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(3));
    assert_eq!(d.metadata.labels.unwrap()["tier"], "front");
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/spec/replicas", "value": 7}]))
            .unwrap();
    let err = api
        .patch("web", &PatchParams::default(), &Patch::<()>::Json(failing))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422),
        "{err:?}"
    );
}

#[tokio::test]
async fn server_side_apply_owns_fields_and_reports_conflicts() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": {"a": "1", "b": "2"}});
    let created = api
        .patch(
            "owned",
            &PatchParams::apply("alice"),
            &Patch::Apply(&config),
        )
        .await
        .unwrap();
    let managers: Vec<String> = created
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, ["alice"]);

    // Applying the same configuration again changes nothing.
    let again = api
        .patch(
            "owned",
            &PatchParams::apply("alice"),
            &Patch::Apply(&config),
        )
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        created.metadata.resource_version
    );

    // Bob applying a different value for alice's field conflicts, unless forced.
    let bob = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": {"a": "9"}});
    let err = api
        .patch("owned", &PatchParams::apply("bob"), &Patch::Apply(&bob))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a conflict")
    };
    assert_eq!(status.code, 409);
    assert!(
        status.message.contains("alice") && status.message.contains("data.a"),
        "{}",
        status.message
    );
    let forced = api
        .patch(
            "owned",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(&bob),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "9");

    // Alice stops applying b: it is removed because nobody else owns it; a (now bob's) stays.
    let alice =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": {}});
    let after = api
        .patch("owned", &PatchParams::apply("alice"), &Patch::Apply(&alice))
        .await
        .unwrap();
    let data = after.data.unwrap_or_default();
    assert_eq!(data.get("a").map(String::as_str), Some("9"));
    assert!(!data.contains_key("b"), "{data:?}");

    let err = api
        .patch("owned", &PatchParams::default(), &Patch::Apply(&alice))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 400),
        "apply without a field manager: {err:?}"
    );
}

#[tokio::test]
async fn generation_moves_on_spec_changes_and_status_is_a_subresource() {
    let cluster = cluster().await;
    let api: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let mut with_status = deployment();
    with_status.status = Some(serde_json::from_value(json!({"replicas": 5})).unwrap());
    let d = api
        .create(&PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(1));
    assert!(d.status.is_none(), "status is ignored on create");

    let d = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        d.metadata.generation,
        Some(1),
        "metadata changes leave generation alone"
    );
    let d = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(2));

    let d = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 7}})),
        )
        .await
        .unwrap();
    assert!(d.status.is_none(), "the main endpoint ignores status");
    let d = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 7}, "spec": {"replicas": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(d.status.unwrap().replicas, Some(7));
    assert_eq!(d.spec.unwrap().replicas, Some(2), "/status ignores spec");
    assert_eq!(
        d.metadata.generation,
        Some(2),
        "status changes leave generation alone"
    );
}

/// The managers of an object's managedFields entries, in order.
fn managers(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.manager.clone())
        .collect()
}

#[tokio::test]
async fn managed_fields_survive_every_kind_of_write_and_read_back_identically() {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::{DeleteParams, ListParams, WatchEvent, WatchParams};

    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let created = api
        .create(
            &PostParams {
                field_manager: Some("creator".into()),
                ..PostParams::default()
            },
            &serde_json::from_value(json!({
                "metadata": {"name": "owned", "labels": {"team": "a"}},
                "data": {"created": "1"}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(managers(&created), ["creator"]);
    let applied = api
        .patch(
            "owned",
            &PatchParams::apply("applier"),
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "owned"}, "data": {"applied": "2"}
            })),
        )
        .await
        .unwrap();
    assert_eq!(managers(&applied), ["applier", "creator"]);

    // GET, LIST and a watch's initial event read the same entries back.
    let got = api.get("owned").await.unwrap();
    assert_eq!(got.metadata.managed_fields, applied.metadata.managed_fields);
    let listed = api.list(&ListParams::default()).await.unwrap();
    let listed = listed
        .items
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some("owned"))
        .unwrap();
    assert_eq!(
        listed.metadata.managed_fields,
        applied.metadata.managed_fields
    );
    let mut events = api
        .watch(&WatchParams::default().fields("metadata.name=owned"), "0")
        .await
        .unwrap()
        .boxed();
    let Some(WatchEvent::Added(watched)) = events.try_next().await.unwrap() else {
        panic!("the watch starts with the object");
    };
    assert_eq!(
        watched.metadata.managed_fields,
        applied.metadata.managed_fields
    );

    // A patch of another manager keeps the earlier entries and adds its own.
    let patched = api
        .patch(
            "owned",
            &PatchParams {
                field_manager: Some("patcher".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"data": {"patched": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(managers(&patched), ["applier", "creator", "patcher"]);
    assert_eq!(
        patched.metadata.managed_fields.as_ref().unwrap()[..2],
        applied.metadata.managed_fields.as_ref().unwrap()[..]
    );

    // The server's own writes (marking for deletion behind a finalizer) keep them too.
    api.patch(
        "owned",
        &PatchParams {
            field_manager: Some("patcher".into()),
            ..PatchParams::default()
        },
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold"]}})),
    )
    .await
    .unwrap();
    let held = api.get("owned").await.unwrap();
    api.delete("owned", &DeleteParams::default()).await.unwrap();
    let terminating = api.get("owned").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(
        terminating.metadata.managed_fields,
        held.metadata.managed_fields
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_patches_without_a_resource_version_never_conflict() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "shared"}})).unwrap(),
        )
        .await
        .unwrap();
    // Eight writers patch their own keys of one object at once: each race is retried by the server, as
    // kube-apiserver does, so none of them sees a 409 and every write lands.
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let api = api.clone();
            tokio::spawn(async move {
                for round in 0..20 {
                    let patch = json!({"data": {format!("w{writer}"): round.to_string()}});
                    api.patch("shared", &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .unwrap_or_else(|e| panic!("writer {writer}, round {round}: {e}"));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let data = api.get("shared").await.unwrap().data.unwrap();
    assert!((0..8).all(|w| data[&format!("w{w}")] == "19"), "{data:?}");
    // A patch that carries a resourceVersion is guarded by it.
    let stale = json!({"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"late": "1"}});
    let error = api
        .patch("shared", &PatchParams::default(), &Patch::Merge(&stale))
        .await
        .unwrap_err();
    assert!(
        matches!(error, kube::Error::Api(ref s) if s.code == 409),
        "{error:?}"
    );
}

/// Patches that would leave no object behind (a merge patch of `null`, `metadata` removed, the root deleted or
/// replaced by a strategic directive) or that order a map as a list are refused, and the object stays as it was.
#[tokio::test]
async fn patches_that_unmake_the_object_are_refused_and_change_nothing() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let original: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "whole", "labels": {"a": "1", "b": "2"}},
        "data": {"key": "value"},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &original).await.unwrap();
    let patches = [
        ("merge null", Patch::Merge(serde_json::Value::Null)),
        (
            "merge metadata null",
            Patch::Merge(json!({"metadata": null})),
        ),
        (
            "json remove /metadata",
            Patch::Json(
                serde_json::from_value(json!([{"op": "remove", "path": "/metadata"}])).unwrap(),
            ),
        ),
        (
            "strategic root delete",
            Patch::Strategic(json!({"$patch": "delete"})),
        ),
        (
            "strategic root replace",
            Patch::Strategic(json!({"$patch": "replace", "data": {"other": "x"}})),
        ),
        (
            "strategic order of a map",
            Patch::Strategic(
                json!({"metadata": {"$setElementOrder/labels": [{"b": "2"}, {"a": "1"}]}}),
            ),
        ),
    ];
    for (what, patch) in patches {
        match api.patch("whole", &PatchParams::default(), &patch).await {
            Err(kube::Error::Api(status)) => assert!(
                status.code == 400 || status.code == 422,
                "{what}: refused as a bad request, not {status:?}"
            ),
            other => panic!("{what}: refused, not {other:?}"),
        }
        let now = api.get("whole").await.unwrap();
        assert_eq!(
            now.metadata.resource_version, created.metadata.resource_version,
            "{what}: nothing was written"
        );
        assert_eq!(now.data, created.data, "{what}");
    }
}
