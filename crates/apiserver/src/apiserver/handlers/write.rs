//! Create, update (PUT) and patch (all four patch types, server-side apply included).
//!
//! Every write reads the stored object, computes the new one without holding a lock, and commits it only if the
//! stored resourceVersion is still the one it read; patches retry on such races, as kube-apiserver does, while a
//! PUT or a patch carrying its own resourceVersion gets 409 Conflict.

use std::sync::Arc;

use http::{Response, StatusCode, header};
use serde_json::{Value, json};

use super::RequestContext;
use super::commit::{after_commit, finish_update, value_response, with_warnings};
use crate::apiserver::admission;
use crate::apiserver::certificates;
use crate::apiserver::errors::{ApiError, Cause};
use crate::apiserver::objects::{self, now_rfc3339};
use crate::apiserver::patch::{self, ApplyError, ApplyRequest};
use crate::apiserver::{ApiServer, ResponseBody, bytes_response, registry};
use crate::store::{CommitError, StoredObject};

/// The patch media types every resource accepts (built-ins also take strategic merge patches).
const PATCH_TYPES: &str = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json";

/// How many times a patch is recomputed when another writer commits in between.
const PATCH_RETRIES: usize = 16;

/// POST: create an object.
pub(super) fn create(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    let mut obj = ctx.body_object()?;
    check_type_meta(ctx, &mut obj)?;
    create_object(server, ctx, obj)
}

/// Create `obj` (already type-checked): namespace and name rules, server metadata, admission, commit.
fn create_object(
    server: &ApiServer,
    ctx: &RequestContext,
    mut obj: Value,
) -> Result<Response<ResponseBody>, ApiError> {
    if ctx.rt.namespaced {
        match objects::meta_str(&obj, "namespace") {
            Some(ns) if !ns.is_empty() && ns != ctx.namespace() => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                objects::meta_mut(&mut obj).insert("namespace".into(), json!(ctx.namespace()));
            }
        }
        namespace_accepts_content(server, ctx.namespace())?;
    }
    let generate = objects::meta_str(&obj, "generateName")
        .filter(|g| !g.is_empty())
        .map(str::to_string);
    let given = objects::meta_str(&obj, "name")
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    if given.is_none() && generate.is_none() {
        let cause = Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: name or generateName is required".into(),
            field: "metadata.name".into(),
        };
        return Err(ApiError::invalid(
            &ctx.rt.group,
            &ctx.rt.kind,
            "",
            vec![cause],
        ));
    }
    objects::init_metadata(&ctx.rt, &mut obj);
    reset_status_on_create(ctx, &mut obj);
    let attempts = if given.is_some() { 1 } else { 8 };
    for attempt in 1..=attempts {
        let mut candidate = if attempt == attempts {
            std::mem::take(&mut obj)
        } else {
            obj.clone()
        };
        let name = given
            .clone()
            .unwrap_or_else(|| objects::generate_name(generate.as_deref().unwrap_or("")));
        objects::meta_mut(&mut candidate).insert("name".into(), json!(name));
        if let Some(cause) = custom_name_problem(ctx, &name) {
            return Err(ApiError::invalid(
                &ctx.rt.group,
                &ctx.rt.kind,
                &name,
                vec![cause],
            ));
        }
        let warnings = admission::admit(server, ctx, &mut candidate, None)?;
        let types = admission::list_types(&ctx.rt, &ctx.path.version);
        patch::track_update(
            None,
            &mut candidate,
            &ctx.manager(),
            None,
            &now_rfc3339(),
            types.as_ref(),
        );
        if ctx.dry_run() {
            return Ok(with_warnings(
                value_response(StatusCode::CREATED, &candidate),
                &warnings,
            ));
        }
        match server
            .store()
            .put(&ctx.storage, None, ctx.to_storage(candidate))
        {
            Ok(stored) => {
                after_commit(server, ctx, &stored);
                return Ok(with_warnings(
                    bytes_response(
                        StatusCode::CREATED,
                        ctx.present(&stored),
                        "application/json",
                    ),
                    &warnings,
                ));
            }
            Err(CommitError::Conflict) if given.is_none() => continue,
            Err(CommitError::Conflict) => {
                return Err(ApiError::already_exists(
                    &ctx.rt.group,
                    &ctx.rt.plural,
                    &name,
                ));
            }
            Err(e) => return Err(ApiError::commit_failed(e)),
        }
    }
    Err(ApiError::already_exists(
        &ctx.rt.group,
        &ctx.rt.plural,
        generate.as_deref().unwrap_or(""),
    ))
}

