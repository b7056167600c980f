//! Services as kube-apiserver serves them: the `default/kubernetes` Service every cluster has (with its Endpoints
//! and EndpointSlice, kept and brought back), the empty load balancer status of a new Service, `spec.ports` merged
//! by port, and the Tables `kubectl get svc` and `kubectl get endpointslices` print.

use std::net::SocketAddr;

use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kmm_cluster::EmbeddedOptions;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::common::{cluster, cluster_with, eventually};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// The `kubernetes` Service, Endpoints and EndpointSlice; None while any is missing.
async fn kubernetes_service(client: &kube::Client) -> Option<(Service, Endpoints, EndpointSlice)> {
    let service = Api::<Service>::namespaced(client.clone(), "default")
        .get_opt("kubernetes")
        .await
        .ok()??;
    let endpoints = Api::<Endpoints>::namespaced(client.clone(), "default")
        .get_opt("kubernetes")
        .await
        .ok()??;
    let slice = Api::<EndpointSlice>::namespaced(client.clone(), "default")
        .get_opt("kubernetes")
        .await
        .ok()??;
    Some((service, endpoints, slice))
}

/// Check the three objects point at `api`.
fn assert_points_at(objects: &(Service, Endpoints, EndpointSlice), api: SocketAddr) {
    let (service, endpoints, slice) = objects;
    let spec = service.spec.as_ref().expect("the Service has a spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"), "{service:?}");
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    let port = &spec.ports.as_ref().expect("the Service has ports")[0];
    assert_eq!(port.name.as_deref(), Some("https"));
    assert_eq!(port.port, 443);
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    assert_eq!(
        port.target_port,
        Some(IntOrString::Int(i32::from(api.port())))
    );
    assert_eq!(service.labels()["component"], "apiserver");
    assert_eq!(service.labels()["provider"], "kubernetes");
    assert!(spec.selector.is_none(), "{service:?}");

    let subset = &endpoints
        .subsets
        .as_ref()
        .expect("the Endpoints have subsets")[0];
    let addresses = subset.addresses.as_ref().expect("ready addresses");
    assert_eq!(addresses[0].ip, api.ip().to_string());
    let ports = subset.ports.as_ref().expect("ports");
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].port),
        (Some("https"), i32::from(api.port()))
    );

    assert_eq!(slice.labels()["kubernetes.io/service-name"], "kubernetes");
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(slice.endpoints[0].addresses, vec![api.ip().to_string()]);
    let port = &slice.ports.as_ref().expect("the slice has ports")[0];
    assert_eq!(
        (port.name.as_deref(), port.port),
        (Some("https"), Some(i32::from(api.port())))
    );
}

#[tokio::test]
async fn the_kubernetes_service_points_at_the_https_listener_and_comes_back() {
    let cluster = cluster_with(EmbeddedOptions {
        listen: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    })
    .await;
    let address = cluster.address().expect("HTTPS is served");
    let client = cluster.client();
    let objects = kubernetes_service(&client)
        .await
        .expect("a started cluster has the kubernetes Service, Endpoints and EndpointSlice");
    assert_points_at(&objects, address);

    // Allocation for other Services starts after the kubernetes Service's address.
    let services = Api::<Service>::namespaced(client.clone(), "default");
    let other: Service = serde_json::from_value(
        json!({"metadata": {"name": "other"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .unwrap();
    let other = services
        .create(&PostParams::default(), &other)
        .await
        .unwrap();
    assert_ne!(other.spec.unwrap().cluster_ip.as_deref(), Some("10.96.0.1"));

    let gone = DeleteParams::default();
    services.delete("kubernetes", &gone).await.unwrap();
    Api::<Endpoints>::namespaced(client.clone(), "default")
        .delete("kubernetes", &gone)
        .await
        .unwrap();
    Api::<EndpointSlice>::namespaced(client.clone(), "default")
        .delete("kubernetes", &gone)
        .await
        .unwrap();
    eventually(60, "the deleted kubernetes Service comes back", || async {
        kubernetes_service(&client).await.is_some()
    })
    .await;
    assert_points_at(&kubernetes_service(&client).await.unwrap(), address);

    // A changed target port is put back.
    services
        .patch(
            "kubernetes",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 1}]}}),
            ),
        )
        .await
        .unwrap();
    eventually(
        60,
        "the kubernetes Service's target port is put back",
        || async {
            let service = services.get("kubernetes").await.unwrap();
            service.spec.unwrap().ports.unwrap()[0].target_port
                == Some(IntOrString::Int(i32::from(address.port())))
        },
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn an_in_process_cluster_has_the_kubernetes_service_too() {
    let cluster = cluster().await;
    let objects = kubernetes_service(&cluster.client())
        .await
        .expect("the kubernetes Service is there");
    assert_points_at(&objects, "127.0.0.1:6443".parse().unwrap());
    cluster.shutdown().await;
}

/// POST `body` as JSON to `path`, returning the response body.
async fn post_json(client: &kube::Client, path: &str, body: &Value) -> Value {
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .unwrap();
    client
        .request::<Value>(request)
        .await
        .unwrap_or_else(|e| panic!("POST {path}: {e}"))
}

/// The Table of a list at `path`.
async fn table(client: &kube::Client, path: &str) -> Value {
    let request = http::Request::get(path)
        .header("accept", TABLE)
        .body(Vec::new())
        .unwrap();
    client.request::<Value>(request).await.unwrap()
}

/// The column names of a Table, and the cells of the row named `name`.
fn columns_and_row(table: &Value, name: &str) -> (Vec<String>, Vec<Value>) {
    let columns = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    let row = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["cells"][0] == json!(name))
        .unwrap_or_else(|| panic!("no row {name} in {table}"));
    (columns, row["cells"].as_array().unwrap().clone())
}

