//! DELETE of one object or a collection, with finalizers, propagation policies and preconditions.
//!
//! An object with finalizers is only marked (`deletionTimestamp`) and stays until the last finalizer is removed.
//! `Foreground` and `Orphan` propagation add the `foregroundDeletion` / `orphan` finalizers that the garbage
//! collector (see `controllers`) acts on; `Background` deletes at once and lets the collector remove dependents.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::RequestContext;
use super::filter::Filter;
use crate::apiserver::errors::ApiError;
use crate::apiserver::objects::{self, now_rfc3339};
use crate::apiserver::registry::ResourceType;
use crate::apiserver::{ApiServer, ResponseBody, bytes_response, events, json_response};
use crate::store::ResourceKey;
use crate::store::{CommitError, StoredObject};

/// The finalizer that makes an owner wait for its dependents.
pub(super) const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer that makes the collector orphan an owner's dependents.
pub(super) const ORPHAN: &str = "orphan";

/// What happens to an object's dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeletePolicy {
    /// Delete the object now; the collector deletes dependents afterwards.
    Background,
    /// Delete dependents first; the object waits.
    Foreground,
    /// Keep dependents, removing their owner reference.
    Orphan,
}

/// DeleteOptions from the body (or query, as kubectl sends some).
struct Options {
    policy: DeletePolicy,
    uid: Option<String>,
    resource_version: Option<String>,
}

fn options(ctx: &RequestContext) -> Result<Options, ApiError> {
    let body: Value = if ctx.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        super::parse_object(&ctx.body)?
    };
    let policy_name = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| ctx.query.get("propagationPolicy").map(str::to_string))
        .or_else(
            || match body.get("orphanDependents").and_then(Value::as_bool) {
                Some(true) => Some("Orphan".into()),
                _ => None,
            },
        );
    let policy = match policy_name.as_deref() {
        None | Some("Background") => DeletePolicy::Background,
        Some("Foreground") => DeletePolicy::Foreground,
        Some("Orphan") => DeletePolicy::Orphan,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
    };
    let pre = body.get("preconditions");
    Ok(Options {
        policy,
        uid: pre
            .and_then(|p| p.get("uid"))
            .and_then(Value::as_str)
            .map(str::to_string),
        resource_version: pre
            .and_then(|p| p.get("resourceVersion"))
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// DELETE one object.
pub(super) fn delete(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    let opts = options(ctx)?;
    for _ in 0..16 {
        let current = server
            .store()
            .get(&ctx.storage, ctx.namespace(), ctx.name())
            .ok_or_else(|| ApiError::not_found(&ctx.rt.group, &ctx.rt.plural, ctx.name()))?;
        if let Some(uid) = &opts.uid
            && objects::meta_str(&current.value(), "uid") != Some(uid.as_str())
        {
            let why = format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                objects::meta_str(&current.value(), "uid").unwrap_or("")
            );
            return Err(ApiError::conflict(
                &ctx.rt.group,
                &ctx.rt.plural,
                ctx.name(),
                &why,
            ));
        }
        if let Some(rv) = &opts.resource_version
            && *rv != current.rv.to_string()
        {
            let why = format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                current.rv
            );
            return Err(ApiError::conflict(
                &ctx.rt.group,
                &ctx.rt.plural,
                ctx.name(),
                &why,
            ));
        }
        if ctx.dry_run() {
            let waits = deletion_waits(&ctx.rt, &current.value(), opts.policy);
            return Ok(deleted_response(ctx, &current, !waits));
        }
        match delete_object(server, &ctx.rt, &ctx.storage, &current, opts.policy) {
            Ok(result) => {
                let gone = !objects::is_terminating(&result.value());
                return Ok(deleted_response(ctx, &result, gone));
            }
            Err(CommitError::Conflict) => continue,
            Err(e) => return Err(ApiError::commit_failed(e)),
        }
    }
    Err(ApiError::stale(&ctx.rt.group, &ctx.rt.plural, ctx.name()))
}

/// Resources whose DELETE answers with the removed object even when it is gone at once, as kube-apiserver's
/// storage of these kinds is set up to: clients read the pod's or account's last state from the answer.
const ANSWERED_WITH_THE_OBJECT: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "serviceaccounts"),
    ("storage.k8s.io", "storageclasses"),
];

/// What a DELETE of one object answers: the object while its deletion waits (finalizers), and for the kinds in
/// [`ANSWERED_WITH_THE_OBJECT`]; otherwise, once it is `gone`, a Success `Status` naming it with its uid, which
/// clients (kube-rs's `Either::Right`) take as the sign that nothing is left to wait for.
fn deleted_response(
    ctx: &RequestContext,
    object: &StoredObject,
    gone: bool,
) -> Response<ResponseBody> {
    let answered_with_object = ANSWERED_WITH_THE_OBJECT
        .iter()
        .any(|(group, plural)| ctx.rt.group == *group && ctx.rt.plural == *plural);
    if !gone || answered_with_object {
        return bytes_response(StatusCode::OK, ctx.present(object), "application/json");
    }
    let value = object.value();
    let mut details = serde_json::Map::new();
    details.insert("name".into(), json!(object.name()));
    if !ctx.rt.group.is_empty() {
        details.insert("group".into(), json!(ctx.rt.group));
    }
    details.insert("kind".into(), json!(ctx.rt.plural));
    if let Some(uid) = objects::meta_str(&value, "uid") {
        details.insert("uid".into(), json!(uid));
    }
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    });
    json_response(StatusCode::OK, &status)
}