/// PUT: replace an object (or its status, or a namespace's finalizers).
pub(super) fn update(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    let mut body = ctx.body_object()?;
    check_type_meta(ctx, &mut body)?;
    check_same_object(ctx, &body)?;
    let current = get_current(server, ctx)?;
    match objects::meta_str(&body, "resourceVersion").filter(|rv| !rv.is_empty()) {
        Some(rv) if rv != current.rv.to_string() => {
            return Err(ApiError::stale(&ctx.rt.group, &ctx.rt.plural, ctx.name()));
        }
        Some(_) => {}
        None if matches!(ctx.rt.origin, registry::Origin::Custom { .. }) => {
            let cause = Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: 0x0: must be specified for an update".into(),
                field: "metadata.resourceVersion".into(),
            };
            return Err(ApiError::invalid(
                &ctx.rt.group,
                &ctx.rt.kind,
                ctx.name(),
                vec![cause],
            ));
        }
        None => {}
    }
    let old = ctx.present_value(&current);
    let new = scope_to_subresource(ctx, &old, body);
    let outcome = finish_update(server, ctx, &current, &old, new, true)?;
    Ok(outcome)
}

/// PATCH: JSON merge, JSON patch, strategic merge (built-ins) or server-side apply.
pub(super) fn patch(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    let content_type = ctx
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let patch_doc: Value = match content_type.as_str() {
        "application/apply-patch+yaml" => ctx.body_object()?,
        "application/merge-patch+json"
        | "application/json-patch+json"
        | "application/strategic-merge-patch+json" => serde_json::from_slice(&ctx.body)
            .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?,
        other => return Err(ApiError::unsupported_media_type(other, PATCH_TYPES)),
    };
    let patch_doc = match (content_type.as_str(), patch_doc) {
        // A merge patch of `null` would replace the object by nothing: kube-apiserver refuses it so.
        ("application/merge-patch+json", Value::Null) => {
            return Err(ApiError::bad_request("Invalid JSON Patch"));
        }
        ("application/json-patch+json", doc) | (_, doc @ Value::Object(_)) => doc,
        (_, _) => {
            return Err(ApiError::bad_request(
                "the patch must be a JSON object of the fields to change",
            ));
        }
    };
    let is_apply = content_type == "application/apply-patch+yaml";
    if is_apply {
        check_type_meta(ctx, &mut patch_doc.clone())?;
        check_same_object(ctx, &patch_doc)?;
    }
    if is_apply && ctx.query.get("fieldManager").is_none() {
        return Err(ApiError::bad_request(
            "PATCH with apply requires the fieldManager parameter",
        ));
    }
    if content_type == "application/strategic-merge-patch+json"
        && !matches!(ctx.rt.origin, registry::Origin::Builtin)
    {
        return Err(ApiError::unsupported_media_type(
            "application/strategic-merge-patch+json",
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (strategic merge patch is for built-in kinds only)",
        ));
    }
    let types = admission::list_types(&ctx.rt, &ctx.path.version);
    for _ in 0..PATCH_RETRIES {
        let Some(current) = server
            .store()
            .get(&ctx.storage, ctx.namespace(), ctx.name())
        else {
            if is_apply && ctx.path.subresource.is_none() {
                return apply_create(server, ctx, &patch_doc, types.as_ref());
            }
            return Err(ApiError::not_found(
                &ctx.rt.group,
                &ctx.rt.plural,
                ctx.name(),
            ));
        };
        let old = ctx.present_value(&current);
        let patched = match content_type.as_str() {
            "application/merge-patch+json" => {
                let mut v = Value::clone(&old);
                patch::merge_patch(&mut v, &patch_doc);
                v
            }
            "application/json-patch+json" => {
                let mut v = Value::clone(&old);
                patch::json_patch(&mut v, &patch_doc).map_err(patch_failed)?;
                v
            }
            "application/strategic-merge-patch+json" => {
                patch::strategic_merge_patch(&old, &patch_doc, types.as_ref())
                    .map_err(patch_failed)?
            }
            _ => apply(ctx, Some(&old), &patch_doc, types.as_ref())?,
        };
        if !patched.is_object() {
            return Err(unprocessable(
                "the patched object is not a JSON object".to_owned(),
            ));
        }
        if patched.get("metadata").is_some_and(|m| !m.is_object()) {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: metadata must be an object",
                ctx.rt.kind, ctx.path.version, ctx.rt.kind
            )));
        }
        check_patched_is_same_object(ctx, &patched)?;
        // The client's own resourceVersion, if the patch carries one, is a precondition; the one the patch merged
        // into is not (taking it for one turned every race of unconditional patches into a 409).
        let precondition = requested_resource_version(&patch_doc);
        if let Some(rv) = &precondition
            && *rv != current.rv.to_string()
        {
            return Err(ApiError::stale(&ctx.rt.group, &ctx.rt.plural, ctx.name()));
        }
        let new = scope_to_subresource(ctx, &old, patched);
        match finish_update(server, ctx, &current, &old, new, !is_apply) {
            Err(e)
                if e.reason == "Conflict"
                    && precondition.is_none()
                    && e.details.as_ref().is_some_and(|d| d.causes.is_empty()) =>
            {
                continue;
            }
            other => return other,
        }
    }
    Err(ApiError::stale(&ctx.rt.group, &ctx.rt.plural, ctx.name()))
}

