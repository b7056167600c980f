//! `test EXPRESSION` and `[ EXPRESSION ]`: strings, integers and files compared and tested, combined with `!`,
//! `-a`, `-o` and parentheses. Status 0 when true, 1 when false, 2 (with a message) when the expression is bad.

use super::view::{self, Entry, is_program};
use super::{Status, complain};
use crate::shell::fs::resolve;
use crate::shell::io::Cx;

/// The unary operators on a file or a string.
const UNARY: &[&str] = &[
    "-z", "-n", "-e", "-f", "-d", "-s", "-r", "-w", "-x", "-L", "-h", "-p", "-S", "-b", "-c", "-t",
];

/// The binary operators.
const BINARY: &[&str] = &[
    "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge",
];

/// Reads an expression's words by recursive descent: `-o` binds looser than `-a`, which binds looser than `!`.
struct Parser<'a, 'c> {
    words: &'a [String],
    at: usize,
    cx: &'a Cx<'c>,
}

impl Parser<'_, '_> {
    fn peek(&self) -> Option<&str> {
        self.words.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Option<&str> {
        let word = self.words.get(self.at)?;
        self.at += 1;
        Some(word)
    }

    fn or(&mut self) -> Result<bool, String> {
        let mut value = self.and()?;
        while self.peek() == Some("-o") {
            self.at += 1;
            value |= self.and()?;
        }
        Ok(value)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut value = self.not()?;
        while self.peek() == Some("-a") {
            self.at += 1;
            value &= self.not()?;
        }
        Ok(value)
    }

    fn not(&mut self) -> Result<bool, String> {
        if self.peek() == Some("!") && self.at + 1 < self.words.len() {
            self.at += 1;
            return Ok(!self.not()?);
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<bool, String> {
        let Some(first) = self.next().map(str::to_owned) else {
            return Err("argument expected".into());
        };
        if let Some(op) = self
            .peek()
            .filter(|op| BINARY.contains(op))
            .map(str::to_owned)
        {
            self.at += 1;
            let Some(right) = self.next().map(str::to_owned) else {
                return Err(format!("'{op}': argument expected"));
            };
            return binary(&first, &op, &right);
        }
        if first == "(" {
            let value = self.or()?;
            return match self.next() {
                Some(")") => Ok(value),
                Some(other) => Err(format!("')' expected, found '{other}'")),
                None => Err("')' expected".into()),
            };
        }
        if UNARY.contains(&first.as_str()) {
            if let Some(operand) = self.next().map(str::to_owned) {
                return Ok(unary(self.cx, &first, &operand));
            }
            return Ok(true);
        }
        Ok(!first.is_empty())
    }
}

/// An integer operand, as test reads it (surrounding blanks allowed).
fn integer(text: &str) -> Result<i128, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("invalid integer '{text}'"))
}

fn binary(left: &str, op: &str, right: &str) -> Result<bool, String> {
    Ok(match op {
        "=" | "==" => left == right,
        "!=" => left != right,
        "<" => left < right,
        ">" => left > right,
        _ => {
            let (l, r) = (integer(left)?, integer(right)?);
            match op {
                "-eq" => l == r,
                "-ne" => l != r,
                "-lt" => l < r,
                "-le" => l <= r,
                "-gt" => l > r,
                _ => l >= r,
            }
        }
    })
}

fn unary(cx: &Cx<'_>, op: &str, operand: &str) -> bool {
    let path = resolve(cx.cwd, operand);
    let entry = || {
        if operand.is_empty() {
            None
        } else {
            view::entry(cx, &path)
        }
    };
    match op {
        "-z" => operand.is_empty(),
        "-n" => !operand.is_empty(),
        "-e" | "-r" | "-w" => entry().is_some(),
        "-f" => matches!(entry(), Some(Entry::File(_))),
        "-d" => matches!(entry(), Some(Entry::Dir)),
        "-s" => {
            matches!(entry(), Some(Entry::Dir))
                || matches!(entry(), Some(Entry::File(b)) if !b.is_empty())
        }
        "-x" => match entry() {
            Some(Entry::Dir) => true,
            Some(Entry::File(_)) => is_program(&path),
            None => false,
        },
        _ => false,
    }
}

/// Evaluate `words` with POSIX's rules by their number, then by precedence.
fn evaluate(cx: &Cx<'_>, words: &[String]) -> Result<bool, String> {
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    match w.as_slice() {
        [] => Ok(false),
        [one] => Ok(!one.is_empty()),
        ["!", one] => Ok(one.is_empty()),
        [op, operand] if UNARY.contains(op) => Ok(unary(cx, op, operand)),
        [other, _] => Err(format!("'{other}': unary operator expected")),
        [left, op, right] if BINARY.contains(op) => binary(left, op, right),
        ["!", rest @ ..] if rest.len() == 2 => evaluate(cx, &words[1..]).map(|v| !v),
        ["(", inner, ")"] => Ok(!inner.is_empty()),
        ["!", rest @ ..] if rest.len() == 3 => evaluate(cx, &words[1..]).map(|v| !v),
        ["(", .., ")"] if w.len() == 4 => evaluate(cx, &words[1..3]),
        _ => {
            let mut parser = Parser { words, at: 0, cx };
            let value = parser.or()?;
            match parser.peek() {
                None => Ok(value),
                Some(extra) => Err(format!("extra argument '{extra}'")),
            }
        }
    }
}

/// `test` or `[` (`name`) with `args`.
pub(super) fn test(cx: &mut Cx<'_>, name: &str, args: &[String]) -> Status {
    let words = if name == "[" {
        match args.split_last() {
            Some((last, words)) if last == "]" => words,
            _ => {
                complain(cx, "[", "missing ']'")?;
                return Ok(2);
            }
        }
    } else {
        args
    };
    match evaluate(cx, words) {
        Ok(value) => Ok(i32::from(!value)),
        Err(why) => {
            complain(cx, name, &why)?;
            Ok(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::{container, run_in};

    #[tokio::test]
    async fn test_evaluates_as_posix_test() {
        let c = container();
        c.files.write("/tmp/full", b"x", false).unwrap();
        c.files.write("/tmp/empty", b"", false).unwrap();
        let cases: &[(&[&str], &str, i32)] = &[
            (&["test"], "", 1),
            (&["test", "x"], "", 0),
            (&["test", ""], "", 1),
            (&["test", "-n"], "", 0),
            (&["test", "-z", ""], "", 0),
            (&["test", "-n", ""], "", 1),
            (&["test", "a", "=", "a"], "", 0),
            (&["test", "a", "!=", "a"], "", 1),
            (&["test", "2", "-lt", "10"], "", 0),
            (&["test", "10", "-le", "9"], "", 1),
            (&["test", "3", "-eq", " 3"], "", 0),
            (&["test", "-3", "-ge", "-4"], "", 0),
            (&["test", "a", "-gt", "1"], "test: invalid integer 'a'\n", 2),
            (&["test", "!", "a", "=", "b"], "", 0),
            (&["test", "-f", "/tmp/full"], "", 0),
            (&["test", "-f", "/tmp"], "", 1),
            (&["test", "-d", "/tmp"], "", 0),
            (&["test", "-e", "/nope"], "", 1),
            (&["test", "-s", "/tmp/empty"], "", 1),
            (&["test", "-s", "/tmp/full"], "", 0),
            (&["test", "-x", "/tmp/full"], "", 1),
            (&["test", "-x", "/tmp"], "", 0),
            (&["test", "-x", "/bin/tar"], "", 0),
            (&["test", "-x", "/bin/apt-get"], "", 1),
            (
                &["test", "-r", "/etc/hostname", "-a", "-w", "/etc/hostname"],
                "",
                0,
            ),
            (&["test", "-z", "x", "-o", "-n", "y"], "", 0),
            (&["test", "-n", "x", "-a", "-z", "y"], "", 1),
            (&["test", "(", "a", "=", "b", ")", "-o", "x"], "", 0),
            (&["test", "!", "(", "a", "=", "a", ")", "-a", "x"], "", 1),
            (
                &["test", "(", "a", "=", "a", "-a", "b"],
                "test: ')' expected\n",
                2,
            ),
            (
                &["test", "a", "b"],
                "test: 'a': unary operator expected\n",
                2,
            ),
            (
                &["test", "a", "=", "a", "b", "c"],
                "test: extra argument 'b'\n",
                2,
            ),
            (&["[", "a", "=", "a", "]"], "", 0),
            (&["[", "-d", "/etc", "]"], "", 0),
            (&["[", "]"], "", 1),
            (&["[", "a", "=", "a"], "[: missing ']'\n", 2),
        ];
        for (argv, stderr, status) in cases {
            let ran = run_in(&c, argv, None).await;
            assert_eq!(
                (ran.stdout.as_str(), ran.stderr.as_str(), ran.status),
                ("", *stderr, *status),
                "{argv:?}"
            );
        }
    }
}
