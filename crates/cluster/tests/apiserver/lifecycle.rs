//! Deletion: finalizers, propagation policies, owner-reference garbage collection, namespace deletion; and the
//! small built-in subresources (logs, binding, events across both APIs, access reviews).

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod};
use k8s_openapi::api::events::v1::Event as NewEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, ObjectMeta, Patch, PatchParams, PostParams,
    PropagationPolicy,
};
use serde_json::json;

use super::common::{cluster, eventually};

/// A ConfigMap named `name` in the test's namespace, to own or be owned.
pub(super) fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A ConfigMap that names `owner` as its blocking owner.
pub(super) fn owned_by(name: &str, owner: &ConfigMap) -> ConfigMap {
    let mut c = cm(name);
    c.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().unwrap(),
        uid: owner.metadata.uid.clone().unwrap(),
        block_owner_deletion: Some(true),
        ..Default::default()
    }]);
    c
}

/// Whether the ConfigMap is stored.
pub(super) async fn exists(api: &Api<ConfigMap>, name: &str) -> bool {
    api.get_opt(name).await.unwrap().is_some()
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let mut held = cm("held");
    held.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    api.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = api.get("held").await.unwrap();
    assert!(
        marked.metadata.deletion_timestamp.is_some(),
        "marked for deletion"
    );
    // Kube-rs's finalizer helper removes finalizers with a JSON patch; the last one going removes the object.
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(!exists(&api, "held").await);
}

