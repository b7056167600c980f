//! `pattern` compilation with Go RE2 semantics on top of the `regex` crate.
//!
//! kube-apiserver matches `pattern` with Go's `regexp`, whose Perl classes `\d`, `\w`,
//! `\s` and the word boundaries `\b`, `\B` are ASCII-only, while the `regex` crate
//! makes them Unicode-aware. The pattern is rewritten so the classes keep their Go
//! meaning; everything else is passed through unchanged. Matching is unanchored, as
//! in Go (`MatchString`).

use regex::Regex;

/// Compiles a schema `pattern`, returning the engine's message when it is invalid.
pub(crate) fn compile(pattern: &str) -> Result<Regex, String> {
    Regex::new(&to_ascii_classes(pattern)).map_err(|e| e.to_string())
}

/// Rewrites Perl classes and word boundaries into their ASCII-only forms: `\d`
/// becomes `[0-9]`, `\D` becomes `[^0-9]` (nested when inside a class), and so on.
fn to_ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    let mut class_depth = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(escaped) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let inside_class = class_depth > 0;
                match (escaped, inside_class) {
                    ('d' | 'w' | 's', true) => out.push_str(ascii_class_body(escaped)),
                    ('d' | 'w' | 's' | 'D' | 'W' | 'S', _) => {
                        // Outside a class this is a whole class; inside one it nests.
                        let negated = escaped.is_ascii_uppercase();
                        out.push_str(if negated { "[^" } else { "[" });
                        out.push_str(ascii_class_body(escaped.to_ascii_lowercase()));
                        out.push(']');
                    }
                    ('b' | 'B', false) => {
                        out.push_str("(?-u:\\");
                        out.push(escaped);
                        out.push(')');
                    }
                    _ => {
                        out.push('\\');
                        out.push(escaped);
                    }
                }
            }
            '[' => {
                class_depth += 1;
                out.push(c);
                // A `]` right after `[` or `[^` is a literal member, not the end.
                let rest = chars.as_str();
                let skip = if rest.starts_with("^]") {
                    2
                } else if rest.starts_with(']') {
                    1
                } else {
                    0
                };
                for _ in 0..skip {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
            }
            ']' if class_depth > 0 => {
                class_depth -= 1;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Class members equivalent to Go's ASCII `\d`, `\w` and `\s`.
fn ascii_class_body(class: char) -> &'static str {
    match class {
        'd' => "0-9",
        'w' => "0-9A-Za-z_",
        _ => "\\t\\n\\x0C\\r ",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_like_in_go() {
        let cases = [
            ("^\\d+$", "123", true),
            ("^\\d+$", "١٢٣", false), // Arabic-Indic digits are not \d in Go
            ("^[\\d.]+$", "1.2.3", true),
            ("^[\\d.]+$", "1.٢", false),
            ("^\\w+$", "héllo", false),
            ("^\\w+$", "hello_1", true),
            ("^[\\w-]+$", "a-b_c", true),
            ("^\\s$", "\u{a0}", false),
            ("\\bfoo\\b", "a foo b", true),
            ("^\\D$", "x", true),
            ("^\\D$", "٣", true), // non-ASCII digits are \D in Go
            ("^[\\D]$", "5", false),
            ("^\\S+$", "a\u{a0}b", true),
            ("^[]a]+$", "]a", true),
            ("^[^]a]+$", "bc", true),
            ("^[a\\]]+$", "]a", true),
            ("^é+$", "éé", true),
            ("(?i)^abc$", "ABC", true),
            ("^\\.\\*$", ".*", true),
        ];
        for (pattern, input, expected) in cases {
            let re = compile(pattern).expect("pattern compiles");
            assert_eq!(re.is_match(input), expected, "{pattern} on {input:?}");
        }
    }

    #[test]
    fn matching_is_unanchored() {
        let re = compile("[0-9]").expect("pattern compiles");
        assert!(re.is_match("abc1def"));
    }

    #[test]
    fn invalid_patterns_are_rejected() {
        for pattern in ["a(b", "[a", "a{2,1}", "(?<=a)b", "\\"] {
            assert!(compile(pattern).is_err(), "{pattern} should not compile");
        }
    }
}
