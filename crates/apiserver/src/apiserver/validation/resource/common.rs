//! What the `resource.k8s.io` kinds share: driver and pool names, CEL selectors (checked for presence and length
//! only: evaluating them is the scheduler's business), opaque configuration, and kube-apiserver's size limits.

use serde_json::{Value, json};

use super::super::field::{Errors, child, index, items, text};
use kmm_api::validation::names;

/// Most selectors a class or a request may list.
pub(super) const MAX_SELECTORS: usize = 32;
/// Most configuration entries a class or a claim may list.
pub(super) const MAX_CONFIGS: usize = 32;
/// The longest CEL expression a selector may hold, in bytes (10 Ki).
const MAX_CEL_BYTES: usize = 10 * 1024;
/// The largest opaque driver parameters, in bytes (10 Ki).
const MAX_PARAMETERS_BYTES: usize = 10 * 1024;
/// The longest driver name.
const MAX_DRIVER_NAME: usize = 63;
/// The longest pool name.
const MAX_POOL_NAME: usize = 253;
/// The longest domain of a qualified attribute or capacity name.
const MAX_DOMAIN: usize = 63;
/// The longest identifier of a qualified attribute or capacity name.
const MAX_IDENTIFIER: usize = 32;

/// A driver name at `path`: required, a DNS subdomain of at most 63 characters.
pub(super) fn driver_name(errors: &mut Errors, name: &str, path: &str) {
    if name.is_empty() {
        errors.required(path, "");
        return;
    }
    if name.len() > MAX_DRIVER_NAME {
        errors.too_long(path, MAX_DRIVER_NAME);
    }
    errors.invalid_each(path, name, names::dns1123_subdomain_errors(name));
}

/// A pool name at `path`: required, at most 253 characters, DNS subdomains separated by slashes.
pub(super) fn pool_name(errors: &mut Errors, name: &str, path: &str) {
    if name.is_empty() {
        errors.required(path, "");
        return;
    }
    if name.len() > MAX_POOL_NAME {
        errors.too_long(path, MAX_POOL_NAME);
    }
    for part in name.split('/') {
        errors.invalid_each(path, part, names::dns1123_subdomain_errors(part));
    }
}

/// A device name at `path`: required, a DNS label.
pub(super) fn device_name(errors: &mut Errors, name: &str, path: &str) {
    if name.is_empty() {
        errors.required(path, "");
    } else {
        errors.invalid_each(path, name, names::dns1123_label_errors(name));
    }
}

/// The selectors of a class or request at `path`: at most 32, each a non-empty CEL expression of at most 10 Ki.
pub(super) fn selectors(errors: &mut Errors, list: &[Value], path: &str) {
    if list.len() > MAX_SELECTORS {
        errors.too_many(path, list.len(), MAX_SELECTORS);
    }
    for (i, selector) in list.iter().enumerate() {
        let at = child(&index(path, i), "cel");
        let Some(cel) = selector.get("cel").filter(|c| c.is_object()) else {
            errors.required(&at, "");
            continue;
        };
        let expression = text(cel, "expression");
        let expression_at = child(&at, "expression");
        if expression.is_empty() {
            errors.required(&expression_at, "");
        } else if expression.len() > MAX_CEL_BYTES {
            errors.too_long(&expression_at, MAX_CEL_BYTES);
        }
    }
}

/// Opaque driver configuration at `path` (`spec.config[0]`): its `opaque` entry with a driver and parameters that
/// are a JSON object of at most 10 Ki.
pub(super) fn opaque_config(errors: &mut Errors, config: &Value, path: &str) {
    let at = child(path, "opaque");
    let Some(opaque) = config.get("opaque").filter(|o| o.is_object()) else {
        errors.required(&at, "");
        return;
    };
    driver_name(errors, text(opaque, "driver"), &child(&at, "driver"));
    let parameters_at = child(&at, "parameters");
    match opaque.get("parameters") {
        None | Some(Value::Null) => errors.required(&parameters_at, ""),
        Some(Value::Object(_)) => {
            let size = opaque.get("parameters").map_or(0, |p| p.to_string().len());
            if size > MAX_PARAMETERS_BYTES {
                errors.too_long(&parameters_at, MAX_PARAMETERS_BYTES);
            }
        }
        Some(_) => errors.invalid_shown(
            &parameters_at,
            "\"<value omitted>\"",
            "parameters must be a valid JSON object",
        ),
    }
}