/// The resourceVersion a patch document sets: `metadata.resourceVersion` of a merge, strategic merge or apply
/// patch, or the value a JSON patch adds, replaces or tests at `/metadata/resourceVersion`.
fn requested_resource_version(patch_doc: &Value) -> Option<String> {
    match patch_doc {
        Value::Array(operations) => operations
            .iter()
            .filter(|op| {
                op.get("path").and_then(Value::as_str) == Some("/metadata/resourceVersion")
            })
            .find_map(|op| op.get("value").and_then(Value::as_str))
            .map(str::to_string),
        document => document
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

fn apply(
    ctx: &RequestContext,
    live: Option<&Value>,
    applied: &Value,
    types: &dyn patch::ListTypes,
) -> Result<Value, ApiError> {
    let manager = ctx.manager();
    let now = now_rfc3339();
    let request = ApplyRequest {
        live,
        applied,
        manager: &manager,
        force: ctx.query.flag("force"),
        subresource: ctx.path.subresource.as_deref(),
        now: &now,
    };
    patch::server_side_apply(&request, types).map_err(|e| match e {
        ApplyError::Conflicts(conflicts) => {
            let causes = conflicts
                .iter()
                .map(|c| Cause {
                    reason: "FieldManagerConflict".into(),
                    message: format!("conflict with {:?}", c.manager),
                    field: c.field.clone(),
                })
                .collect();
            ApiError::apply_conflict(
                &ctx.rt.group,
                &ctx.rt.plural,
                ctx.name(),
                ApplyError::Conflicts(conflicts).to_string(),
                causes,
            )
        }
        ApplyError::Invalid(message) => unprocessable(message),
    })
}

/// Server-side apply of an object that does not exist yet creates it.
fn apply_create(
    server: &ApiServer,
    ctx: &RequestContext,
    applied: &Value,
    types: &dyn patch::ListTypes,
) -> Result<Response<ResponseBody>, ApiError> {
    let mut obj = apply(ctx, None, applied, types)?;
    check_type_meta(ctx, &mut obj)?;
    objects::meta_mut(&mut obj).insert("name".into(), json!(ctx.name()));
    let managed = obj.pointer("/metadata/managedFields").cloned();
    let mut create_ctx_obj = obj;
    objects::init_metadata(&ctx.rt, &mut create_ctx_obj);
    if let Some(managed) = managed {
        objects::meta_mut(&mut create_ctx_obj).insert("managedFields".into(), managed);
    }
    if ctx.rt.namespaced {
        objects::meta_mut(&mut create_ctx_obj).insert("namespace".into(), json!(ctx.namespace()));
        namespace_accepts_content(server, ctx.namespace())?;
    }
    if let Some(cause) = custom_name_problem(ctx, ctx.name()) {
        return Err(ApiError::invalid(
            &ctx.rt.group,
            &ctx.rt.kind,
            ctx.name(),
            vec![cause],
        ));
    }
    reset_status_on_create(ctx, &mut create_ctx_obj);
    let warnings = admission::admit(server, ctx, &mut create_ctx_obj, None)?;
    if ctx.dry_run() {
        return Ok(with_warnings(
            value_response(StatusCode::CREATED, &create_ctx_obj),
            &warnings,
        ));
    }
    match server
        .store()
        .put(&ctx.storage, None, ctx.to_storage(create_ctx_obj))
    {
        Ok(stored) => {
            after_commit(server, ctx, &stored);
            Ok(with_warnings(
                bytes_response(
                    StatusCode::CREATED,
                    ctx.present(&stored),
                    "application/json",
                ),
                &warnings,
            ))
        }
        Err(CommitError::Conflict) => {
            Err(ApiError::stale(&ctx.rt.group, &ctx.rt.plural, ctx.name()))
        }
        Err(e) => Err(ApiError::commit_failed(e)),
    }
}

/// Limit a write to what its endpoint may change: `/status` changes only status, the main endpoint of a resource
/// with a status subresource changes everything but status, `/finalize` changes only `spec.finalizers`,
/// `/ephemeralcontainers` only `spec.ephemeralContainers` (the rest of what is sent is ignored, as kube-apiserver
/// ignores it), `/approval` only a CertificateSigningRequest's conditions.
fn scope_to_subresource(ctx: &RequestContext, old: &Value, mut new: Value) -> Value {
    match ctx.path.subresource.as_deref() {
        Some("status") => objects::with_status_from(old, new),
        Some("approval") => certificates::with_conditions_from(old, &new),
        Some("ephemeralcontainers") => {
            let mut out = old.clone();
            let added = new
                .pointer("/spec/ephemeralContainers")
                .filter(|list| !list.is_null())
                .cloned();
            if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
                match added {
                    Some(list) => spec.insert("ephemeralContainers".into(), list),
                    None => spec.remove("ephemeralContainers"),
                };
            }
            out
        }
        Some("finalize") => {
            let mut out = old.clone();
            out["spec"]["finalizers"] = new
                .pointer("/spec/finalizers")
                .cloned()
                .unwrap_or(json!([]));
            out
        }
        _ => {
            if ctx.rt.status_subresource {
                objects::keep_status(old, &mut new);
            }
            new
        }
    }
}

fn get_current(server: &ApiServer, ctx: &RequestContext) -> Result<Arc<StoredObject>, ApiError> {
    server
        .store()
        .get(&ctx.storage, ctx.namespace(), ctx.name())
        .ok_or_else(|| ApiError::not_found(&ctx.rt.group, &ctx.rt.plural, ctx.name()))
}

/// A body or patched object may not name another object than the URL does (kube-apiserver's 400): a rename
/// would otherwise be dropped silently, or an apply would merge another object's fields into this one.
fn check_same_object(ctx: &RequestContext, obj: &Value) -> Result<(), ApiError> {
    if let Some(name) = objects::meta_str(obj, "name").filter(|n| !n.is_empty())
        && name != ctx.name()
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            ctx.name()
        )));
    }
    if let Some(namespace) = objects::meta_str(obj, "namespace").filter(|n| !n.is_empty())
        && ctx.rt.namespaced
        && namespace != ctx.namespace()
    {
        return Err(ApiError::bad_request(format!(
            "the namespace of the object ({namespace}) does not match the namespace on the URL ({})",
            ctx.namespace()
        )));
    }
    Ok(())
}

