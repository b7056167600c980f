//! Custom resources defined at runtime: discovery, structural schema enforcement (defaults, pruning, validation,
//! strict field validation), the status subresource, and CRD deletion.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::{ApiResource, Discovery};
use serde_json::json;

use super::common::{cluster, eventually};

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"], "categories": ["toys"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["color"],
                            "properties": {
                                "color": {"type": "string", "enum": ["red", "blue"]},
                                "size": {"type": "integer", "minimum": 1, "default": 3},
                                "maxUpdate": {"x-kubernetes-int-or-string": true},
                                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                            }
                        },
                        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
                    }
                }}
            }]
        }
    }))
    .unwrap()
}

fn widget(name: &str, spec: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})).unwrap()
}

#[tokio::test]
async fn crd_created_at_runtime_is_served_and_enforced() {
    let cluster = cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    let created = crds
        .create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    let conditions = created.status.unwrap().conditions.unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );

    let discovery = Discovery::new(cluster.client()).run().await.unwrap();
    let (resource, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "Widget")
        .expect("Widget is discovered");
    assert_eq!(resource.plural, "widgets");
    assert!(
        caps.subresources
            .iter()
            .any(|(r, _)| r.plural == "widgets/status" || r.plural == "status"),
        "{:?}",
        caps.subresources
    );

    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client(), "default", &ar);

    // Defaults applied, unknown fields pruned, preserve-unknown-fields kept, int-or-string accepted.
    let w = api
        .create(&PostParams::default(), &widget("w1", json!({"color": "red", "bogus": 1, "maxUpdate": "25%", "extra": {"anything": [1, 2]}})))
        .await
        .unwrap();
    assert_eq!(w.data["spec"]["size"], 3);
    assert!(w.data["spec"].get("bogus").is_none());
    assert_eq!(w.data["spec"]["extra"]["anything"], json!([1, 2]));
    assert_eq!(w.metadata.generation, Some(1));

    // Invalid values: 422 naming the fields.
    let err = api
        .create(
            &PostParams::default(),
            &widget("w2", json!({"color": "green", "size": 0})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected 422")
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status.message.contains("spec.color") && status.message.contains("spec.size"),
        "{}",
        status.message
    );
    let err = api
        .create(&PostParams::default(), &widget("w3", json!({"size": 2})))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422 && s.message.contains("spec.color")),
        "{err:?}"
    );

    // fieldValidation=Strict turns unknown fields into a 400.
    let body = serde_json::to_vec(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w4"}, "spec": {"color": "blue", "typo": true}})).unwrap();
    let request = http::Request::post(
        "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Strict",
    )
    .header("content-type", "application/json")
    .body(body)
    .unwrap();
    let err = cluster
        .client()
        .request::<serde_json::Value>(request)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 400 && s.message.contains("unknown field \"spec.typo\"")),
        "{err:?}"
    );

    // Status subresource: the main endpoint ignores status, /status changes only status, generation follows spec.
    let w = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert!(w.data.get("status").is_none());
    let w = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(w.data["status"]["ready"], true);
    assert_eq!(w.metadata.generation, Some(1));
    let w = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(2));
    let err = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": "yes"}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422),
        "{err:?}"
    );

    // Deleting the CRD removes its objects and stops serving the resource.
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    eventually(5, "the CRD is gone", || async {
        crds.get_opt("widgets.example.com").await.unwrap().is_none()
    })
    .await;
    let err = api.list(&Default::default()).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err:?}"
    );
}
