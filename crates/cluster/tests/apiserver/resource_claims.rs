//! `resource.k8s.io/v1` on the wire, part two: ResourceClaims and ResourceClaimTemplates defaulted and validated as
//! kube-apiserver does (requests, a spec fixed once created, a status whose reservations follow an allocation), a
//! claim's state printed as kubectl prints it, and pods that name claims.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::cluster;
use crate::storage_kinds::{TABLE, columns, first_row, invalid_fields, send};

const JSON: &str = "application/json";
const CLAIMS: &str = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";

fn claim(name: &str, requests: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": requests}}})
}

/// The messages of a 422's causes.
fn messages(body: &Value) -> Vec<String> {
    body["details"]["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("not a 422 with causes: {body}"))
        .iter()
        .map(|c| c["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn claims_are_defaulted_and_their_requests_validated() {
    let cluster = cluster().await;
    let client = cluster.client();
    let claims = Api::<ResourceClaim>::namespaced(client.clone(), "default");
    let typed: ResourceClaim = serde_json::from_value(claim(
        "one-gpu",
        json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]),
    ))
    .unwrap();
    let created = claims.create(&PostParams::default(), &typed).await.unwrap();
    let request = created
        .spec
        .devices
        .unwrap()
        .requests
        .unwrap()
        .remove(0)
        .exactly
        .unwrap();
    assert_eq!(request.allocation_mode.as_deref(), Some("ExactCount"));
    assert_eq!(request.count, Some(1));

    let (code, body, _) = send(&client, "POST", CLAIMS, JSON, Some(claim("every-gpu",
        json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "All"}}]))))
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["spec"]["devices"]["requests"][0]["exactly"].get("count"),
        None
    );

    let (code, body, _) = send(&client, "POST", CLAIMS, JSON, Some(claim("bad", json!([
        {"name": "gpu", "exactly": {"deviceClassName": ""}},
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "All", "count": 2}},
        {"name": "Not_A_Label", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "Some"}},
        {"name": "nothing"},
        {"name": "negative", "exactly": {"deviceClassName": "gpu.example.com", "count": -1}},
    ])))).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        invalid_fields(&body),
        [
            "spec.devices.requests[0].exactly.deviceClassName",
            "spec.devices.requests[1].name",
            "spec.devices.requests[1].exactly.count",
            "spec.devices.requests[2].name",
            "spec.devices.requests[2].exactly.allocationMode",
            "spec.devices.requests[3]",
            "spec.devices.requests[4].exactly.count",
        ]
    );
    let listed = messages(&body);
    assert_eq!(listed[1], "Duplicate value: \"gpu\"");
    assert_eq!(
        listed[2],
        "Invalid value: 2: must not be specified when allocationMode is 'All'"
    );
    assert_eq!(
        listed[4],
        "Unsupported value: \"Some\": supported values: \"All\", \"ExactCount\""
    );
    assert_eq!(
        listed[5],
        "Required value: exactly one of `exactly` or `firstAvailable` is required"
    );
    assert_eq!(listed[6], "Invalid value: -1: must be greater than zero");

    let (code, body, _) = send(&client, "POST", CLAIMS, JSON, Some(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "constrained"},
        "spec": {"devices": {
            "requests": [{"name": "gpu", "firstAvailable": [
                {"name": "big", "deviceClassName": "big.example.com"},
                {"name": "small", "deviceClassName": "small.example.com", "count": 2}]}],
            "constraints": [{"requests": ["gpu/big", "nic"], "matchAttribute": "model"}],
            "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": []}}],
        }}}))).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        invalid_fields(&body),
        [
            "spec.devices.constraints[0].requests[1]",
            "spec.devices.constraints[0].matchAttribute",
            "spec.devices.config[0].opaque.parameters",
        ]
    );
    assert_eq!(
        messages(&body)[1],
        "Invalid value: \"model\": must include a domain"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_claim_spec_is_fixed_and_its_status_reserves_only_what_is_allocated() {
    let cluster = cluster().await;
    let client = cluster.client();
    let claims = Api::<ResourceClaim>::namespaced(client.clone(), "default");
    let (code, body, _) = send(
        &client,
        "POST",
        CLAIMS,
        JSON,
        Some(claim(
            "gpu",
            json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]),
        )),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    let err = claims
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "other.example.com"}}]}}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a 422, got {err:?}")
    };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("spec: Invalid value: "),
        "{}",
        status.message
    );
    assert!(
        status.message.ends_with("field is immutable"),
        "{}",
        status.message
    );

    let reserved = json!([{"resource": "pods", "name": "trainer", "uid": "uid-1"}]);
    let err = claims
        .patch_status(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"reservedFor": reserved}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a 422, got {err:?}")
    };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains(
            "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"
        ),
        "{}",
        status.message
    );

    let allocation = json!({"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-0", "device": "gpu-0"}]}});
    let duplicated = json!([{"resource": "pods", "name": "a", "uid": "uid-1"}, {"resource": "pods", "name": "b", "uid": "uid-1"}]);
    let err = claims
        .patch_status(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"allocation": allocation, "reservedFor": duplicated}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a 422, got {err:?}")
    };
    assert!(
        status
            .message
            .contains("status.reservedFor[1].uid: Duplicate value: \"uid-1\""),
        "{}",
        status.message
    );

    let bad_allocation = json!({"devices": {"results": [
        {"request": "nic", "driver": "gpu.example.com", "pool": "node-0", "device": "gpu-0"}]}});
    let err = claims
        .patch_status(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"allocation": bad_allocation}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a 422, got {err:?}")
    };
    assert!(
        status
            .message
            .contains("status.allocation.devices.results[0].request"),
        "{}",
        status.message
    );

    let (code, table, _) = send(&client, "GET", CLAIMS, TABLE, None).await;
    assert_eq!(code, 200);
    assert_eq!(columns(&table), ["Name", "State", "Age"]);
    assert_eq!(first_row(&table)[..2], ["gpu", "pending"]);

    claims
        .patch_status(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"allocation": allocation, "reservedFor": reserved}})),
        )
        .await
        .unwrap();
    let (_, table, _) = send(&client, "GET", CLAIMS, TABLE, None).await;
    assert_eq!(first_row(&table)[..2], ["gpu", "allocated,reserved"]);

    let moved = json!({"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-0", "device": "gpu-1"}]}});
    let err = claims
        .patch_status(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"allocation": moved}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a 422, got {err:?}")
    };
    assert!(
        status.message.contains("status.allocation: Invalid value"),
        "{}",
        status.message
    );
    assert!(
        status.message.ends_with("field is immutable"),
        "{}",
        status.message
    );

    let released = claims
        .patch_status(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"reservedFor": null}})),
        )
        .await
        .unwrap();
    assert!(released.status.unwrap().reserved_for.is_none());
    let (_, table, _) = send(&client, "GET", CLAIMS, TABLE, None).await;
    assert_eq!(first_row(&table)[..2], ["gpu", "allocated"]);
    cluster.shutdown().await;
}