/// A patched object must still be the one the URL names, name and namespace present: a patch that removes
/// `metadata` or replaces or deletes the whole object (`$patch` at the root) is refused as kube-apiserver refuses it,
/// instead of storing an object without identity.
fn check_patched_is_same_object(ctx: &RequestContext, patched: &Value) -> Result<(), ApiError> {
    let name = objects::meta_str(patched, "name").unwrap_or_default();
    if name != ctx.name() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            ctx.name()
        )));
    }
    if ctx.rt.namespaced {
        let namespace = objects::meta_str(patched, "namespace").unwrap_or_default();
        if namespace != ctx.namespace() {
            return Err(ApiError::bad_request(format!(
                "the namespace of the object ({namespace}) does not match the namespace on the URL ({})",
                ctx.namespace()
            )));
        }
    }
    Ok(())
}

/// Check (and fill in) `apiVersion` and `kind` of a request body: each a string when present (kube-apiserver
/// cannot decode anything else), and the URL's.
fn check_type_meta(ctx: &RequestContext, obj: &mut Value) -> Result<(), ApiError> {
    for field in ["apiVersion", "kind"] {
        if obj
            .get(field)
            .is_some_and(|v| !v.is_string() && !v.is_null())
        {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {field} must be a string",
                ctx.rt.kind, ctx.path.version, ctx.rt.kind
            )));
        }
    }
    if obj
        .get("metadata")
        .is_some_and(|m| !m.is_object() && !m.is_null())
    {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: metadata must be an object",
            ctx.rt.kind, ctx.path.version, ctx.rt.kind
        )));
    }
    let expected = ctx.api_version();
    match obj.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != expected => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            )));
        }
        _ => obj["apiVersion"] = json!(expected),
    }
    match obj.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != ctx.rt.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                ctx.rt.kind
            )));
        }
        _ => obj["kind"] = json!(ctx.rt.kind),
    }
    Ok(())
}

