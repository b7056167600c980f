//! Owner-reference garbage collection as the collector's dependency graph sees it: owner references that change
//! on update, many dependents of one owner, and dependents that name an owner already gone.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::common::{cluster, eventually};
use super::lifecycle::{cm, exists, owned_by};

fn reference(owner: &ConfigMap) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().unwrap(),
        uid: owner.metadata.uid.clone().unwrap(),
        ..Default::default()
    }
}

#[tokio::test]
async fn owner_references_changed_by_a_patch_are_followed() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let first = api
        .create(&PostParams::default(), &cm("first"))
        .await
        .unwrap();
    let second = api
        .create(&PostParams::default(), &cm("second"))
        .await
        .unwrap();
    let moved = api
        .create(&PostParams::default(), &owned_by("moved", &first))
        .await
        .unwrap();
    assert_eq!(moved.metadata.owner_references.unwrap().len(), 1);
    let adopted = api
        .create(&PostParams::default(), &cm("adopted"))
        .await
        .unwrap();
    assert!(adopted.metadata.owner_references.is_none());

    // "moved" now belongs to "second" only; "adopted" gains "first" as its owner.
    api.patch(
        "moved",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": [reference(&second)]}})),
    )
    .await
    .unwrap();
    api.patch(
        "adopted",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": [reference(&first)]}})),
    )
    .await
    .unwrap();

    api.delete("first", &DeleteParams::background())
        .await
        .unwrap();
    eventually(
        5,
        "the dependent adopted by a patch is collected",
        || async { !exists(&api, "adopted").await },
    )
    .await;
    assert!(
        exists(&api, "moved").await,
        "a dependent moved away by a patch stays with its new owner"
    );

    api.delete("second", &DeleteParams::background())
        .await
        .unwrap();
    eventually(5, "the moved dependent follows its new owner", || async {
        !exists(&api, "moved").await
    })
    .await;
}

#[tokio::test]
async fn every_dependent_of_a_deleted_owner_is_collected() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner"))
        .await
        .unwrap();
    let keeper = api
        .create(&PostParams::default(), &cm("keeper"))
        .await
        .unwrap();
    for i in 0..50 {
        api.create(
            &PostParams::default(),
            &owned_by(&format!("dep-{i}"), &owner),
        )
        .await
        .unwrap();
    }
    let kept = api
        .create(&PostParams::default(), &owned_by("kept", &keeper))
        .await
        .unwrap();
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    eventually(5, "all 50 dependents are collected", || async {
        let names: Vec<String> = api
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        names.iter().all(|n| !n.starts_with("dep-"))
    })
    .await;
    let still = api.get("kept").await.unwrap();
    assert_eq!(
        still.metadata.resource_version, kept.metadata.resource_version,
        "a dependent of another owner is left alone"
    );
}

#[tokio::test]
async fn a_dependent_created_after_its_owner_is_gone_is_collected() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let owner = api
        .create(&PostParams::default(), &cm("gone"))
        .await
        .unwrap();
    let live = api
        .create(&PostParams::default(), &cm("live"))
        .await
        .unwrap();
    api.delete("gone", &DeleteParams::background())
        .await
        .unwrap();
    assert!(!exists(&api, "gone").await);

    api.create(&PostParams::default(), &owned_by("late", &owner))
        .await
        .unwrap();
    let mut both = owned_by("late-shared", &owner);
    both.metadata
        .owner_references
        .as_mut()
        .unwrap()
        .push(reference(&live));
    api.create(&PostParams::default(), &both).await.unwrap();
    // Well within the periodic sweep's interval: the creation itself is acted on.
    eventually(
        5,
        "the dependent of a vanished owner is collected",
        || async { !exists(&api, "late").await },
    )
    .await;
    eventually(5, "the dangling reference is dropped", || async {
        api.get("late-shared")
            .await
            .unwrap()
            .metadata
            .owner_references
            .unwrap_or_default()
            .len()
            == 1
    })
    .await;
}
