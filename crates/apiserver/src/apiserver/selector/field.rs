//! Field selectors (`metadata.name=x,status.phase!=Running`): parsed, printed and matched like the
//! server's, with its backslash escaping of values.

use std::fmt;

use super::SelectorError;

/// One `field=value` or `field!=value` term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    equal: bool,
    /// Unescaped.
    value: String,
}

/// A field selector: every term must hold. Which fields may be used depends on the resource, so the
/// server checks [`FieldSelector::fields`] itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    /// Sorted by their printed form, so that equal selectors compare and print equally.
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses `a.b=v,c!=w` (also `==`); `\`, `,` and `=` in values are escaped with a backslash.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        for part in split_unescaped_commas(s)
            .into_iter()
            .filter(|p| !p.is_empty())
        {
            let (field, operator, raw_value) = split_term(part).ok_or_else(|| {
                SelectorError::new(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ))
            })?;
            terms.push(FieldTerm {
                field: field.to_owned(),
                equal: operator != "!=",
                value: unescape_field_value(raw_value)?,
            });
        }
        terms.sort_by_cached_key(ToString::to_string);
        Ok(Self { terms })
    }

    /// The field names the selector refers to, in order.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// The `field=value` terms (not the `!=` ones): an object is selected only if it has each of these values,
    /// so a store index on one of the fields can narrow a list before the whole selector is matched.
    pub fn equalities(&self) -> impl Iterator<Item = (&str, &str)> {
        self.terms
            .iter()
            .filter(|t| t.equal)
            .map(|t| (t.field.as_str(), t.value.as_str()))
    }

    /// Whether an object is selected; `lookup` gives a field's value, and a field it cannot give
    /// compares as the empty string, as on the server.
    pub fn matches(&self, lookup: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|term| {
            let actual = lookup(&term.field).unwrap_or_default();
            (actual == term.value) == term.equal
        })
    }

    /// Whether the selector selects every object.
    pub fn is_everything(&self) -> bool {
        self.terms.is_empty()
    }
}

impl fmt::Display for FieldTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let operator = if self.equal { "=" } else { "!=" };
        write!(
            f,
            "{}{operator}{}",
            self.field,
            escape_field_value(&self.value)
        )
    }
}

impl fmt::Display for FieldSelector {
    /// The canonical form: terms sorted, `==` printed as `=`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{term}")?;
        }
        Ok(())
    }
}

/// Splits on commas that are not escaped; escapes stay in the parts.
fn split_unescaped_commas(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            parts.push(&s[start..i]);
            start = i + 1;
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Splits a term at its first operator (`!=`, `==` or `=`).
fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    term.char_indices().find_map(|(i, _)| {
        ["!=", "==", "="]
            .into_iter()
            .find(|op| term[i..].starts_with(op))
            .map(|op| (&term[..i], op, &term[i + op.len()..]))
    })
}

fn unescape_field_value(raw: &str) -> Result<String, SelectorError> {
    let mut value = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('\\' | ',' | '=')) => value.push(escaped),
                Some(other) => {
                    return Err(SelectorError::new(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    )));
                }
                None => {
                    return Err(SelectorError::new(
                        "invalid field selector: invalid escape sequence: \\",
                    ));
                }
            },
            ',' | '=' => {
                return Err(SelectorError::new(format!(
                    "invalid field selector: unescaped character in value: {c}"
                )));
            }
            other => value.push(other),
        }
    }
    Ok(value)
}

pub(super) fn escape_field_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}
