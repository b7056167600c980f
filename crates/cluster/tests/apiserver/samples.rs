//! Every upstream sample (and every project fixture) applied to the embedded cluster after the output of
//! `kmm-tui crds`: accepted, or — where upstream itself rejects the document — refused with a 422 naming the field.

use std::fs;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kmm_api::crds;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use serde_json::Value;

use super::common::cluster;

/// Upstream documents upstream rejects, with the field the rejection names.
const UPSTREAM_REJECTED: &[(&str, &str)] = &[(
    "module-sample",
    "spec.moduleLoader.container.kernelMappings",
)];
/// Fixture annotation naming the field a fixture's rejection must name.
const EXPECTED_VIOLATION: &str = "test.kmm-tui.io/expect-violation";

fn yaml_documents(paths: &[PathBuf]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for path in paths {
        let text = fs::read_to_string(path).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        out.extend(
            docs.into_iter()
                .filter(|d| d.get("kind").is_some())
                .map(|d| (path.display().to_string(), d)),
        );
    }
    out
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    files
}

/// Apply each document of our kinds; check acceptance against what is expected of it.
async fn apply_all(cluster: &kmm_cluster::EmbeddedCluster, docs: Vec<(String, Value)>) -> usize {
    let definitions = crds::all();
    let client = cluster.client();
    let mut applied = 0;
    for (source, doc) in docs {
        let api_version = doc["apiVersion"].as_str().unwrap_or("");
        let kind = doc["kind"].as_str().unwrap_or("");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let Some(crd) = definitions
            .iter()
            .find(|c| c.spec.group == group && c.spec.names.kind == kind)
        else {
            continue;
        };
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, kind),
            &crd.spec.names.plural,
        );
        let api: Api<DynamicObject> = if crd.spec.scope == "Namespaced" {
            let namespace = doc
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_string();
            let namespaces: Api<Namespace> = Api::all(client.clone());
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace.clone()),
                    ..Default::default()
                },
                ..Default::default()
            };
            namespaces
                .patch(
                    &namespace,
                    &PatchParams::apply("samples"),
                    &Patch::Apply(&ns),
                )
                .await
                .unwrap();
            Api::namespaced_with(client.clone(), &namespace, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        let expected_field = UPSTREAM_REJECTED
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| f.to_string())
            .or_else(|| {
                doc.pointer(&format!(
                    "/metadata/annotations/{}",
                    EXPECTED_VIOLATION.replace('/', "~1")
                ))
                .and_then(Value::as_str)
                .map(str::to_string)
            });
        let object: DynamicObject = serde_json::from_value(doc.clone()).unwrap();
        let result = api
            .patch(
                &name,
                &PatchParams::apply("samples").force(),
                &Patch::Apply(&object),
            )
            .await;
        match (result, expected_field) {
            (Ok(_), None) => applied += 1,
            (Err(kube::Error::Api(status)), Some(field)) => {
                assert_eq!(
                    status.code, 422,
                    "{source} {kind}/{name}: {}",
                    status.message
                );
                assert!(
                    status.message.contains(&field),
                    "{source} {kind}/{name}: the rejection names {field}: {}",
                    status.message
                );
            }
            (Ok(_), Some(field)) => {
                panic!("{source} {kind}/{name}: accepted, but upstream rejects it ({field})")
            }
            (Err(e), _) => panic!("{source} {kind}/{name}: rejected: {e}"),
        }
    }
    applied
}

/// Apply the `kmm-tui crds` output as `kubectl apply -f -` would see it.
async fn apply_crds_yaml(cluster: &kmm_cluster::EmbeddedCluster) {
    let yaml = crds::to_yaml(&crds::all());
    let docs: Vec<CustomResourceDefinition> = serde_saphyr::from_multiple(&yaml).unwrap();
    assert_eq!(docs.len(), crds::all().len());
    let api: Api<CustomResourceDefinition> = Api::all(cluster.client());
    for crd in docs {
        let name = crd.metadata.name.clone().unwrap();
        api.patch(
            &name,
            &PatchParams::apply("kubectl").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn upstream_samples_are_admitted_as_upstream_admits_them() {
    let reference = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/reference"
    ));
    if !reference.is_dir() {
        eprintln!("skipping: {} not found", reference.display());
        return;
    }
    let cluster = cluster().await;
    apply_crds_yaml(&cluster).await;
    let mut files = Vec::new();
    for dir in ["kmm/config/samples", "kmm/ci", "shim/config/samples"] {
        files.extend(yaml_files(&reference.join(dir)));
    }
    files.push(reference.join("imagecache/deploy/kubefledged-imagecache.yaml"));
    let applied = apply_all(&cluster, yaml_documents(&files)).await;
    assert!(applied >= 8, "only {applied} upstream samples were applied");
}

#[tokio::test]
async fn project_fixtures_are_admitted_or_rejected_as_annotated() {
    let cluster = cluster().await;
    apply_crds_yaml(&cluster).await;
    let files = yaml_files(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../api/tests/fixtures"
    )));
    let applied = apply_all(&cluster, yaml_documents(&files)).await;
    assert!(applied >= 10, "only {applied} fixtures were applied");
}