/// New objects start without status where a controller owns it; pods start Pending, and Services of every type
/// with an empty load balancer status, which clients read without checking it is there.
fn reset_status_on_create(ctx: &RequestContext, obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    match (ctx.rt.group.as_str(), ctx.rt.plural.as_str()) {
        ("", "nodes" | "namespaces") => {}
        ("", "pods") => {
            map.insert(
                "status".into(),
                json!({ "phase": "Pending", "qosClass": "BestEffort" }),
            );
        }
        ("", "services") => {
            map.insert("status".into(), json!({ "loadBalancer": {} }));
        }
        _ if ctx.rt.status_subresource => {
            map.remove("status");
        }
        _ => {}
    }
}

/// Refuse new content in a namespace that does not exist or is being deleted.
fn namespace_accepts_content(server: &ApiServer, namespace: &str) -> Result<(), ApiError> {
    let key = crate::store::ResourceKey::new("", "namespaces");
    match server.store().get(&key, "", namespace) {
        None => Err(ApiError::not_found("", "namespaces", namespace)),
        Some(ns) if objects::is_terminating(&ns.value()) => Err(ApiError::forbidden(format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        ))),
        Some(_) => Ok(()),
    }
}

/// The name rule of a custom resource, checked before admission; a built-in kind's name is checked by its
/// validation, with its other rules, so every problem comes back in one answer.
fn custom_name_problem(ctx: &RequestContext, name: &str) -> Option<Cause> {
    match ctx.rt.origin {
        registry::Origin::Builtin => None,
        registry::Origin::Custom { .. } => objects::check_name(&ctx.rt, name),
    }
}

fn unprocessable(message: String) -> ApiError {
    ApiError::unprocessable(message)
}

/// A patch that cannot be applied: 413 for one with too many operations (as kube-apiserver), 422 otherwise.
pub(super) fn patch_failed(error: patch::PatchError) -> ApiError {
    match error {
        patch::PatchError::TooManyOperations { .. } => ApiError::too_large(error.to_string()),
        other => unprocessable(other.to_string()),
    }
}