#[tokio::test]
async fn propagation_policies_and_garbage_collection() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");

    // Background: the owner goes at once, dependents follow.
    let owner = api
        .create(&PostParams::default(), &cm("bg-owner"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &owned_by("bg-dep", &owner))
        .await
        .unwrap();
    api.delete("bg-owner", &DeleteParams::background())
        .await
        .unwrap();
    assert!(!exists(&api, "bg-owner").await);
    eventually(5, "background dependents are collected", || async {
        !exists(&api, "bg-dep").await
    })
    .await;

    // Foreground: the owner waits (foregroundDeletion finalizer) until its dependents are gone.
    let owner = api
        .create(&PostParams::default(), &cm("fg-owner"))
        .await
        .unwrap();
    let mut dep = owned_by("fg-dep", &owner);
    dep.metadata.finalizers = Some(vec!["example.com/slow".into()]);
    api.create(&PostParams::default(), &dep).await.unwrap();
    api.delete("fg-owner", &DeleteParams::foreground())
        .await
        .unwrap();
    let waiting = api.get("fg-owner").await.unwrap();
    assert!(
        waiting
            .metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    eventually(5, "the dependent is being deleted", || async {
        api.get("fg-dep")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    })
    .await;
    assert!(
        exists(&api, "fg-owner").await,
        "the owner waits for its dependent"
    );
    api.patch(
        "fg-dep",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually(5, "the owner goes once its dependent is gone", || async {
        !exists(&api, "fg-owner").await
    })
    .await;

    // Orphan: dependents stay and lose the owner reference.
    let owner = api
        .create(&PostParams::default(), &cm("or-owner"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &owned_by("or-dep", &owner))
        .await
        .unwrap();
    api.delete(
        "or-owner",
        &DeleteParams {
            propagation_policy: Some(PropagationPolicy::Orphan),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    eventually(5, "the orphaning owner goes", || async {
        !exists(&api, "or-owner").await
    })
    .await;
    let orphan = api.get("or-dep").await.unwrap();
    assert!(
        orphan
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );

    // A dependent with another live owner only loses the reference to the deleted one.
    let a = api
        .create(&PostParams::default(), &cm("owner-a"))
        .await
        .unwrap();
    let b = api
        .create(&PostParams::default(), &cm("owner-b"))
        .await
        .unwrap();
    let mut shared = owned_by("shared", &a);
    shared
        .metadata
        .owner_references
        .as_mut()
        .unwrap()
        .extend(owned_by("x", &b).metadata.owner_references.unwrap());
    api.create(&PostParams::default(), &shared).await.unwrap();
    api.delete("owner-a", &DeleteParams::default())
        .await
        .unwrap();
    eventually(5, "the dangling reference is removed", || async {
        api.get("shared")
            .await
            .unwrap()
            .metadata
            .owner_references
            .unwrap_or_default()
            .len()
            == 1
    })
    .await;
    assert!(exists(&api, "shared").await);
}

#[tokio::test]
async fn deleting_a_namespace_removes_its_content() {
    let cluster = cluster().await;
    let namespaces: Api<Namespace> = Api::all(cluster.client());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some("team".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let ns = namespaces.get("team").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "team");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await
            .unwrap();
    }
    let mut held = cm("held");
    held.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    namespaces
        .delete("team", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = namespaces.get("team").await.unwrap();
    assert_eq!(
        terminating.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    let err = api
        .create(&PostParams::default(), &cm("late"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403),
        "{err:?}"
    );
    eventually(5, "everything without a finalizer is gone", || async {
        api.list(&ListParams::default()).await.unwrap().items.len() == 1
    })
    .await;
    assert!(
        api.get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    assert!(
        namespaces.get_opt("team").await.unwrap().is_some(),
        "the namespace waits for the held object"
    );
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually(5, "the namespace and its content are gone", || async {
        namespaces.get_opt("team").await.unwrap().is_none()
    })
    .await;
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn pod_logs_binding_events_and_access_reviews() {
    let cluster = cluster().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "worker"}, "spec": {"containers": [{"name": "kmod", "image": "quay.io/x/kmod:1"}]}})).unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    for line in ["loading module", "module loaded"] {
        cluster
            .server()
            .logs()
            .append("default", "worker", "kmod", "2026-01-01T00:00:00Z", line);
    }
    assert_eq!(
        pods.logs("worker", &LogParams::default()).await.unwrap(),
        "loading module\nmodule loaded\n"
    );
    assert_eq!(
        pods.logs(
            "worker",
            &LogParams {
                tail_lines: Some(1),
                ..Default::default()
            }
        )
        .await
        .unwrap(),
        "module loaded\n"
    );

    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "worker"}, "target": {"kind": "Node", "name": "worker-1"}});
    let request = http::Request::post("/api/v1/namespaces/default/pods/worker/binding")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&binding).unwrap())
        .unwrap();
    cluster
        .client()
        .request::<serde_json::Value>(request)
        .await
        .unwrap();
    assert_eq!(
        pods.get("worker")
            .await
            .unwrap()
            .spec
            .unwrap()
            .node_name
            .as_deref(),
        Some("worker-1")
    );

    // An event recorded through events.k8s.io/v1 (as kube-rs's Recorder does) is visible as a core event.
    let new_events: Api<NewEvent> = Api::namespaced(cluster.client(), "default");
    let event: NewEvent = serde_json::from_value(json!({
        "metadata": {"name": "worker.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "name": "worker", "namespace": "default"},
        "reason": "Loaded", "note": "module loaded", "type": "Normal", "action": "Load",
        "reportingController": "kmm-tui", "reportingInstance": "kmm-tui-1"
    }))
    .unwrap();
    new_events
        .create(&PostParams::default(), &event)
        .await
        .unwrap();
    let core: Api<Event> = Api::namespaced(cluster.client(), "default");
    let seen = core
        .list(&ListParams::default().fields("involvedObject.name=worker"))
        .await
        .unwrap();
    assert_eq!(seen.items.len(), 1);
    assert_eq!(seen.items[0].message.as_deref(), Some("module loaded"));
    assert_eq!(
        new_events.get("worker.1").await.unwrap().note.as_deref(),
        Some("module loaded")
    );

    let reviews: Api<SelfSubjectAccessReview> = Api::all(cluster.client());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some("patch".into()),
                resource: Some("modules".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = reviews
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    assert!(answer.status.unwrap().allowed);
    tokio::time::sleep(Duration::from_millis(1)).await;
}
