//! Upstream operators on the embedded cluster: where the upstream KMM operator holds its leader-election Lease, or a
//! Deployment runs its image, the engine leaves the KMM family alone, and takes it up once the operator is gone.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use kmm_engine::Family;
use kmm_engine::operators;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::common::{Harness, eventually, wait_for};
use super::kmm::{condition, create_module, mic};

/// The upstream KMM operator's leader-election Lease, held and renewed now.
fn upstream_kmm_lease() -> Lease {
    serde_json::from_value(json!({
        "metadata": {"name": "kmm.sigs.x-k8s.io", "namespace": "kube-system"},
        "spec": {"holderIdentity": "kmm-operator-controller-5b7c9_0f1e", "leaseDurationSeconds": 137,
                 "renewTime": jiff::Timestamp::now().to_string()}
    }))
    .expect("a Lease")
}

#[tokio::test(start_paused = true)]
async fn the_engine_leaves_kmm_to_an_upstream_operator_and_takes_it_up_when_it_goes() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    let leases = Api::<Lease>::namespaced(harness.client(), "kube-system");
    leases
        .create(&PostParams::default(), &upstream_kmm_lease())
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
async fn a_deployment_of_an_operator_image_is_seen_until_it_is_scaled_to_zero() {
    let harness = Harness::start("two-kernels.yaml").await;
    let stop = CancellationToken::new();
    let receiver = operators::follow(harness.client(), stop.clone());
    let upstream = &receiver;
    let nothing = wait_for(10, "a first look", move || async move {
        upstream.borrow().clone()
    })
    .await;
    assert!(nothing.is_empty(), "{nothing:?}");

    let deployments = Api::<Deployment>::namespaced(harness.client(), "acme");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "kubefledged-controller", "namespace": "acme"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "kubefledged"}},
            "template": {
                "metadata": {"labels": {"app": "kubefledged"}},
                "spec": {"containers": [{"name": "controller",
                                         "image": "docker.io/senthilrch/kubefledged-controller:v0.10.0"}]}
            }
        }
    }))
    .expect("a Deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("the Deployment is created");
    let found = wait_for(10, "kube-fledged seen", move || async move {
        upstream
            .borrow()
            .clone()
            .filter(|found| found.contains_key(&Family::Caches))
    })
    .await;
    let fledged = found.get(&Family::Caches).expect("caches are taken");
    assert_eq!(fledged.operator, "kube-fledged");
    assert_eq!(fledged.evidence, "Deployment acme/kubefledged-controller");
    assert_eq!(found.len(), 1, "{found:?}");

    deployments
        .patch(
            "kubefledged-controller",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 0}})),
        )
        .await
        .expect("the Deployment scales to zero");
    eventually(10, "kube-fledged no longer seen", move || async move {
        upstream
            .borrow()
            .as_ref()
            .is_some_and(|found| found.is_empty())
    })
    .await;
    stop.cancel();
    harness.shutdown().await;
}
