//! `seq [-s SEP] [-w] [FIRST [INCREMENT]] LAST`: numbers from FIRST to LAST, as GNU seq prints them — with as many
//! decimals as FIRST and INCREMENT have. However far LAST is, it writes no more than the process may.

use super::reader::Produced;
use super::{Status, complain};
use crate::shell::io::Cx;

/// How many numbers are formatted before they are written together.
const BATCH: usize = 1024;

/// A number as given, and the decimals it is written with.
struct Number {
    value: f64,
    decimals: usize,
}

/// `text` as a number, with its decimals (`1.50` has 2, `1e3` none, `1.5e-3` 4); None when it is not one.
fn number(text: &str) -> Option<Number> {
    let value: f64 = text.parse().ok().filter(|v: &f64| !v.is_nan())?;
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let fraction = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i64;
    Some(Number {
        value,
        decimals: usize::try_from(fraction - exponent).unwrap_or(0).min(64),
    })
}

/// `seq`.
pub(super) fn seq(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let mut separator = "\n".to_owned();
    let mut equal_width = false;
    let mut operands = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-w" | "--equal-width" => equal_width = true,
            "-s" => match rest.next() {
                Some(sep) => separator = sep.clone(),
                None => {
                    complain(cx, "seq", "option requires an argument -- 's'")?;
                    return Ok(1);
                }
            },
            s if s.starts_with("-s") => separator = s[2..].to_owned(),
            s if s.starts_with("--separator=") => separator = s["--separator=".len()..].to_owned(),
            _ => operands.push(arg.clone()),
        }
    }
    if operands.is_empty() || operands.len() > 3 {
        let why = if operands.is_empty() {
            "missing operand".to_owned()
        } else {
            format!("extra operand '{}'", operands[3])
        };
        complain(cx, "seq", &why)?;
        return Ok(1);
    }
    let mut numbers = Vec::new();
    for operand in &operands {
        match number(operand) {
            Some(n) => numbers.push(n),
            None => {
                complain(
                    cx,
                    "seq",
                    &format!("invalid floating point argument: '{operand}'"),
                )?;
                return Ok(1);
            }
        }
    }
    let one = || Number {
        value: 1.0,
        decimals: 0,
    };
    let (first, step, last) = match numbers.len() {
        1 => (one(), one(), numbers.remove(0)),
        2 => {
            let last = numbers.remove(1);
            (numbers.remove(0), one(), last)
        }
        _ => {
            let last = numbers.remove(2);
            let step = numbers.remove(1);
            (numbers.remove(0), step, last)
        }
    };
    if step.value == 0.0 {
        complain(
            cx,
            "seq",
            &format!("invalid Zero increment value: '{}'", operands[1]),
        )?;
        return Ok(1);
    }
    let decimals = first.decimals.max(step.decimals);
    let format = |value: f64| format!("{value:.decimals$}");
    let width = if equal_width {
        format(first.value).len().max(format(last.value).len())
    } else {
        0
    };
    let mut produced = Produced::new(cx);
    let mut batch = String::new();
    let mut index: u64 = 0;
    loop {
        let value = first.value + index as f64 * step.value;
        let past = if step.value > 0.0 {
            value > last.value
        } else {
            value < last.value
        };
        if past || !value.is_finite() {
            break;
        }
        if index > 0 {
            batch.push_str(&separator);
        }
        let text = format(value);
        match text.strip_prefix('-') {
            Some(digits) if width > 0 => batch.push_str(&format!("-{digits:0>w$}", w = width - 1)),
            _ => batch.push_str(&format!("{text:0>width$}")),
        }
        index += 1;
        if index.is_multiple_of(BATCH as u64) {
            if !produced.add(batch.len()) {
                return Ok(1);
            }
            cx.stdout.print(&batch)?;
            batch.clear();
        }
    }
    if index > 0 {
        batch.push('\n');
    }
    cx.stdout.print(&batch).map(|()| 0)
}

#[cfg(test)]
mod tests {
    use crate::shell::Limits;
    use crate::shell::testing::{container, container_with, expect, run_in};

    #[tokio::test]
    async fn seq_counts_as_gnu() {
        let c = container();
        let cases: &[(&[&str], &str, &str, i32)] = &[
            (&["seq", "3"], "1\n2\n3\n", "", 0),
            (&["seq", "2", "4"], "2\n3\n4\n", "", 0),
            (&["seq", "10", "-3", "1"], "10\n7\n4\n1\n", "", 0),
            (&["seq", "1", "0.5", "2"], "1.0\n1.5\n2.0\n", "", 0),
            (&["seq", "-s", ",", "3"], "1,2,3\n", "", 0),
            (&["seq", "-w", "8", "10"], "08\n09\n10\n", "", 0),
            (&["seq", "5", "1"], "", "", 0),
            (
                &["seq", "1", "1e1"],
                "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
                "",
                0,
            ),
            (
                &["seq", "x"],
                "",
                "seq: invalid floating point argument: 'x'\n",
                1,
            ),
            (
                &["seq", "1", "0", "3"],
                "",
                "seq: invalid Zero increment value: '0'\n",
                1,
            ),
            (&["seq"], "", "seq: missing operand\n", 1),
        ];
        expect(&c, cases).await;
    }

    #[tokio::test]
    async fn seq_to_a_huge_last_stops_at_the_output_limit() {
        let c = container_with(Limits {
            output_bytes: 10_000,
            ..Limits::default()
        });
        let ran = run_in(&c, &["seq", "1", "1e18"], None).await;
        assert_eq!(ran.status, 1);
        assert!(ran.stdout.len() <= 10_000 && ran.stdout.starts_with("1\n2\n"));
    }
}
