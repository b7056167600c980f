//! Roles and bindings: rules that grant something definite, bindings that point at a role of the right kind and
//! at well-formed subjects, and a `roleRef` fixed at creation (changing it would re-grant every subject at once).

use serde_json::{Value, json};

use super::field::{Errors, child, index, items, text};
use super::meta;
use crate::apiserver::auth::authorizer::RBAC_GROUP;
use crate::apiserver::objects;
use kmm_api::validation::names;

/// A Role (`namespaced`) or ClusterRole.
pub(super) fn role(obj: &Value, namespaced: bool) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    for (i, rule) in items(obj, "rules").iter().enumerate() {
        policy_rule(&mut errors, rule, &index("rules", i), namespaced);
    }
    if let Some(aggregation) = obj.get("aggregationRule") {
        let selectors = items(aggregation, "clusterRoleSelectors");
        if selectors.is_empty() {
            errors.required("aggregationRule.clusterRoleSelectors", "");
        }
        for (i, selector) in selectors.iter().enumerate() {
            meta::label_selector(
                &mut errors,
                selector,
                &index("aggregationRule.clusterRoleSelectors", i),
            );
        }
    }
    errors
}

fn policy_rule(errors: &mut Errors, rule: &Value, at: &str, namespaced: bool) {
    if items(rule, "verbs").is_empty() {
        errors.required(&child(at, "verbs"), "verbs must contain at least one value");
    }
    let urls = items(rule, "nonResourceURLs");
    if !urls.is_empty() {
        let shown = go_strings(urls);
        if namespaced {
            errors.invalid_shown(
                &child(at, "nonResourceURLs"),
                &shown,
                "namespaced rules cannot apply to non-resource URLs",
            );
        }
        if ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|f| !items(rule, f).is_empty())
        {
            errors.invalid_shown(
                &child(at, "nonResourceURLs"),
                &shown,
                "rules cannot apply to both regular resources and non-resource URLs",
            );
        }
        return;
    }
    if items(rule, "apiGroups").is_empty() {
        errors.required(
            &child(at, "apiGroups"),
            "resource rules must supply at least one api group",
        );
    }
    if items(rule, "resources").is_empty() {
        errors.required(
            &child(at, "resources"),
            "resource rules must supply at least one resource",
        );
    }
}

/// A RoleBinding (`namespaced`) or ClusterRoleBinding.
pub(super) fn binding(obj: &Value, namespaced: bool) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let role_ref = obj.get("roleRef").unwrap_or(&Value::Null);
    let group = text(role_ref, "apiGroup");
    if group != RBAC_GROUP {
        errors.not_supported("roleRef.apiGroup", &json!(group), &[RBAC_GROUP]);
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    let kind = text(role_ref, "kind");
    if !kinds.contains(&kind) {
        errors.not_supported("roleRef.kind", &json!(kind), kinds);
    }
    let name = text(role_ref, "name");
    if name.is_empty() {
        errors.required("roleRef.name", "");
    } else if let Some(why) = objects::check_path_segment(name) {
        errors.invalid("roleRef.name", &json!(name), &why);
    }
    for (i, subject) in items(obj, "subjects").iter().enumerate() {
        self::subject(&mut errors, subject, &index("subjects", i), namespaced);
    }
    errors
}

/// A binding's update: its `roleRef` stays as it was.
pub(super) fn binding_update(new: &Value, old: &Value, namespaced: bool) -> Errors {
    let mut errors = binding(new, namespaced);
    let role_ref = new.get("roleRef").unwrap_or(&Value::Null);
    if old.get("roleRef") != new.get("roleRef") {
        let shown = format!(
            "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
            text(role_ref, "apiGroup"),
            text(role_ref, "kind"),
            text(role_ref, "name")
        );
        errors.invalid_shown("roleRef", &shown, "cannot change roleRef");
    }
    errors
}

fn subject(errors: &mut Errors, subject: &Value, at: &str, namespaced: bool) {
    let name = text(subject, "name");
    if name.is_empty() {
        errors.required(&child(at, "name"), "");
    }
    let group = text(subject, "apiGroup");
    match text(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                errors.invalid_each(
                    &child(at, "name"),
                    name,
                    names::dns1123_subdomain_errors(name),
                );
            }
            if !group.is_empty() {
                errors.not_supported(&child(at, "apiGroup"), &json!(group), &[""]);
            }
            if !namespaced && text(subject, "namespace").is_empty() {
                errors.required(&child(at, "namespace"), "");
            }
        }
        "User" | "Group" => {
            if group != RBAC_GROUP {
                errors.not_supported(&child(at, "apiGroup"), &json!(group), &[RBAC_GROUP]);
            }
        }
        other => errors.not_supported(
            &child(at, "kind"),
            &json!(other),
            &["ServiceAccount", "User", "Group"],
        ),
    }
}

/// A list of strings in Go's notation, as kube-apiserver prints one: `[]string{"/healthz"}`.
fn go_strings(list: &[Value]) -> String {
    let inner = list
        .iter()
        .map(|v| format!("{:?}", v.as_str().unwrap_or("")))
        .collect::<Vec<_>>()
        .join(", ");
    format!("[]string{{{inner}}}")
}
