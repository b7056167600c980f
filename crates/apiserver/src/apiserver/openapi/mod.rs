//! OpenAPI documents: v3 (`/openapi/v3`, one document per group version) and v2 (`/openapi/v2`, one document for
//! everything), as kube-apiserver publishes them.
//!
//! Clients read them for three things. kubectl checks that a resource's PATCH operation accepts `fieldValidation`
//! before it leaves unknown-field detection to the server, so `kubectl apply`/`create` send
//! `fieldValidation=Strict` and the server's own pruning and schema validation produce the errors. `kubectl explain`
//! prints the schemas and their descriptions: built-in kinds carry the schemas of the k8s-openapi types
//! ([`builtin_schemas`]), custom resources the structural schema of their CRD. And clients that merge lists
//! themselves read the list semantics of each field ([`list_semantics`]).

mod builtin_schemas;
mod list_semantics;
mod schema_refs;
mod v2;

use serde_json::{Map, Value, json};

use super::errors::ApiError;
use super::registry::{Origin, Registry, ResourceType};
use builtin_schemas::BUILTIN_SCHEMAS;

pub(crate) use v2::{document as v2_document, negotiate as negotiate_v2};

/// `/openapi/v3`: the group-versions there are documents for.
pub(crate) fn index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for rt in registry.all() {
        for version in &rt.versions {
            let key = if rt.group.is_empty() {
                format!("api/{version}")
            } else {
                format!("apis/{}/{version}", rt.group)
            };
            let url = format!("/openapi/v3/{key}");
            paths.insert(key, json!({ "serverRelativeURL": url }));
        }
    }
    json!({ "paths": paths })
}

/// `/openapi/v3/apis/{group}/{version}`: a PATCH operation per resource, and the schemas of its kinds with every
/// schema they refer to.
pub(crate) fn group_version(
    registry: &Registry,
    group: &str,
    version: &str,
) -> Result<Value, ApiError> {
    let served: Vec<_> = registry
        .all()
        .into_iter()
        .filter(|rt| rt.group == group && rt.serves(version))
        .collect();
    if served.is_empty() {
        return Err(ApiError::no_route(&format!(
            "/openapi/v3/{group}/{version}"
        )));
    }
    let mut paths = Map::new();
    for rt in &served {
        paths.insert(
            object_path(rt, version),
            json!({ "patch": patch_operation(rt, version) }),
        );
    }
    Ok(json!({
        "openapi": "3.0.0",
        "info": info(registry),
        "paths": paths,
        "components": { "schemas": schemas(&served, version) },
    }))
}

/// The schemas of `served` in `version`: built-in kinds with everything they refer to, custom kinds as declared.
fn schemas(served: &[std::sync::Arc<ResourceType>], version: &str) -> Map<String, Value> {
    let builtin: Vec<&str> = served
        .iter()
        .filter(|rt| matches!(rt.origin, Origin::Builtin))
        .filter_map(|rt| BUILTIN_SCHEMAS.kind(&rt.group, version, &rt.kind))
        .collect();
    let mut schemas = BUILTIN_SCHEMAS.closure(builtin);
    for rt in served {
        if let (Origin::Custom { .. }, Some(schema)) = (&rt.origin, custom_schema(rt, version)) {
            schemas.insert(custom_schema_name(rt, version), schema);
        }
    }
    schemas
}

/// The document's title and the Kubernetes version it describes, the one `/version` announces.
fn info(registry: &Registry) -> Value {
    let minor = registry.kubernetes_minor();
    json!({ "title": "Kubernetes", "version": format!("v1.{minor}") })
}

fn custom_schema_name(rt: &ResourceType, version: &str) -> String {
    format!("{}.{version}.{}", rt.group, rt.kind)
}

fn object_path(rt: &ResourceType, version: &str) -> String {
    let prefix = if rt.group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{}/{version}", rt.group)
    };
    if rt.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", rt.plural)
    } else {
        format!("{prefix}/{}/{{name}}", rt.plural)
    }
}

fn patch_operation(rt: &ResourceType, version: &str) -> Value {
    let query = |name: &str| json!({ "name": name, "in": "query", "schema": { "type": "string", "uniqueItems": true } });
    json!({
        "operationId": format!("patch{}", rt.kind),
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": { "group": rt.group, "version": version, "kind": rt.kind },
        "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation"), query("force")],
        "requestBody": { "content": {
            "application/json-patch+json": { "schema": { "type": "object" } },
            "application/merge-patch+json": { "schema": { "type": "object" } },
            "application/apply-patch+yaml": { "schema": { "type": "object" } },
        }},
        "responses": { "200": { "description": "OK" } },
    })
}

/// The CRD's declared schema for one version, as stored in the CRD object.
fn custom_schema(rt: &ResourceType, version: &str) -> Option<Value> {
    rt.schema(version).map(|s| {
        let mut schema = s.source().clone();
        schema["x-kubernetes-group-version-kind"] =
            json!([{ "group": rt.group, "version": version, "kind": rt.kind }]);
        schema
    })
}
