//! A pod's ResourceClaims: `spec.resourceClaims` names each claim the pod uses, by the name of a claim or of a
//! template to stamp one from, and each container's `resources.claims` names which of them it gets.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Value, json};

use super::field::{Errors, child, index, items, text};
use kmm_api::validation::names;

/// `spec.resourceClaims` at `path`: unique DNS-label names, each with exactly one of `resourceClaimName` and
/// `resourceClaimTemplateName` (a DNS subdomain). Returns the names, for the containers' references.
pub(super) fn pod_resource_claims<'a>(
    errors: &mut Errors,
    spec: &'a Value,
    path: &str,
) -> HashSet<&'a str> {
    let at = child(path, "resourceClaims");
    let mut claims = HashSet::new();
    for (i, claim) in items(spec, "resourceClaims").iter().enumerate() {
        let at = index(&at, i);
        let name = text(claim, "name");
        let name_at = child(&at, "name");
        if name.is_empty() {
            errors.required(&name_at, "");
        } else {
            errors.invalid_each(&name_at, name, names::dns1123_label_errors(name));
            if !claims.insert(name) {
                errors.duplicate(&name_at, &json!(name));
            }
        }
        let claim_name = text(claim, "resourceClaimName");
        let template_name = text(claim, "resourceClaimTemplateName");
        match (claim_name.is_empty(), template_name.is_empty()) {
            (true, true) => errors.required(
                &at,
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            ),
            (false, false) => errors.invalid(
                &at,
                claim,
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            ),
            _ => {}
        }
        for (field, value) in [
            ("resourceClaimName", claim_name),
            ("resourceClaimTemplateName", template_name),
        ] {
            if !value.is_empty() {
                errors.invalid_each(
                    &child(&at, field),
                    value,
                    names::dns1123_subdomain_errors(value),
                );
            }
        }
    }
    claims
}

/// A container's `resources.claims` at `path` (`...resources`): each names one of the pod's claims (and
/// optionally one of its requests), once.
pub(super) fn container_claims(
    errors: &mut Errors,
    resources: Option<&Value>,
    path: &str,
    pod_claims: &HashSet<&str>,
) {
    let Some(resources) = resources else {
        return;
    };
    let at = child(path, "claims");
    let mut seen = HashSet::new();
    for (i, claim) in items(resources, "claims").iter().enumerate() {
        let at = index(&at, i);
        let name = text(claim, "name");
        let request = text(claim, "request");
        let key = if request.is_empty() {
            name.to_string()
        } else {
            format!("{name}/{request}")
        };
        if !seen.insert(key.clone()) {
            errors.duplicate(&at, &json!(key));
        }
        if name.is_empty() {
            errors.required(&at, "");
        } else if !pod_claims.contains(name) {
            let known: BTreeSet<&str> = pod_claims.iter().copied().collect();
            let detail = if known.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_string()
            } else {
                format!(
                    "must be one of the names in pod.spec.resourceClaims: {}",
                    known.into_iter().collect::<Vec<_>>().join(", ")
                )
            };
            errors.not_found_because(&at, &json!(name), &detail);
        }
        if !request.is_empty() {
            errors.invalid_each(
                &child(&at, "request"),
                request,
                names::dns1123_label_errors(request),
            );
        }
    }
}
