//! `resource.k8s.io/v1` on the wire, part one: served from Kubernetes 1.34 on (and not by a cluster announcing
//! 1.33), DeviceClasses and ResourceSlices validated as kube-apiserver validates them, slices selected by node and
//! driver, and both printed with kube's columns.

use k8s_openapi::api::resource::v1::{DeviceClass, ResourceSlice};
use kmm_cluster::EmbeddedOptions;
use kube::api::{Api, ListParams, PostParams};
use kube::discovery::Discovery;
use serde_json::{Value, json};

use crate::common::{cluster, cluster_with};
use crate::storage_kinds::{TABLE, columns, first_row, invalid_fields, send};

const JSON: &str = "application/json";

/// The plurals discovery lists for `resource.k8s.io/v1`, sorted; empty when the group is not served.
async fn served_plurals(client: &kube::Client) -> Vec<String> {
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let mut plurals: Vec<String> = discovery
        .groups()
        .filter(|g| g.name() == "resource.k8s.io")
        .flat_map(|g| g.versioned_resources("v1"))
        .map(|(resource, _)| resource.plural)
        .collect();
    plurals.sort();
    plurals
}

#[tokio::test]
async fn a_1_34_cluster_serves_resource_k8s_io_v1_and_a_1_33_one_does_not() {
    let cluster = cluster().await;
    let client = cluster.client();
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "34")
    );
    assert!(version.git_version.starts_with("v1.34."), "{version:?}");
    assert_eq!(
        served_plurals(&client).await,
        [
            "deviceclasses",
            "resourceclaims",
            "resourceclaimtemplates",
            "resourceslices"
        ]
    );
    let (code, document, _) = send(
        &client,
        "GET",
        "/openapi/v3/apis/resource.k8s.io/v1",
        JSON,
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(document["info"]["version"], "v1.34");
    let schemas = document["components"]["schemas"].as_object().unwrap();
    for kind in [
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
    ] {
        let schema = &schemas[&format!("io.k8s.api.resource.v1.{kind}")];
        assert_eq!(schema["x-kubernetes-group-version-kind"][0]["kind"], kind);
    }
    let (code, group, _) = send(&client, "GET", "/apis/resource.k8s.io/v1", JSON, None).await;
    assert_eq!(code, 200, "{group}");
    let claims = group["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "resourceclaims")
        .unwrap();
    assert_eq!(
        (claims["kind"].as_str(), claims["namespaced"].as_bool()),
        (Some("ResourceClaim"), Some(true))
    );
    cluster.shutdown().await;

    let old = cluster_with(EmbeddedOptions {
        kubernetes_minor: Some(33),
        ..Default::default()
    })
    .await;
    let client = old.client();
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.minor, "33");
    assert!(served_plurals(&client).await.is_empty());
    let (code, _, _) = send(&client, "GET", "/apis/resource.k8s.io/v1", JSON, None).await;
    assert_eq!(code, 404);
    let (code, _, _) = send(
        &client,
        "GET",
        "/apis/resource.k8s.io/v1/deviceclasses",
        JSON,
        None,
    )
    .await;
    assert_eq!(code, 404);
    let (_, document, _) = send(&client, "GET", "/openapi/v2", JSON, None).await;
    assert_eq!(document["info"]["version"], "v1.33");
    assert!(
        document["definitions"]
            .get("io.k8s.api.resource.v1.DeviceClass")
            .is_none()
    );
    old.shutdown().await;
}

fn device_class(name: &str, expression: &str) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]}})
}

#[tokio::test]
async fn device_classes_need_selectors_with_an_expression_and_well_formed_config() {
    let cluster = cluster().await;
    let client = cluster.client();
    let classes = Api::<DeviceClass>::all(client.clone());
    let class: DeviceClass = serde_json::from_value(json!({
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}],
            "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "none"}}}]},
    }))
    .unwrap();
    let created = classes
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    let (code, body, _) = send(
        &client,
        "POST",
        "/apis/resource.k8s.io/v1/deviceclasses",
        JSON,
        Some(device_class("empty", "")),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(body["details"]["kind"], "DeviceClass");
    assert_eq!(invalid_fields(&body), ["spec.selectors[0].cel.expression"]);
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueRequired");

    let (code, body, _) = send(
        &client,
        "POST",
        "/apis/resource.k8s.io/v1/deviceclasses",
        JSON,
        Some(device_class("long", &"x".repeat(10 * 1024 + 1))),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Too long: may not be more than 10240 bytes"
    );

    let mut many = device_class("many", "true");
    many["spec"]["selectors"] = json!(vec![json!({"cel": {"expression": "true"}}); 33]);
    many["spec"]["config"] = json!([{"opaque": {"driver": "Not_A_Domain", "parameters": {}}}, {}]);
    let (code, body, _) = send(
        &client,
        "POST",
        "/apis/resource.k8s.io/v1/deviceclasses",
        JSON,
        Some(many),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        invalid_fields(&body),
        [
            "spec.selectors",
            "spec.config[0].opaque.driver",
            "spec.config[1].opaque"
        ]
    );
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Too many: 33: must have at most 32 items"
    );

    let (code, table, _) = send(
        &client,
        "GET",
        "/apis/resource.k8s.io/v1/deviceclasses",
        TABLE,
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(columns(&table), ["Name", "Age"]);
    assert_eq!(first_row(&table)[0], "gpu.example.com");
    cluster.shutdown().await;
}