/// The configuration list of a class at `path`: at most 32 opaque entries.
pub(super) fn configs(errors: &mut Errors, list: &[Value], path: &str) {
    if list.len() > MAX_CONFIGS {
        errors.too_many(path, list.len(), MAX_CONFIGS);
    }
    for (i, config) in list.iter().enumerate() {
        opaque_config(errors, config, &index(path, i));
    }
}

/// The name of an attribute or capacity at `path`: `identifier` or `domain/identifier`, the identifier a C
/// identifier of at most 32 characters, the domain a DNS subdomain of at most 63. With `domain_required`, as a
/// constraint's attribute, the domain must be there.
pub(super) fn qualified_name(errors: &mut Errors, name: &str, path: &str, domain_required: bool) {
    let (domain, identifier) = match name.split_once('/') {
        Some((domain, identifier)) => (Some(domain), identifier),
        None => (None, name),
    };
    match domain {
        Some(domain) => {
            if domain.len() > MAX_DOMAIN {
                errors.too_long(path, MAX_DOMAIN);
            }
            errors.invalid_each(path, domain, names::dns1123_subdomain_errors(domain));
        }
        None if domain_required => {
            errors.invalid(path, &json!(name), "must include a domain");
        }
        None => {}
    }
    if identifier.is_empty() {
        errors.required(path, "name required");
        return;
    }
    if identifier.len() > MAX_IDENTIFIER {
        errors.too_long(path, MAX_IDENTIFIER);
    }
    if !is_c_identifier(identifier) {
        errors.invalid(
            path,
            &json!(identifier),
            "a valid C identifier must start with alphabetic character or '_', followed by a string of \
             alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for \
             validation is '[A-Za-z_][A-Za-z0-9_]*')",
        );
    }
}

fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `version` is a semantic version (`MAJOR.MINOR.PATCH`, with an optional `-prerelease` and `+build`), as
/// a device's version attribute must be.
pub(super) fn is_semver(version: &str) -> bool {
    let (rest, build) = match version.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (version, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let numeric = |part: &str| {
        !part.is_empty()
            && part.chars().all(|c| c.is_ascii_digit())
            && (part == "0" || !part.starts_with('0'))
    };
    let identifiers_ok = |s: &str, numbers_plain: bool| {
        s.split('.').all(|id| {
            !id.is_empty()
                && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && (!numbers_plain || !id.chars().all(|c| c.is_ascii_digit()) || numeric(id))
        })
    };
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| numeric(p))
        && pre.is_none_or(|p| identifiers_ok(p, true))
        && build.is_none_or(|b| identifiers_ok(b, false))
}

/// The names in a list of strings at `field` of `obj`.
pub(super) fn strings<'a>(obj: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    items(obj, field).iter().map(|v| v.as_str().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_versions_are_told_from_the_rest() {
        for (version, valid) in [
            ("1.2.3", true),
            ("0.0.0", true),
            ("1.2.3-rc.1", true),
            ("1.2.3+build.5", true),
            ("1.2.3-alpha.0+x", true),
            ("1.2", false),
            ("01.2.3", false),
            ("1.2.3-01", false),
            ("1.2.3-", false),
            ("v1.2.3", false),
            ("", false),
        ] {
            assert_eq!(is_semver(version), valid, "{version}");
        }
    }

    #[test]
    fn qualified_names_need_a_c_identifier_and_a_domain_when_asked() {
        let causes = |name: &str, domain_required: bool| {
            let mut errors = Errors::default();
            qualified_name(&mut errors, name, "a", domain_required);
            errors.into_causes().len()
        };
        assert_eq!(causes("model", false), 0);
        assert_eq!(causes("gpu.example.com/model", true), 0);
        assert_eq!(causes("model", true), 1);
        assert_eq!(causes("9lives", false), 1);
        assert_eq!(causes("Bad_Domain/model", false), 1);
        assert_eq!(causes(&"x".repeat(33), false), 1);
    }
}
