//! OpenAPI v3 documents, published for the one thing clients need them for here: kubectl checks that a resource's
//! PATCH operation accepts `fieldValidation` before it leaves unknown-field detection to the server. With these
//! documents `kubectl apply`/`create` send `fieldValidation=Strict` and the server's own pruning and schema
//! validation produce the errors. Custom resources also carry their structural schema, for `kubectl explain`.

use serde_json::{Map, Value, json};

use super::errors::ApiError;
use super::registry::{Origin, Registry, ResourceType};

/// `/openapi/v3`: the group-versions there are documents for.
pub fn index(registry: &Registry) -> Value {
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

/// `/openapi/v3/apis/{group}/{version}`: a PATCH operation (and the schema) per resource.
pub fn group_version(registry: &Registry, group: &str, version: &str) -> Result<Value, ApiError> {
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
    let mut schemas = Map::new();
    for rt in served {
        let schema_name = format!(
            "{}.{version}.{}",
            if rt.group.is_empty() {
                "io.k8s.api.core"
            } else {
                rt.group.as_str()
            },
            rt.kind
        );
        paths.insert(
            object_path(&rt, version),
            json!({ "patch": patch_operation(&rt, version) }),
        );
        if let (Origin::Custom { .. }, Some(schema)) = (&rt.origin, custom_schema(&rt, version)) {
            schemas.insert(schema_name, schema);
        }
    }
    Ok(json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": format!("v{}.{}", super::KUBERNETES_VERSION.0, super::KUBERNETES_VERSION.1) },
        "paths": paths,
        "components": { "schemas": schemas },
    }))
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