/// DELETE a collection: every selected object, each as a single delete would.
pub(super) fn delete_collection(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    let opts = options(ctx)?;
    let filter = Filter::from_request(ctx)?;
    let (all, _) = server.store().list(&ctx.storage, filter.namespace());
    let mut deleted = Vec::new();
    for obj in all.iter().filter(|o| filter.selects(o)) {
        if ctx.dry_run() {
            deleted.push(obj.clone());
            continue;
        }
        match delete_object(server, &ctx.rt, &ctx.storage, obj, opts.policy) {
            Ok(result) => deleted.push(result),
            Err(CommitError::Conflict) => {}
            Err(e) => return Err(ApiError::commit_failed(e)),
        }
    }
    let rv = server.store().current_rv();
    let head = json!({ "kind": ctx.rt.list_kind(), "apiVersion": ctx.api_version(), "metadata": { "resourceVersion": rv.to_string() } }).to_string();
    let mut out = BytesMut::new();
    out.put_slice(&head.as_bytes()[..head.len() - 1]);
    out.put_slice(b",\"items\":[");
    for (i, obj) in deleted.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(&ctx.present(obj));
    }
    out.put_slice(b"]}");
    Ok(bytes_response(
        StatusCode::OK,
        out.freeze(),
        "application/json",
    ))
}

/// Delete (or mark for deletion) one stored object: what both the API and the cluster's own controllers use.
/// Returns the object's state after the call (terminating, or its last state when removed).
pub(crate) fn delete_object(
    server: &ApiServer,
    rt: &ResourceType,
    storage: &ResourceKey,
    current: &Arc<StoredObject>,
    policy: DeletePolicy,
) -> Result<Arc<StoredObject>, CommitError> {
    let mut obj = current.to_value();
    let namespace = is_namespace(rt);
    if objects::is_terminating(&obj) {
        return Ok(current.clone());
    }
    let mut finalizers = objects::finalizers(&obj);
    if let Some(f) = policy_finalizer(policy)
        && !finalizers.iter().any(|x| x == f)
    {
        finalizers.push(f.to_string());
    }
    if !deletion_waits(rt, &obj, policy) {
        let deleted =
            server
                .store()
                .delete(storage, current.namespace(), current.name(), current.rv)?;
        after_delete_key(server, rt, &deleted);
        return Ok(deleted);
    }
    let meta = objects::meta_mut(&mut obj);
    meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    if !finalizers.is_empty() {
        meta.insert("finalizers".into(), json!(finalizers));
    }
    if namespace {
        obj["status"]["phase"] = json!("Terminating");
    }
    server.store().put(storage, Some(current.rv), obj)
}

/// The finalizer a propagation policy adds to the object it deletes.
fn policy_finalizer(policy: DeletePolicy) -> Option<&'static str> {
    match policy {
        DeletePolicy::Foreground => Some(FOREGROUND),
        DeletePolicy::Orphan => Some(ORPHAN),
        DeletePolicy::Background => None,
    }
}

fn is_namespace(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "namespaces"
}

/// Whether deleting `obj` with `policy` only marks it (finalizers to run, a namespace to empty, a deletion
/// already under way) rather than removing it at once.
fn deletion_waits(rt: &ResourceType, obj: &Value, policy: DeletePolicy) -> bool {
    let namespace_finalizers = is_namespace(rt)
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
    objects::is_terminating(obj)
        || namespace_finalizers
        || policy_finalizer(policy).is_some()
        || !objects::finalizers(obj).is_empty()
}

/// Side effects of removing an object through a request.
pub(super) fn after_delete(server: &ApiServer, ctx: &RequestContext, deleted: &StoredObject) {
    after_delete_key(server, &ctx.rt, deleted);
}

/// Deleting a CRD deletes every object of its kind and stops serving it.
fn after_delete_key(server: &ApiServer, rt: &ResourceType, deleted: &StoredObject) {
    if rt.group != "apiextensions.k8s.io" || rt.plural != "customresourcedefinitions" {
        return;
    }
    let Ok(served) = crate::apiserver::registry::from_crd(&deleted.value()) else {
        return;
    };
    let key = served.key();
    server.registry().remove(&key);
    for obj in server.store().list(&key, None).0 {
        let _ = server
            .store()
            .delete(&key, obj.namespace(), obj.name(), obj.rv);
    }
    let _ = events::storage_key(rt);
}