fn slice(name: &str, node: &str, driver: &str) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
    "spec": {"driver": driver, "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {"name": "gpu-0", "attributes": {"model": {"string": "A100"}, "gpu.example.com/index": {"int": 0},
                "driverVersion": {"version": "1.2.3"}},
             "capacity": {"memory": {"value": "40Gi"}}},
            {"name": "gpu-1", "attributes": {"model": {"string": "A100"}, "healthy": {"bool": true}}},
        ]}})
}

#[tokio::test]
async fn resource_slices_are_validated_selected_by_node_and_driver_and_printed() {
    let cluster = cluster().await;
    let client = cluster.client();
    let path = "/apis/resource.k8s.io/v1/resourceslices";
    for (name, node, driver) in [
        ("node-0-gpu", "node-0", "gpu.example.com"),
        ("node-1-gpu", "node-1", "gpu.example.com"),
        ("node-0-nic", "node-0", "nic.example.com"),
    ] {
        let (code, body, _) =
            send(&client, "POST", path, JSON, Some(slice(name, node, driver))).await;
        assert_eq!(code, 201, "{body}");
    }
    let slices = Api::<ResourceSlice>::all(client.clone());
    let on_node_0 = slices
        .list(&ListParams::default().fields("spec.nodeName=node-0"))
        .await
        .unwrap();
    let mut names: Vec<String> = on_node_0
        .items
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["node-0-gpu", "node-0-nic"]);
    let gpus = slices
        .list(&ListParams::default().fields("spec.driver=gpu.example.com,spec.nodeName!=node-0"))
        .await
        .unwrap();
    assert_eq!(gpus.items.len(), 1);
    assert_eq!(gpus.items[0].metadata.name.as_deref(), Some("node-1-gpu"));
    let (code, body, _) = send(
        &client,
        "GET",
        &format!("{path}?fieldSelector=spec.pool.name%3Dx"),
        JSON,
        None,
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["message"], "field label not supported: spec.pool.name");

    let mut bad = slice("bad", "node-0", "Bad_Driver");
    bad["spec"]["allNodes"] = json!(true);
    bad["spec"]["pool"]["resourceSliceCount"] = json!(0);
    bad["spec"]["devices"][1]["name"] = json!("gpu-0");
    bad["spec"]["devices"][0]["attributes"]["model"] = json!({"string": "A100", "int": 3});
    bad["spec"]["devices"][0]["attributes"]["driverVersion"] = json!({"version": "v1"});
    let (code, body, _) = send(&client, "POST", path, JSON, Some(bad)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        invalid_fields(&body),
        [
            "spec.driver",
            "spec.pool.resourceSliceCount",
            "spec",
            "spec.devices[0].attributes[driverVersion].version",
            "spec.devices[0].attributes[model]",
            "spec.devices[1].name",
        ]
    );
    let messages: Vec<&str> = body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"].as_str().unwrap())
        .collect();
    assert!(
        messages[2].ends_with("is required, but multiple fields are set"),
        "{messages:?}"
    );
    assert_eq!(messages[5], "Duplicate value: \"gpu-0\"");

    let mut nowhere = slice("nowhere", "node-0", "gpu.example.com");
    nowhere["spec"].as_object_mut().unwrap().remove("nodeName");
    nowhere["spec"]["devices"] = json!(
        (0..129)
            .map(|i| json!({"name": format!("d{i}")}))
            .collect::<Vec<_>>()
    );
    let (code, body, _) = send(&client, "POST", path, JSON, Some(nowhere)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(invalid_fields(&body), ["spec", "spec.devices"]);
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueRequired");

    let mut moved = slices.get("node-0-gpu").await.unwrap();
    moved.spec.node_name = Some("node-1".into());
    let err = slices
        .replace("node-0-gpu", &PostParams::default(), &moved)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 422);
            assert!(
                status
                    .message
                    .contains("spec.nodeName: Invalid value: \"node-1\": field is immutable"),
                "{}",
                status.message
            );
        }
        other => panic!("expected a 422, got {other:?}"),
    }

    let (code, table, _) = send(
        &client,
        "GET",
        &format!("{path}?fieldSelector=metadata.name%3Dnode-1-gpu"),
        TABLE,
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(columns(&table), ["Name", "Node", "Driver", "Pool", "Age"]);
    assert_eq!(
        first_row(&table)[..4],
        ["node-1-gpu", "node-1", "gpu.example.com", "node-1"]
    );
    cluster.shutdown().await;
}
