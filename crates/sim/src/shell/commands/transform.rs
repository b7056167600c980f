//! Commands that reorder and rewrite lines and characters: `sort`, `uniq`, `tr` and `cut`.

use super::reader::{Reader, chomp, load};
use super::{Status, complain};
use crate::shell::io::Cx;

/// Everything of the operands (`-` or none: standard input), one after the other, holding no more than the
/// container's files may: (the bytes, whether an operand could not be read); None once that is passed.
async fn read_all(
    cx: &mut Cx<'_>,
    tool: &str,
    operands: &[String],
) -> Result<Option<(Vec<u8>, bool)>, super::OutputLimit> {
    let limit = usize::try_from(cx.container.limits.file_bytes).unwrap_or(usize::MAX);
    let stdin = ["-".to_owned()];
    let operands = if operands.is_empty() {
        &stdin[..]
    } else {
        operands
    };
    let mut all = Vec::new();
    let mut failed = false;
    for operand in operands {
        match load(cx, operand) {
            Ok(Some(bytes)) => all.extend(bytes),
            Ok(None) => match cx.stdin.read_to_end(limit.saturating_sub(all.len())).await {
                Some(bytes) => all.extend(bytes),
                None => {
                    complain(cx, tool, "memory exhausted")?;
                    return Ok(None);
                }
            },
            Err(why) => {
                complain(cx, tool, &format!("{operand}: {why}"))?;
                failed = true;
            }
        }
        if all.len() > limit {
            complain(cx, tool, "memory exhausted")?;
            return Ok(None);
        }
    }
    Ok(Some((all, failed)))
}

/// The lines of `bytes`, without their line ends.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() {
        return Vec::new();
    }
    body.split(|&b| b == b'\n').collect()
}

/// The number a line starts with, as `sort -n` reads it (none: 0).
fn leading_number(line: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_start();
    let end = text
        .char_indices()
        .take_while(|&(i, c)| c.is_ascii_digit() || c == '.' || (i == 0 && c == '-'))
        .count();
    text[..end].parse().unwrap_or(0.0)
}

/// `sort [-r] [-n] [-u] [FILE]...`: the lines in byte order (or by their leading number).
pub(super) async fn sort(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let mut flags = String::new();
    let mut operands = Vec::new();
    for arg in args {
        match arg.strip_prefix('-').filter(|l| !l.is_empty()) {
            Some(letters) => {
                if let Some(bad) = letters.chars().find(|c| !"rnuf".contains(*c)) {
                    complain(cx, "sort", &format!("invalid option -- '{bad}'"))?;
                    return Ok(2);
                }
                flags.push_str(letters);
            }
            None => operands.push(arg.clone()),
        }
    }
    let Some((all, failed)) = read_all(cx, "sort", &operands).await? else {
        return Ok(2);
    };
    if failed {
        return Ok(2);
    }
    let numeric = flags.contains('n');
    let fold = flags.contains('f');
    let key = |line: &[u8]| -> Vec<u8> {
        if fold {
            line.to_ascii_uppercase()
        } else {
            line.to_vec()
        }
    };
    let compare = |a: &&[u8], b: &&[u8]| {
        if numeric {
            leading_number(a).total_cmp(&leading_number(b))
        } else {
            key(a).cmp(&key(b))
        }
    };
    let mut sorted = lines(&all);
    sorted.sort_by(|a, b| compare(a, b).then_with(|| a.cmp(b)));
    if flags.contains('u') {
        sorted.dedup_by(|a, b| compare(&&**a, &&**b).is_eq());
    }
    if flags.contains('r') {
        sorted.reverse();
    }
    let mut out = Vec::with_capacity(all.len() + 1);
    for line in sorted {
        out.extend(line);
        out.push(b'\n');
    }
    cx.stdout.write(&out).map(|()| 0)
}

