//! Kubernetes name grammars (DNS-1123 labels and subdomains, DNS-1035 labels, qualified names,
//! label values) in one place, with apimachinery's messages.
//!
//! The API server, the selector parser, the schema formats and the admission rules all judge names
//! by these functions, so a name is accepted or rejected the same way everywhere, and a rejection
//! reads the way `kubectl` users know it from a real cluster. Each `*_errors` function lists every
//! problem (empty when the value is valid), like apimachinery's `IsDNS1123Label` family; the `is_*`
//! predicates are for callers that word their own message.

const DNS1123_LABEL_MAX_LEN: usize = 63;
const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;
const DNS1035_LABEL_MAX_LEN: usize = 63;
const QUALIFIED_NAME_MAX_LEN: usize = 63;
const LABEL_VALUE_MAX_LEN: usize = 63;

const DNS1123_LABEL_RULE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_LABEL_PATTERN: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_RULE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_PATTERN: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_RULE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_LABEL_PATTERN: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_PATTERN: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_PATTERN: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// Problems with a lowercase RFC 1123 label (namespace names, DNS host labels).
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LEN {
        errors.push(too_long(DNS1123_LABEL_MAX_LEN));
    }
    if !is_dns1123_label_shaped(value) {
        errors.push(pattern_error(
            DNS1123_LABEL_RULE,
            DNS1123_LABEL_PATTERN,
            &["my-name", "123-abc"],
        ));
    }
    errors
}

/// Problems with a lowercase RFC 1123 subdomain (most object names, label-key prefixes).
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LEN {
        errors.push(too_long(DNS1123_SUBDOMAIN_MAX_LEN));
    }
    if !value.split('.').all(is_dns1123_label_shaped) {
        errors.push(pattern_error(
            DNS1123_SUBDOMAIN_RULE,
            DNS1123_SUBDOMAIN_PATTERN,
            &["example.com"],
        ));
    }
    errors
}

/// Problems with an RFC 1035 label (service names, embedded kinds): like a DNS-1123 label but
/// starting with a letter.
pub fn dns1035_label_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LEN {
        errors.push(too_long(DNS1035_LABEL_MAX_LEN));
    }
    if !(is_dns1123_label_shaped(value) && value.as_bytes()[0].is_ascii_lowercase()) {
        errors.push(pattern_error(
            DNS1035_LABEL_RULE,
            DNS1035_LABEL_PATTERN,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// Problems with a qualified name (label and annotation keys, finalizers): an optional DNS-1123
/// subdomain prefix and `/`, then a name of at most 63 characters.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let parts: Vec<&str> = value.split('/').collect();
    let mut errors = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                errors.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                qualified_name_pattern_error()
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > QUALIFIED_NAME_MAX_LEN {
        errors.push(format!("name part {}", too_long(QUALIFIED_NAME_MAX_LEN)));
    }
    if !is_name_shaped(name) {
        errors.push(format!("name part {}", qualified_name_pattern_error()));
    }
    errors
}

/// Problems with a label value: empty, or at most 63 characters shaped like a qualified name.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LEN {
        errors.push(too_long(LABEL_VALUE_MAX_LEN));
    }
    if !value.is_empty() && !is_name_shaped(value) {
        errors.push(pattern_error(
            LABEL_VALUE_RULE,
            LABEL_VALUE_PATTERN,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// Whether `value` is a lowercase RFC 1123 label.
pub fn is_dns_label(value: &str) -> bool {
    dns1123_label_errors(value).is_empty()
}

/// Whether `value` is a lowercase RFC 1123 subdomain.
pub fn is_dns_subdomain(value: &str) -> bool {
    dns1123_subdomain_errors(value).is_empty()
}

/// Whether `value` is a valid label value.
pub fn is_label_value(value: &str) -> bool {
    label_value_errors(value).is_empty()
}

/// Whether `value` is a qualified name (a valid label key).
pub fn is_qualified_name(value: &str) -> bool {
    qualified_name_errors(value).is_empty()
}

/// Formats a pattern violation with examples, in apimachinery's `RegexError` wording.
fn pattern_error(rule: &str, pattern: &str, examples: &[&str]) -> String {
    let examples: String = examples
        .iter()
        .map(|e| format!("'{e}', "))
        .collect::<Vec<_>>()
        .join(" or ");
    format!("{rule} (e.g. {examples}regex used for validation is '{pattern}')")
}

fn too_long(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn qualified_name_pattern_error() -> String {
    pattern_error(
        QUALIFIED_NAME_RULE,
        QUALIFIED_NAME_PATTERN,
        &["MyName", "my.name", "123-abc"],
    )
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`: the shape shared by qualified names and non-empty
/// label values.
fn is_name_shaped(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && alphanumeric_ends(value, u8::is_ascii_alphanumeric)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, without the length limit.
fn is_dns1123_label_shaped(value: &str) -> bool {
    let lower_alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    value.bytes().all(|b| lower_alnum(&b) || b == b'-') && alphanumeric_ends(value, lower_alnum)
}

fn alphanumeric_ends(value: &str, alnum: impl Fn(&u8) -> bool) -> bool {
    let bytes = value.as_bytes();
    matches!(
        (bytes.first(), bytes.last()),
        (Some(first), Some(last)) if alnum(first) && alnum(last)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1123_labels_and_subdomains() {
        assert!(is_dns_label("kube-system"));
        assert!(!is_dns_label("a.b"));
        assert!(!is_dns_label(&"a".repeat(64)));
        assert!(is_dns_subdomain("worker-1.example"));
        for bad in ["Worker", "-a", "", "a..b", "a-"] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
        assert_eq!(
            dns1123_label_errors(&"A".repeat(64)),
            vec![
                "must be no more than 63 characters".to_owned(),
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_owned(),
            ]
        );
    }

    #[test]
    fn dns1035_labels_start_with_a_letter() {
        assert!(dns1035_label_errors("my-kind").is_empty());
        assert_eq!(dns1035_label_errors("1abc").len(), 1);
        assert!(dns1035_label_errors("").len() == 1);
    }

    #[test]
    fn qualified_names_and_label_values() {
        assert!(is_qualified_name("example.com/My_Name.1"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(!is_qualified_name("/name"));
        assert!(!is_qualified_name(&"n".repeat(64)));
        assert!(is_label_value(""));
        assert!(is_label_value("v1.2_3"));
        assert!(!is_label_value("-v"));
        assert_eq!(
            qualified_name_errors("/x"),
            vec!["prefix part must be non-empty".to_owned()]
        );
    }
}
