//! Namespaces, Nodes, RuntimeClasses, Leases, Events and PodDisruptionBudgets.

use serde_json::json;

use super::{admitted, check, check_update, refused};
use crate::common::cluster;

#[tokio::test]
async fn cluster_objects_are_validated_as_kube_apiserver_validates_them() {
    let cluster = cluster().await;
    let client = cluster.client();
    let lease = |name: &str, duration: i64| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name, "namespace": "default"},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": duration}})
    };
    let runtime_class = |name: &str, handler: &str| json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler});
    let budget = |name: &str, spec| json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"}, "spec": spec});
    let cases = vec![
        admitted("a lease", lease("ok", 15)),
        admitted("a runtime class", runtime_class("wasm", "spin")),
        admitted(
            "a budget",
            budget(
                "ok",
                json!({"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}),
            ),
        ),
        admitted(
            "a node with taints",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-x"},
                "spec": {"podCIDRs": ["10.0.1.0/24"], "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}),
        ),
        admitted(
            "an event about a pod",
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Started", "message": "m"}),
        ),
        refused(
            "a lease of duration 0",
            lease("zero", 0),
            &[(
                "spec.leaseDurationSeconds",
                "Invalid value: 0: must be greater than 0",
            )],
        ),
        refused(
            "a runtime class handler 'Bad Handler'",
            runtime_class("bad", "Bad Handler"),
            &[(
                "handler",
                "Invalid value: \"Bad Handler\": a lowercase RFC 1123 label must consist of",
            )],
        ),
        refused(
            "a budget with both bounds",
            budget("both", json!({"minAvailable": 1, "maxUnavailable": 1})),
            &[("spec", "Invalid value: ")],
        ),
        refused(
            "a budget above 100%",
            budget("over", json!({"maxUnavailable": "120%"})),
            &[(
                "spec.maxUnavailable",
                "Invalid value: \"120%\": must not be greater than 100%",
            )],
        ),
        refused(
            "a taint without an effect and a bad CIDR",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-y"},
                "spec": {"podCIDRs": ["10.0.0.0/40"], "taints": [{"key": "dedicated"}]}}),
            &[
                (
                    "spec.podCIDRs[0]",
                    "Invalid value: \"10.0.0.0/40\": must be a valid CIDR value",
                ),
                ("spec.taints[0].effect", "Required value"),
            ],
        ),
        refused(
            "an event about an object of another namespace",
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e2", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": "kube-system"}}),
            &[(
                "involvedObject.namespace",
                "Invalid value: \"kube-system\": does not match event.namespace",
            )],
        ),
        refused(
            "a new-style event without an action",
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e3", "namespace": "default"},
                "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "x.io/c", "reportingInstance": "i",
                "reason": "R", "type": "Normal", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}),
            &[("action", "Required value")],
        ),
        refused(
            "a namespace finalizer that is not a name",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fin"}, "spec": {"finalizers": ["a b"]}}),
            &[("spec.finalizers", "Invalid value: \"a b\"")],
        ),
    ];
    check(&client, cases).await;
    check_update(
        &client,
        "a runtime class handler",
        runtime_class("fixed", "runc"),
        json!({"handler": "crun"}),
        &[("handler", "Invalid value: \"crun\": field is immutable")],
    )
    .await;
    cluster.shutdown().await;
}
