//! CertificateSigningRequests as kube-apiserver admits them: the requester (user and groups) recorded by the
//! server on create, whatever the body says; `/approval` changing only the conditions, and only for a user who may
//! `approve` for the request's signer; conditions stamped with the time they were set. The certificate itself is
//! issued by [`signer`], as kube-controller-manager's signer would.

pub mod signer;

use serde_json::{Value, json};

use super::auth::rules::{Attributes, ResourceAttributes};
use super::context::RequestContext;
use super::errors::ApiError;
use super::validation::certificates::conditions;
use super::{ApiServer, objects};
use crate::identity::UserInfo;

/// The API group of CertificateSigningRequests.
pub const GROUP: &str = "certificates.k8s.io";

/// Their resource.
pub const PLURAL: &str = "certificatesigningrequests";

/// Whether `ctx` writes a CertificateSigningRequest.
pub fn is_signing_request(ctx: &RequestContext) -> bool {
    ctx.rt.group == GROUP && ctx.rt.plural == PLURAL
}

/// What is decided of a CertificateSigningRequest on its way to storage, after decoding and defaults: on create,
/// who asked; on update, nothing of the request itself (its spec stays as created); on `/approval` and `/status`, whether the conditions are valid (and, for `/approval`, whether the
/// user may decide for the signer), each new one stamped with the time.
pub fn admit(
    server: &ApiServer,
    ctx: &RequestContext,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    match (ctx.path.subresource.as_deref(), old) {
        (None, None) => record_requester(obj, &ctx.user),
        (None, Some(old)) => {
            if let Some(spec) = old.get("spec") {
                obj["spec"] = spec.clone();
            }
        }
        (Some(sub @ ("approval" | "status")), Some(old)) => {
            let causes = conditions(obj, old).into_causes();
            if !causes.is_empty() {
                let name = objects::meta_str(obj, "name").unwrap_or(ctx.name());
                return Err(ApiError::invalid(GROUP, &ctx.rt.kind, name, causes));
            }
            if sub == "approval" {
                may_decide(server, ctx, obj, old)?;
            }
            stamp_conditions(obj, old);
        }
        _ => {}
    }
    Ok(())
}

/// `/approval` changes the conditions only: the stored request with the conditions of `new`.
pub fn with_conditions_from(old: &Value, new: &Value) -> Value {
    let mut out = old.clone();
    let conditions = new
        .pointer("/status/conditions")
        .cloned()
        .unwrap_or(Value::Null);
    if !out.get("status").is_some_and(Value::is_object) {
        out["status"] = json!({});
    }
    out["status"]["conditions"] = conditions;
    out
}

/// The requester is whoever creates the request, as authenticated: a client cannot ask in another's name.
fn record_requester(obj: &mut Value, user: &UserInfo) {
    if !obj.get("spec").is_some_and(Value::is_object) {
        return;
    }
    let spec = &mut obj["spec"];
    spec["username"] = json!(user.name);
    spec["groups"] = json!(user.groups);
    if let Some(spec) = spec.as_object_mut() {
        spec.remove("uid");
        spec.remove("extra");
    }
}

/// A user who adds an Approved or Denied condition must hold `approve` on the request's signer (by its name, or
/// `domain/*` for every signer of its domain), as kube-apiserver's CertificateApproval admission asks.
fn may_decide(
    server: &ApiServer,
    ctx: &RequestContext,
    obj: &Value,
    old: &Value,
) -> Result<(), ApiError> {
    let decided = |o: &Value| -> Vec<String> {
        o.pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("type").and_then(Value::as_str))
            .filter(|t| matches!(*t, "Approved" | "Denied"))
            .map(str::to_owned)
            .collect()
    };
    let before = decided(old);
    if decided(obj).iter().all(|kind| before.contains(kind)) {
        return Ok(());
    }
    let signer = old
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let wildcard = signer
        .split_once('/')
        .map(|(domain, _)| format!("{domain}/*"))
        .unwrap_or_default();
    let may = |name: &str| {
        let attributes = Attributes::resource(
            "approve",
            ResourceAttributes {
                group: GROUP.to_owned(),
                resource: "signers".to_owned(),
                name: name.to_owned(),
                ..ResourceAttributes::default()
            },
        );
        server
            .auth()
            .authorizer()
            .authorize(&ctx.user, &attributes)
            .allowed()
    };
    if may(signer) || (!wildcard.is_empty() && may(&wildcard)) {
        return Ok(());
    }
    Err(ApiError::forbidden_object(
        GROUP,
        PLURAL,
        ctx.name(),
        &format!("user not permitted to approve requests with signerName {signer:?}"),
    ))
}

/// Conditions new or changed since `old` get `lastUpdateTime` (and, when their status changed,
/// `lastTransitionTime`) now, unless the writer set them.
fn stamp_conditions(obj: &mut Value, old: &Value) {
    let now = objects::now_rfc3339();
    let before = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(conditions) = obj
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in conditions {
        if before.contains(condition) {
            continue;
        }
        let previous = before
            .iter()
            .find(|c| c.get("type") == condition.get("type"));
        let Some(fields) = condition.as_object_mut() else {
            continue;
        };
        fields.entry("lastUpdateTime").or_insert_with(|| json!(now));
        let transition = previous
            .filter(|p| p.get("status") == fields.get("status"))
            .and_then(|p| p.get("lastTransitionTime"))
            .cloned()
            .unwrap_or_else(|| json!(now));
        fields.entry("lastTransitionTime").or_insert(transition);
    }
}
