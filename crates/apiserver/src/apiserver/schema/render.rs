//! Renders JSON values the way kube-apiserver's Go code prints them in messages.
//!
//! Clients (kubectl, operators' tests) compare error text, so values must come out
//! exactly as Go's `fmt` (`%v`, `%q`) and `encoding/json` produce them.

use serde_json::{Number, Value};

/// A field error's bad value, as `field.Error.ErrorBody` prints it: numbers and
/// booleans with `%v`, strings with `%q`, everything else as Go JSON.
pub(crate) fn bad_value(value: &Value) -> String {
    match value {
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_v(n),
        Value::String(s) => go_quote(s),
        other => go_json(other),
    }
}

/// A number with Go's `%v` verb.
pub(crate) fn number_v(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else {
        float_v(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// A float with Go's `%v` verb: shortest digits, exponent form when the decimal
/// exponent is below -4 or at least 6 (`strconv` `'g'` with shortest precision).
pub(crate) fn float_v(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let (mantissa, exponent) = shortest_scientific(f);
    if !(-4..6).contains(&exponent) {
        go_exponent(&mantissa, exponent, 2)
    } else {
        format!("{f}")
    }
}

/// A string quoted like Go's `strconv.Quote`.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A value as Go's `json.Marshal` writes it: keys sorted, HTML characters escaped.
pub(crate) fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&json_number(n)),
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(key, out);
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_json(v, out);
                }
            }
            out.push('}');
        }
    }
}

fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A number as Go's `encoding/json` writes a float64 (or an int64 as is).
fn json_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (mantissa, exponent) = shortest_scientific(f);
        go_exponent(&mantissa, exponent, 1)
    } else {
        format!("{f}")
    }
}

/// Shortest round-trip digits of `f` as (`-1.5`, 3) for -1.5e3.
fn shortest_scientific(f: f64) -> (String, i32) {
    let formatted = format!("{f:e}");
    match formatted.split_once('e') {
        Some((mantissa, exponent)) => (mantissa.to_string(), exponent.parse().unwrap_or(0)),
        None => (formatted, 0),
    }
}

/// Go's exponent notation: explicit sign and at least `min_digits` exponent digits.
fn go_exponent(mantissa: &str, exponent: i32, min_digits: usize) -> String {
    let sign = if exponent < 0 { '-' } else { '+' };
    format!(
        "{mantissa}e{sign}{:0width$}",
        exponent.unsigned_abs(),
        width = min_digits
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn floats_print_like_go_v() {
        let cases = [
            (1.0, "1"),
            (1.5, "1.5"),
            (-0.25, "-0.25"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-300, "1.5e-300"),
        ];
        for (f, expected) in cases {
            assert_eq!(float_v(f), expected, "{f}");
        }
    }

    #[test]
    fn bad_values_print_like_field_error_body() {
        let cases = [
            (json!("foo"), "\"foo\""),
            (json!("a\"b\n\u{1}"), "\"a\\\"b\\n\\x01\""),
            (json!("héllo"), "\"héllo\""),
            (json!(42), "42"),
            (json!(2.5), "2.5"),
            (json!(true), "true"),
            (json!(null), "null"),
            (
                json!({"b": 1, "a": "<x>"}),
                "{\"a\":\"\\u003cx\\u003e\",\"b\":1}",
            ),
            (json!([1, 1.5e-7, 2e21]), "[1,1.5e-7,2e+21]"),
        ];
        for (value, expected) in cases {
            assert_eq!(bad_value(&value), expected, "{value}");
        }
    }
}
