//! Upstream operators on the embedded cluster: where an administrator installed the upstream KMM operator (its
//! leader-election Lease held beside its Deployment, whose ServiceAccount a ClusterRoleBinding names), or
//! kube-fledged (its Deployment so bound), the engine leaves that family alone, records why on the Deployment, and
//! takes the family up once the operator is gone. Look-alikes a namespace's own editors can create (a Deployment of
//! the operator's image, a held Lease of its name, a RoleBinding) leave every family to the engine.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kmm_api::imagecache::{ImageCache, ImageCacheActionStatus};
use kmm_engine::runtime::operators;
use kmm_engine::{Family, Settings};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::common::{Harness, eventually, wait_for};
use super::kmm::{condition, create_module, mic};

/// The image of kube-fledged's controller, as its manifests publish it.
const FLEDGED_IMAGE: &str = "docker.io/senthilrch/kubefledged-controller:v0.10.0";

/// A leader-election Lease named `name` in `namespace`, held by `holder` and renewed now.
fn held_lease(namespace: &str, name: &str, holder: &str) -> Lease {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 137,
                 "renewTime": jiff::Timestamp::now().to_string()}
    }))
    .expect("a Lease")
}

/// A one-replica Deployment `namespace/name` whose pods run `images` as `account` (the namespace's `default` when
/// `None`).
fn deployment(namespace: &str, name: &str, images: &[&str], account: Option<&str>) -> Deployment {
    let containers: Vec<_> = images
        .iter()
        .enumerate()
        .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"serviceAccountName": account, "containers": containers}
            }
        }
    }))
    .expect("a Deployment")
}

/// What an administrator installs for an operator: its ServiceAccount, a ClusterRole, the ClusterRoleBinding that
/// grants it to the account (all named `name`), and the Deployment running `image` as that account.
async fn install(client: &Client, namespace: &str, name: &str, image: &str) {
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": namespace}}))
            .expect("a ServiceAccount");
    Api::<ServiceAccount>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &account)
        .await
        .expect("the ServiceAccount is created");
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    }))
    .expect("a ClusterRole");
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &role)
        .await
        .expect("the ClusterRole is created");
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    }))
    .expect("a ClusterRoleBinding");
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("the ClusterRoleBinding is created");
    Api::<Deployment>::namespaced(client.clone(), namespace)
        .create(
            &PostParams::default(),
            &deployment(namespace, name, &[image], Some(name)),
        )
        .await
        .expect("the Deployment is created");
}

/// The cache family alone, as the engine runs it.
fn start_caches(harness: &mut Harness) {
    let settings = Settings {
        families: BTreeSet::from([Family::Caches]),
        ..Settings::default()
    };
    harness.start_with(move |context, stop| {
        kmm_engine::run_reconcilers(Arc::new((*context).clone().with_settings(settings)), stop)
    });
}

/// Create the ImageCache `caches/<name>` of one image on every node.
async fn create_cache(client: &Client, name: &str) {
    let cache: ImageCache = serde_json::from_value(json!({
        "apiVersion": "kubefledged.io/v1alpha2",
        "kind": "ImageCache",
        "metadata": {"name": name, "namespace": "caches"},
        "spec": {"cacheSpec": [{"images": ["docker.io/library/nginx:1.27"]}]},
    }))
    .expect("a cache");
    Api::<ImageCache>::namespaced(client.clone(), "caches")
        .create(&PostParams::default(), &cache)
        .await
        .expect("the cache is created");
}

/// Whether the ImageCache `caches/<name>` has any status, and whether it succeeded.
async fn cache_status(client: &Client, name: &str) -> (bool, bool) {
    let status = Api::<ImageCache>::namespaced(client.clone(), "caches")
        .get(name)
        .await
        .expect("the cache")
        .status;
    (
        status.is_some(),
        status.is_some_and(|s| s.status == ImageCacheActionStatus::Succeeded),
    )
}

