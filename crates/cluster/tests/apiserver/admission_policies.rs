//! ValidatingAdmissionPolicies on the wire: served with their bindings, their expressions compiled when they are
//! written, and evaluated on writes: `Deny` refuses as kube-apiserver does (status reason from the validation,
//! message naming policy and binding), `Warn` answers with a warning header, `Audit` lets the write through;
//! match constraints, match conditions, namespace selectors and variables narrow what they judge.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::common::cluster;

/// One request's status, warning headers and body.
async fn raw(
    client: &Client,
    method: Method,
    uri: &str,
    body: &Value,
) -> (u16, Vec<String>, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all(http::header::WARNING)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let bytes: Bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        warnings,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn create(client: &Client, uri: &str, body: Value) {
    let (status, _, answer) = raw(client, Method::POST, uri, &body).await;
    assert_eq!(status, 201, "{answer}");
}

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A policy on ConfigMaps: at most two keys, and a `team` label that says where the ConfigMap belongs.
fn config_map_policy(name: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"],
            }]},
            "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
            "variables": [{"name": "keys", "expression": "has(object.data) ? object.data.size() : 0"}],
            "validations": [
                {"expression": "variables.keys <= 2"},
                {"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
                 "messageExpression": "'configmap ' + object.metadata.name + ' names no team'",
                 "reason": "Forbidden"},
            ],
        },
    })
}

fn binding(name: &str, policy: &str, actions: &[&str]) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy, "validationActions": actions},
    })
}

fn config_map(name: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": data})
}

#[tokio::test]
async fn a_deny_binding_refuses_writes_as_kube_apiserver_does() {
    let cluster = cluster().await;
    let client = cluster.client();
    create(&client, POLICIES, config_map_policy("configmap-rules")).await;
    create(
        &client,
        BINDINGS,
        binding("configmap-rules-deny", "configmap-rules", &["Deny"]),
    )
    .await;

    let (status, _, body) = raw(
        &client,
        Method::POST,
        CONFIGMAPS,
        &config_map(
            "big",
            json!({"team": "a"}),
            json!({"a": "1", "b": "2", "c": "3"}),
        ),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let denied = "ValidatingAdmissionPolicy 'configmap-rules' with binding 'configmap-rules-deny' denied request: \
                  failed expression: variables.keys <= 2";
    assert_eq!(
        body["message"],
        format!("configmaps \"big\" is forbidden: {denied}")
    );
    assert_eq!(body["details"]["causes"], json!([{"message": denied}]));
    assert_eq!(body["details"]["kind"], "configmaps");

    let (status, _, body) = raw(
        &client,
        Method::POST,
        CONFIGMAPS,
        &config_map("orphan", json!({}), json!({})),
    )
    .await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (403, Some("Forbidden")),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: configmap orphan names no team"),
        "{body}"
    );

    // A ConfigMap the policy's conditions exempt, and one that passes, are written.
    create(
        &client,
        CONFIGMAPS,
        config_map(
            "exempt",
            json!({"exempt": "yes"}),
            json!({"a": "1", "b": "2", "c": "3"}),
        ),
    )
    .await;
    create(
        &client,
        CONFIGMAPS,
        config_map("fine", json!({"team": "a"}), json!({"a": "1"})),
    )
    .await;

    // Updates are judged too, and other kinds are not.
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let err = maps
        .patch(
            "fine",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "2", "c": "3"}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422 && s.message.contains("variables.keys <= 2")),
        "{err:?}"
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "unlabelled"}})).unwrap(),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn warn_answers_with_a_warning_and_audit_lets_writes_through() {
    let cluster = cluster().await;
    let client = cluster.client();
    create(&client, POLICIES, config_map_policy("configmap-rules")).await;
    create(
        &client,
        BINDINGS,
        binding(
            "configmap-rules-warn",
            "configmap-rules",
            &["Warn", "Audit"],
        ),
    )
    .await;
    let (status, warnings, body) = raw(
        &client,
        Method::POST,
        CONFIGMAPS,
        &config_map("orphan", json!({}), json!({})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        warnings,
        vec![
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'configmap-rules' with binding \
             'configmap-rules-warn': configmap orphan names no team\""
                .to_string()
        ]
    );
}

#[tokio::test]
async fn a_binding_narrows_by_namespace_labels() {
    let cluster = cluster().await;
    let client = cluster.client();
    create(&client, POLICIES, config_map_policy("configmap-rules")).await;
    let mut narrowed = binding("prod-only", "configmap-rules", &["Deny"]);
    narrowed["spec"]["matchResources"] =
        json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}});
    create(&client, BINDINGS, narrowed).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for (name, env) in [("prod", "prod"), ("dev", "dev")] {
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(
                    json!({"metadata": {"name": name, "labels": {"env": env}}}),
                )
                .unwrap(),
            )
            .await
            .unwrap();
    }
    let orphan = config_map("orphan", json!({}), json!({}));
    let (status, _, _) = raw(
        &client,
        Method::POST,
        "/api/v1/namespaces/dev/configmaps",
        &orphan,
    )
    .await;
    assert_eq!(status, 201);
    let (status, _, body) = raw(
        &client,
        Method::POST,
        "/api/v1/namespaces/prod/configmaps",
        &orphan,
    )
    .await;
    assert_eq!(status, 403, "{body}");
}

#[tokio::test]
async fn policies_are_validated_when_written() {
    let cluster = cluster().await;
    let client = cluster.client();
    let mut broken = config_map_policy("broken");
    broken["spec"]["validations"] =
        json!([{"expression": "object.data.size( <= 2"}, {"expression": "frobnicate(object)"}]);
    broken["spec"]["paramKind"] = json!({"apiVersion": "v1", "kind": "ConfigMap"});
    let (status, _, body) = raw(&client, Method::POST, POLICIES, &broken).await;
    assert_eq!(status, 422, "{body}");
    let fields: Vec<&str> = body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.paramKind",
            "spec.validations[0].expression",
            "spec.validations[1].expression"
        ],
        "{body}"
    );
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"broken\" is invalid: "
        ),
        "{message}"
    );
    assert!(
        message.contains("compilation failed")
            && message.contains("undeclared reference to 'frobnicate'"),
        "{message}"
    );

    let (status, _, body) = raw(
        &client,
        Method::POST,
        BINDINGS,
        &binding("both", "p", &["Deny", "Warn"]),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("spec.validationActions: Invalid value"),
        "{body}"
    );
}
