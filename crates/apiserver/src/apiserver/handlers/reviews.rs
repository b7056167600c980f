//! Access and identity reviews, answered by the same authorizer that guards every request: what kubectl's
//! `auth can-i` (with and without `--list`) and `auth whoami` and the console's capability checks ask; and token
//! reviews, answered by the same authenticator, which is how a webhook or aggregated server learns whom a bearer
//! token names.

use http::{Response, StatusCode};
use k8s_openapi::api::authorization::v1::{
    NonResourceRule, ResourceRule, SelfSubjectRulesReviewSpec, SubjectAccessReviewStatus,
    SubjectRulesReviewStatus,
};
use serde_json::{Value, json};

use super::RequestContext;
use crate::apiserver::auth::authorizer::Decision;
use crate::apiserver::auth::rules::{Attributes, ResourceAttributes};
use crate::apiserver::auth::tokens;
use crate::apiserver::errors::ApiError;
use crate::apiserver::registry::ResourceType;
use crate::apiserver::{ApiServer, ResponseBody, json_response};
use crate::identity::UserInfo;

/// Whether `rt` is a review: created to ask a question, never stored.
pub(super) fn is_review(rt: &ResourceType) -> bool {
    matches!(
        (rt.group.as_str(), rt.plural.as_str()),
        (
            "authorization.k8s.io",
            "selfsubjectaccessreviews"
                | "subjectaccessreviews"
                | "localsubjectaccessreviews"
                | "selfsubjectrulesreviews"
        ) | (
            "authentication.k8s.io",
            "selfsubjectreviews" | "tokenreviews"
        )
    )
}

/// Answer a review: the request body with its `status` filled in.
pub(super) fn create(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    let mut review = ctx.body_object()?;
    review["apiVersion"] = json!(ctx.api_version());
    review["kind"] = json!(ctx.rt.kind);
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match ctx.rt.plural.as_str() {
        "selfsubjectaccessreviews" => access(server, &ctx.user, &spec, None)?,
        "subjectaccessreviews" => access(server, &subject(&spec)?, &spec, None)?,
        "localsubjectaccessreviews" => {
            access(server, &subject(&spec)?, &spec, Some(ctx.namespace()))?
        }
        "selfsubjectrulesreviews" => rules(server, &ctx.user, &spec)?,
        "tokenreviews" => token(server, &spec)?,
        _ => json!({ "userInfo": { "username": ctx.user.name, "groups": ctx.user.groups } }),
    };
    review["status"] = status;
    Ok(json_response(StatusCode::CREATED, &review))
}

/// Whom the token of a TokenReview's `spec` authenticates, for which of the audiences it asks about (the server's
/// own when it names none), as kube-apiserver's token authenticators would decide it.
fn token(server: &ApiServer, spec: &Value) -> Result<Value, ApiError> {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let asked: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .filter(|a: &Vec<String>| !a.is_empty())
        .unwrap_or_else(|| vec![tokens::ISSUER.to_owned()]);
    let unauthenticated =
        |error: String| json!({ "authenticated": false, "user": {}, "error": error });
    let holder = match server.auth().token_holder(token, server.store()) {
        Ok(holder) => holder,
        Err(why) => return Ok(unauthenticated(why)),
    };
    let audiences: Vec<&String> = asked.iter().filter(|a| holder.serves(a)).collect();
    if audiences.is_empty() {
        return Ok(unauthenticated(
            "token audiences are not valid for the audiences asked about".to_owned(),
        ));
    }
    let mut user = json!({ "username": holder.user.name, "groups": holder.user.groups });
    if let Some(uid) = holder.uid {
        user["uid"] = json!(uid);
    }
    Ok(json!({ "authenticated": true, "user": user, "audiences": audiences }))
}

/// The user a SubjectAccessReview asks about.
fn subject(spec: &Value) -> Result<UserInfo, ApiError> {
    let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
    let groups: Vec<String> = spec
        .get("groups")
        .and_then(Value::as_array)
        .map(|g| {
            g.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if user.is_empty() && groups.is_empty() {
        return Err(ApiError::unprocessable(
            "SubjectAccessReview.authorization.k8s.io is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified",
        ));
    }
    Ok(UserInfo {
        name: user.to_owned(),
        groups,
    })
}

fn access(
    server: &ApiServer,
    user: &UserInfo,
    spec: &Value,
    namespace: Option<&str>,
) -> Result<Value, ApiError> {
    let attributes = if let Some(r) = spec.get("resourceAttributes").filter(|r| r.is_object()) {
        let field = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        Attributes::resource(
            &field("verb"),
            ResourceAttributes {
                group: field("group"),
                resource: field("resource"),
                subresource: field("subresource"),
                namespace: namespace
                    .map(str::to_owned)
                    .unwrap_or_else(|| field("namespace")),
                name: field("name"),
            },
        )
    } else if let Some(n) = spec.get("nonResourceAttributes").filter(|n| n.is_object()) {
        let field = |key: &str| n.get(key).and_then(Value::as_str).unwrap_or("");
        Attributes::path(field("verb"), field("path"))
    } else {
        return Err(ApiError::unprocessable(
            "spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    };
    let decision = server.auth().authorizer().authorize(user, &attributes);
    let status = match decision {
        Decision::Allow(reason) => SubjectAccessReviewStatus {
            allowed: true,
            reason: Some(reason),
            ..SubjectAccessReviewStatus::default()
        },
        Decision::Deny => SubjectAccessReviewStatus {
            allowed: false,
            ..SubjectAccessReviewStatus::default()
        },
    };
    serde_json::to_value(status).map_err(|e| ApiError::internal(e.to_string()))
}

fn rules(server: &ApiServer, user: &UserInfo, spec: &Value) -> Result<Value, ApiError> {
    let spec: SelfSubjectRulesReviewSpec = serde_json::from_value(spec.clone())
        .map_err(|e| ApiError::bad_request(format!("spec: {e}")))?;
    let namespace = spec.namespace.unwrap_or_default();
    let mut status = SubjectRulesReviewStatus::default();
    if user.is_master() {
        status.resource_rules.push(ResourceRule {
            verbs: vec!["*".into()],
            api_groups: Some(vec!["*".into()]),
            resources: Some(vec!["*".into()]),
            resource_names: None,
        });
        status.non_resource_rules.push(NonResourceRule {
            verbs: vec!["*".into()],
            non_resource_urls: Some(vec!["*".into()]),
        });
    }
    for rule in server.auth().authorizer().rules_for(user, &namespace) {
        let some = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
        if rule.non_resource_urls.is_empty() {
            status.resource_rules.push(ResourceRule {
                verbs: rule.verbs.clone(),
                api_groups: some(&rule.api_groups),
                resources: some(&rule.resources),
                resource_names: some(&rule.resource_names),
            });
        } else {
            status.non_resource_rules.push(NonResourceRule {
                verbs: rule.verbs.clone(),
                non_resource_urls: some(&rule.non_resource_urls),
            });
        }
    }
    serde_json::to_value(status).map_err(|e| ApiError::internal(e.to_string()))
}
