//! OpenAPI documents for the built-in kinds: `/openapi/v3/...` and `/openapi/v2` carry each served kind's schema
//! with its descriptions, `x-kubernetes-group-version-kind` and list semantics, so `kubectl explain` prints them and
//! `kubectl apply --validate=strict` names an unknown field of a Pod; kubectl runs against the HTTPS listener (the
//! kubectl checks skip, saying so, where kubectl is not installed).

use std::path::Path;
use std::process::Stdio;

use http::Request;
use kmm_cluster::EmbeddedOptions;
use kube::Client;
use serde_json::{Value, json};

use super::common::{cluster, cluster_with};
use crate::with_kubectl::kubectl_installed;

/// GET `path` with `accept`: the status and the body as JSON (null when it is not JSON).
async fn get(client: &Client, path: &str, accept: &str) -> (u16, Value) {
    let request = Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .unwrap();
    let response = client.send(request.map(Into::into)).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect_bytes().await.unwrap();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// The schema a `$ref` names, in `document` (`#/components/schemas/...` or `#/definitions/...`).
fn resolve<'a>(document: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference.trim_start_matches('#');
    document
        .pointer(pointer)
        .unwrap_or_else(|| panic!("{reference} does not resolve"))
}

/// The `$ref` of a property, written directly or as the one item of `allOf`.
fn reference_of(property: &Value) -> &str {
    property["$ref"]
        .as_str()
        .or_else(|| property["allOf"][0]["$ref"].as_str())
        .unwrap_or_else(|| panic!("no $ref in {property}"))
}

#[tokio::test]
async fn v3_documents_carry_the_schemas_of_built_in_kinds() {
    let cluster = cluster().await;
    let client = cluster.client();

    let (status, index) = get(&client, "/openapi/v3", "application/json").await;
    assert_eq!(status, 200);
    assert!(index["paths"]["apis/apps/v1"]["serverRelativeURL"].is_string());

    let (status, core) = get(&client, "/openapi/v3/api/v1", "application/json").await;
    assert_eq!(status, 200, "{core}");
    let schemas = &core["components"]["schemas"];
    let pod = &schemas["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "Pod"}])
    );
    assert!(pod["description"].as_str().unwrap().contains("Pod"));
    let spec = resolve(&core, reference_of(&pod["properties"]["spec"]));
    let containers = &spec["properties"]["containers"];
    assert!(
        containers["description"]
            .as_str()
            .unwrap()
            .contains("containers")
    );
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    let container = resolve(&core, reference_of(&containers["items"]));
    assert_eq!(container["properties"]["image"]["type"], "string");
    assert!(
        schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["labels"]
            .is_object(),
        "what the kinds refer to is in the same document"
    );
    assert!(
        core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation"),
        "the PATCH operation kubectl looks for"
    );

    let (status, apps) = get(&client, "/openapi/v3/apis/apps/v1", "application/json").await;
    assert_eq!(status, 200);
    assert_eq!(
        apps["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
    );
}

#[tokio::test]
async fn v2_is_served_in_json_and_refuses_protobuf_only() {
    let cluster = cluster().await;
    let client = cluster.client();

    let (status, v2) = get(&client, "/openapi/v2", "application/json").await;
    assert_eq!(status, 200, "{v2}");
    assert_eq!(v2["swagger"], "2.0");
    let deployment = &v2["definitions"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
    );
    let spec = resolve(&v2, reference_of(&deployment["properties"]["spec"]));
    assert!(spec["properties"]["replicas"]["description"].is_string());

    let protobuf = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    let (status, refused) = get(&client, "/openapi/v2", protobuf).await;
    assert_eq!(status, 406, "{refused}");
    assert_eq!(refused["reason"], "NotAcceptable");
}

/// Run kubectl against the cluster of `kubeconfig`: success, stdout and stderr.
async fn kubectl(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let output = tokio::process::Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", dir.join("kubeconfig"))
        .env("KUBECACHEDIR", dir.join("kube-cache"))
        .stdin(Stdio::null())
        .output()
        .await
        .expect("running kubectl");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explains_and_validates_built_in_kinds() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _cluster = cluster_with(EmbeddedOptions {
        listen: Some("127.0.0.1:0".parse().unwrap()),
        kubeconfig_out: Some(dir.path().join("kubeconfig")),
        ..Default::default()
    })
    .await;

    let (ok, out, err) = kubectl(dir.path(), &["explain", "pod.spec.containers"]).await;
    assert!(ok, "kubectl explain pod.spec.containers: {err}");
    assert!(out.contains("FIELD: containers"), "{out}");
    assert!(
        out.contains("List of containers belonging to the pod"),
        "{out}"
    );
    assert!(out.contains("image\t<string>"), "{out}");

    let (ok, out, err) = kubectl(dir.path(), &["explain", "deployment.spec", "--recursive"]).await;
    assert!(ok, "kubectl explain deployment.spec --recursive: {err}");
    assert!(out.contains("GROUP:      apps"), "{out}");
    for field in ["replicas", "template", "containers", "revisionHistoryLimit"] {
        assert!(out.contains(field), "{field} missing from {out}");
    }

    let manifest = dir.path().join("pod.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\nspec:\n  containers:\n  - name: app\n    image: busybox\n    imagePullPolicyy: Always\n",
    )
    .unwrap();
    let (ok, _, err) = kubectl(
        dir.path(),
        &[
            "apply",
            "--validate=strict",
            "-f",
            manifest.to_str().unwrap(),
        ],
    )
    .await;
    assert!(!ok, "an unknown field is refused");
    assert!(err.contains("imagePullPolicyy"), "{err}");
}
