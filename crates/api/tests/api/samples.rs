//! Sample documents parse into the typed kinds and serialise back to the same JSON, modulo the
//! defaults the API server would apply; admission accepts exactly the ones upstream accepts.
//!
//! The upstream samples live in `../shared/reference` (absent from a fresh clone, so those tests
//! skip with a reason); the project's own fixtures under `tests/fixtures` cover the same
//! shapes and always run.

use std::fs;
use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kmm_api::{crds, day0, imagecache, kmm, shim, validation};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Upstream sample files, relative to `../shared/reference`, as the acceptance criteria list them.
const UPSTREAM_SAMPLE_DIRS: [&str; 3] = ["kmm/config/samples", "kmm/ci", "shim/config/samples"];
const UPSTREAM_SAMPLE_FILES: [&str; 1] = ["imagecache/deploy/kubefledged-imagecache.yaml"];

/// Upstream documents upstream itself rejects: (document name, field the rejection names).
const UPSTREAM_REJECTED: [(&str, &str); 1] = [(
    "module-sample",
    "spec.moduleLoader.container.kernelMappings",
)];

/// API versions of documents in the sample directories that are not kinds of ours.
const OTHER_API_VERSIONS: [&str; 2] = ["v1", "kustomize.config.k8s.io/v1beta1"];

/// Annotation a fixture carries when admission must reject it; its value is the field named.
const EXPECTED_VIOLATION: &str = "test.kmm-tui.io/expect-violation";

struct Document {
    source: String,
    value: Value,
}

fn reference_dir() -> Option<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/reference"
    ));
    if dir.is_dir() {
        Some(dir.to_path_buf())
    } else {
        eprintln!("skipping: {} not found", dir.display());
        None
    }
}

fn fixtures_dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures")).to_path_buf()
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("reading {}: {error}", dir.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    files.sort();
    files
}

/// Every Kubernetes object in `files` (documents without `kind`, such as kustomizations, are not).
fn documents(files: &[PathBuf]) -> Vec<Document> {
    let mut documents = Vec::new();
    for file in files {
        let text = fs::read_to_string(file)
            .unwrap_or_else(|error| panic!("reading {}: {error}", file.display()));
        let values: Vec<Value> = serde_saphyr::from_multiple(&text)
            .unwrap_or_else(|error| panic!("parsing {}: {error}", file.display()));
        for value in values {
            if value.get("kind").is_some() && value.get("apiVersion").is_some() {
                let name = value
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                documents.push(Document {
                    source: format!("{} ({name})", file.display()),
                    value,
                });
            }
        }
    }
    documents
}

fn upstream_documents() -> Option<Vec<Document>> {
    let reference = reference_dir()?;
    let mut files: Vec<PathBuf> = UPSTREAM_SAMPLE_DIRS
        .iter()
        .flat_map(|dir| yaml_files(&reference.join(dir)))
        .collect();
    files.extend(
        UPSTREAM_SAMPLE_FILES
            .iter()
            .map(|file| reference.join(file)),
    );
    Some(documents(&files))
}

fn fixture_documents() -> Vec<Document> {
    documents(&yaml_files(&fixtures_dir()))
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Parses `value` as `T` and serialises it back.
fn through<T: DeserializeOwned + Serialize>(value: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(value.clone()).map_err(|error| error.to_string())?;
    serde_json::to_value(&typed).map_err(|error| error.to_string())
}

/// Round trip through our type for the document's kind; `None` for kinds that are not ours.
fn round_trip(value: &Value) -> Option<Result<Value, String>> {
    let api_version = str_at(value, "/apiVersion");
    Some(match (api_version, str_at(value, "/kind")) {
        ("kmm.sigs.x-k8s.io/v1beta1", "Module") => through::<kmm::Module>(value),
        ("kmm.sigs.x-k8s.io/v1beta1", "NodeModulesConfig") => {
            through::<kmm::NodeModulesConfig>(value)
        }
        ("kmm.sigs.x-k8s.io/v1beta1", "ModuleImagesConfig") => {
            through::<kmm::ModuleImagesConfig>(value)
        }
        ("kmm.sigs.x-k8s.io/v1beta1", "ModuleBuildSignConfig") => {
            through::<kmm::ModuleBuildSignConfig>(value)
        }
        ("kmm.sigs.x-k8s.io/v1beta1", "PreflightValidation") => {
            through::<kmm::preflight::v1beta1::PreflightValidation>(value)
        }
        ("kmm.sigs.x-k8s.io/v1beta2", "PreflightValidation") => {
            through::<kmm::PreflightValidation>(value)
        }
        ("kmm.sigs.x-k8s.io/v1beta1", "ModuleDay0") => through::<day0::ModuleDay0>(value),
        ("runtime.spinkube.dev/v1alpha1", "Shim") => through::<shim::Shim>(value),
        ("kubefledged.io/v1alpha2", "ImageCache") => through::<imagecache::ImageCache>(value),
        _ => return None,
    })
}

/// The schema of the document's kind and version in our CRDs.
fn schema_for(value: &Value) -> Option<JSONSchemaProps> {
    let (group, version) = str_at(value, "/apiVersion").split_once('/')?;
    let kind = str_at(value, "/kind");
    crds::all()
        .into_iter()
        .filter(|crd| crd.spec.group == group && crd.spec.names.kind == kind)
        .flat_map(|crd| crd.spec.versions)
        .find(|served| served.name == version)
        .and_then(|served| served.schema?.open_api_v3_schema)
}

/// Fills in schema defaults the way the API server does on admission.
fn apply_defaults(schema: &JSONSchemaProps, value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (name, property) in schema.properties.iter().flatten() {
                if let (None, Some(default)) = (map.get(name), &property.default) {
                    map.insert(name.clone(), default.0.clone());
                }
                if let Some(child) = map.get_mut(name) {
                    apply_defaults(property, child);
                }
            }
            if let Some(JSONSchemaPropsOrBool::Schema(values)) = &schema.additional_properties {
                map.values_mut()
                    .for_each(|child| apply_defaults(values, child));
            }
        }
        Value::Array(items) => {
            if let Some(JSONSchemaPropsOrArray::Schema(item)) = &schema.items {
                items
                    .iter_mut()
                    .for_each(|child| apply_defaults(item, child));
            }
        }
        _ => {}
    }
}

