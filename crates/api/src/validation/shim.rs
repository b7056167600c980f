//! Shim rules: the name coupling upstream relies on without checking, and the strategy and
//! download settings the engine needs.

use super::names::{is_dns_label, is_dns_subdomain};
use super::{FieldPath, FieldViolation};
use crate::shim::max_update::MaxUpdate;
use crate::shim::{RolloutType, Shim};

/// Violations of a Shim.
pub fn validate_shim(shim: &Shim) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let name = shim.metadata.name.as_deref().unwrap_or_default();
    let runtime_class = &shim.spec.runtime_class;
    if !is_dns_label(name) {
        violations.push(FieldViolation::new(
            "metadata.name",
            format!(
                "\"{name}\" is not a DNS label; the name is the containerd runtime name and a node \
                 label key, so use at most 63 lowercase letters, digits and '-'"
            ),
        ));
    }
    if runtime_class.handler != name {
        violations.push(FieldViolation::new(
            "spec.runtimeClass.handler",
            format!(
                "\"{}\" differs from the Shim's name \"{name}\"; the handler is the containerd \
                 runtime name, which is the Shim's name (binary containerd-shim-{name}), so set it \
                 to \"{name}\"",
                runtime_class.handler
            ),
        ));
    }
    if !is_dns_subdomain(&runtime_class.name) {
        violations.push(FieldViolation::new(
            "spec.runtimeClass.name",
            format!(
                "\"{}\" is not a valid RuntimeClass name; use lowercase letters, digits, '-' and '.'",
                runtime_class.name
            ),
        ));
    }
    violations.extend(validate_fetch(shim));
    violations.extend(validate_rollout(shim));
    violations
}

fn validate_fetch(shim: &Shim) -> Vec<FieldViolation> {
    let fetch = &shim.spec.fetch_strategy;
    let mut violations = Vec::new();
    if fetch.platforms.is_empty() && fetch.anon_http.is_none() {
        violations.push(FieldViolation::new(
            "spec.fetchStrategy",
            "say where to download the shim: add platforms (one archive per OS and architecture) \
             or anonHttp.location",
        ));
    }
    if let Some(anon) = &fetch.anon_http {
        violations.extend(require_http_url(
            "spec.fetchStrategy.anonHttp.location".into(),
            &anon.location,
        ));
    }
    for (index, platform) in fetch.platforms.iter().enumerate() {
        let at = "spec.fetchStrategy.platforms".index(index);
        violations.extend(require_http_url(at.child("location"), &platform.location));
        if let Some(sha) = &platform.sha256
            && !(sha.len() == 64 && sha.bytes().all(|byte| byte.is_ascii_hexdigit()))
        {
            violations.push(FieldViolation::new(
                at.child("sha256"),
                "must be the 64 hexadecimal digits of the archive's SHA-256 (sha256sum output)",
            ));
        }
    }
    violations
}

fn require_http_url(field: String, location: &str) -> Option<FieldViolation> {
    let has_scheme = ["https://", "http://"]
        .iter()
        .any(|scheme| location.len() > scheme.len() && location.starts_with(scheme));
    (!has_scheme).then(|| {
        FieldViolation::new(
            field,
            format!("\"{location}\" is not an http(s) URL; give the archive's full https:// URL"),
        )
    })
}

fn validate_rollout(shim: &Shim) -> Vec<FieldViolation> {
    let strategy = &shim.spec.rollout_strategy;
    let Some(rolling) = &strategy.rolling else {
        return match strategy.type_ {
            RolloutType::Rolling => vec![FieldViolation::new(
                "spec.rolloutStrategy.rolling",
                "a rolling rollout needs rolling.maxUpdate, e.g. 1 or \"25%\"",
            )],
            RolloutType::Recreate => Vec::new(),
        };
    };
    let valid = MaxUpdate::parse(&rolling.max_update).is_ok();
    if valid {
        Vec::new()
    } else {
        vec![FieldViolation::new(
            "spec.rolloutStrategy.rolling.maxUpdate",
            "must be a node count of at least 1 or a percentage from \"1%\" to \"100%\"",
        )]
    }
}
