//! The common tail of every write: committing an update (or finishing a deletion its finalizers were
//! waiting for), the server's own reactions to a commit, and the response with its warnings.

use std::sync::Arc;

use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};

use super::RequestContext;
use crate::cluster::apiserver::admission;
use crate::cluster::apiserver::errors::ApiError;
use crate::cluster::apiserver::objects::{self, now_rfc3339};
use crate::cluster::apiserver::patch;
use crate::cluster::apiserver::{ApiServer, ResponseBody, bytes_response, events, registry};
use crate::cluster::store::{CommitError, StoredObject};

/// Common tail of every update: server metadata, admission, managed fields, finalizer completion, no-op
/// detection, and the compare-and-swap commit.
pub(super) fn finish_update(
    server: &ApiServer,
    ctx: &RequestContext,
    current: &Arc<StoredObject>,
    old: &Value,
    mut new: Value,
    track_fields: bool,
) -> Result<Response<ResponseBody>, ApiError> {
    objects::carry_metadata(&ctx.rt, old, &mut new);
    new["apiVersion"] = json!(ctx.api_version());
    new["kind"] = json!(ctx.rt.kind);
    let warnings = admission::admit(ctx, &mut new, Some(old))?;
    if track_fields {
        let types = admission::list_types(&ctx.rt, &ctx.path.version);
        patch::track_update(
            Some(old),
            &mut new,
            &ctx.manager(),
            ctx.path.subresource.as_deref(),
            &now_rfc3339(),
            types.as_ref(),
        );
    }
    if objects::is_terminating(&new)
        && objects::finalizers(&new).is_empty()
        && !has_namespace_finalizers(ctx, &new)
    {
        if ctx.dry_run() {
            return Ok(value_response(StatusCode::OK, &new));
        }
        return match server
            .store()
            .delete(&ctx.storage, ctx.namespace(), ctx.name(), current.rv)
        {
            Ok(deleted) => {
                super::delete::after_delete(server, ctx, &deleted);
                Ok(bytes_response(
                    StatusCode::OK,
                    ctx.present(&deleted),
                    "application/json",
                ))
            }
            Err(CommitError::Conflict) => {
                Err(ApiError::stale(&ctx.rt.group, &ctx.rt.plural, ctx.name()))
            }
            Err(CommitError::Storage(e)) => Err(ApiError::internal(e)),
        };
    }
    if same_apart_from_managed_times(old, &new) {
        return Ok(with_warnings(
            bytes_response(StatusCode::OK, ctx.present(current), "application/json"),
            &warnings,
        ));
    }
    if ctx.dry_run() {
        return Ok(with_warnings(
            value_response(StatusCode::OK, &new),
            &warnings,
        ));
    }
    match server.store().put(
        &ctx.storage,
        Some(current.rv),
        events::to_storage(&ctx.rt, new),
    ) {
        Ok(stored) => {
            after_commit(server, ctx, &stored);
            Ok(with_warnings(
                bytes_response(StatusCode::OK, ctx.present(&stored), "application/json"),
                &warnings,
            ))
        }
        Err(CommitError::Conflict) => {
            Err(ApiError::stale(&ctx.rt.group, &ctx.rt.plural, ctx.name()))
        }
        Err(CommitError::Storage(e)) => Err(ApiError::internal(e)),
    }
}

/// A write that changes nothing but managedFields timestamps is not a write: no new resourceVersion, no event,
/// so controllers that write unconditionally do not wake each other up forever.
fn same_apart_from_managed_times(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
            if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
                for e in entries.iter_mut() {
                    if let Some(e) = e.as_object_mut() {
                        e.remove("time");
                    }
                }
            }
        }
        v
    };
    strip(old) == strip(new)
}

fn has_namespace_finalizers(ctx: &RequestContext, obj: &Value) -> bool {
    ctx.rt.group.is_empty()
        && ctx.rt.plural == "namespaces"
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}

/// Side effects of a committed write on the server itself: CRDs (re)register their resource.
pub(super) fn after_commit(server: &ApiServer, ctx: &RequestContext, stored: &StoredObject) {
    if ctx.rt.group == "apiextensions.k8s.io"
        && ctx.rt.plural == "customresourcedefinitions"
        && !objects::is_terminating(stored.value())
    {
        match registry::from_crd(stored.value()) {
            Ok(rt) => server.registry().insert(rt),
            Err(e) => tracing::warn!(crd = stored.name(), "CRD cannot be served: {e}"),
        }
    }
}

pub(super) fn value_response(status: StatusCode, value: &Value) -> Response<ResponseBody> {
    crate::cluster::apiserver::json_response(status, value)
}

/// Add `Warning` headers (RFC 7234 code 299), which kubectl prints and kube-rs logs.
pub(super) fn with_warnings(
    mut response: Response<ResponseBody>,
    warnings: &[String],
) -> Response<ResponseBody> {
    for warning in warnings {
        let text = format!("299 - {:?}", warning);
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}
