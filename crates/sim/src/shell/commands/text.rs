//! Commands that copy, cut down and count text: `echo`, `cat`, `head`, `tail`, `wc`, `tee`, `basename`,
//! `dirname`, `yes`, `printenv` and `env`.

use std::collections::VecDeque;

use super::escapes::{Octal, unescape};
use super::reader::{Produced, Reader, load};
use super::{Status, complain, view};
use crate::shell::fs::resolve;
use crate::shell::io::Cx;

/// How often `tail -f` looks at its file again, in simulated time.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// `echo [-neE] [ARG]...`: the arguments joined by spaces; `-e` reads backslash escapes, `-n` drops the newline.
pub(super) fn echo(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let mut newline = true;
    let mut escapes = false;
    let mut words = args;
    while let Some((flag, rest)) = words.split_first() {
        let letters = flag.strip_prefix('-').unwrap_or("");
        if letters.is_empty() || !letters.chars().all(|c| matches!(c, 'n' | 'e' | 'E')) {
            break;
        }
        for letter in letters.chars() {
            match letter {
                'n' => newline = false,
                'e' => escapes = true,
                _ => escapes = false,
            }
        }
        words = rest;
    }
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        if escapes {
            let (bytes, stop) = unescape(word, Octal::LeadingZero);
            out.extend(bytes);
            if stop {
                return cx.stdout.write(&out).map(|()| 0);
            }
        } else {
            out.extend(word.as_bytes());
        }
    }
    if newline {
        out.push(b'\n');
    }
    cx.stdout.write(&out).map(|()| 0)
}

/// Split `args` into single-letter flags (from `allowed`) and operands; `--` ends the flags. Returns the first
/// unknown letter on a usage error.
fn letters(args: &[String], allowed: &str) -> Result<(String, Vec<String>), char> {
    let mut flags = String::new();
    let mut operands = Vec::new();
    let mut only_operands = false;
    for arg in args {
        match arg.strip_prefix('-') {
            Some(letters) if !only_operands && !letters.is_empty() => {
                if letters == "-" {
                    only_operands = true;
                    continue;
                }
                for letter in letters.chars() {
                    if !allowed.contains(letter) {
                        return Err(letter);
                    }
                    flags.push(letter);
                }
            }
            _ => operands.push(arg.clone()),
        }
    }
    Ok((flags, operands))
}

/// Say a flag is not one the tool knows; the usage status of coreutils.
fn invalid_option(cx: &mut Cx<'_>, tool: &str, letter: char) -> Status {
    complain(cx, tool, &format!("invalid option -- '{letter}'"))?;
    Ok(1)
}

/// `cat [-u] [FILE]...`: the files (`-` and none: standard input, as it arrives) one after the other.
pub(super) async fn cat(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (_, mut operands) = match letters(args, "u") {
        Ok(parsed) => parsed,
        Err(letter) => return invalid_option(cx, "cat", letter),
    };
    if operands.is_empty() {
        operands.push("-".into());
    }
    let mut status = 0;
    for operand in &operands {
        let mut input = match load(cx, operand) {
            Ok(Some(bytes)) => Reader::bytes(bytes),
            Ok(None) => Reader::Stdin(&mut *cx.stdin),
            Err(why) => {
                complain(cx, "cat", &format!("{operand}: {why}"))?;
                status = 1;
                continue;
            }
        };
        while let Some(chunk) = input.chunk().await {
            cx.stdout.write(&chunk)?;
        }
    }
    Ok(status)
}

/// How much of its input `head` or `tail` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Amount {
    Lines(u64),
    Bytes(u64),
}

/// The options of `head` and `tail`: how much, whether counted from the start (`tail -n +N`), whether to
/// follow (`tail -f`), and the operands.
struct Window {
    amount: Amount,
    from_start: bool,
    follow: bool,
    operands: Vec<String>,
}

