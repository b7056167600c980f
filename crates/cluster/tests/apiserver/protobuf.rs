//! Protobuf request bodies, as kubectl's typed clients send them: decoded into the same stored object as the JSON
//! of the same object, for creates, updates, delete options and access reviews; responses stay JSON, and a client
//! that accepts only protobuf is told so with 406.

use kmm_cluster::apiserver::protobuf::{self, MEDIA_TYPE};
use serde_json::{Value, json};

use super::common::cluster;

async fn send(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<Value, kube::Error> {
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(body)
        .unwrap();
    client.request::<Value>(request).await
}

async fn create_pb(client: &kube::Client, uri: &str, object: &Value) -> Value {
    let body = protobuf::encode_body(object).expect("the sample encodes");
    send(client, "POST", uri, MEDIA_TYPE, body)
        .await
        .unwrap_or_else(|e| panic!("protobuf create of {uri}: {e}"))
}

async fn create_json(client: &kube::Client, uri: &str, object: &Value) -> Value {
    let body = serde_json::to_vec(object).unwrap();
    send(client, "POST", uri, "application/json", body)
        .await
        .unwrap_or_else(|e| panic!("JSON create of {uri}: {e}"))
}

/// Empty strings are left out: Go writes an unset string field as empty in protobuf, so the decoder cannot tell
/// `"value": ""` from no value, and kube-apiserver (Go's `omitempty`) stores neither.
fn without_empty_strings(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| v.as_str() != Some(""))
                .map(|(k, v)| (k, without_empty_strings(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_empty_strings).collect()),
        other => other,
    }
}

/// What must match between two objects created from the same body under different names.
fn comparable(object: Value) -> Value {
    // What the server derives from the object's own name and uid (a Job's generated selector and labels) compares
    // as a placeholder.
    let mut text = object.to_string();
    for (field, placeholder) in [("uid", "\"UID\""), ("name", "\"NAME\"")] {
        if let Some(value) = object["metadata"][field].as_str() {
            text = text.replace(&format!("{value:?}"), placeholder);
        }
    }
    let mut object = without_empty_strings(serde_json::from_str(&text).unwrap());
    let meta = object["metadata"].as_object_mut().unwrap();
    for volatile in [
        "name",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
    ] {
        meta.remove(volatile);
    }
    if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
        labels.remove("kubernetes.io/metadata.name");
    }
    object
}

/// One object of every shape the engine, the simulation and kubectl create.
fn samples() -> Vec<(&'static str, Value)> {
    let pod_spec = json!({
        "containers": [{
            "name": "app", "image": "registry.example/app:1.0",
            "args": ["--port", "8080"],
            "env": [{"name": "MODE", "value": "fast"}, {"name": "EMPTY", "value": ""}],
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m"}},
            "securityContext": {"privileged": false, "runAsUser": 0, "allowPrivilegeEscalation": false},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}]
        }],
        "volumes": [{"name": "data", "hostPath": {"path": "/var/lib/data", "type": "DirectoryOrCreate"}}],
        "nodeSelector": {"kubernetes.io/hostname": "worker-1"},
        "tolerations": [{"operator": "Exists"}],
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": false
    });
    vec![
        (
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": {"team": "a"}}}),
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                   "data": {"k": "v", "empty": ""}, "binaryData": {"b": "AAH/"}, "immutable": false}),
        ),
        (
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"},
                   "data": {"password": "czNjcmV0"}, "stringData": {"user": "admin"}, "type": "Opaque"}),
        ),
        (
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"},
                   "automountServiceAccountToken": false}),
        ),
        (
            "/api/v1/namespaces/default/pods",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "annotations": {"a": "1"}},
                   "spec": pod_spec}),
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "labels": {"app": "x"}},
                   "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "x"}},
                            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%"}},
                            "template": {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec}}}),
        ),
        (
            "/apis/apps/v1/namespaces/default/daemonsets",
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x"},
                   "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]},
                            "template": {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec}}}),
        ),
        (
            "/apis/batch/v1/namespaces/default/jobs",
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"},
                   "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 60,
                            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "b"}]}}}}),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "x"},
                   "spec": {"holderIdentity": "engine-1", "leaseDurationSeconds": 15,
                            "renewTime": "2026-01-02T03:04:05.123456Z", "leaseTransitions": 0}}),
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses",
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "x"},
                   "handler": "spin", "scheduling": {"nodeSelector": {"spin": "true"}}}),
        ),
        (
            "/apis/events.k8s.io/v1/namespaces/default/events",
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "x"},
                   "eventTime": "2026-01-02T03:04:05.000001Z", "reportingController": "kmm-tui",
                   "reportingInstance": "kmm-tui-1", "action": "Build", "reason": "Building", "type": "Normal",
                   "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}, "note": "building"}),
        ),
        (
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "PLURAL.proto.example"},
                   "spec": {"group": "proto.example", "scope": "Namespaced",
                            "names": {"plural": "PLURAL", "kind": "KIND", "singular": "SINGULAR"},
                            "versions": [{"name": "v1", "served": true, "storage": true,
                                          "schema": {"openAPIV3Schema": {"type": "object",
                                              "properties": {"spec": {"type": "object",
                                                  "x-kubernetes-preserve-unknown-fields": true,
                                                  "properties": {"size": {"type": "integer", "minimum": 1, "default": 3},
                                                                 "port": {"x-kubernetes-int-or-string": true},
                                                                 "tags": {"type": "array", "items": {"type": "string"}}}}}}}}]}}),
        ),
    ]
}

