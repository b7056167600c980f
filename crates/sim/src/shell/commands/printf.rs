//! `printf FORMAT [ARG]...`: the format's text with its escapes, each `%` conversion taking the next argument,
//! the format reused while arguments remain.

use super::escapes::{Octal, unescape};
use super::{Status, complain};
use crate::shell::io::Cx;

/// The longest field a conversion pads to: wider asks are cut down rather than allocated.
const MAX_FIELD: usize = 4096;

/// One `%` conversion: its flags, width, precision and letter.
#[derive(Debug, Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alternate: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

/// What formatting one pass of the format did.
struct Pass {
    /// Whether a `\c` (or `%b`'s) asked for no further output.
    stopped: bool,
}

/// The arguments still to take, and whether one of them was not a number.
struct Args<'a> {
    rest: std::slice::Iter<'a, String>,
    taken: usize,
    bad_number: Vec<String>,
}

impl Args<'_> {
    fn next(&mut self) -> Option<&str> {
        let next = self.rest.next()?;
        self.taken += 1;
        Some(next)
    }

    /// The next argument as an integer: decimal, `0x` hex, `0` octal, or `'c` for a character's code.
    fn integer(&mut self) -> i128 {
        let Some(text) = self.next().map(str::to_owned) else {
            return 0;
        };
        if let Some(quoted) = text.strip_prefix(['\'', '"']) {
            return quoted
                .chars()
                .next()
                .map_or(0, |c| i128::from(u32::from(c)));
        }
        let trimmed = text.trim_start();
        let (negative, digits) = match trimmed.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
        };
        let parsed = if let Some(hex) = digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
            i128::from_str_radix(hex, 16)
        } else if digits.len() > 1 && digits.starts_with('0') {
            i128::from_str_radix(&digits[1..], 8)
        } else {
            digits.parse()
        };
        match parsed {
            Ok(n) if negative => -n,
            Ok(n) => n,
            Err(_) => {
                self.bad_number.push(text);
                0
            }
        }
    }

    /// The next argument as a floating-point number.
    fn float(&mut self) -> f64 {
        let Some(text) = self.next().map(str::to_owned) else {
            return 0.0;
        };
        text.trim().parse().unwrap_or_else(|_| {
            self.bad_number.push(text);
            0.0
        })
    }
}

/// `body` padded to the spec's width (zeros after any sign, when asked and allowed).
fn pad(spec: &Spec, body: &str, zero_allowed: bool) -> String {
    let width = spec.width.min(MAX_FIELD);
    let len = body.chars().count();
    if len >= width {
        return body.to_owned();
    }
    let fill = width - len;
    if spec.left {
        format!("{body}{}", " ".repeat(fill))
    } else if spec.zero && zero_allowed {
        let sign_len = usize::from(body.starts_with(['-', '+', ' ']));
        let prefix_len = if body[sign_len..].starts_with("0x") || body[sign_len..].starts_with("0X")
        {
            sign_len + 2
        } else {
            sign_len
        };
        format!(
            "{}{}{}",
            &body[..prefix_len],
            "0".repeat(fill),
            &body[prefix_len..]
        )
    } else {
        format!("{}{body}", " ".repeat(fill))
    }
}

/// A signed number's text with the sign the flags ask for.
fn signed(spec: &Spec, negative: bool, digits: String) -> String {
    let sign = if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    format!("{sign}{digits}")
}

/// Digits padded with zeros to the precision.
fn with_precision(spec: &Spec, digits: String) -> String {
    match spec.precision {
        Some(p) if digits.len() < p.min(MAX_FIELD) => {
            format!("{}{digits}", "0".repeat(p.min(MAX_FIELD) - digits.len()))
        }
        _ => digits,
    }
}