/// Read the options `head` and `tail` share (`-n N`, `-N`, `-c N`, `-q`, `-v`; `tail` also `+N` and `-f`);
/// the message of a usage error otherwise.
fn window(args: &[String], tail: bool) -> Result<Window, String> {
    let mut window = Window {
        amount: Amount::Lines(10),
        from_start: false,
        follow: false,
        operands: Vec::new(),
    };
    let count = |text: &str, bytes: bool, window: &mut Window| -> Result<(), String> {
        let (plus, digits) = match text.strip_prefix('+') {
            Some(rest) if tail => (true, rest),
            _ => (false, text.strip_prefix('-').unwrap_or(text)),
        };
        let n: u64 = digits.parse().map_err(|_| {
            let what = if bytes { "bytes" } else { "lines" };
            format!("invalid number of {what}: '{text}'")
        })?;
        window.from_start = plus;
        window.amount = if bytes {
            Amount::Bytes(n)
        } else {
            Amount::Lines(n)
        };
        Ok(())
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let Some(flag) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            if tail && arg.starts_with('+') && window.operands.is_empty() && arg.len() > 1 {
                count(arg, false, &mut window)?;
            } else {
                window.operands.push(arg.clone());
            }
            continue;
        };
        if flag.starts_with(|c: char| c.is_ascii_digit()) {
            count(flag, false, &mut window)?;
            continue;
        }
        for (at, letter) in flag.char_indices() {
            match letter {
                'n' | 'c' => {
                    let attached = &flag[at + letter.len_utf8()..];
                    let value = if attached.is_empty() {
                        rest.next()
                            .cloned()
                            .ok_or_else(|| format!("option requires an argument -- '{letter}'"))?
                    } else {
                        attached.to_owned()
                    };
                    count(&value, letter == 'c', &mut window)?;
                    break;
                }
                'q' | 'v' => {}
                'f' | 'F' if tail => window.follow = true,
                other => return Err(format!("invalid option -- '{other}'")),
            }
        }
    }
    if window.operands.is_empty() {
        window.operands.push("-".into());
    }
    Ok(window)
}

/// `head [-n N | -N | -c N] [FILE]...`: the first lines or bytes of each input; stops reading there.
pub(super) async fn head(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let window = match window(args, false) {
        Ok(window) => window,
        Err(why) => {
            complain(cx, "head", &why)?;
            return Ok(1);
        }
    };
    let many = window.operands.len() > 1;
    let mut status = 0;
    for (i, operand) in window.operands.iter().enumerate() {
        let mut input = match load(cx, operand) {
            Ok(Some(bytes)) => Reader::bytes(bytes),
            Ok(None) => Reader::Stdin(&mut *cx.stdin),
            Err(why) => {
                complain(
                    cx,
                    "head",
                    &format!("cannot open '{operand}' for reading: {why}"),
                )?;
                status = 1;
                continue;
            }
        };
        if many {
            let name = if operand == "-" {
                "standard input"
            } else {
                operand
            };
            let gap = if i > 0 { "\n" } else { "" };
            cx.stdout.print(&format!("{gap}==> {name} <==\n"))?;
        }
        match window.amount {
            Amount::Lines(mut left) => {
                while left > 0 {
                    let Some(line) = input.line().await else {
                        break;
                    };
                    cx.stdout.write(&line)?;
                    left -= 1;
                }
            }
            Amount::Bytes(mut left) => {
                while left > 0 {
                    let Some(chunk) = input.chunk().await else {
                        break;
                    };
                    let take = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    cx.stdout.write(&chunk[..take])?;
                    left -= take as u64;
                }
            }
        }
    }
    Ok(status)
}

/// The end of `input` that `tail` prints, keeping no more of it than that while reading.
async fn tail_of(input: &mut Reader<'_>, amount: Amount, from_start: bool) -> Vec<u8> {
    let mut kept = Vec::new();
    match (amount, from_start) {
        (Amount::Lines(n), true) => {
            let mut skip = n.saturating_sub(1);
            while let Some(line) = input.line().await {
                if skip > 0 {
                    skip -= 1;
                } else {
                    kept.extend(line);
                }
            }
        }
        (Amount::Bytes(n), true) => {
            let mut skip = n.saturating_sub(1);
            while let Some(chunk) = input.chunk().await {
                let drop = chunk.len().min(usize::try_from(skip).unwrap_or(usize::MAX));
                skip -= drop as u64;
                kept.extend(&chunk[drop..]);
            }
        }
        (Amount::Lines(n), false) => {
            let mut lines = VecDeque::new();
            while let Some(line) = input.line().await {
                lines.push_back(line);
                if lines.len() as u64 > n {
                    lines.pop_front();
                }
            }
            kept = lines.into_iter().flatten().collect();
        }
        (Amount::Bytes(n), false) => {
            let mut bytes = VecDeque::new();
            while let Some(chunk) = input.chunk().await {
                bytes.extend(chunk);
                let excess = bytes
                    .len()
                    .saturating_sub(usize::try_from(n).unwrap_or(usize::MAX));
                bytes.drain(..excess);
            }
            kept = bytes.into();
        }
    }
    kept
}