fn service_of_type(name: &str, kind: &str) -> Value {
    let mut spec =
        json!({"type": kind, "selector": {"app": name, "tier": "web"}, "ports": [{"port": 80}]});
    match kind {
        "NodePort" => {
            spec["ports"] = json!([
                {"name": "http", "port": 80, "nodePort": 30080},
                {"name": "dns", "port": 53, "protocol": "UDP"}
            ])
        }
        "ExternalName" => {
            spec = json!({"type": kind, "externalName": "db.example.com"});
        }
        _ => {}
    }
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn services_are_created_with_an_empty_load_balancer_status_and_printed_as_kubectl_does() {
    let cluster = cluster().await;
    let client = cluster.client();
    let path = "/api/v1/namespaces/default/services";
    for (name, kind) in [
        ("plain", "ClusterIP"),
        ("nodes", "NodePort"),
        ("balanced", "LoadBalancer"),
        ("alias", "ExternalName"),
    ] {
        let created = post_json(&client, path, &service_of_type(name, kind)).await;
        assert_eq!(
            created["status"],
            json!({"loadBalancer": {}}),
            "{kind}: {created}"
        );
    }

    let table = table(&client, path).await;
    let (columns, plain) = columns_and_row(&table, "plain");
    assert_eq!(
        columns,
        [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector"
        ]
    );
    let wide_only: Vec<i64> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["priority"].as_i64().unwrap())
        .collect();
    assert_eq!(wide_only, [0, 0, 0, 0, 0, 0, 1]);
    assert_eq!(plain[1], "ClusterIP");
    assert!(
        plain[2].as_str().unwrap().starts_with("10.96."),
        "{plain:?}"
    );
    assert_eq!(plain[3], "<none>");
    assert_eq!(plain[4], "80/TCP");
    assert_eq!(plain[6], "app=plain,tier=web");
    let (_, nodes) = columns_and_row(&table, "nodes");
    // The port that asked for no node port was given one from the range.
    let ports = nodes[4].as_str().unwrap();
    assert_eq!(nodes[3], "<none>");
    assert!(
        ports.starts_with("80:30080/TCP,53:3") && ports.ends_with("/UDP"),
        "{ports}"
    );
    let (_, balanced) = columns_and_row(&table, "balanced");
    assert_eq!(balanced[3], "<pending>");
    let (_, alias) = columns_and_row(&table, "alias");
    assert_eq!(
        (&alias[1], &alias[2], &alias[3], &alias[4], &alias[6]),
        (
            &json!("ExternalName"),
            &json!("<none>"),
            &json!("db.example.com"),
            &json!("<none>"),
            &json!("<none>")
        )
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_strategic_merge_patch_merges_service_ports_by_port() {
    let cluster = cluster().await;
    let services = Api::<Service>::namespaced(cluster.client(), "default");
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [
            {"name": "http", "port": 80, "targetPort": 8080},
            {"name": "https", "port": 443, "targetPort": 8443}
        ]}
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let patched = services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"ports": [{"port": 443, "targetPort": 9443}]}})),
        )
        .await
        .unwrap();
    let ports: Vec<(Option<String>, i32, Option<IntOrString>)> = patched
        .spec
        .unwrap()
        .ports
        .unwrap()
        .into_iter()
        .map(|p| (p.name, p.port, p.target_port))
        .collect();
    assert_eq!(
        ports,
        [
            (Some("http".to_owned()), 80, Some(IntOrString::Int(8080))),
            (Some("https".to_owned()), 443, Some(IntOrString::Int(9443))),
        ]
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn endpoint_slices_are_printed_as_kubectl_does() {
    let cluster = cluster().await;
    let client = cluster.client();
    let path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let endpoints: Vec<Value> = (1..=5)
        .map(|i| json!({"addresses": [format!("10.0.0.{i}")]}))
        .collect();
    post_json(
        &client,
        path,
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "many"}, "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}],
            "endpoints": endpoints}),
    )
    .await;
    post_json(
        &client,
        path,
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "empty"}, "addressType": "IPv4", "endpoints": []}),
    )
    .await;
    let table = table(&client, path).await;
    let (columns, many) = columns_and_row(&table, "many");
    assert_eq!(
        columns,
        ["Name", "AddressType", "Ports", "Endpoints", "Age"]
    );
    assert_eq!(
        (&many[1], &many[2], &many[3]),
        (
            &json!("IPv4"),
            &json!("80,53"),
            &json!("10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...")
        )
    );
    let (_, empty) = columns_and_row(&table, "empty");
    assert_eq!(
        (&empty[2], &empty[3]),
        (&json!("<unset>"), &json!("<unset>"))
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn kubectl_get_svc_prints_the_kubernetes_service() {
    let Some((cluster, kubectl)) = super::endpoints::Kubectl::with_cluster().await else {
        return;
    };
    let listed = super::endpoints::succeeded(
        &kubectl
            .run(
                &["get", "svc", "kubernetes", "-n", "default", "-o", "wide"],
                "",
            )
            .await,
        "kubectl get svc",
    );
    let lines: Vec<Vec<&str>> = listed
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ],
        "{listed}"
    );
    assert_eq!(
        (&lines[1][..5], lines[1][6]),
        (
            &["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"][..],
            "<none>"
        ),
        "{listed}"
    );
    cluster.shutdown().await;
}