/// `uniq [-c] [-d] [-u] [INPUT]`: adjacent repeated lines once (with `-c`, how many times).
pub(super) async fn uniq(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let mut flags = String::new();
    let mut operands = Vec::new();
    for arg in args {
        match arg.strip_prefix('-').filter(|l| !l.is_empty()) {
            Some(letters) => {
                if let Some(bad) = letters.chars().find(|c| !"cdu".contains(*c)) {
                    complain(cx, "uniq", &format!("invalid option -- '{bad}'"))?;
                    return Ok(1);
                }
                flags.push_str(letters);
            }
            None => operands.push(arg.clone()),
        }
    }
    let operand = operands.first().cloned().unwrap_or_else(|| "-".into());
    let mut input = match load(cx, &operand) {
        Ok(Some(bytes)) => Reader::bytes(bytes),
        Ok(None) => Reader::Stdin(&mut *cx.stdin),
        Err(why) => {
            complain(cx, "uniq", &format!("{operand}: {why}"))?;
            return Ok(1);
        }
    };
    let mut current: Option<(Vec<u8>, u64)> = None;
    let emit = |out: &mut crate::shell::io::Output,
                line: &[u8],
                count: u64|
     -> Result<(), super::OutputLimit> {
        let wanted = match (flags.contains('d'), flags.contains('u')) {
            (true, false) => count > 1,
            (false, true) => count == 1,
            (true, true) => false,
            (false, false) => true,
        };
        if !wanted {
            return Ok(());
        }
        if flags.contains('c') {
            out.print(&format!("{count:>7} "))?;
        }
        out.write(line)?;
        out.write(b"\n")
    };
    while let Some(line) = input.line().await {
        let line = chomp(&line).to_vec();
        match &mut current {
            Some((seen, count)) if *seen == line => *count += 1,
            _ => {
                if let Some((seen, count)) = current.replace((line, 1)) {
                    emit(cx.stdout, &seen, count)?;
                }
            }
        }
    }
    if let Some((seen, count)) = current {
        emit(cx.stdout, &seen, count)?;
    }
    Ok(0)
}

/// Where `needle` first is in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The bytes a `tr` set names: ranges (`a-z`), classes (`[:digit:]`), repeats (`[x*]`) and escapes.
fn set(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let class = |name: &str| -> Option<Vec<u8>> {
        let test: fn(&u8) -> bool = match name {
            "alpha" => u8::is_ascii_alphabetic,
            "digit" => u8::is_ascii_digit,
            "alnum" => u8::is_ascii_alphanumeric,
            "lower" => u8::is_ascii_lowercase,
            "upper" => u8::is_ascii_uppercase,
            "space" => |b| b.is_ascii_whitespace() || *b == 11,
            "blank" => |b| *b == b' ' || *b == b'\t',
            "punct" => u8::is_ascii_punctuation,
            "xdigit" => u8::is_ascii_hexdigit,
            "cntrl" => u8::is_ascii_control,
            "print" => |b| (32..127).contains(b),
            "graph" => u8::is_ascii_graphic,
            _ => return None,
        };
        Some((0..=255u8).filter(test).collect())
    };
    let one = |i: &mut usize| -> u8 {
        let byte = bytes[*i];
        *i += 1;
        if byte != b'\\' || *i == bytes.len() {
            return byte;
        }
        let escaped = bytes[*i];
        *i += 1;
        match escaped {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            b'0'..=b'7' => {
                let mut value = u32::from(escaped - b'0');
                while *i < bytes.len() && (b'0'..=b'7').contains(&bytes[*i]) && value < 32 {
                    value = value * 8 + u32::from(bytes[*i] - b'0');
                    *i += 1;
                }
                (value & 0xff) as u8
            }
            other => other,
        }
    };
    while i < bytes.len() {
        if bytes[i..].starts_with(b"[:")
            && let Some(end) = find(&bytes[i + 2..], b":]")
        {
            let name = String::from_utf8_lossy(&bytes[i + 2..i + 2 + end]);
            let members =
                class(&name).ok_or_else(|| format!("invalid character class '{name}'"))?;
            out.extend(members);
            i += end + 4;
            continue;
        }
        if bytes[i] == b'['
            && i + 3 < bytes.len()
            && bytes[i + 2] == b'*'
            && let Some(end) = find(&bytes[i + 3..], b"]")
        {
            let count = String::from_utf8_lossy(&bytes[i + 3..i + 3 + end]);
            let count: usize = count.parse().unwrap_or(0);
            out.extend(std::iter::repeat_n(bytes[i + 1], count.min(256)));
            i += end + 4;
            continue;
        }
        let low = one(&mut i);
        if i + 1 < bytes.len() && bytes[i] == b'-' {
            i += 1;
            let high = one(&mut i);
            if high < low {
                return Err(format!(
                    "range-endpoints of '{}-{}' are in reverse collating sequence order",
                    low as char, high as char
                ));
            }
            out.extend(low..=high);
        } else {
            out.push(low);
        }
    }
    Ok(out)
}

