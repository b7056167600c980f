//! Subresources other than status: a workload's scale ([`super::scale`]), pod logs, pod binding (what a
//! scheduler posts), pod eviction (what a drain posts, [`super::eviction`]), namespace finalize and ServiceAccount
//! tokens (what `kubectl create token` posts).

use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::RequestContext;
use crate::apiserver::auth::tokens;
use crate::apiserver::errors::ApiError;
use crate::apiserver::request::Verb;
use crate::apiserver::{ApiServer, ResponseBody, json_response, logs, objects};
use crate::store::CommitError;

/// Route a subresource request.
pub(super) async fn handle(
    server: &ApiServer,
    ctx: &RequestContext,
    sub: &str,
    verb: Verb,
) -> Result<Response<ResponseBody>, ApiError> {
    if sub == "scale"
        && let Some(paths) = &ctx.rt.scale
    {
        return super::scale::serve(server, ctx, paths, verb).await;
    }
    let core = ctx.rt.group.is_empty();
    match (core, ctx.rt.plural.as_str(), sub, verb) {
        (true, "pods", "log", Verb::Get) => logs::serve(server, ctx),
        (true, "pods", "binding", Verb::Create) => bind(server, ctx),
        (true, "pods", "eviction", Verb::Create) => super::eviction::evict(server, ctx),
        (true, "namespaces", "finalize", Verb::Update) => super::write::update(server, ctx),
        (true, "serviceaccounts", "token", Verb::Create) => token(server, ctx),
        _ => Err(ApiError::no_route(&format!("{}/{sub}", ctx.rt.plural))),
    }
}

/// `pods/binding`: assign a pending pod to a node, once.
fn bind(server: &ApiServer, ctx: &RequestContext) -> Result<Response<ResponseBody>, ApiError> {
    let binding = ctx.body_object()?;
    let node = binding
        .pointer("/target/name")
        .and_then(|v| v.as_str())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::bad_request("a Binding needs target.name (the node)"))?;
    let current = server
        .store()
        .get(&ctx.storage, ctx.namespace(), ctx.name())
        .ok_or_else(|| ApiError::not_found("", "pods", ctx.name()))?;
    if current
        .value()
        .pointer("/spec/nodeName")
        .and_then(|v| v.as_str())
        .is_some_and(|n| !n.is_empty())
    {
        return Err(ApiError::conflict(
            "",
            "pods",
            ctx.name(),
            &format!(
                "pod {} is already assigned to node {:?}",
                ctx.name(),
                current.value()["spec"]["nodeName"]
            ),
        ));
    }
    let mut pod = current.to_value();
    pod["spec"]["nodeName"] = json!(node);
    let now = objects::now_rfc3339();
    let conditions = pod["status"]
        .get("conditions")
        .and_then(|c| c.as_array())
        .cloned()
        .unwrap_or_default();
    let mut conditions: Vec<_> = conditions
        .into_iter()
        .filter(|c| c["type"] != "PodScheduled")
        .collect();
    conditions.push(json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": now}));
    pod["status"]["conditions"] = json!(conditions);
    match server.store().put(&ctx.storage, Some(current.rv), pod) {
        Ok(_) => Ok(json_response(
            StatusCode::CREATED,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        )),
        Err(CommitError::Conflict) => Err(ApiError::stale("", "pods", ctx.name())),
        Err(e) => Err(ApiError::commit_failed(e)),
    }
}

/// `serviceaccounts/token`: a TokenRequest, answered with a signed token bound to the ServiceAccount's uid that
/// expires after the lifetime asked for (clamped to what the server allows).
fn token(server: &ApiServer, ctx: &RequestContext) -> Result<Response<ResponseBody>, ApiError> {
    let mut request = ctx.body_object()?;
    let undecodable = |why: &str| {
        ApiError::bad_request(format!(
            "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: {why}"
        ))
    };
    let mut spec = match request.get("spec") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(spec)) => spec.clone(),
        Some(_) => return Err(undecodable("spec must be an object")),
    };
    let requested = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => None,
        Some(seconds) => Some(
            seconds
                .as_i64()
                .ok_or_else(|| undecodable("spec.expirationSeconds must be an integer"))?,
        ),
    };
    let lifetime = tokens::lifetime(requested).map_err(ApiError::unprocessable)?;
    let audiences: Vec<String> = match spec.get("audiences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(audiences)) => audiences
            .iter()
            .map(|a| a.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| undecodable("spec.audiences must be a list of strings"))?,
        Some(_) => return Err(undecodable("spec.audiences must be a list of strings")),
    };
    let issued = server.auth().issue_token(
        server.store(),
        ctx.namespace(),
        ctx.name(),
        lifetime,
        audiences,
    )?;
    let expiry = jiff::Timestamp::from_second(issued.claims.exp)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    spec.insert("audiences".into(), json!(issued.claims.aud));
    spec.insert("expirationSeconds".into(), json!(lifetime));
    let metadata = objects::meta_mut(&mut request);
    metadata.insert("name".into(), json!(ctx.name()));
    metadata.insert("namespace".into(), json!(ctx.namespace()));
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    request["spec"] = Value::Object(spec);
    request["status"] = json!({
        "token": issued.token,
        "expirationTimestamp": expiry,
    });
    Ok(json_response(StatusCode::CREATED, &request))
}
