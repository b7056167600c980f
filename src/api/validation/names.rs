//! Kubernetes name grammars (DNS labels and subdomains, qualified names, label values), checked
//! by hand so that every rule reads the same way and never panics.

/// A lowercase RFC 1123 label: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
pub fn is_dns_label(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && alphanumeric_ends(value)
}

/// A lowercase RFC 1123 subdomain: at most 253 characters of dot-separated labels.
pub fn is_dns_subdomain(value: &str) -> bool {
    value.len() <= 253 && value.split('.').all(is_dns_label)
}

/// A label value: empty, or at most 63 of `[A-Za-z0-9-_.]`, alphanumeric at both ends.
pub fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_name_part(value)
}

/// A label key or other qualified name: an optional DNS subdomain prefix and `/`, then a name.
pub fn is_qualified_name(value: &str) -> bool {
    match value.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_name_part(name),
        None => is_name_part(value),
    }
}

fn is_name_part(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
        && alphanumeric_ends(value)
}

fn alphanumeric_ends(value: &str) -> bool {
    let bytes = value.as_bytes();
    matches!(
        (bytes.first(), bytes.last()),
        (Some(first), Some(last)) if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric()
    )
}