/// `tr [-c] [-d] [-s] SET1 [SET2]`: standard input with characters translated, deleted or squeezed.
pub(super) async fn tr(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let mut flags = String::new();
    let mut sets = Vec::new();
    for arg in args {
        match arg
            .strip_prefix('-')
            .filter(|l| !l.is_empty() && sets.is_empty())
        {
            Some(letters) if letters.chars().all(|c| "cCdst".contains(c)) => {
                flags.push_str(letters)
            }
            _ => sets.push(arg.clone()),
        }
    }
    let delete = flags.contains('d');
    let squeeze = flags.contains('s');
    let complement = flags.contains('c') || flags.contains('C');
    let wanted = if delete && squeeze {
        2
    } else if delete || (squeeze && sets.len() < 2) {
        1
    } else {
        2
    };
    if sets.len() < wanted {
        let why = match sets.first() {
            None => "missing operand".to_owned(),
            Some(first) => format!("missing operand after '{first}'"),
        };
        complain(cx, "tr", &why)?;
        return Ok(1);
    }
    if sets.len() > wanted {
        complain(cx, "tr", &format!("extra operand '{}'", sets[wanted]))?;
        return Ok(1);
    }
    let parsed: Result<Vec<Vec<u8>>, String> = sets.iter().map(|s| set(s)).collect();
    let mut parsed = match parsed {
        Ok(parsed) => parsed,
        Err(why) => {
            complain(cx, "tr", &why)?;
            return Ok(1);
        }
    };
    if complement {
        let named = parsed[0].clone();
        parsed[0] = (0..=255u8).filter(|b| !named.contains(b)).collect();
    }
    let mut in_first = [false; 256];
    for &b in &parsed[0] {
        in_first[usize::from(b)] = true;
    }
    let mut map: [u8; 256] = std::array::from_fn(|i| i as u8);
    let mut squeezed = [false; 256];
    if !delete && parsed.len() == 2 {
        let to = &parsed[1];
        if to.is_empty() {
            complain(
                cx,
                "tr",
                "when not truncating set1, string2 must be non-empty",
            )?;
            return Ok(1);
        }
        for (i, &from) in parsed[0].iter().enumerate() {
            map[usize::from(from)] = *to.get(i).unwrap_or(&to[to.len() - 1]);
        }
        for &b in to {
            squeezed[usize::from(b)] = squeeze;
        }
    } else if squeeze {
        let squeeze_set = if delete { &parsed[1] } else { &parsed[0] };
        for &b in squeeze_set {
            squeezed[usize::from(b)] = true;
        }
    }
    let mut last: Option<u8> = None;
    while let Some(chunk) = cx.stdin.chunk().await {
        let mut out = Vec::with_capacity(chunk.len());
        for byte in chunk {
            if delete && in_first[usize::from(byte)] {
                continue;
            }
            let mapped = map[usize::from(byte)];
            if squeezed[usize::from(mapped)] && last == Some(mapped) {
                continue;
            }
            last = Some(mapped);
            out.push(mapped);
        }
        cx.stdout.write(&out)?;
    }
    Ok(0)
}

/// The 1-based positions a `cut` list names (`1,3-4,6-`), as inclusive ranges.
fn ranges(list: &str) -> Option<Vec<(usize, usize)>> {
    list.split(',')
        .map(|part| {
            let (low, high) = match part.split_once('-') {
                Some((low, high)) => (
                    if low.is_empty() { 1 } else { low.parse().ok()? },
                    if high.is_empty() {
                        usize::MAX
                    } else {
                        high.parse().ok()?
                    },
                ),
                None => {
                    let n = part.parse().ok()?;
                    (n, n)
                }
            };
            (low >= 1 && low <= high).then_some((low, high))
        })
        .collect()
}