/// Format one pass of `format` into `out`, taking arguments from `args`.
fn pass(format: &[u8], args: &mut Args<'_>, out: &mut Vec<u8>) -> Result<Pass, String> {
    let mut i = 0;
    while i < format.len() {
        let byte = format[i];
        if byte == b'\\' {
            let end = escape_end(format, i);
            let text = String::from_utf8_lossy(&format[i..end]);
            let (bytes, stop) = unescape(&text, Octal::Plain);
            out.extend(bytes);
            if stop {
                return Ok(Pass { stopped: true });
            }
            i = end;
            continue;
        }
        if byte != b'%' {
            out.push(byte);
            i += 1;
            continue;
        }
        i += 1;
        let mut spec = Spec::default();
        while let Some(&flag) = format.get(i) {
            match flag {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alternate = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            i += 1;
        }
        if format.get(i) == Some(&b'*') {
            let width = args.integer();
            spec.left |= width < 0;
            spec.width = usize::try_from(width.unsigned_abs()).unwrap_or(MAX_FIELD);
            i += 1;
        } else {
            while let Some(d) = format.get(i).filter(|d| d.is_ascii_digit()) {
                spec.width = (spec.width * 10 + usize::from(d - b'0')).min(MAX_FIELD);
                i += 1;
            }
        }
        if format.get(i) == Some(&b'.') {
            i += 1;
            let mut precision = 0usize;
            if format.get(i) == Some(&b'*') {
                precision = usize::try_from(args.integer()).unwrap_or(0).min(MAX_FIELD);
                i += 1;
            } else {
                while let Some(d) = format.get(i).filter(|d| d.is_ascii_digit()) {
                    precision = (precision * 10 + usize::from(d - b'0')).min(MAX_FIELD);
                    i += 1;
                }
            }
            spec.precision = Some(precision);
        }
        while matches!(
            format.get(i),
            Some(b'l' | b'h' | b'j' | b'z' | b't' | b'L' | b'q')
        ) {
            i += 1;
        }
        let Some(&letter) = format.get(i) else {
            return Err("missing format character".into());
        };
        i += 1;
        let text = match letter {
            b'%' => "%".to_owned(),
            b's' => {
                let arg = args.next().unwrap_or("");
                let cut: String = match spec.precision {
                    Some(p) => arg.chars().take(p).collect(),
                    None => arg.to_owned(),
                };
                pad(&spec, &cut, false)
            }
            b'b' => {
                let (bytes, stop) = unescape(args.next().unwrap_or(""), Octal::LeadingZero);
                let text = String::from_utf8_lossy(&bytes).into_owned();
                out.extend(pad(&spec, &text, false).as_bytes());
                if stop {
                    return Ok(Pass { stopped: true });
                }
                continue;
            }
            b'c' => {
                let first: String = args.next().unwrap_or("").chars().take(1).collect();
                pad(&spec, &first, false)
            }
            b'd' | b'i' => {
                let n = args.integer();
                let digits = with_precision(&spec, n.unsigned_abs().to_string());
                pad(
                    &spec,
                    &signed(&spec, n < 0, digits),
                    spec.precision.is_none(),
                )
            }
            b'u' | b'x' | b'X' | b'o' => {
                let n = args.integer();
                // Negative numbers wrap as the 64-bit unsigned integers they are in C.
                let n = if n < 0 {
                    (n as i64) as u64
                } else {
                    u64::try_from(n).unwrap_or(u64::MAX)
                };
                let digits = match letter {
                    b'x' => format!("{n:x}"),
                    b'X' => format!("{n:X}"),
                    b'o' => format!("{n:o}"),
                    _ => n.to_string(),
                };
                let digits = with_precision(&spec, digits);
                let body = match (spec.alternate && n != 0, letter) {
                    (true, b'x') => format!("0x{digits}"),
                    (true, b'X') => format!("0X{digits}"),
                    (true, b'o') if !digits.starts_with('0') => format!("0{digits}"),
                    _ => digits,
                };
                pad(&spec, &body, spec.precision.is_none())
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' => {
                let n = args.float();
                let precision = spec.precision.unwrap_or(6);
                let digits = match letter {
                    b'f' | b'F' => format!("{:.precision$}", n.abs()),
                    b'e' | b'E' => c_exponent(n.abs(), precision, letter == b'E'),
                    _ => c_general(n.abs(), precision, letter == b'G'),
                };
                pad(
                    &spec,
                    &signed(&spec, n.is_sign_negative() && n != 0.0, digits),
                    true,
                )
            }
            other => {
                return Err(format!(
                    "%{}: invalid conversion specification",
                    other as char
                ));
            }
        };
        out.extend(text.as_bytes());
    }
    Ok(Pass { stopped: false })
}

/// Where the escape starting at `at` (a backslash) ends in a format.
fn escape_end(format: &[u8], at: usize) -> usize {
    let after = at + 1;
    match format.get(after) {
        None => after,
        Some(b'0'..=b'7') => {
            after
                + format[after..]
                    .iter()
                    .take(3)
                    .take_while(|b| (b'0'..=b'7').contains(*b))
                    .count()
        }
        Some(b'x') => {
            after
                + 1
                + format[after + 1..]
                    .iter()
                    .take(2)
                    .take_while(|b| b.is_ascii_hexdigit())
                    .count()
        }
        Some(_) => after + 1,
    }
}

/// `n` as C's `%e` writes it: one digit, the fraction, and a signed exponent of at least two digits.
fn c_exponent(n: f64, precision: usize, upper: bool) -> String {
    let text = format!("{n:.precision$e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if exponent < 0 { '-' } else { '+' };
    let e = if upper { 'E' } else { 'e' };
    format!("{mantissa}{e}{sign}{:02}", exponent.abs())
}

/// `n` as C's `%g` writes it: `%e` or `%f` by its size, without trailing zeros.
fn c_general(n: f64, precision: usize, upper: bool) -> String {
    let precision = precision.max(1);
    let exponent = if n == 0.0 {
        0
    } else {
        n.log10().floor() as i32
    };
    let trim = |text: String| -> String {
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            text
        }
    };
    if exponent < -4 || exponent >= precision as i32 {
        let text = c_exponent(n, precision - 1, upper);
        let (mantissa, rest) = text.split_at(text.find(['e', 'E']).unwrap_or(text.len()));
        format!("{}{rest}", trim(mantissa.to_owned()))
    } else {
        let decimals = usize::try_from(precision as i32 - 1 - exponent).unwrap_or(0);
        trim(format!("{n:.decimals$}"))
    }
}

/// `printf FORMAT [ARG]...`.
pub(super) fn printf(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let Some((format, rest)) = args.split_first() else {
        complain(cx, "printf", "missing operand")?;
        return Ok(1);
    };
    let mut args = Args {
        rest: rest.iter(),
        taken: 0,
        bad_number: Vec::new(),
    };
    let mut out = Vec::new();
    let mut status = 0;
    loop {
        let before = args.taken;
        match pass(format.as_bytes(), &mut args, &mut out) {
            Ok(Pass { stopped }) => {
                if stopped || args.taken == before || args.rest.len() == 0 {
                    break;
                }
            }
            Err(why) => {
                cx.stdout.write(&out)?;
                complain(cx, "printf", &why)?;
                return Ok(1);
            }
        }
    }
    cx.stdout.write(&out)?;
    for bad in std::mem::take(&mut args.bad_number) {
        complain(cx, "printf", &format!("'{bad}': expected a numeric value"))?;
        status = 1;
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::{container, expect};

    #[tokio::test]
    async fn printf_formats_as_coreutils() {
        let c = container();
        let cases: &[(&[&str], &str, &str, i32)] = &[
            (&["printf", "%s-%s\\n", "a", "b", "c"], "a-b\nc-\n", "", 0),
            (
                &["printf", "%5d|%-5d|%05d\\n", "42", "7", "-3"],
                "   42|7    |-0003\n",
                "",
                0,
            ),
            (
                &[
                    "printf",
                    "%x %X %o %#x %c %%\\n",
                    "255",
                    "255",
                    "8",
                    "255",
                    "hello",
                ],
                "ff FF 10 0xff h %\n",
                "",
                0,
            ),
            (
                &[
                    "printf",
                    "%.2s|%8.3f|%e|%g\\n",
                    "abcdef",
                    "3.14159",
                    "1234.5",
                    "0.0001",
                ],
                "ab|   3.142|1.234500e+03|0.0001\n",
                "",
                0,
            ),
            (
                &["printf", "%b|%s\\n", "a\\tb", "a\\tb"],
                "a\tb|a\\tb\n",
                "",
                0,
            ),
            (
                &["printf", "%d\\n", "'A", "0x10", "010"],
                "65\n16\n8\n",
                "",
                0,
            ),
            (
                &["printf", "%d\\n", "abc"],
                "0\n",
                "printf: 'abc': expected a numeric value\n",
                1,
            ),
            (&["printf", "%i %3s\\101\\n", "5", "x"], "5   xA\n", "", 0),
            (&["printf", "no newline"], "no newline", "", 0),
            (
                &["printf", "%y"],
                "",
                "printf: %y: invalid conversion specification\n",
                1,
            ),
            (&["printf"], "", "printf: missing operand\n", 1),
        ];
        expect(&c, cases).await;
    }
}
