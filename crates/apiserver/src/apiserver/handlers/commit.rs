//! The common tail of every write: committing an update (or finishing a deletion its finalizers were
//! waiting for), the server's own reactions to a commit, and the response with its warnings.

use std::sync::Arc;

use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};

use super::RequestContext;
use crate::apiserver::admission;
use crate::apiserver::errors::ApiError;
use crate::apiserver::objects::{self, now_rfc3339};
use crate::apiserver::patch;
use crate::apiserver::{ApiServer, ResponseBody, bytes_response, registry};
use crate::store::{CommitError, StoredObject};

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
    let warnings = admission::admit(server, ctx, &mut new, Some(old))?;
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
            Err(e) => Err(ApiError::commit_failed(e)),
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
    match server
        .store()
        .put(&ctx.storage, Some(current.rv), ctx.to_storage(new))
    {
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
        Err(e) => Err(ApiError::commit_failed(e)),
    }
}

/// A write that changes nothing but managedFields timestamps is not a write: no new resourceVersion, no event,
/// so controllers that write unconditionally do not wake each other up forever. Compared in place: this runs on
/// every write, and copying both objects to strip what is ignored would cost more than the comparison.
fn same_apart_from_managed_times(old: &Value, new: &Value) -> bool {
    same_fields(old, new, None, &|key, old, new| match key {
        "metadata" => same_fields(old, new, Some("resourceVersion"), &|key, old, new| match (
            key, old, new,
        ) {
            ("managedFields", Value::Array(old), Value::Array(new)) => {
                old.len() == new.len()
                    && old
                        .iter()
                        .zip(new)
                        .all(|(old, new)| same_fields(old, new, Some("time"), &|_, a, b| a == b))
            }
            _ => old == new,
        }),
        _ => old == new,
    })
}

/// Whether two values are equal when `ignored` is left out of both (if they are objects), comparing each pair of
/// same-named fields with `same`.
fn same_fields(
    old: &Value,
    new: &Value,
    ignored: Option<&str>,
    same: &dyn Fn(&str, &Value, &Value) -> bool,
) -> bool {
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return old == new;
    };
    let counted = |fields: &serde_json::Map<String, Value>| {
        fields.len() - ignored.map_or(0, |key| usize::from(fields.contains_key(key)))
    };
    counted(old) == counted(new)
        && old
            .iter()
            .filter(|(key, _)| Some(key.as_str()) != ignored)
            .all(|(key, value)| new.get(key).is_some_and(|other| same(key, value, other)))
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
        && !objects::is_terminating(&stored.value())
    {
        match registry::from_crd(&stored.value()) {
            Ok(rt) => server.registry().insert(rt),
            Err(e) => tracing::warn!(crd = stored.name(), "CRD cannot be served: {e}"),
        }
    }
}

pub(super) fn value_response(status: StatusCode, value: &Value) -> Response<ResponseBody> {
    crate::apiserver::json_response(status, value)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(rv: &str, time: &str, phase: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "resourceVersion": rv, "labels": {"a": "b"},
                "managedFields": [{"manager": "m", "operation": "Update", "time": time, "fieldsV1": {"f:status": {}}}]},
            "spec": {"nodeName": "n"}, "status": {"phase": phase}})
    }

    #[test]
    fn only_resource_version_and_managed_times_are_ignored() {
        let old = pod("1", "2026-01-01T00:00:00Z", "Running");
        assert!(same_apart_from_managed_times(
            &old,
            &pod("2", "2026-01-01T00:00:09Z", "Running")
        ));
        assert!(!same_apart_from_managed_times(
            &old,
            &pod("1", "2026-01-01T00:00:00Z", "Failed")
        ));
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"]["a"] = json!("c");
        assert!(!same_apart_from_managed_times(&old, &relabelled));
        let mut without_rv = old.clone();
        meta_remove(&mut without_rv, "resourceVersion");
        assert!(same_apart_from_managed_times(&old, &without_rv));
        let mut other_manager = old.clone();
        other_manager["metadata"]["managedFields"][0]["manager"] = json!("n");
        assert!(!same_apart_from_managed_times(&old, &other_manager));
        let mut extra_entry = old.clone();
        extra_entry["metadata"]["managedFields"]
            .as_array_mut()
            .unwrap()
            .push(json!({"manager": "n"}));
        assert!(!same_apart_from_managed_times(&old, &extra_entry));
        let mut extra_field = old.clone();
        extra_field["metadata"]["annotations"] = json!({"x": "y"});
        assert!(!same_apart_from_managed_times(&old, &extra_field));
        assert!(!same_apart_from_managed_times(&extra_field, &old));
    }

    fn meta_remove(obj: &mut Value, key: &str) {
        obj["metadata"].as_object_mut().unwrap().shift_remove(key);
    }
}