/// `cut -f LIST [-d DELIM] [-s] | -c LIST | -b LIST [FILE]...`: the named fields or characters of each line.
pub(super) async fn cut(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let mut fields = None;
    let mut chars = None;
    let mut delimiter = b'\t';
    let mut only_delimited = false;
    let mut operands = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let Some(letters) = arg.strip_prefix('-').filter(|l| !l.is_empty()) else {
            operands.push(arg.clone());
            continue;
        };
        let (letter, attached) = letters.split_at(letters.chars().next().map_or(0, char::len_utf8));
        let mut value = || -> Option<String> {
            if attached.is_empty() {
                rest.next().cloned()
            } else {
                Some(attached.to_owned())
            }
        };
        match letter {
            "f" => fields = value(),
            "c" | "b" => chars = value(),
            "d" => match value().as_deref().map(str::as_bytes) {
                Some([byte]) => delimiter = *byte,
                _ => {
                    complain(cx, "cut", "the delimiter must be a single character")?;
                    return Ok(1);
                }
            },
            "s" => only_delimited = true,
            _ => {
                complain(cx, "cut", &format!("invalid option -- '{letter}'"))?;
                return Ok(1);
            }
        }
    }
    let (list, by_field) = match (fields, chars) {
        (Some(list), None) => (list, true),
        (None, Some(list)) => (list, false),
        _ => {
            complain(
                cx,
                "cut",
                "you must specify a list of bytes, characters, or fields",
            )?;
            return Ok(1);
        }
    };
    let Some(ranges) = ranges(&list) else {
        complain(cx, "cut", &format!("invalid field value '{list}'"))?;
        return Ok(1);
    };
    let picked = |position: usize| {
        ranges
            .iter()
            .any(|&(low, high)| (low..=high).contains(&position))
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
                complain(cx, "cut", &format!("{operand}: {why}"))?;
                status = 1;
                continue;
            }
        };
        while let Some(line) = input.line().await {
            let line = chomp(&line);
            let mut out = Vec::new();
            if by_field {
                if !line.contains(&delimiter) {
                    if !only_delimited {
                        out.extend(line);
                        out.push(b'\n');
                    }
                    cx.stdout.write(&out)?;
                    continue;
                }
                let kept: Vec<&[u8]> = line
                    .split(|&b| b == delimiter)
                    .enumerate()
                    .filter(|(i, _)| picked(i + 1))
                    .map(|(_, field)| field)
                    .collect();
                out.extend(kept.join(&delimiter));
            } else {
                out.extend(
                    line.iter()
                        .enumerate()
                        .filter(|(i, _)| picked(i + 1))
                        .map(|(_, b)| *b),
                );
            }
            out.push(b'\n');
            cx.stdout.write(&out)?;
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::{container, expect_with_input};

    #[tokio::test]
    async fn lines_are_sorted_counted_translated_and_cut() {
        let c = container();
        let cases: &[(&[&str], &str, &str, &str, i32)] = &[
            (&["sort"], "b\na\nc\n", "a\nb\nc\n", "", 0),
            (&["sort", "-r"], "b\na\nc", "c\nb\na\n", "", 0),
            (&["sort", "-n"], "10\n9\n-1\nx\n", "-1\nx\n9\n10\n", "", 0),
            (&["sort", "-u"], "b\na\nb\n", "a\nb\n", "", 0),
            (&["sort", "-nru"], "1\n3\n3\n2\n", "3\n2\n1\n", "", 0),
            (
                &["sort", "/nope"],
                "",
                "",
                "sort: /nope: No such file or directory\n",
                2,
            ),
            (&["uniq"], "a\na\nb\na\n", "a\nb\na\n", "", 0),
            (
                &["uniq", "-c"],
                "a\na\nb\n",
                "      2 a\n      1 b\n",
                "",
                0,
            ),
            (&["uniq", "-d"], "a\na\nb\n", "a\n", "", 0),
            (
                &["tr", "a-z", "A-Z"],
                "hello, world\n",
                "HELLO, WORLD\n",
                "",
                0,
            ),
            (&["tr", "-d", "[:digit:]"], "a1b22c\n", "abc\n", "", 0),
            (&["tr", "-s", " "], "a   b  c\n", "a b c\n", "", 0),
            (&["tr", "-cd", "a-c"], "abcdefabc\n", "abcabc", "", 0),
            (&["tr", "abc", "x"], "aabbcc\n", "xxxxxx\n", "", 0),
            (&["tr", "\\n", ","], "a\nb\n", "a,b,", "", 0),
            (&["tr", "a"], "", "", "tr: missing operand after 'a'\n", 1),
            (
                &["tr", "z-a", "x"],
                "",
                "",
                "tr: range-endpoints of 'z-a' are in reverse collating sequence order\n",
                1,
            ),
            (
                &["cut", "-d", ":", "-f", "1,3"],
                "a:b:c:d\nnone\n",
                "a:c\nnone\n",
                "",
                0,
            ),
            (
                &["cut", "-d:", "-f2-", "-s"],
                "a:b:c\nnone\n",
                "b:c\n",
                "",
                0,
            ),
            (&["cut", "-c", "2-3"], "hello\n", "el\n", "", 0),
            (&["cut", "-f", "2"], "a\tb\tc\n", "b\n", "", 0),
            (
                &["cut", "-f", "0"],
                "",
                "",
                "cut: invalid field value '0'\n",
                1,
            ),
            (
                &["cut", "x"],
                "",
                "",
                "cut: you must specify a list of bytes, characters, or fields\n",
                1,
            ),
        ];
        expect_with_input(&c, cases).await;
    }
}
