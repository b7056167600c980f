//! `v1` ComponentStatus: the health of the control plane's parts, reported rather than stored, as kube-apiserver
//! (which deprecated it, warning every reader) still serves it. The embedded cluster's scheduler, controllers and
//! store live in the server's own process, so whenever it answers they are healthy.

use http::{HeaderValue, Response, StatusCode};
use serde_json::{Value, json};

use super::RequestContext;
use super::read::table_response;
use crate::apiserver::errors::ApiError;
use crate::apiserver::registry::ResourceType;
use crate::apiserver::request::wants_table;
use crate::apiserver::{ResponseBody, json_response};

/// The components a real control plane reports.
const COMPONENTS: &[&str] = &["controller-manager", "etcd-0", "scheduler"];

/// The warning kube-apiserver attaches to every read.
const DEPRECATED: &str = "299 - \"v1 ComponentStatus is deprecated in v1.19+\"";

/// Whether `rt` is the ComponentStatus resource.
pub(super) fn is_component_status(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "componentstatuses"
}

/// GET one component's status or LIST them all (the only verbs served).
pub(super) fn serve(ctx: &RequestContext) -> Result<Response<ResponseBody>, ApiError> {
    let statuses: Vec<Value> = match ctx.path.name.as_deref() {
        Some(name) => match COMPONENTS.iter().find(|c| **c == name) {
            Some(component) => vec![status(component)],
            None => return Err(ApiError::not_found("", "componentstatuses", name)),
        },
        None => COMPONENTS.iter().map(|c| status(c)).collect(),
    };
    let mut response = if wants_table(ctx.accept()) {
        let refs: Vec<&Value> = statuses.iter().collect();
        table_response(ctx, &refs, json!({}))
    } else if ctx.path.name.is_some() {
        json_response(StatusCode::OK, &statuses[0])
    } else {
        json_response(
            StatusCode::OK,
            &json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": statuses}),
        )
    };
    response
        .headers_mut()
        .insert("warning", HeaderValue::from_static(DEPRECATED));
    Ok(response)
}

/// A healthy component.
fn status(name: &str) -> Value {
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
    })
}