/// `tail [-n [+]N | -N | -c [+]N] [-f] [FILE]...`: the last (or from the Nth on) lines or bytes of each input.
/// With `-f` it is a server: it then prints what is appended to its file, and never exits.
pub(super) async fn tail(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let window = match window(args, true) {
        Ok(window) => window,
        Err(why) => {
            complain(cx, "tail", &why)?;
            return Ok(1);
        }
    };
    let many = window.operands.len() > 1;
    let mut status = 0;
    let mut followed = Vec::new();
    for (i, operand) in window.operands.iter().enumerate() {
        let mut input = match load(cx, operand) {
            Ok(Some(bytes)) => {
                followed.push((resolve(cx.cwd, operand), bytes.len()));
                Reader::bytes(bytes)
            }
            Ok(None) => Reader::Stdin(&mut *cx.stdin),
            Err(why) => {
                complain(
                    cx,
                    "tail",
                    &format!("cannot open '{operand}' for reading: {why}"),
                )?;
                status = 1;
                continue;
            }
        };
        let kept = tail_of(&mut input, window.amount, window.from_start).await;
        if many {
            let gap = if i > 0 { "\n" } else { "" };
            cx.stdout.print(&format!("{gap}==> {operand} <==\n"))?;
        }
        cx.stdout.write(&kept)?;
    }
    if window.follow && !followed.is_empty() {
        loop {
            cx.sleep(FOLLOW_EVERY).await;
            for (path, seen) in &mut followed {
                let Ok(now) = view::read(cx, path) else {
                    continue;
                };
                if now.len() < *seen {
                    complain(cx, "tail", &format!("{path}: file truncated"))?;
                    *seen = 0;
                }
                cx.stdout.write(&now[*seen..])?;
                *seen = now.len();
            }
        }
    }
    Ok(status)
}

/// The counts `wc` keeps of one input.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    lines: u64,
    words: u64,
    bytes: u64,
}

/// `wc [-lwc] [FILE]...`: lines, words and bytes of each input, and their total for several.
pub(super) async fn wc(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (mut flags, mut operands) = match letters(args, "lwcm") {
        Ok(parsed) => parsed,
        Err(letter) => return invalid_option(cx, "wc", letter),
    };
    if flags.is_empty() {
        flags = "lwc".into();
    }
    let reads_stdin = operands.is_empty();
    if reads_stdin {
        operands.push("-".into());
    }
    let mut status = 0;
    let mut rows: Vec<(Counts, Option<String>)> = Vec::new();
    for operand in &operands {
        let mut input = match load(cx, operand) {
            Ok(Some(bytes)) => Reader::bytes(bytes),
            Ok(None) => Reader::Stdin(&mut *cx.stdin),
            Err(why) => {
                complain(cx, "wc", &format!("{operand}: {why}"))?;
                status = 1;
                continue;
            }
        };
        let mut counts = Counts::default();
        let mut in_word = false;
        while let Some(chunk) = input.chunk().await {
            counts.bytes += chunk.len() as u64;
            for byte in chunk {
                counts.lines += u64::from(byte == b'\n');
                let space = byte.is_ascii_whitespace();
                counts.words += u64::from(!space && !in_word);
                in_word = !space;
            }
        }
        rows.push((counts, (!reads_stdin).then(|| operand.clone())));
    }
    if rows.len() > 1 {
        let total = rows.iter().fold(Counts::default(), |t, (c, _)| Counts {
            lines: t.lines + c.lines,
            words: t.words + c.words,
            bytes: t.bytes + c.bytes,
        });
        rows.push((total, Some("total".into())));
    }
    let pick = |c: &Counts| -> Vec<u64> {
        let mut picked = Vec::new();
        if flags.contains('l') {
            picked.push(c.lines);
        }
        if flags.contains('w') {
            picked.push(c.words);
        }
        if flags.contains('c') || flags.contains('m') {
            picked.push(c.bytes);
        }
        picked
    };
    let columns = pick(&Counts::default()).len();
    let widest = rows
        .iter()
        .flat_map(|(c, _)| pick(c))
        .max()
        .unwrap_or(0)
        .to_string()
        .len();
    let width = match (columns, rows.len(), operands.iter().any(|o| o == "-")) {
        (1, 1, _) => 0,
        (_, _, true) => widest.max(7),
        _ => widest,
    };
    let mut out = String::new();
    for (counts, name) in &rows {
        let numbers: Vec<String> = pick(counts)
            .iter()
            .map(|n| format!("{n:>width$}"))
            .collect();
        out.push_str(&numbers.join(" "));
        if let Some(name) = name {
            out.push(' ');
            out.push_str(name);
        }
        out.push('\n');
    }
    cx.stdout.print(&out)?;
    Ok(status)
}

