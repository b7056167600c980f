//! Services: ports, types, affinity, selectors; a cluster IP fixed once allocated.

use serde_json::{Value, json};

use super::{admitted, check, refused};
use crate::common::cluster;

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

#[tokio::test]
async fn services_are_validated_as_kube_apiserver_validates_them() {
    let cluster = cluster().await;
    let client = cluster.client();
    let cases = vec![
        admitted(
            "a service",
            service(
                "web",
                json!({"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}),
            ),
        ),
        admitted(
            "a headless service",
            service(
                "headless",
                json!({"clusterIP": "None", "selector": {"app": "web"}}),
            ),
        ),
        admitted(
            "an external name",
            service(
                "ext",
                json!({"type": "ExternalName", "externalName": "example.com"}),
            ),
        ),
        refused(
            "an unknown type and no ports",
            service("odd", json!({"type": "Magic"})),
            &[
                (
                    "spec.type",
                    "Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
                ),
                ("spec.ports", "Required value"),
            ],
        ),
        refused(
            "two unnamed ports, one of them 0",
            service("ports", json!({"ports": [{"port": 80}, {"port": 0}]})),
            &[
                ("spec.ports[0].name", "Required value"),
                (
                    "spec.ports[1].port",
                    "Invalid value: 0: must be between 1 and 65535, inclusive",
                ),
            ],
        ),
        refused(
            "a name that starts with a digit",
            service("1web", json!({"ports": [{"port": 80}]})),
            &[(
                "metadata.name",
                "Invalid value: \"1web\": a DNS-1035 label must consist of",
            )],
        ),
        refused(
            "an unknown session affinity",
            service(
                "sticky",
                json!({"sessionAffinity": "Cookie", "ports": [{"port": 80}]}),
            ),
            &[(
                "spec.sessionAffinity",
                "Unsupported value: \"Cookie\": supported values: \"ClientIP\", \"None\"",
            )],
        ),
    ];
    check(&client, cases).await;
    cluster.shutdown().await;
}
