//! The admission pipeline every create, update and patch goes through, in kube-apiserver's order: decode (unknown
//! fields found and dropped), defaults, validation (kube-apiserver's rules for built-in kinds, structural schemas
//! and their CEL rules for custom ones, then the project's own rules for its kinds), and RBAC's guard against
//! escalation.

use std::sync::Arc;

use serde_json::{Value, json};

use super::admission_policy;
use super::auth::authorizer::RBAC_GROUP;
use super::auth::escalation;
use super::builtin;
use super::certificates;
use super::cluster_ip;
use super::context::{FieldValidation, RequestContext};
use super::defaults;
use super::errors::{ApiError, Cause};
use super::node_port;
use super::patch::{self, ListKind, ListTypes};
use super::registry::{self, Origin, ResourceType};
use super::schema::{ListType, Schema};
use super::validation as builtin_validation;
use super::{ApiServer, objects};
use kmm_api::validation;

/// Admit `obj` (in the client's form), mutating it into what will be stored; returns warnings for the client.
/// `old` is the stored object on updates, for the rules that compare the two.
pub(crate) fn admit(
    server: &ApiServer,
    ctx: &RequestContext,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    let rt = &ctx.rt;
    let unknown = match &rt.origin {
        Origin::Builtin => {
            let unknown = builtin::decode(rt, obj, old.filter(|_| old_is_stored_form(ctx)))?;
            defaults::apply(rt, obj);
            if old.is_none() && ctx.path.subresource.is_none() {
                defaults::apply_on_create(rt, obj);
            }
            unknown
        }
        Origin::Custom { .. } => match rt.schema(&ctx.path.version) {
            Some(schema) => {
                let unknown = schema.prune(obj);
                schema.apply_defaults(obj);
                let mut errors = match old {
                    Some(old) => schema.validate_update(obj, old),
                    None => schema.validate(obj),
                };
                if schema.has_rules() {
                    match Schema::blocks_rules(&errors) {
                        Some(blocked) => errors.push(blocked),
                        None => errors.extend(schema.validate_rules(obj, old)),
                    }
                }
                if !errors.is_empty() {
                    let causes = errors
                        .iter()
                        .map(|e| Cause {
                            reason: e.kind.reason().to_string(),
                            message: e.body(),
                            field: e.path.clone(),
                        })
                        .collect();
                    return Err(invalid(ctx, obj, causes));
                }
                unknown
            }
            None => Vec::new(),
        },
    };
    let warnings = match ctx.field_validation()? {
        FieldValidation::Strict if !unknown.is_empty() => {
            let list: Vec<String> = unknown
                .iter()
                .map(|f| format!("unknown field {:?}", f.trim_start_matches('.')))
                .collect();
            return Err(ApiError::bad_request(format!(
                "strict decoding error: {}",
                list.join(", ")
            )));
        }
        FieldValidation::Warn => unknown
            .iter()
            .map(|f| format!("unknown field {:?}", f.trim_start_matches('.')))
            .collect(),
        _ => Vec::new(),
    };
    if rt.group.is_empty() && rt.plural == "services" && ctx.path.subresource.is_none() {
        cluster_ip::assign(server, obj, old)?;
        node_port::assign(server, obj, old)?;
    }
    if certificates::is_signing_request(ctx) {
        certificates::admit(server, ctx, obj, old)?;
    }
    if matches!(rt.origin, Origin::Builtin) && ctx.path.subresource.is_none() {
        let causes = builtin_validation::validate(rt, obj, old);
        if !causes.is_empty() {
            return Err(invalid(ctx, obj, causes));
        }
    }
    if let (Some("status"), Some(old), Origin::Builtin) =
        (ctx.path.subresource.as_deref(), old, &rt.origin)
    {
        let causes = builtin_validation::validate_status(rt, obj, old);
        if !causes.is_empty() {
            return Err(invalid(ctx, obj, causes));
        }
    }
    if let (Some("ephemeralcontainers"), Some(old)) = (ctx.path.subresource.as_deref(), old) {
        let causes = builtin_validation::validate_ephemeral_containers(obj, old);
        if !causes.is_empty() {
            return Err(invalid(ctx, obj, causes));
        }
    }
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let violations = match old {
        Some(old) => validation::validate_update(&api_version, &rt.kind, old, obj),
        None => validation::validate_object(&api_version, &rt.kind, obj),
    };
    if !violations.is_empty() {
        let causes = violations
            .into_iter()
            .map(|v| Cause {
                reason: "FieldValueInvalid".into(),
                message: v.message,
                field: v.field,
            })
            .collect();
        return Err(invalid(ctx, obj, causes));
    }
    if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
        admit_crd(ctx, obj)?;
    }
    let mut warnings = warnings;
    warnings.extend(admission_policy::admit(server, ctx, obj, old)?);
    if rt.group == RBAC_GROUP {
        let written = escalation::Written {
            plural: &rt.plural,
            namespace: ctx.namespace(),
            name: objects::meta_str(obj, "name").unwrap_or(ctx.name()),
            new: obj,
            old,
        };
        escalation::check(
            server.auth().authorizer(),
            server.store(),
            &ctx.user,
            &written,
        )?;
    }
    Ok(warnings)
}

