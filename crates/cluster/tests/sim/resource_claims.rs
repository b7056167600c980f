//! The resource claim controller: a pod naming a ResourceClaimTemplate gets its own claim (named, owned and
//! annotated as kube-controller-manager makes it, recorded in the pod's status, never made twice), reservations of
//! pods that are gone are dropped, and the claim goes with its pod.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::workloads::{SCENARIO, eventually};

/// The claims in `default`.
async fn claims(api: &Api<ResourceClaim>) -> Vec<ResourceClaim> {
    api.list(&ListParams::default())
        .await
        .expect("listing claims")
        .items
}

/// The claim the pod's status records for its entry `gpu`.
async fn recorded_claim(pods: &Api<Pod>, pod: &str) -> Option<String> {
    pods.get(pod)
        .await
        .ok()?
        .status?
        .resource_claim_statuses?
        .into_iter()
        .find(|s| s.name == "gpu")?
        .resource_claim_name
}

#[tokio::test(start_paused = true)]
async fn a_pod_gets_a_claim_from_its_template_and_loses_it_with_its_deletion() {
    let cluster = super::cluster_on(SCENARIO).await;
    let client = cluster.client();
    let templates = Api::<ResourceClaimTemplate>::namespaced(client.clone(), "default");
    let template: ResourceClaimTemplate = serde_json::from_value(json!({
        "metadata": {"name": "gpu"},
        "spec": {"metadata": {"labels": {"app": "trainer"}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}},
    }))
    .unwrap();
    templates
        .create(&PostParams::default(), &template)
        .await
        .unwrap();
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "trainer"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
            "containers": [{"name": "train", "image": "registry.k8s.io/pause:3.10", "resources": {"claims": [{"name": "gpu"}]}}]},
    }))
    .unwrap();
    let pod = pods.create(&PostParams::default(), &pod).await.unwrap();
    let uid = pod.uid().unwrap();
    let api = Api::<ResourceClaim>::namespaced(client.clone(), "default");

    eventually(60, "the pod records its claim", || async {
        recorded_claim(&pods, "trainer").await.is_some()
    })
    .await;
    let name = recorded_claim(&pods, "trainer").await.unwrap();
    let made = claims(&api).await;
    assert_eq!(made.len(), 1, "{made:?}");
    let claim = &made[0];
    assert_eq!(claim.name_any(), name);
    assert!(name.starts_with("trainer-gpu-"), "{name}");
    assert_eq!(name.len(), "trainer-gpu-".len() + 5);
    assert_eq!(
        claim.annotations()["resource.kubernetes.io/pod-claim-name"],
        "gpu"
    );
    assert_eq!(claim.labels()["app"], "trainer");
    let owner = &claim.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("Pod", uid.as_str(), Some(true))
    );
    let request = claim
        .spec
        .devices
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap()[0]
        .exactly
        .clone()
        .unwrap();
    assert_eq!(
        (request.device_class_name.as_str(), request.count),
        ("gpu.example.com", Some(1))
    );

    // The record lost, the controller finds the claim it made rather than making another.
    pods.patch_status(
        "trainer",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"resourceClaimStatuses": null}})),
    )
    .await
    .unwrap();
    eventually(60, "the pod records its claim again", || async {
        recorded_claim(&pods, "trainer").await.as_deref() == Some(name.as_str())
    })
    .await;
    assert_eq!(claims(&api).await.len(), 1);

    // A reservation for a pod that does not exist is dropped; the pod's own stays.
    let allocation = json!({"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-0", "device": "gpu-0"}]}});
    let reserved = json!([{"resource": "pods", "name": "trainer", "uid": uid},
        {"resource": "pods", "name": "gone", "uid": "0000-gone"}]);
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"allocation": allocation, "reservedFor": reserved}})),
    )
    .await
    .unwrap();
    eventually(60, "the gone pod's reservation is dropped", || async {
        let Ok(claim) = api.get(&name).await else {
            return false;
        };
        let uids: Vec<String> = claim
            .status
            .and_then(|s| s.reserved_for)
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.uid)
            .collect();
        uids == [uid.clone()]
    })
    .await;

    pods.delete("trainer", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    eventually(120, "the claim goes with its pod", || async {
        claims(&api).await.is_empty()
    })
    .await;
    cluster.shutdown().await;
}
