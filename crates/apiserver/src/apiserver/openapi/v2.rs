//! `/openapi/v2`: one Swagger 2.0 document for every served resource, for clients that predate OpenAPI v3 or still
//! read v2 (`kubectl explain --output plaintext-openapiv2`, older client libraries).
//!
//! The document is served as JSON only. client-go asks for the protobuf form of it first; it gets `406 Not
//! Acceptable` here, and kubectl reads the v3 documents, which it prefers anyway.

use serde_json::{Map, Value, json};

use super::builtin_schemas::BUILTIN_SCHEMAS;
use super::schema_refs::V3_PREFIX;
use super::{custom_schema, custom_schema_name, info, object_path};
use crate::apiserver::errors::ApiError;
use crate::apiserver::negotiation;
use crate::apiserver::registry::{Origin, Registry, ResourceType};

/// Where Swagger 2.0 keeps its schemas.
const V2_PREFIX: &str = "#/definitions/";

/// 406 unless the client takes the JSON form.
pub(crate) fn negotiate(accept: Option<&str>) -> Result<(), ApiError> {
    negotiation::negotiate(accept, (), "application/json", |range| {
        (range.takes_json() && range.conversion().is_none()).then_some(())
    })
}

/// The whole document: a PATCH operation per resource and version, the schemas of every kind.
pub(crate) fn document(registry: &Registry) -> Value {
    let resources = registry.all();
    let mut paths = Map::new();
    let mut kinds = Vec::new();
    let mut custom = Map::new();
    for rt in &resources {
        for version in &rt.versions {
            paths.insert(
                object_path(rt, version),
                json!({ "patch": patch_operation(rt, version) }),
            );
            match &rt.origin {
                Origin::Builtin => kinds.extend(BUILTIN_SCHEMAS.kind(&rt.group, version, &rt.kind)),
                Origin::Custom { .. } => {
                    if let Some(schema) = custom_schema(rt, version) {
                        custom.insert(custom_schema_name(rt, version), schema);
                    }
                }
            }
        }
    }
    let mut definitions = BUILTIN_SCHEMAS.closure(kinds);
    definitions.append(&mut custom);
    let mut definitions = Value::Object(definitions);
    to_v2_references(&mut definitions);
    json!({
        "swagger": "2.0",
        "info": info(registry),
        "paths": paths,
        "definitions": definitions,
    })
}

fn patch_operation(rt: &ResourceType, version: &str) -> Value {
    let query =
        |name: &str| json!({ "name": name, "in": "query", "type": "string", "uniqueItems": true });
    json!({
        "operationId": format!("patch{}", rt.kind),
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": { "group": rt.group, "version": version, "kind": rt.kind },
        "consumes": [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ],
        "produces": ["application/json", "application/yaml"],
        "parameters": [
            { "name": "body", "in": "body", "required": true, "schema": { "type": "object" } },
            query("dryRun"),
            query("fieldManager"),
            query("fieldValidation"),
            query("force"),
        ],
        "responses": { "200": { "description": "OK" } },
    })
}

/// Point every `$ref` at `#/definitions/` instead of v3's `#/components/schemas/`.
fn to_v2_references(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(r) if key == "$ref" => {
                        if let Some(name) = r.strip_prefix(V3_PREFIX) {
                            *r = format!("{V2_PREFIX}{name}");
                        }
                    }
                    other => to_v2_references(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(to_v2_references),
        _ => {}
    }
}
