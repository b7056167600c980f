//! Node ports: NodePort and LoadBalancer Services get one per port from 30000–32767, keep it across updates that
//! leave it out, never share one, and lose it when their type no longer needs it — as kube-apiserver has them.

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::cluster;

fn service(name: &str, kind: &str, ports: Value) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"type": kind, "selector": {"app": name}, "ports": ports}
    }))
    .unwrap()
}

fn node_ports(service: &Service) -> Vec<i32> {
    service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|p| p.node_port)
        .collect()
}

#[tokio::test]
async fn node_ports_are_allocated_kept_unique_and_dropped_with_the_type() {
    let cluster = cluster().await;
    let services: Api<Service> = Api::namespaced(cluster.client(), "default");
    let pp = PostParams::default();

    let edge = services
        .create(
            &pp,
            &service(
                "edge",
                "NodePort",
                json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}]),
            ),
        )
        .await
        .unwrap();
    let first = node_ports(&edge);
    assert_eq!(first.len(), 2, "{edge:?}");
    assert!(
        first.iter().all(|n| (30000..=32767).contains(n)),
        "{first:?}"
    );
    assert_ne!(first[0], first[1]);

    let balancer = services
        .create(
            &pp,
            &service("balancer", "LoadBalancer", json!([{"port": 80}])),
        )
        .await
        .unwrap();
    let second = node_ports(&balancer);
    assert_eq!(second.len(), 1);
    assert!(
        !first.contains(&second[0]),
        "{first:?} and {second:?} overlap"
    );

    let plain = services
        .create(&pp, &service("plain", "ClusterIP", json!([{"port": 80}])))
        .await
        .unwrap();
    assert!(node_ports(&plain).is_empty());

    // An update that leaves the node ports out (as kubectl apply does) keeps them.
    let mut replaced = service(
        "edge",
        "NodePort",
        json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}]),
    );
    replaced.metadata.resource_version = edge.metadata.resource_version.clone();
    let replaced = services.replace("edge", &pp, &replaced).await.unwrap();
    assert_eq!(node_ports(&replaced), first);

    // A port another Service holds, or one outside the range, is refused and nothing is written.
    for (asked, wording) in [
        (first[0], "provided port is already allocated"),
        (29999, "provided port is not in the valid range"),
    ] {
        let err = services
            .create(
                &pp,
                &service(
                    "thief",
                    "NodePort",
                    json!([{"port": 80, "nodePort": asked}]),
                ),
            )
            .await
            .unwrap_err();
        let kube::Error::Api(status) = err else {
            panic!("expected a refusal, got {err:?}")
        };
        assert_eq!(status.code, 422, "{}", status.message);
        assert!(
            status.message.contains("spec.ports[0].nodePort") && status.message.contains(wording),
            "{}",
            status.message
        );
    }
    assert!(services.get_opt("thief").await.unwrap().is_none());

    // Back to ClusterIP: the node ports go with the type.
    let patch = json!({"spec": {"type": "ClusterIP"}});
    let plain_again = services
        .patch("edge", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert!(node_ports(&plain_again).is_empty(), "{plain_again:?}");
}