/// The notes of the Events with `reason` in `namespace`.
async fn events(client: &Client, namespace: &str, reason: &str) -> Vec<String> {
    Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .expect("listing events")
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some(reason))
        .filter_map(|event| event.note)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_engine_leaves_kmm_to_an_upstream_operator_and_takes_it_up_when_it_goes() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    let client = harness.client();
    // A mirrored image: the held Lease beside the bound Deployment is what tells the operator.
    install(
        &client,
        "kube-system",
        "kmm-operator-controller",
        "mirror.example/kmm/kernel-module-management-rhel9-operator:v2.4",
    )
    .await;
    let leases = Api::<Lease>::namespaced(client.clone(), "kube-system");
    leases
        .create(
            &PostParams::default(),
            &held_lease(
                "kube-system",
                "kmm.sigs.x-k8s.io",
                "kmm-operator-controller-5b7c9_0f1e",
            ),
        )
        .await
        .expect("the upstream Lease is created");
    harness.start_engine();
    create_module(
        &harness,
        "kmod",
        json!({
            "selector": {"kmm": "yes"},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "acme_kmod"},
                "kernelMappings": [
                    {"regexp": "^.+$", "containerImage": "quay.io/acme/kmod:${KERNEL_FULL_VERSION}"}
                ]
            }}
        }),
    )
    .await;
    // Long enough for the engine to have acted many times over, had it run KMM.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(
        mic(&harness, "kmod").await.is_none(),
        "the engine acted on a Module the upstream operator owns"
    );
    assert!(condition(&harness, "kmod", "Available").await.is_none());
    assert_eq!(
        events(&client, "kube-system", "LeftToUpstreamOperator").await,
        [
            "kmm-tui leaves the kmm family to upstream KMM operator: Lease kube-system/kmm.sigs.x-k8s.io \
          held by kmm-operator-controller-5b7c9_0f1e; Deployment kube-system/kmm-operator-controller runs \
          as kmm-operator-controller, bound by ClusterRoleBinding kmm-operator-controller"
        ]
    );

    // The operator is gone: its Lease is deleted, and the engine takes the Module.
    leases
        .delete("kmm.sigs.x-k8s.io", &DeleteParams::default())
        .await
        .expect("the upstream Lease is deleted");
    eventually(300, "kmod Available under kmm-tui", || async {
        condition(&harness, "kmod", "Available")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn decoys_in_a_tenant_namespace_leave_every_family_to_the_engine() {
    let mut harness = Harness::start("imagecache.yaml").await;
    let client = harness.client();
    let tenant: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "tenant"}})).expect("a Namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &tenant)
        .await
        .expect("the tenant namespace is created");
    // Everything a namespace admin can create: a Deployment of every operator's image, held Leases of the
    // operators' names, and a RoleBinding granting its account a ClusterRole within the namespace.
    Api::<Deployment>::namespaced(client.clone(), "tenant")
        .create(
            &PostParams::default(),
            &deployment(
                "tenant",
                "decoy",
                &[
                    "quay.io/kubernetes-sigs/kernel-module-management-operator:latest",
                    "ghcr.io/spinframework/runtime-class-manager:v0.1",
                    FLEDGED_IMAGE,
                ],
                None,
            ),
        )
        .await
        .expect("the decoy Deployment is created");
    for name in ["kmm.sigs.x-k8s.io", "7584d300.spinkube.dev"] {
        Api::<Lease>::namespaced(client.clone(), "tenant")
            .create(
                &PostParams::default(),
                &held_lease("tenant", name, "decoy-7d9_1"),
            )
            .await
            .expect("the decoy Lease is created");
    }
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "decoy", "namespace": "tenant"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "tenant"}]
    }))
    .expect("a RoleBinding");
    Api::<RoleBinding>::namespaced(client.clone(), "tenant")
        .create(&PostParams::default(), &binding)
        .await
        .expect("the RoleBinding is created");

    start_caches(&mut harness);
    create_cache(&client, "warm").await;
    eventually(120, "the cache in another namespace succeeds", || async {
        cache_status(&client, "warm").await.1
    })
    .await;

    let stop = CancellationToken::new();
    let receiver = operators::follow(client.clone(), stop.clone());
    let upstream = &receiver;
    let found = wait_for(10, "a first look", move || async move {
        upstream.borrow().clone()
    })
    .await;
    assert!(found.is_empty(), "decoys taken for operators: {found:?}");
    assert!(
        events(&client, "tenant", "LeftToUpstreamOperator")
            .await
            .is_empty()
    );
    stop.cancel();
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_installed_kube_fledged_is_left_its_caches_until_its_binding_goes() {
    let mut harness = Harness::start("imagecache.yaml").await;
    let client = harness.client();
    install(
        &client,
        "kube-fledged",
        "kubefledged-controller",
        FLEDGED_IMAGE,
    )
    .await;

    let stop = CancellationToken::new();
    let receiver = operators::follow(client.clone(), stop.clone());
    let upstream = &receiver;
    let found = wait_for(10, "kube-fledged seen", move || async move {
        upstream
            .borrow()
            .clone()
            .filter(|found| found.contains_key(&Family::Caches))
    })
    .await;
    let fledged = found.get(&Family::Caches).expect("caches are taken");
    assert_eq!(fledged.operator, "kube-fledged");
    assert_eq!(
        fledged.evidence,
        "Deployment kube-fledged/kubefledged-controller runs as kubefledged-controller, bound by \
         ClusterRoleBinding kubefledged-controller"
    );
    assert_eq!(found.len(), 1, "{found:?}");

    start_caches(&mut harness);
    create_cache(&client, "warm").await;
    // Long enough for the engine to have finished the cache many times over, had it run caches.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(cache_status(&client, "warm").await, (false, false));
    assert_eq!(
        events(&client, "kube-fledged", "LeftToUpstreamOperator").await,
        [format!(
            "kmm-tui leaves the caches family to kube-fledged: {}",
            fledged.evidence
        )]
    );

    // Without its binding, the Deployment is anyone's: the engine takes the caches up.
    Api::<ClusterRoleBinding>::all(client.clone())
        .delete("kubefledged-controller", &DeleteParams::default())
        .await
        .expect("the ClusterRoleBinding is deleted");
    eventually(120, "the cache succeeds under kmm-tui", || async {
        cache_status(&client, "warm").await.1
    })
    .await;
    stop.cancel();
    harness.shutdown().await;
}