#[tokio::test]
async fn protobuf_and_json_bodies_store_the_same_object() {
    let cluster = cluster().await;
    let client = cluster.client();
    for (uri, sample) in samples() {
        let kind = sample["kind"].as_str().unwrap().to_string();
        let named = |prefix: &str| {
            let mut object = serde_json::to_string(&sample)
                .unwrap()
                .replace("PLURAL", &format!("{prefix}things"))
                .replace("SINGULAR", &format!("{prefix}thing"))
                .replace("KIND", &format!("{}Thing", prefix.to_uppercase()));
            if kind != "CustomResourceDefinition" {
                let mut value: Value = serde_json::from_str(&object).unwrap();
                value["metadata"]["name"] = json!(format!("{prefix}-{}", kind.to_lowercase()));
                object = value.to_string();
            }
            serde_json::from_str::<Value>(&object).unwrap()
        };
        let from_json = create_json(&client, uri, &named("json")).await;
        let from_protobuf = create_pb(&client, uri, &named("pb")).await;
        assert_eq!(from_protobuf["kind"], json!(kind), "responses are JSON");
        let (mut a, mut b) = (comparable(from_json), comparable(from_protobuf));
        if kind == "CustomResourceDefinition" {
            for object in [&mut a, &mut b] {
                let text = object
                    .to_string()
                    .replace("jsonthing", "thing")
                    .replace("pbthing", "thing")
                    .replace("JSONThing", "Thing")
                    .replace("PBThing", "Thing")
                    .replace("json.thing", "thing")
                    .replace("pb.thing", "thing");
                *object = serde_json::from_str(&text).unwrap();
                object.as_object_mut().unwrap().remove("status");
            }
        }
        assert_eq!(a, b, "{kind}: the protobuf body stored something else");
    }
}

#[tokio::test]
async fn updates_and_delete_options_in_protobuf() {
    let cluster = cluster().await;
    let client = cluster.client();
    let uri = "/api/v1/namespaces/default/configmaps";
    let created = create_pb(
        &client,
        uri,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}}),
    )
    .await;
    let mut update = created.clone();
    update["data"] = json!({"a": "2", "b": "3"});
    let updated = send(
        &client,
        "PUT",
        &format!("{uri}/cfg"),
        MEDIA_TYPE,
        protobuf::encode_body(&update).unwrap(),
    )
    .await
    .expect("protobuf update");
    assert_eq!(updated["data"], json!({"a": "2", "b": "3"}));

    let mut stale = created.clone();
    stale["data"] = json!({"a": "stale"});
    let err = send(
        &client,
        "PUT",
        &format!("{uri}/cfg"),
        MEDIA_TYPE,
        protobuf::encode_body(&stale).unwrap(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "the resourceVersion in the protobuf body is honoured: {err:?}"
    );

    let wrong_uid = json!({"apiVersion": "v1", "kind": "DeleteOptions",
                           "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}});
    let err = send(
        &client,
        "DELETE",
        &format!("{uri}/cfg"),
        MEDIA_TYPE,
        protobuf::encode_body(&wrong_uid).unwrap(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.message.contains("UID in precondition")),
        "the preconditions of protobuf DeleteOptions are read: {err:?}"
    );
    let right_uid = json!({"apiVersion": "v1", "kind": "DeleteOptions",
                           "preconditions": {"uid": created["metadata"]["uid"]},
                           "propagationPolicy": "Background"});
    send(
        &client,
        "DELETE",
        &format!("{uri}/cfg"),
        MEDIA_TYPE,
        protobuf::encode_body(&right_uid).unwrap(),
    )
    .await
    .expect("protobuf delete options");
    let gone = client
        .request::<Value>(
            http::Request::get(format!("{uri}/cfg"))
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(gone, kube::Error::Api(ref s) if s.code == 404),
        "{gone:?}"
    );
}

#[tokio::test]
async fn access_reviews_in_protobuf_are_answered_in_json() {
    let cluster = cluster().await;
    let client = cluster.client();
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "configmaps"}}
    });
    let answer = create_pb(
        &client,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &review,
    )
    .await;
    assert_eq!(
        answer["spec"]["resourceAttributes"],
        json!({"namespace": "default", "verb": "create", "resource": "configmaps"})
    );
    assert!(answer["status"]["allowed"].is_boolean(), "{answer}");
}

#[tokio::test]
async fn a_client_accepting_only_protobuf_is_refused() {
    let cluster = cluster().await;
    let client = cluster.client();
    let request = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("accept", MEDIA_TYPE)
        .body(Vec::new())
        .unwrap();
    let err = client.request::<Value>(request).await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a status, got {err:?}")
    };
    assert_eq!(
        (status.code, status.reason.as_str()),
        (406, "NotAcceptable")
    );
    assert!(
        status.message.contains("application/json"),
        "{}",
        status.message
    );
    let request = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("accept", format!("{MEDIA_TYPE}, application/json"))
        .body(Vec::new())
        .unwrap();
    let list = client
        .request::<Value>(request)
        .await
        .expect("JSON is acceptable");
    assert_eq!(list["kind"], "ConfigMapList");
}

#[tokio::test]
async fn malformed_protobuf_is_a_bad_request() {
    let cluster = cluster().await;
    let client = cluster.client();
    for body in [&b"k8s\x00\x0a\xff"[..], &b"k8s\x00"[..]] {
        let err = send(
            &client,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            MEDIA_TYPE,
            body.to_vec(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, kube::Error::Api(ref s) if (400..500).contains(&s.code)),
            "{body:?}: {err:?}"
        );
    }
}
