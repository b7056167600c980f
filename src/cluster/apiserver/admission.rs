//! The admission pipeline every create, update and patch goes through, in kube-apiserver's order: decode (unknown
//! fields found and dropped), defaults, structural validation, the project's own validation of its kinds, and
//! RBAC's guard against escalation.

use std::sync::Arc;

use serde_json::{Value, json};

use super::auth::authorizer::RBAC_GROUP;
use super::auth::escalation;
use super::builtin;
use super::context::{FieldValidation, RequestContext};
use super::errors::{ApiError, Cause};
use super::patch::{self, ListKind, ListTypes};
use super::registry::{self, Origin, ResourceType};
use super::schema::{ListType, Schema};
use super::{ApiServer, objects};
use crate::api::validation;

/// Admit `obj` (in the client's form), mutating it into what will be stored; returns warnings for the client.
/// `old` is the stored object on updates, for the rules that compare the two.
pub fn admit(
    server: &ApiServer,
    ctx: &RequestContext,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    let rt = &ctx.rt;
    let unknown = match &rt.origin {
        Origin::Builtin => {
            let unknown = builtin::decode(rt, obj, old.filter(|_| old_is_stored_form(ctx)))?;
            builtin::apply_defaults(rt, obj);
            unknown
        }
        Origin::Custom { .. } => match rt.schema(&ctx.path.version) {
            Some(schema) => {
                let unknown = schema.prune(obj);
                schema.apply_defaults(obj);
                let errors = match old {
                    Some(old) => schema.validate_update(obj, old),
                    None => schema.validate(obj),
                };
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
    let mut causes = builtin_rules(rt, obj);
    causes.extend(old.and_then(|old| changed_role_ref(rt, obj, old)));
    if !causes.is_empty() {
        return Err(invalid(ctx, obj, causes));
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

/// A binding's `roleRef` is fixed at creation (kube-apiserver's rule): changing it would re-grant every subject
/// at once, so one must delete the binding and create another.
fn changed_role_ref(rt: &ResourceType, new: &Value, old: &Value) -> Option<Cause> {
    let is_binding = rt.group == RBAC_GROUP
        && matches!(rt.plural.as_str(), "rolebindings" | "clusterrolebindings");
    let (was, now) = (old.get("roleRef")?, new.get("roleRef"));
    (is_binding && now != Some(was)).then(|| Cause {
        reason: "FieldValueInvalid".into(),
        message: format!(
            "Invalid value: {}: cannot change roleRef",
            now.map_or_else(|| "null".to_owned(), Value::to_string)
        ),
        field: "roleRef".into(),
    })
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

/// The validation kube-apiserver does on built-in kinds that clients commonly get wrong.
fn builtin_rules(rt: &ResourceType, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let required = |field: &str| Cause {
        reason: "FieldValueRequired".into(),
        message: "Required value".into(),
        field: field.into(),
    };
    let pod_spec = match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => obj.get("spec").map(|s| (s, "spec")),
        ("apps", "deployments" | "replicasets" | "daemonsets") | ("batch", "jobs") => obj
            .pointer("/spec/template/spec")
            .map(|s| (s, "spec.template.spec")),
        _ => None,
    };
    if matches!(
        (rt.group.as_str(), rt.plural.as_str()),
        ("", "pods") | ("apps", "deployments" | "replicasets" | "daemonsets") | ("batch", "jobs")
    ) && pod_spec.is_none()
    {
        causes.push(required(if rt.plural == "pods" {
            "spec"
        } else {
            "spec.template.spec"
        }));
    }
    if let Some((spec, at)) = pod_spec {
        match spec.get("containers").and_then(Value::as_array) {
            Some(containers) if !containers.is_empty() => {
                for (i, c) in containers.iter().enumerate() {
                    for key in ["name", "image"] {
                        if c.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
                            causes.push(required(&format!("{at}.containers[{i}].{key}")));
                        }
                    }
                }
            }
            _ => causes.push(required(&format!("{at}.containers"))),
        }
    }
    causes
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
    let now = super::objects::now_rfc3339();
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
pub fn list_types(rt: &ResourceType, version: &str) -> Arc<dyn ListTypes> {
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
