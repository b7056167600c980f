//! Pods: containers, ports, volumes and mounts, resources, probes, tolerations, restart policy; and what an
//! update may not change.

use serde_json::{Value, json};

use super::{admitted, check, check_update, refused};
use crate::common::cluster;

/// A valid pod whose spec is `base` with `spec` merged over it.
fn pod(name: &str, spec: Value) -> Value {
    let mut base = json!({"containers": [{"name": "main", "image": "nginx:1.27"}]});
    for (key, value) in spec.as_object().expect("spec fields") {
        base[key] = value.clone();
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": base})
}

fn containers(list: Value) -> Value {
    json!({ "containers": list })
}

#[tokio::test]
async fn pods_are_validated_as_kube_apiserver_validates_them() {
    let cluster = cluster().await;
    let client = cluster.client();
    let cases = vec![
        admitted("a plain pod", pod("ok", json!({}))),
        admitted(
            "a full pod",
            pod(
                "full",
                json!({
                    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "conf", "configMap": {"name": "c"}},
                                {"name": "host", "hostPath": {"path": "/lib/modules", "type": "Directory"}}],
                    "initContainers": [{"name": "init", "image": "busybox:1", "command": ["true"]}],
                    "containers": [{"name": "main", "image": "nginx:1.27",
                        "ports": [{"name": "http", "containerPort": 8080}, {"containerPort": 53, "protocol": "UDP"}],
                        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                                {"name": "A", "value": "1"}],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "host", "mountPath": "/lib/modules"}],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "64Mi"}},
                        "readinessProbe": {"httpGet": {"port": "http"}},
                        "livenessProbe": {"exec": {"command": ["true"]}},
                        "securityContext": {"privileged": true}}],
                    "restartPolicy": "OnFailure",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [{"operator": "Exists"}, {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}}
                }),
            ),
        ),
        refused(
            "a container named Foo_Bar",
            pod(
                "bad-name",
                containers(json!([{"name": "Foo_Bar", "image": "nginx"}])),
            ),
            &[(
                "spec.containers[0].name",
                "Invalid value: \"Foo_Bar\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            )],
        ),
        refused(
            "two containers with one name",
            pod(
                "twins",
                containers(json!([{"name": "a", "image": "x:1"}, {"name": "a", "image": "y:1"}])),
            ),
            &[("spec.containers[1].name", "Duplicate value: \"a\"")],
        ),
        refused(
            "a mount of a volume that does not exist",
            pod(
                "no-volume",
                containers(
                    json!([{"name": "a", "image": "x:1", "volumeMounts": [{"name": "missing", "mountPath": "/m"}]}]),
                ),
            ),
            &[(
                "spec.containers[0].volumeMounts[0].name",
                "Not found: \"missing\"",
            )],
        ),
        refused(
            "restartPolicy: Sometimes",
            pod("sometimes", json!({"restartPolicy": "Sometimes"})),
            &[(
                "spec.restartPolicy",
                "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            )],
        ),
        refused(
            "a CPU request above its limit",
            pod(
                "greedy",
                containers(
                    json!([{"name": "a", "image": "x:1", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]),
                ),
            ),
            &[(
                "spec.containers[0].resources.requests",
                "Invalid value: \"2\": must be less than or equal to cpu limit of 1",
            )],
        ),
        refused(
            "containerPort: 70000",
            pod(
                "far-port",
                containers(
                    json!([{"name": "a", "image": "x:1", "ports": [{"containerPort": 70000}]}]),
                ),
            ),
            &[(
                "spec.containers[0].ports[0].containerPort",
                "Invalid value: 70000: must be between 1 and 65535, inclusive",
            )],
        ),
        refused(
            "two volumes with one name",
            pod(
                "twin-volumes",
                json!({"volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]}),
            ),
            &[("spec.volumes[1].name", "Duplicate value: \"data\"")],
        ),
        refused(
            "a label value of 72 characters",
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "long-label", "namespace": "default", "labels": {"app": "a".repeat(72)}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1"}]}}),
            &[("metadata.labels", "Invalid value: \"aaaaaaaa")],
        ),
        refused(
            "a toleration Exists with a value",
            pod(
                "tolerant",
                json!({"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}),
            ),
            &[("spec.tolerations[0].operator", "Invalid value: ")],
        ),
        refused(
            "a volume without a source, a mount without a path, an unknown protocol and a bad env name",
            pod(
                "many",
                json!({"volumes": [{"name": "nothing"}],
                    "containers": [{"name": "a", "image": "x:1", "volumeMounts": [{"name": "nothing", "mountPath": ""}],
                        "ports": [{"containerPort": 80, "protocol": "HTTP"}], "env": [{"name": "A=B"}]}]}),
            ),
            &[
                (
                    "spec.volumes[0]",
                    "Required value: must specify a volume type",
                ),
                (
                    "spec.containers[0].volumeMounts[0].mountPath",
                    "Required value",
                ),
                (
                    "spec.containers[0].ports[0].protocol",
                    "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                ),
                ("spec.containers[0].env[0].name", "Invalid value: \"A=B\""),
            ],
        ),
        refused(
            "a probe without a handler and a liveness probe with two successes",
            pod(
                "probes",
                containers(
                    json!([{"name": "a", "image": "x:1", "readinessProbe": {"periodSeconds": 5},
                "livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}}]),
                ),
            ),
            &[
                (
                    "spec.containers[0].readinessProbe",
                    "Required value: must specify a handler type",
                ),
                (
                    "spec.containers[0].livenessProbe.successThreshold",
                    "Invalid value: 2: must be 1",
                ),
            ],
        ),
        refused(
            "no containers and a bad DNS policy",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty", "namespace": "default"},
                "spec": {"containers": [], "dnsPolicy": "Google"}}),
            &[
                ("spec.containers", "Required value"),
                ("spec.dnsPolicy", "Unsupported value: \"Google\""),
            ],
        ),
        refused(
            "a node selector term of no terms",
            pod(
                "affinity",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}),
            ),
            &[(
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
                "Required value: must have at least one node selector term",
            )],
        ),
        refused(
            "an invalid name and an invalid container in one answer",
            pod("Bad_Pod", containers(json!([{"name": "a", "image": ""}]))),
            &[
                ("metadata.name", "Invalid value: \"Bad_Pod\""),
                ("spec.containers[0].image", "Required value"),
            ],
        ),
    ];
    check(&client, cases).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_pods_spec_is_fixed_but_for_images_deadlines_and_added_tolerations() {
    let cluster = cluster().await;
    let client = cluster.client();
    let original = || {
        pod(
            "fixed",
            json!({"restartPolicy": "Always", "tolerations": [{"key": "a", "operator": "Exists"}]}),
        )
    };
    let rule = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`";
    check_update(
        &client,
        "restartPolicy",
        original(),
        json!({"spec": {"restartPolicy": "Never"}}),
        &[("spec", rule)],
    )
    .await;
    check_update(
        &client,
        "a removed toleration",
        original(),
        json!({"spec": {"tolerations": []}}),
        &[("spec", rule)],
    )
    .await;
    check_update(
        &client,
        "an image",
        original(),
        json!({"spec": {"containers": [{"name": "main", "image": "nginx:1.28"}]}}),
        &[],
    )
    .await;
    check_update(
        &client,
        "an added toleration and a deadline",
        original(),
        json!({"spec": {"activeDeadlineSeconds": 60, "tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]}}),
        &[],
    )
    .await;
    check_update(
        &client,
        "labels",
        original(),
        json!({"metadata": {"labels": {"x": "y"}}}),
        &[],
    )
    .await;
    cluster.shutdown().await;
}