/// Whether the `old` a write compares with is the object exactly as stored (no other version or API's form), and
/// so already decoded and normalised.
fn old_is_stored_form(ctx: &RequestContext) -> bool {
    ctx.storage == ctx.rt.key() && ctx.path.version == ctx.rt.storage_version
}

fn invalid(ctx: &RequestContext, obj: &Value, causes: Vec<Cause>) -> ApiError {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or(ctx.name());
    ApiError::invalid(&ctx.rt.group, &ctx.rt.kind, name, causes)
}

/// CRDs: the name must be `plural.group`, the CRD must be servable, and it is accepted and established at once.
fn admit_crd(ctx: &RequestContext, obj: &mut Value) -> Result<(), ApiError> {
    let rt = registry::from_crd(obj).map_err(|message| {
        invalid(
            ctx,
            obj,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message,
                field: "spec".into(),
            }],
        )
    })?;
    let expected = format!("{}.{}", rt.plural, rt.group);
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name != expected {
        let message = format!(
            "Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group ({expected:?})"
        );
        return Err(invalid(
            ctx,
            obj,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message,
                field: "metadata.name".into(),
            }],
        ));
    }
    let now = objects::now_rfc3339();
    let names = obj.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let condition = |kind: &str, reason: &str, message: &str| json!({"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now});
    obj["status"] = json!({
        "acceptedNames": names,
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": [rt.storage_version],
    });
    Ok(())
}

/// List semantics of a resource, for strategic merge patch and server-side apply.
pub(crate) fn list_types(rt: &ResourceType, version: &str) -> Arc<dyn ListTypes> {
    match rt.schema(version) {
        Some(schema) => Arc::new(SchemaListTypes(schema.clone())),
        None => Arc::new(BuiltinListTypes(patch::builtin_list_types(
            &rt.group, &rt.kind,
        ))),
    }
}

struct BuiltinListTypes(&'static dyn ListTypes);

impl ListTypes for BuiltinListTypes {
    fn list_kind(&self, path: &[&str]) -> ListKind {
        self.0.list_kind(path)
    }

    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        self.0.key_default(path, key)
    }
}

/// A CRD's `x-kubernetes-list-type` annotations; metadata lists follow the built-in rules.
struct SchemaListTypes(Arc<Schema>);

impl ListTypes for SchemaListTypes {
    fn list_kind(&self, path: &[&str]) -> ListKind {
        if path.first() == Some(&"metadata") {
            return patch::builtin_list_types("", "").list_kind(path);
        }
        match self.0.list_type_at(path) {
            Some((ListType::Map, keys)) => ListKind::Map(keys),
            Some((ListType::Set, _)) => ListKind::Set,
            _ => ListKind::Atomic,
        }
    }
}
