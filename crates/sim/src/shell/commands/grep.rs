//! `grep`: the lines of its inputs that match patterns, basic (BRE) or extended (ERE) regular expressions as
//! POSIX writes them, or fixed strings, read onto the `regex` crate's syntax.

use regex::bytes::{Regex, RegexBuilder};

use super::reader::{Reader, chomp, load};
use super::{Status, complain};
use crate::shell::fs::resolve;
use crate::shell::io::Cx;

/// How grep reads its patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Basic,
    Extended,
    Fixed,
}

/// What grep was asked, from its options.
#[derive(Debug, Default)]
struct Options {
    invert: bool,
    ignore_case: bool,
    count: bool,
    number: bool,
    quiet: bool,
    only_matching: bool,
    word: bool,
    line: bool,
    files_with_matches: bool,
    no_messages: bool,
    recursive: bool,
    /// Some(true) for `-H`, Some(false) for `-h`.
    with_name: Option<bool>,
}

/// A POSIX basic regular expression in the `regex` crate's syntax: `\(`, `\)`, `\{`, `\}`, `\|`, `\+`, `\?`
/// are the operators, their bare characters are literal, and a leading `*` is literal.
fn basic_to_regex(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    let mut at_start = true;
    while let Some(c) = chars.next() {
        let was_start = at_start;
        at_start = false;
        match c {
            '\\' => match chars.next() {
                Some(op @ ('(' | ')' | '{' | '}' | '|' | '+' | '?')) => {
                    out.push(op);
                    at_start = matches!(op, '(' | '|');
                }
                Some(d @ '1'..='9') => {
                    out.push('\\');
                    out.push(d);
                }
                Some(other) => out.push_str(&regex::escape(&other.to_string())),
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '{' | '}' | '|' | '+' | '?' => out.push_str(&regex::escape(&c.to_string())),
            '*' if was_start => out.push_str("\\*"),
            '^' if !was_start => out.push_str("\\^"),
            '[' => bracket(&mut chars, &mut out),
            c => out.push(c),
        }
    }
    out
}

/// An extended regular expression in the `regex` crate's syntax: as written, but for its bracket expressions.
fn extended_to_regex(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push('\\');
                out.extend(chars.next());
            }
            '[' => bracket(&mut chars, &mut out),
            '{' if !chars.peek().is_some_and(char::is_ascii_digit) => out.push_str("\\{"),
            c => out.push(c),
        }
    }
    out
}