/// Drops nulls, `false`, `""`, `[]` and `{}`: values that mean "unset" in every kind here.
fn without_zero_values(value: &Value) -> Option<Value> {
    let kept = match value {
        Value::Null | Value::Bool(false) => return None,
        Value::String(text) if text.is_empty() => return None,
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(key, child)| Some((key.clone(), without_zero_values(child)?)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().filter_map(without_zero_values).collect()),
        other => other.clone(),
    };
    match &kept {
        Value::Object(map) if map.is_empty() => None,
        Value::Array(items) if items.is_empty() => None,
        _ => Some(kept),
    }
}

/// Asserts that every document of ours round-trips; returns how many did.
fn assert_round_trips(documents: &[Document]) -> usize {
    let mut checked = 0;
    for document in documents {
        let Some(result) = round_trip(&document.value) else {
            assert!(
                OTHER_API_VERSIONS.contains(&str_at(&document.value, "/apiVersion")),
                "{}: a kind that is neither ours nor expected among the samples",
                document.source
            );
            continue;
        };
        let reserialised =
            result.unwrap_or_else(|error| panic!("{}: does not parse: {error}", document.source));
        let schema = schema_for(&document.value)
            .unwrap_or_else(|| panic!("{}: no CRD serves this kind", document.source));
        let mut defaulted = document.value.clone();
        apply_defaults(&schema, &mut defaulted);
        assert_eq!(
            without_zero_values(&reserialised),
            without_zero_values(&defaulted),
            "{}: changed by the round trip",
            document.source
        );
        checked += 1;
    }
    checked
}

fn violations(document: &Document) -> Vec<validation::FieldViolation> {
    validation::validate_object(
        str_at(&document.value, "/apiVersion"),
        str_at(&document.value, "/kind"),
        &document.value,
    )
}

#[test]
fn upstream_samples_round_trip() {
    let Some(documents) = upstream_documents() else {
        return;
    };
    let checked = assert_round_trips(&documents);
    assert!(
        checked >= 12,
        "only {checked} upstream documents of our kinds were found"
    );
}

#[test]
fn upstream_samples_are_admitted_unless_upstream_rejects_them() {
    let Some(documents) = upstream_documents() else {
        return;
    };
    for document in &documents {
        let name = str_at(&document.value, "/metadata/name");
        let found = violations(document);
        match UPSTREAM_REJECTED
            .iter()
            .find(|(rejected, _)| *rejected == name)
        {
            Some((_, field)) => assert!(
                found.iter().any(|violation| violation.field == *field),
                "{}: expected a violation of {field}, got {found:?}",
                document.source
            ),
            None => assert!(found.is_empty(), "{}: rejected: {found:?}", document.source),
        }
    }
}

#[test]
fn fixtures_round_trip() {
    let documents = fixture_documents();
    let checked = assert_round_trips(&documents);
    assert!(
        checked >= 12,
        "only {checked} fixture documents of our kinds were found"
    );
}

#[test]
fn fixtures_are_admitted_or_rejected_as_annotated() {
    for document in &fixture_documents() {
        let annotation = format!(
            "/metadata/annotations/{}",
            EXPECTED_VIOLATION.replace('/', "~1")
        );
        let expected = str_at(&document.value, &annotation);
        let found = violations(document);
        if expected.is_empty() {
            assert!(found.is_empty(), "{}: rejected: {found:?}", document.source);
        } else {
            assert!(
                found.iter().any(|violation| violation.field == expected),
                "{}: expected a violation of {expected}, got {found:?}",
                document.source
            );
        }
    }
}

#[test]
fn every_kind_of_ours_has_a_fixture() {
    let documents = fixture_documents();
    for crd in crds::all() {
        for version in &crd.spec.versions {
            let api_version = format!("{}/{}", crd.spec.group, version.name);
            assert!(
                documents.iter().any(|document| {
                    str_at(&document.value, "/apiVersion") == api_version
                        && str_at(&document.value, "/kind") == crd.spec.names.kind
                }),
                "no fixture for {api_version} {}",
                crd.spec.names.kind
            );
        }
    }
}