#[tokio::test]
async fn claim_templates_are_defaulted_validated_and_fixed() {
    let cluster = cluster().await;
    let client = cluster.client();
    let path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates";
    let template = |name: &str, class: &str| {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"metadata": {"labels": {"app": "trainer"}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": class}}]}}}})
    };
    let (code, body, _) = send(
        &client,
        "POST",
        path,
        JSON,
        Some(template("gpu", "gpu.example.com")),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"],
        1
    );
    let (code, body, _) = send(
        &client,
        "POST",
        path,
        JSON,
        Some(template("bad", "Not A Class")),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        invalid_fields(&body),
        ["spec.spec.devices.requests[0].exactly.deviceClassName"]
    );

    let templates = Api::<ResourceClaimTemplate>::namespaced(client.clone(), "default");
    let err = templates
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"metadata": {"labels": {"app": "other"}}}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a 422, got {err:?}")
    };
    assert_eq!(status.code, 422);
    let relabelled = templates
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "ml"}}})),
        )
        .await
        .unwrap();
    assert_eq!(relabelled.metadata.labels.unwrap()["team"], "ml");
    let (_, table, _) = send(&client, "GET", path, TABLE, None).await;
    assert_eq!(columns(&table), ["Name", "Age"]);
    cluster.shutdown().await;
}

fn pod(name: &str, resource_claims: Value, container_claims: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"resourceClaims": resource_claims,
            "containers": [{"name": "c", "image": "busybox:1.36", "resources": {"claims": container_claims}}]}})
}

#[tokio::test]
async fn pods_name_their_claims_once_and_containers_only_the_pods_claims() {
    let cluster = cluster().await;
    let client = cluster.client();
    let pods_path = "/api/v1/namespaces/default/pods";
    let good = pod(
        "trainer",
        json!([{"name": "gpu", "resourceClaimTemplateName": "gpu"}, {"name": "shared", "resourceClaimName": "shared-gpu"}]),
        json!([{"name": "gpu"}, {"name": "shared", "request": "gpu"}]),
    );
    let (code, body, _) = send(&client, "POST", pods_path, JSON, Some(good)).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["spec"]["resourceClaims"][1]["resourceClaimName"],
        "shared-gpu"
    );

    let bad = pod(
        "bad",
        json!([{"name": "gpu", "resourceClaimTemplateName": "gpu", "resourceClaimName": "gpu"},
            {"name": "gpu"}, {"name": "nic", "resourceClaimName": "Not_A_Name"}]),
        json!([{"name": "tpu"}, {"name": "gpu"}, {"name": "gpu"}]),
    );
    let (code, body, _) = send(&client, "POST", pods_path, JSON, Some(bad)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        invalid_fields(&body),
        [
            "spec.resourceClaims[0]",
            "spec.resourceClaims[1].name",
            "spec.resourceClaims[1]",
            "spec.resourceClaims[2].resourceClaimName",
            "spec.containers[0].resources.claims[0]",
            "spec.containers[0].resources.claims[2]",
        ]
    );
    let listed = messages(&body);
    assert_eq!(
        listed[4],
        "Not found: \"tpu\": must be one of the names in pod.spec.resourceClaims: gpu, nic"
    );
    assert_eq!(listed[5], "Duplicate value: \"gpu\"");

    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    let recorded = pods
        .patch_status("trainer", &PatchParams::default(), &Patch::Merge(json!({"status": {
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "trainer-gpu-abcde"}]}})))
        .await
        .unwrap();
    let statuses = recorded.status.unwrap().resource_claim_statuses.unwrap();
    assert_eq!(
        statuses[0].resource_claim_name.as_deref(),
        Some("trainer-gpu-abcde")
    );
    let err = pods
        .patch(
            "trainer",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"resourceClaims": null}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a 422, got {err:?}")
    };
    assert_eq!(status.code, 422);
    cluster.shutdown().await;
}
