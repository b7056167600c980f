//! CRD `x-kubernetes-validations` on the wire: rules at every schema level with `self` bound to the value there,
//! `message`, `messageExpression`, `reason` and `fieldPath`, transition rules (`oldSelf`) on updates only, the cost
//! limit, a CRD whose rule does not compile, and upstream KMM's own Module rule (`spec.dra` beside
//! `spec.devicePlugin`), each answered as kube-apiserver answers it.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind, Status};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::common::cluster;

fn gadget_crd(spec_schema: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": spec_schema},
                }},
            }],
        },
    }))
    .unwrap()
}

/// A spec with one rule of each kind: plain, message expression, reason and field path, transition, per item.
fn gadget_spec_schema() -> Value {
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "!has(self.owner) || self.owner.startsWith('team-')",
             "messageExpression": "'owner ' + self.owner + ' is not a team'",
             "reason": "FieldValueForbidden", "fieldPath": ".owner"},
            {"rule": "self.max >= oldSelf.max", "message": "max may only grow"},
        ],
        "properties": {
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "owner": {"type": "string"},
            "size": {"type": "string", "x-kubernetes-validations": [
                {"rule": "quantity(self).isLessThan(quantity('10Gi'))"},
            ]},
            "ports": {"type": "array", "items": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.port > 1024", "message": "ports are unprivileged"}],
                "properties": {"port": {"type": "integer"}},
            }},
            "ids": {"type": "array", "items": {"type": "integer"}},
        },
    })
}

fn gadget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec})).unwrap()
}

fn gadgets(client: kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    Api::namespaced_with(client, "default", &ar)
}

fn refusal(err: kube::Error) -> Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn crd_rules_are_enforced_with_kube_apiservers_wording() {
    let cluster = cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    crds.create(&PostParams::default(), &gadget_crd(gadget_spec_schema()))
        .await
        .unwrap();
    let api = gadgets(cluster.client());
    let pp = PostParams::default();

    api.create(&pp, &gadget("ok", json!({"min": 1, "max": 2, "owner": "team-a", "size": "1Gi", "ports": [{"port": 8080}]})))
        .await
        .unwrap();

    let cases = [
        (
            json!({"min": 3, "max": 2}),
            "Gadget.example.com \"bad\" is invalid: spec: Invalid value: \"object\": min must not exceed max",
        ),
        (
            json!({"min": 1, "max": 2, "owner": "bob"}),
            "Gadget.example.com \"bad\" is invalid: spec.owner: Forbidden: owner bob is not a team",
        ),
        (
            json!({"min": 1, "max": 2, "size": "20Gi"}),
            "Gadget.example.com \"bad\" is invalid: spec.size: Invalid value: \"string\": failed rule: quantity(self).isLessThan(quantity('10Gi'))",
        ),
        (
            json!({"min": 1, "max": 2, "ports": [{"port": 80}]}),
            "Gadget.example.com \"bad\" is invalid: spec.ports[0]: Invalid value: \"object\": ports are unprivileged",
        ),
        (
            json!({"min": 1, "max": 2, "size": "lots"}),
            "Gadget.example.com \"bad\" is invalid: spec.size: Invalid value: \"string\": quantities must match the regular expression",
        ),
    ];
    for (spec, wanted) in cases {
        let status = refusal(
            api.create(&pp, &gadget("bad", spec.clone()))
                .await
                .unwrap_err(),
        );
        assert_eq!(
            (status.code, status.reason.as_str()),
            (422, "Invalid"),
            "{spec}"
        );
        assert!(
            status.message.starts_with(wanted),
            "{spec}: {}",
            status.message
        );
    }

    // The transition rule runs on updates only: a create with any max passes it, shrinking max is refused.
    let status = refusal(
        api.patch(
            "ok",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"min": 0, "max": 1}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        status.message,
        "Gadget.example.com \"ok\" is invalid: spec: Invalid value: \"object\": max may only grow"
    );
    api.patch(
        "ok",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"max": 5}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn the_status_body_names_the_rule_as_a_cause() {
    let cluster = cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    crds.create(&PostParams::default(), &gadget_crd(gadget_spec_schema()))
        .await
        .unwrap();
    let body = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
        "spec": {"min": 5, "max": 1}});
    let request = http::Request::post("/apis/example.com/v1/namespaces/default/gadgets")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap();
    let response = cluster.client().send(request).await.unwrap();
    assert_eq!(response.status(), 422);
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let status: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": "Invalid value: \"object\": min must not exceed max", "field": "spec"}])
    );
}

#[tokio::test]
async fn a_rule_that_does_not_compile_refuses_the_crd() {
    let cluster = cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    for (rule, wanted) in [
        ("self.min <=", "compilation failed"),
        (
            "self.min.frobnicate()",
            "undeclared reference to 'frobnicate'",
        ),
        ("other.min > 0", "undeclared reference to 'other'"),
    ] {
        let schema = json!({"type": "object", "x-kubernetes-validations": [{"rule": rule}],
            "properties": {"min": {"type": "integer"}}});
        let status = refusal(
            crds.create(&PostParams::default(), &gadget_crd(schema))
                .await
                .unwrap_err(),
        );
        assert_eq!(status.code, 422, "{rule}");
        assert!(
            status.message.contains("x-kubernetes-validations[0]/rule")
                && status.message.contains(wanted),
            "{rule}: {}",
            status.message
        );
    }
}

#[tokio::test]
async fn a_hostile_rule_hits_the_cost_limit_and_fails_fast() {
    let cluster = cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    let schema = json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.ids.all(x, self.ids.all(y, self.ids.all(z, x + y + z >= 0)))"}],
        "properties": {"ids": {"type": "array", "items": {"type": "integer"}}}});
    crds.create(&PostParams::default(), &gadget_crd(schema))
        .await
        .unwrap();
    let api = gadgets(cluster.client());
    let ids: Vec<u32> = (0..2_000).collect();
    let started = std::time::Instant::now();
    let status = refusal(
        api.create(&PostParams::default(), &gadget("g", json!({"ids": ids})))
            .await
            .unwrap_err(),
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(
        status.message.contains(
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.ids.all("
        ),
        "{}",
        status.message
    );
    // A small list is well within the limit.
    api.create(
        &PostParams::default(),
        &gadget("small", json!({"ids": [1, 2, 3]})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_module_with_both_dra_and_a_device_plugin_is_refused_by_its_crd_rule() {
    let cluster = cluster().await;
    let modules: Api<kmm_api::kmm::Module> = Api::namespaced(cluster.client(), "default");
    let module: kmm_api::kmm::Module = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module", "metadata": {"name": "x"},
        "spec": {
            "selector": {"kubernetes.io/os": "linux"},
            "dra": {"driverName": "gpu.example.com", "container": {"image": "registry.example.com/dra:v1"}},
            "devicePlugin": {"container": {"image": "registry.example.com/dp:v1"}},
        },
    }))
    .unwrap();
    let status = refusal(
        modules
            .create(&PostParams::default(), &module)
            .await
            .unwrap_err(),
    );
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "Module.kmm.sigs.x-k8s.io \"x\" is invalid: spec: Invalid value: \"object\": spec.dra and spec.devicePlugin are mutually exclusive"
    );
}
