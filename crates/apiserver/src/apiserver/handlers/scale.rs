//! `/scale`: a workload's replica count read and written as an `autoscaling/v1` Scale, so `kubectl scale`, kube-rs's
//! `get_scale`/`patch_scale` and autoscalers change a Deployment, a ReplicaSet, a StatefulSet, a
//! ReplicationController or a custom resource alike. A write changes only the desired count; the workload goes
//! through the same admission and commit as any update.

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;

use super::RequestContext;
use super::commit::finish_update;
use crate::apiserver::errors::{ApiError, Cause};
use crate::apiserver::request::Verb;
use crate::apiserver::scale::{SCALE_GROUP, SCALE_KIND, ScalePaths};
use crate::apiserver::{ApiServer, ResponseBody, full, json_response, patch};

/// How many times a write reads the workload again after a concurrent change before answering 409.
const WRITE_ATTEMPTS: usize = 16;

/// The patch types a Scale accepts.
const SCALE_PATCH_TYPES: &str = "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json";

/// Serve a `/scale` request of a resource that has one.
pub(super) async fn serve(
    server: &ApiServer,
    ctx: &RequestContext,
    paths: &ScalePaths,
    verb: Verb,
) -> Result<Response<ResponseBody>, ApiError> {
    match verb {
        Verb::Get => {
            let current = current(server, ctx)?;
            Ok(json_response(
                StatusCode::OK,
                &paths.scale_of(&ctx.present_value(&current)),
            ))
        }
        Verb::Update => {
            let wanted = ctx.body_object()?;
            let precondition = resource_version(&wanted);
            write(server, ctx, paths, precondition, |_| Ok(wanted.clone())).await
        }
        Verb::Patch => {
            let (kind, document) = patch_document(ctx)?;
            let precondition = match &document {
                Value::Object(_) => resource_version(&document),
                _ => None,
            };
            write(server, ctx, paths, precondition, |scale| {
                apply_patch(kind, scale, &document)
            })
            .await
        }
        _ => Err(ApiError::method_not_allowed(
            verb.as_str(),
            &format!("{}/scale", ctx.rt.plural),
        )),
    }
}

/// The kinds of patch a Scale takes.
#[derive(Clone, Copy)]
enum PatchKind {
    Merge,
    Json,
    Strategic,
}

fn patch_document(ctx: &RequestContext) -> Result<(PatchKind, Value), ApiError> {
    let content_type = ctx
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    let kind = match content_type.as_str() {
        "application/merge-patch+json" => PatchKind::Merge,
        "application/json-patch+json" => PatchKind::Json,
        "application/strategic-merge-patch+json" => PatchKind::Strategic,
        other => return Err(ApiError::unsupported_media_type(other, SCALE_PATCH_TYPES)),
    };
    let document: Value = serde_json::from_slice(&ctx.body)
        .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?;
    match (kind, &document) {
        (PatchKind::Json, Value::Array(_))
        | (PatchKind::Merge | PatchKind::Strategic, Value::Object(_)) => Ok((kind, document)),
        _ => Err(ApiError::bad_request(
            "the patch must be a JSON object of the fields to change, or a list of JSON patch operations",
        )),
    }
}

/// The Scale after the patch; a Scale has no lists, so a strategic merge is a plain merge.
fn apply_patch(kind: PatchKind, scale: &Value, document: &Value) -> Result<Value, ApiError> {
    let mut patched = scale.clone();
    match kind {
        PatchKind::Merge | PatchKind::Strategic => patch::merge_patch(&mut patched, document),
        PatchKind::Json => {
            patch::json_patch(&mut patched, document).map_err(super::write::patch_failed)?;
        }
    }
    Ok(patched)
}

/// Set the workload's desired count to what `change` makes of its current Scale, and answer with the Scale of
/// what was stored. A write that raced another is tried again unless the client named the resourceVersion it
/// expects.
async fn write(
    server: &ApiServer,
    ctx: &RequestContext,
    paths: &ScalePaths,
    precondition: Option<String>,
    change: impl Fn(&Value) -> Result<Value, ApiError>,
) -> Result<Response<ResponseBody>, ApiError> {
    for _ in 0..WRITE_ATTEMPTS {
        let current = current(server, ctx)?;
        if precondition
            .as_ref()
            .is_some_and(|rv| *rv != current.rv.to_string())
        {
            return Err(ApiError::stale(&ctx.rt.group, &ctx.rt.plural, ctx.name()));
        }
        let object = ctx.present_value(&current);
        let wanted = change(&paths.scale_of(&object))?;
        let replicas = desired_replicas(ctx, &wanted)?;
        let updated = paths.with_replicas(&object, replicas);
        match finish_update(server, ctx, &current, &object, updated, true) {
            Err(e)
                if e.reason == "Conflict"
                    && precondition.is_none()
                    && e.details.as_ref().is_some_and(|d| d.causes.is_empty()) => {}
            Err(e) => return Err(e),
            Ok(response) => return as_scale(response, paths).await,
        }
    }
    Err(ApiError::stale(&ctx.rt.group, &ctx.rt.plural, ctx.name()))
}

/// The `spec.replicas` a Scale asks for: absent means 0 as in kube-apiserver's typed Scale; a negative count is
/// invalid.
fn desired_replicas(ctx: &RequestContext, scale: &Value) -> Result<i64, ApiError> {
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(value) => value
            .as_i64()
            .filter(|n| i32::try_from(*n).is_ok())
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Scale in version \"v1\" cannot be handled as a Scale: spec.replicas must be a 32-bit integer, not {value}"
                ))
            })?,
    };
    if replicas < 0 {
        let cause = Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            field: "spec.replicas".into(),
        };
        return Err(ApiError::invalid(
            SCALE_GROUP,
            SCALE_KIND,
            ctx.name(),
            vec![cause],
        ));
    }
    Ok(replicas)
}

fn resource_version(document: &Value) -> Option<String> {
    document
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
        .map(str::to_owned)
}

fn current(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<std::sync::Arc<crate::store::StoredObject>, ApiError> {
    server
        .store()
        .get(&ctx.storage, ctx.namespace(), ctx.name())
        .ok_or_else(|| ApiError::not_found(&ctx.rt.group, &ctx.rt.plural, ctx.name()))
}

/// The answer to a write, with the workload it carries replaced by that workload's Scale (status and warning
/// headers kept).
async fn as_scale(
    response: Response<ResponseBody>,
    paths: &ScalePaths,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let object: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::internal(format!("reading back the scaled object: {e}")))?;
    let scale = serde_json::to_vec(&paths.scale_of(&object)).unwrap_or_default();
    Ok(Response::from_parts(parts, full(Bytes::from(scale))))
}
