//! RBAC's guard against escalation, as kube-apiserver enforces it on writes of RBAC objects: without it, anyone
//! who may create a RoleBinding could bind `cluster-admin` to themselves.
//!
//! - A Role or ClusterRole may be written only by someone who already holds every permission it grants (in its
//!   namespace, or cluster-wide for a ClusterRole), or who may `escalate` it.
//! - A RoleBinding or ClusterRoleBinding may be written only by someone who holds every permission of the role it
//!   refers to (in the binding's namespace, or cluster-wide), or who may `bind` that role.
//!
//! `system:masters` is exempt, as in kube-apiserver. An update that leaves what the object grants unchanged (its
//! rules, or its role and subjects) is not checked: such a write grants nothing new, and the garbage collector and
//! label or annotation edits must not need the role's permissions.
//!
//! Whether the writer holds a role's permissions is decided rule against rule ([`coverage`]), never by listing
//! every permission a rule grants: that list grows as the product of its verbs, groups, resources and names, and a
//! refusal names only the first few.

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use serde_json::Value;

use super::authorizer::{Authorizer, RBAC_GROUP};
use super::coverage;
use super::rules::{Attributes, ResourceAttributes};
use crate::apiserver::errors::ApiError;
use crate::identity::UserInfo;
use crate::store::ResourceKey;
use crate::store::Store;

/// The RBAC object a write is about.
pub struct Written<'a> {
    /// Plural resource (`roles`, `clusterroles`, `rolebindings`, `clusterrolebindings`).
    pub plural: &'a str,
    /// Namespace of the object (`""` for cluster-scoped ones).
    pub namespace: &'a str,
    /// Name of the object.
    pub name: &'a str,
    /// The object as it will be stored.
    pub new: &'a Value,
    /// The stored object, on updates.
    pub old: Option<&'a Value>,
}

/// Refuse (403) a write of an RBAC object that would grant `user` or others more than `user` holds or may grant.
/// Writes of other resources pass.
pub fn check(
    authorizer: &Authorizer,
    store: &Store,
    user: &UserInfo,
    written: &Written<'_>,
) -> Result<(), ApiError> {
    if user.is_master() {
        return Ok(());
    }
    match written.plural {
        "roles" | "clusterroles" => check_role(authorizer, user, written),
        "rolebindings" | "clusterrolebindings" => check_binding(authorizer, store, user, written),
        _ => Ok(()),
    }
}

fn check_role(
    authorizer: &Authorizer,
    user: &UserInfo,
    written: &Written<'_>,
) -> Result<(), ApiError> {
    if unchanged(written, &["rules", "aggregationRule"]) {
        return Ok(());
    }
    if may(authorizer, user, "escalate", written.plural, written) {
        return Ok(());
    }
    if written
        .new
        .get("aggregationRule")
        .is_some_and(|r| !r.is_null())
    {
        return Err(refused(
            written,
            "must have cluster-admin privileges to use the aggregationRule",
        ));
    }
    let rules = policy_rules(written.new.get("rules"))?;
    not_more_than_held(authorizer, user, written, &rules)
}

fn check_binding(
    authorizer: &Authorizer,
    store: &Store,
    user: &UserInfo,
    written: &Written<'_>,
) -> Result<(), ApiError> {
    if unchanged(written, &["roleRef", "subjects"]) {
        return Ok(());
    }
    let role_ref: RoleRef = written
        .new
        .get("roleRef")
        .cloned()
        .and_then(|r| serde_json::from_value(r).ok())
        .ok_or_else(|| ApiError::bad_request("roleRef is required"))?;
    let role_plural = match role_ref.kind.as_str() {
        "Role" => "roles",
        "ClusterRole" => "clusterroles",
        other => {
            return Err(refused(
                written,
                &format!("roleRef.kind {other:?} is neither Role nor ClusterRole"),
            ));
        }
    };
    let role_written = Written {
        plural: role_plural,
        name: &role_ref.name,
        ..*written
    };
    if may(authorizer, user, "bind", role_plural, &role_written) {
        return Ok(());
    }
    let role_namespace = if role_plural == "roles" {
        written.namespace
    } else {
        ""
    };
    let role = store
        .get(
            &ResourceKey::new(RBAC_GROUP, role_plural),
            role_namespace,
            &role_ref.name,
        )
        .ok_or_else(|| {
            let singular = role_plural.trim_end_matches('s');
            refused(
                written,
                &format!("{singular}.{RBAC_GROUP} \"{}\" not found", role_ref.name),
            )
        })?;
    let rules = policy_rules(role.value().get("rules"))?;
    not_more_than_held(authorizer, user, written, &rules)
}

/// Whether an update leaves every one of `fields` as stored.
fn unchanged(written: &Written<'_>, fields: &[&str]) -> bool {
    written
        .old
        .is_some_and(|old| fields.iter().all(|f| old.get(f) == written.new.get(f)))
}

/// Whether `user` may `verb` the RBAC resource `plural` named as `written` names it.
fn may(
    authorizer: &Authorizer,
    user: &UserInfo,
    verb: &str,
    plural: &str,
    written: &Written<'_>,
) -> bool {
    let attributes = Attributes::resource(
        verb,
        ResourceAttributes {
            group: RBAC_GROUP.to_owned(),
            resource: plural.to_owned(),
            namespace: written.namespace.to_owned(),
            name: written.name.to_owned(),
            ..ResourceAttributes::default()
        },
    );
    authorizer.authorize(user, &attributes).allowed()
}

fn policy_rules(rules: Option<&Value>) -> Result<Vec<PolicyRule>, ApiError> {
    match rules {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(rules) => serde_json::from_value(rules.clone())
            .map_err(|e| ApiError::bad_request(format!("rules cannot be read: {e}"))),
    }
}

/// Refuse unless every permission of `rules` is held by `user` where the written object applies. The refusal names
/// the first few permissions not held and counts the rest, so its size does not grow with the request's.
fn not_more_than_held(
    authorizer: &Authorizer,
    user: &UserInfo,
    written: &Written<'_>,
    rules: &[PolicyRule],
) -> Result<(), ApiError> {
    let held = authorizer.rules_for(user, written.namespace);
    let missing = coverage::uncovered(&held, rules);
    if missing.is_empty() {
        return Ok(());
    }
    let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
    Err(refused(
        written,
        &format!(
            "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            user.name,
            groups.join(" "),
            missing.describe()
        ),
    ))
}

fn refused(written: &Written<'_>, why: &str) -> ApiError {
    ApiError::forbidden_object(RBAC_GROUP, written.plural, written.name, why)
}