/// `tee [-a] [FILE]...`: standard input to standard output and to each file, as it arrives.
pub(super) async fn tee(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (flags, operands) = match letters(args, "ai") {
        Ok(parsed) => parsed,
        Err(letter) => return invalid_option(cx, "tee", letter),
    };
    let append = flags.contains('a');
    let mut status = 0;
    let mut targets = Vec::new();
    for operand in &operands {
        let path = resolve(cx.cwd, operand);
        match cx.container.files.write(&path, b"", append) {
            Ok(()) => targets.push((operand.clone(), path)),
            Err(why) => {
                complain(cx, "tee", &format!("{operand}: {why}"))?;
                status = 1;
            }
        }
    }
    while let Some(chunk) = cx.stdin.chunk().await {
        cx.stdout.write(&chunk)?;
        let mut failed = Vec::new();
        for (i, (name, path)) in targets.iter().enumerate() {
            if let Err(why) = cx.container.files.write(path, &chunk, true) {
                failed.push((i, format!("{name}: {why}")));
            }
        }
        for (i, why) in failed.into_iter().rev() {
            complain(cx, "tee", &why)?;
            targets.remove(i);
            status = 1;
        }
    }
    Ok(status)
}

/// `path` without its trailing slashes (`/` stays).
fn trim_slashes(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() && path.starts_with('/') {
        "/"
    } else {
        trimmed
    }
}

/// `basename NAME [SUFFIX]`: the last component of a path, without `SUFFIX`.
pub(super) fn basename(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let Some(name) = args.first() else {
        complain(cx, "basename", "missing operand")?;
        return Ok(1);
    };
    let trimmed = trim_slashes(name);
    let mut base = trimmed.rsplit('/').next().unwrap_or(trimmed);
    if trimmed == "/" {
        base = "/";
    }
    if let Some(suffix) = args.get(1)
        && base != suffix.as_str()
    {
        base = base.strip_suffix(suffix.as_str()).unwrap_or(base);
    }
    cx.stdout.print(&format!("{base}\n")).map(|()| 0)
}

/// `dirname NAME`: the directory holding a path (`.` for a bare name).
pub(super) fn dirname(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let Some(name) = args.first() else {
        complain(cx, "dirname", "missing operand")?;
        return Ok(1);
    };
    let trimmed = trim_slashes(name);
    let dir = match trimmed.rfind('/') {
        None => ".",
        Some(at) => trim_slashes(&trimmed[..at]),
    };
    let dir = if dir.is_empty() { "/" } else { dir };
    cx.stdout.print(&format!("{dir}\n")).map(|()| 0)
}

/// `yes [STRING]...`: the line (`y` by default) over and over, until the output is refused. Writing to
/// `/dev/null`, it runs on without producing anything more once it has produced the process's output limit.
pub(super) async fn yes(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let line = if args.is_empty() {
        "y\n".to_owned()
    } else {
        format!("{}\n", args.join(" "))
    };
    let block = line.repeat((1024 / line.len()).max(1));
    let mut produced = Produced::new(cx);
    loop {
        cx.stdout.print(&block)?;
        if !produced.add(block.len()) {
            return std::future::pending::<Status>().await;
        }
    }
}

/// `printenv [NAME]...`: the environment, or the values of `NAME`s (status 1 when one is not set).
pub(super) fn printenv(cx: &mut Cx<'_>, args: &[String]) -> Status {
    if args.is_empty() {
        let env = cx.env.to_vec();
        return print_env(cx, env);
    }
    let mut status = 0;
    let mut out = String::new();
    for name in args {
        match cx.env.iter().rev().find(|(n, _)| n == name) {
            Some((_, value)) => {
                out.push_str(value);
                out.push('\n');
            }
            None => status = 1,
        }
    }
    cx.stdout.print(&out)?;
    Ok(status)
}

fn print_env(cx: &mut Cx<'_>, env: Vec<(String, String)>) -> Status {
    let text: String = env.iter().map(|(n, v)| format!("{n}={v}\n")).collect();
    cx.stdout.print(&text).map(|()| 0)
}

/// `env [-i] [-u NAME] [NAME=VALUE]...`: the environment, changed as asked. Running a command in it is not
/// simulated (None).
pub(super) fn env(cx: &mut Cx<'_>, args: &[String]) -> Option<Status> {
    let mut env = cx.env.to_vec();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-i" | "-" | "--ignore-environment" => env.clear(),
            "-u" => {
                let name = rest.next()?;
                env.retain(|(n, _)| n != name);
            }
            _ => {
                let (name, value) = arg.split_once('=')?;
                env.retain(|(n, _)| n != name);
                env.push((name.to_owned(), value.to_owned()));
            }
        }
    }
    Some(print_env(cx, env))
}

#[cfg(test)]
mod tests;