/// Copy a POSIX bracket expression (its `[` already read): a leading `]` and a backslash are literal in it.
fn bracket(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    out.push('[');
    if chars.peek() == Some(&'^') {
        chars.next();
        out.push('^');
    }
    if chars.peek() == Some(&']') {
        chars.next();
        out.push_str("\\]");
    }
    while let Some(c) = chars.next() {
        match c {
            ']' => {
                out.push(']');
                return;
            }
            '[' if matches!(chars.peek(), Some(':' | '.' | '=')) => {
                let kind = chars.next().unwrap_or(':');
                let mut name = String::new();
                while let Some(n) = chars.next() {
                    if n == kind && chars.peek() == Some(&']') {
                        chars.next();
                        break;
                    }
                    name.push(n);
                }
                if kind == ':' {
                    out.push_str(&format!("[:{name}:]"));
                } else {
                    out.push_str(&regex::escape(&name));
                }
            }
            '\\' | '[' | '&' | '~' | '-' if c != '-' || chars.peek() == Some(&']') => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

/// The one regular expression matching any of `patterns`, as the options ask.
fn compile(patterns: &[String], syntax: Syntax, options: &Options) -> Result<Regex, String> {
    let alternatives: Vec<String> = patterns
        .iter()
        .map(|p| match syntax {
            Syntax::Fixed => regex::escape(p),
            Syntax::Basic => basic_to_regex(p),
            Syntax::Extended => extended_to_regex(p),
        })
        .map(|p| {
            if options.line {
                format!("^(?:{p})$")
            } else if options.word {
                format!(r"\b(?:{p})\b")
            } else {
                format!("(?:{p})")
            }
        })
        .collect();
    RegexBuilder::new(&alternatives.join("|"))
        .case_insensitive(options.ignore_case)
        .size_limit(1 << 22)
        .build()
        .map_err(|why| match why {
            regex::Error::CompiledTooBig(_) => "regular expression too big".to_owned(),
            _ => "Invalid regular expression".to_owned(),
        })
}

/// `grep [-vicnqoxwlhHsrEFG] [-e PATTERN]... [PATTERN] [FILE]...`: status 0 when a line was selected, 1 when
/// none was, 2 on an error.
pub(super) async fn grep(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let mut options = Options::default();
    let mut syntax = Syntax::Basic;
    let mut patterns: Vec<String> = Vec::new();
    let mut operands = Vec::new();
    let mut rest = args.iter();
    let mut only_operands = false;
    while let Some(arg) = rest.next() {
        let flags = match arg.strip_prefix('-') {
            Some(flags) if !only_operands && !flags.is_empty() => flags,
            _ => {
                operands.push(arg.clone());
                continue;
            }
        };
        match flags {
            "-" => {
                only_operands = true;
                continue;
            }
            "-extended-regexp" => syntax = Syntax::Extended,
            "-fixed-strings" => syntax = Syntax::Fixed,
            "-ignore-case" => options.ignore_case = true,
            "-invert-match" => options.invert = true,
            "-count" => options.count = true,
            "-quiet" | "-silent" => options.quiet = true,
            long if long.starts_with('-') => {
                if let Some(pattern) = long.strip_prefix("-regexp=") {
                    patterns.push(pattern.to_owned());
                    continue;
                }
                complain(cx, "grep", &format!("unrecognized option '{arg}'"))?;
                return Ok(2);
            }
            _ => {
                for (at, letter) in flags.char_indices() {
                    match letter {
                        'v' => options.invert = true,
                        'i' | 'y' => options.ignore_case = true,
                        'c' => options.count = true,
                        'n' => options.number = true,
                        'q' => options.quiet = true,
                        'o' => options.only_matching = true,
                        'w' => options.word = true,
                        'x' => options.line = true,
                        'l' => options.files_with_matches = true,
                        's' => options.no_messages = true,
                        'r' | 'R' => options.recursive = true,
                        'h' => options.with_name = Some(false),
                        'H' => options.with_name = Some(true),
                        'E' => syntax = Syntax::Extended,
                        'F' => syntax = Syntax::Fixed,
                        'G' => syntax = Syntax::Basic,
                        'e' => {
                            let attached = &flags[at + 1..];
                            let pattern = if attached.is_empty() {
                                rest.next().cloned()
                            } else {
                                Some(attached.to_owned())
                            };
                            let Some(pattern) = pattern else {
                                complain(cx, "grep", "option requires an argument -- 'e'")?;
                                return Ok(2);
                            };
                            patterns.extend(pattern.split('\n').map(str::to_owned));
                            break;
                        }
                        other => {
                            complain(cx, "grep", &format!("invalid option -- '{other}'"))?;
                            return Ok(2);
                        }
                    }
                }
            }
        }
    }
    if patterns.is_empty() {
        if operands.is_empty() {
            complain(cx, "grep", "no pattern given")?;
            return Ok(2);
        }
        patterns.extend(operands.remove(0).split('\n').map(str::to_owned));
    }
    let regex = match compile(&patterns, syntax, &options) {
        Ok(regex) => regex,
        Err(why) => {
            complain(cx, "grep", &why)?;
            return Ok(2);
        }
    };
    if operands.is_empty() {
        operands.push(if options.recursive {
            ".".into()
        } else {
            "-".into()
        });
    }
    let mut inputs = Vec::new();
    for operand in &operands {
        let path = resolve(cx.cwd, operand);
        if options.recursive && operand != "-" && cx.container.files.is_dir(&path) {
            for (found, node) in cx.container.files.walk(&path) {
                if matches!(node, crate::shell::fs::Node::File(_)) {
                    let shown =
                        format!("{}{}", operand.trim_end_matches('/'), &found[path.len()..]);
                    let shown = if path == "/" {
                        format!("{}{found}", operand.trim_end_matches('/'))
                    } else {
                        shown
                    };
                    inputs.push(shown);
                }
            }
        } else {
            inputs.push(operand.clone());
        }
    }
    let with_name = options
        .with_name
        .unwrap_or(inputs.len() > 1 || options.recursive);
    let mut selected_any = false;
    let mut errors = false;
    for operand in &inputs {
        let mut input = match load(cx, operand) {
            Ok(Some(bytes)) => Reader::bytes(bytes),
            Ok(None) => Reader::Stdin(&mut *cx.stdin),
            Err(why) => {
                errors = true;
                if !options.no_messages {
                    complain(cx, "grep", &format!("{operand}: {why}"))?;
                }
                continue;
            }
        };
        let name = if operand == "-" {
            "(standard input)"
        } else {
            operand.as_str()
        };
        let prefix = if with_name {
            format!("{name}:")
        } else {
            String::new()
        };
        let mut count: u64 = 0;
        let mut number: u64 = 0;
        while let Some(line) = input.line().await {
            number += 1;
            let text = chomp(&line);
            if regex.is_match(text) == options.invert {
                continue;
            }
            count += 1;
            selected_any = true;
            if options.quiet {
                return Ok(0);
            }
            if options.files_with_matches {
                break;
            }
            if options.count {
                continue;
            }
            let lead = if options.number {
                format!("{prefix}{number}:")
            } else {
                prefix.clone()
            };
            if options.only_matching {
                if options.invert {
                    continue;
                }
                for found in regex.find_iter(text).filter(|m| !m.as_bytes().is_empty()) {
                    let mut out = lead.clone().into_bytes();
                    out.extend(found.as_bytes());
                    out.push(b'\n');
                    cx.stdout.write(&out)?;
                }
            } else {
                let mut out = lead.into_bytes();
                out.extend(text);
                out.push(b'\n');
                cx.stdout.write(&out)?;
            }
        }
        if options.files_with_matches && count > 0 {
            cx.stdout.print(&format!("{name}\n"))?;
        } else if options.count && !options.files_with_matches {
            cx.stdout.print(&format!("{prefix}{count}\n"))?;
        }
    }
    Ok(match (errors, selected_any) {
        (true, _) => 2,
        (false, true) => 0,
        (false, false) => 1,
    })
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::{container, run_in};

    #[tokio::test]
    async fn grep_selects_lines_as_posix_grep() {
        let c = container();
        c.files.write("/tmp/a", b"alpha\nbeta\n", false).unwrap();
        c.files
            .write("/tmp/b", b"gamma\nalphabet\n", false)
            .unwrap();
        let text = "one\ntwo\nthree\nTwo words\n";
        let cases: &[(&[&str], &str, &str, i32)] = &[
            (&["grep", "two"], "two\n", "", 0),
            (&["grep", "-i", "two"], "two\nTwo words\n", "", 0),
            (&["grep", "-v", "o"], "three\n", "", 0),
            (&["grep", "-c", "o"], "3\n", "", 0),
            (&["grep", "-n", "t"], "2:two\n3:three\n", "", 0),
            (&["grep", "-q", "one"], "", "", 0),
            (&["grep", "nothing"], "", "", 1),
            (&["grep", "-x", "tw"], "", "", 1),
            (&["grep", "-w", "Two"], "Two words\n", "", 0),
            (&["grep", "-o", "t[wh]"], "tw\nth\n", "", 0),
            (&["grep", "-e", "one", "-e", "three"], "one\nthree\n", "", 0),
            (&["grep", "-E", "^(one|two)$"], "one\ntwo\n", "", 0),
            (&["grep", "^\\(one\\|two\\)$"], "one\ntwo\n", "", 0),
            (&["grep", "(o"], "", "", 1),
            (&["grep", "-F", "e."], "", "", 1),
            (&["grep", "t\\{2\\}"], "", "", 1),
            (&["grep", "-E", "e{2}"], "three\n", "", 0),
            (&["grep", "[[:upper:]]"], "Two words\n", "", 0),
            (
                &["grep", "-E", "(x"],
                "",
                "grep: Invalid regular expression\n",
                2,
            ),
            (
                &["grep", "alpha", "/tmp/a", "/tmp/b"],
                "/tmp/a:alpha\n/tmp/b:alphabet\n",
                "",
                0,
            ),
            (
                &["grep", "-l", "alpha", "/tmp/a", "/tmp/b"],
                "/tmp/a\n/tmp/b\n",
                "",
                0,
            ),
            (
                &["grep", "-c", "a", "/tmp/a", "/nope"],
                "/tmp/a:2\n",
                "grep: /nope: No such file or directory\n",
                2,
            ),
            (
                &["grep", "-r", "bet", "/tmp"],
                "/tmp/a:beta\n/tmp/b:alphabet\n",
                "",
                0,
            ),
            (&["grep"], "", "grep: no pattern given\n", 2),
        ];
        for (argv, stdout, stderr, status) in cases {
            let ran = run_in(&c, argv, Some(vec![text.as_bytes()])).await;
            assert_eq!(
                (ran.stdout.as_str(), ran.stderr.as_str(), ran.status),
                (*stdout, *stderr, *status),
                "{argv:?}"
            );
        }
    }
}
