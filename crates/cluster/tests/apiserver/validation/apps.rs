//! Deployments, ReplicaSets, DaemonSets and ReplicationControllers: selectors, templates, strategies, counts;
//! a selector fixed once set.

use serde_json::{Value, json};

use super::{admitted, check, check_update, refused};
use crate::common::cluster;

fn template(labels: Value, restart: &str) -> Value {
    json!({"metadata": {"labels": labels},
        "spec": {"restartPolicy": restart, "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}})
}

/// A workload of `kind` with `spec` merged over a valid one selecting `app: web`.
fn workload(kind: &str, name: &str, spec: Value) -> Value {
    let mut base = json!({"selector": {"matchLabels": {"app": "web"}}, "template": template(json!({"app": "web"}), "Always")});
    for (key, value) in spec.as_object().expect("spec fields") {
        base[key] = value.clone();
    }
    json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": base})
}

#[tokio::test]
async fn deployments_are_validated_as_kube_apiserver_validates_them() {
    let cluster = cluster().await;
    let client = cluster.client();
    let deployment = |name, spec| workload("Deployment", name, spec);
    let cases = vec![
        admitted(
            "a plain deployment",
            deployment("ok", json!({"replicas": 2})),
        ),
        admitted(
            "Recreate, with expressions",
            deployment(
                "recreate",
                json!({"strategy": {"type": "Recreate"},
                    "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}}),
            ),
        ),
        refused(
            "replicas: -3",
            deployment("negative", json!({"replicas": -3})),
            &[(
                "spec.replicas",
                "Invalid value: -3: must be greater than or equal to 0",
            )],
        ),
        refused(
            "a selector that does not match the template",
            deployment(
                "mismatch",
                json!({"selector": {"matchLabels": {"app": "db"}}}),
            ),
            &[(
                "spec.template.metadata.labels",
                "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
            )],
        ),
        refused(
            "an unknown strategy",
            deployment("blue-green", json!({"strategy": {"type": "BlueGreen"}})),
            &[(
                "spec.strategy.type",
                "Unsupported value: \"BlueGreen\": supported values: \"Recreate\", \"RollingUpdate\"",
            )],
        ),
        refused(
            "a rollout that can never move",
            deployment(
                "stuck",
                json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}),
            ),
            &[(
                "spec.strategy.rollingUpdate.maxUnavailable",
                "Invalid value: 0: may not be 0 when `maxSurge` is 0",
            )],
        ),
        refused(
            "no selector, and pods that do not restart",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "loose", "namespace": "default"},
                "spec": {"template": template(json!({"app": "web"}), "Never")}}),
            &[
                (
                    "spec.selector",
                    "Invalid value: {}: empty selector is invalid for deployment",
                ),
                (
                    "spec.template.spec.restartPolicy",
                    "Unsupported value: \"Never\": supported values: \"Always\"",
                ),
            ],
        ),
        refused(
            "a deadline no longer than minReadySeconds",
            deployment(
                "slow",
                json!({"minReadySeconds": 30, "progressDeadlineSeconds": 30}),
            ),
            &[(
                "spec.progressDeadlineSeconds",
                "Invalid value: 30: must be greater than minReadySeconds",
            )],
        ),
    ];
    check(&client, cases).await;
    check_update(
        &client,
        "a changed selector",
        deployment("fixed", json!({})),
        json!({"spec": {"selector": {"matchLabels": {"app": "web", "tier": "x"}},
            "template": {"metadata": {"labels": {"app": "web", "tier": "x"}}}}}),
        &[("spec.selector", "Invalid value: ")],
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn replica_sets_daemon_sets_and_replication_controllers_are_validated() {
    let cluster = cluster().await;
    let client = cluster.client();
    let cases = vec![
        admitted(
            "a plain replica set",
            workload("ReplicaSet", "rs", json!({"replicas": 1})),
        ),
        admitted("a plain daemon set", workload("DaemonSet", "ds", json!({}))),
        refused(
            "an empty selector",
            workload("ReplicaSet", "everything", json!({"selector": {}})),
            &[("spec.selector", "Invalid value: ")],
        ),
        refused(
            "an unknown update strategy",
            workload(
                "DaemonSet",
                "sideways",
                json!({"updateStrategy": {"type": "Sideways"}}),
            ),
            &[(
                "spec.updateStrategy.type",
                "Unsupported value: \"Sideways\": supported values: \"OnDelete\", \"RollingUpdate\"",
            )],
        ),
        refused(
            "a selector expression without values",
            workload(
                "DaemonSet",
                "no-values",
                json!({"selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}),
            ),
            &[(
                "spec.selector.matchExpressions[0].values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            )],
        ),
        admitted(
            "a replication controller whose selector is its template's labels",
            json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc", "namespace": "default"},
                "spec": {"replicas": 1, "template": template(json!({"app": "web"}), "Always")}}),
        ),
        refused(
            "a replication controller selecting other pods",
            json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc-bad", "namespace": "default"},
                "spec": {"selector": {"app": "db"}, "template": template(json!({"app": "web"}), "Always")}}),
            &[(
                "spec.template.metadata.labels",
                "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
            )],
        ),
    ];
    check(&client, cases).await;
    cluster.shutdown().await;
}
