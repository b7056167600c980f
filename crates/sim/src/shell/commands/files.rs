//! Commands on the container's files: `ls`, `mkdir`, `rm`, `rmdir`, `touch`, `cp` and `mv`. Errors are worded as
//! GNU coreutils words them.

use super::view::{self, Entry, is_program};
use super::{Status, complain};
use crate::shell::fs::{FsError, Node, resolve};
use crate::shell::io::Cx;

/// Split `args` into flag letters and operands (`--` ends the flags); the unknown letter on a usage error.
fn parse(args: &[String], allowed: &str) -> Result<(String, Vec<String>), char> {
    let mut flags = String::new();
    let mut operands = Vec::new();
    let mut only_operands = false;
    for arg in args {
        match arg.strip_prefix('-') {
            Some("-") if !only_operands => only_operands = true,
            Some(letters) if !only_operands && !letters.is_empty() => {
                if let Some(bad) = letters.chars().find(|c| !allowed.contains(*c)) {
                    return Err(bad);
                }
                flags.push_str(letters);
            }
            _ => operands.push(arg.clone()),
        }
    }
    Ok((flags, operands))
}

/// Parse `args` or say which letter is unknown (and return the usage status).
macro_rules! parse_or_usage {
    ($cx:expr, $tool:literal, $args:expr, $allowed:literal) => {
        match parse($args, $allowed) {
            Ok(parsed) => parsed,
            Err(bad) => {
                complain($cx, $tool, &format!("invalid option -- '{bad}'"))?;
                return Ok(1);
            }
        }
    };
}

/// One line of `ls -l`, as busybox writes it.
fn long_line(path: &str, name: &str, entry: &Entry, when: &str) -> String {
    let (mode, links, size) = match entry {
        Entry::Dir => ("drwxr-xr-x", 2, 4096),
        Entry::File(bytes) if is_program(path) => ("-rwxr-xr-x", 1, bytes.len()),
        Entry::File(bytes) => ("-rw-r--r--", 1, bytes.len()),
    };
    format!("{mode} {links:>4} root     root     {size:>9} {when} {name}\n")
}

/// The time `ls -l` shows: the files keep no times, so the host's clock now, as a container reads it.
fn listing_time() -> String {
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    jiff::fmt::strtime::format("%b %e %H:%M", &now).unwrap_or_default()
}

/// The options `ls` was given.
struct Listing {
    long: bool,
    all: bool,
    almost_all: bool,
    recursive: bool,
    directory: bool,
    when: String,
}

/// `ls [-laA1Rd] [FILE]...`: one name a line, files first then each directory's entries.
pub(super) fn ls(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (flags, mut operands) = parse_or_usage!(cx, "ls", args, "laA1RdhFpC");
    let listing = Listing {
        long: flags.contains('l'),
        all: flags.contains('a'),
        almost_all: flags.contains('A'),
        recursive: flags.contains('R'),
        directory: flags.contains('d'),
        when: listing_time(),
    };
    if operands.is_empty() {
        operands.push(".".into());
    }
    let mut status = 0;
    let mut files = String::new();
    let mut dirs = Vec::new();
    for operand in &operands {
        let path = resolve(cx.cwd, operand);
        match view::entry(cx, &path) {
            None => {
                complain(
                    cx,
                    "ls",
                    &format!("cannot access '{operand}': No such file or directory"),
                )?;
                status = 2;
            }
            Some(Entry::Dir) if !listing.directory => dirs.push((operand.clone(), path)),
            Some(entry) => {
                if listing.long {
                    files.push_str(&long_line(&path, operand, &entry, &listing.when));
                } else {
                    files.push_str(&format!("{operand}\n"));
                }
            }
        }
    }
    cx.stdout.print(&files)?;
    let headers = operands.len() > 1 || listing.recursive;
    let mut first = files.is_empty();
    while !dirs.is_empty() {
        let (shown, path) = dirs.remove(0);
        let mut text = String::new();
        if headers {
            if !first {
                text.push('\n');
            }
            text.push_str(&format!("{shown}:\n"));
        }
        first = false;
        let names = match view::list(cx, &path) {
            Ok(names) => names,
            Err(why) => {
                cx.stdout.print(&text)?;
                complain(cx, "ls", &format!("cannot open directory '{shown}': {why}"))?;
                status = 2;
                continue;
            }
        };
        let mut names: Vec<String> = names
            .into_iter()
            .filter(|n| listing.all || listing.almost_all || !n.starts_with('.'))
            .collect();
        if listing.all {
            names.insert(0, "..".to_owned());
            names.insert(0, ".".to_owned());
        }
        let mut entries = Vec::new();
        for name in &names {
            let child = match name.as_str() {
                "." => path.clone(),
                ".." => resolve(&path, ".."),
                _ => resolve(&path, name),
            };
            let entry = view::entry(cx, &child).unwrap_or(Entry::Dir);
            entries.push((name.clone(), child, entry));
        }
        if listing.long {
            let blocks: usize = entries
                .iter()
                .map(|(_, _, e)| match e {
                    Entry::Dir => 4,
                    Entry::File(bytes) => bytes.len().div_ceil(4096) * 4,
                })
                .sum();
            text.push_str(&format!("total {blocks}\n"));
        }
        let mut below = Vec::new();
        for (name, child, entry) in &entries {
            if listing.long {
                text.push_str(&long_line(child, name, entry, &listing.when));
            } else {
                text.push_str(&format!("{name}\n"));
            }
            if listing.recursive && *entry == Entry::Dir && name != "." && name != ".." {
                let shown_child = if shown.ends_with('/') {
                    format!("{shown}{name}")
                } else {
                    format!("{shown}/{name}")
                };
                below.push((shown_child, child.clone()));
            }
        }
        cx.stdout.print(&text)?;
        below.append(&mut dirs);
        dirs = below;
    }
    Ok(status)
}

/// `mkdir [-p] DIR...`.
pub(super) fn mkdir(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (flags, operands) = parse_or_usage!(cx, "mkdir", args, "pv");
    if operands.is_empty() {
        complain(cx, "mkdir", "missing operand")?;
        return Ok(1);
    }
    let mut status = 0;
    for operand in &operands {
        let path = resolve(cx.cwd, operand);
        if let Err(why) = cx.container.files.mkdir(&path, flags.contains('p')) {
            complain(
                cx,
                "mkdir",
                &format!("cannot create directory '{operand}': {why}"),
            )?;
            status = 1;
        }
    }
    Ok(status)
}

/// `rm [-rRf] FILE...`.
pub(super) fn rm(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (flags, operands) = parse_or_usage!(cx, "rm", args, "rRfiv");
    let force = flags.contains('f');
    let recursive = flags.contains('r') || flags.contains('R');
    if operands.is_empty() && !force {
        complain(cx, "rm", "missing operand")?;
        return Ok(1);
    }
    let mut status = 0;
    for operand in &operands {
        let path = resolve(cx.cwd, operand);
        if path == "/" {
            complain(cx, "rm", "it is dangerous to operate recursively on '/'")?;
            status = 1;
            continue;
        }
        let failure = match cx.container.files.get(&path) {
            None if force => None,
            None => Some(FsError::NotFound),
            Some(Node::Dir) if !recursive => Some(FsError::IsADirectory),
            Some(_) => cx.container.files.remove(&path, recursive).err(),
        };
        if let Some(why) = failure {
            complain(cx, "rm", &format!("cannot remove '{operand}': {why}"))?;
            status = 1;
        }
    }
    Ok(status)
}

/// `rmdir DIR...`: empty directories only.
pub(super) fn rmdir(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (_, operands) = parse_or_usage!(cx, "rmdir", args, "v");
    if operands.is_empty() {
        complain(cx, "rmdir", "missing operand")?;
        return Ok(1);
    }
    let mut status = 0;
    for operand in &operands {
        let path = resolve(cx.cwd, operand);
        let failure = match cx.container.files.get(&path) {
            None => Some(FsError::NotFound),
            Some(Node::File(_)) => Some(FsError::NotADirectory),
            Some(Node::Dir) => cx.container.files.remove(&path, false).err(),
        };
        if let Some(why) = failure {
            complain(cx, "rmdir", &format!("failed to remove '{operand}': {why}"))?;
            status = 1;
        }
    }
    Ok(status)
}

/// `touch [-c] FILE...`: an empty file where there is none.
pub(super) fn touch(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (flags, operands) = parse_or_usage!(cx, "touch", args, "cam");
    if operands.is_empty() {
        complain(cx, "touch", "missing file operand")?;
        return Ok(1);
    }
    let mut status = 0;
    for operand in &operands {
        let path = resolve(cx.cwd, operand);
        if cx.container.files.get(&path).is_some() || flags.contains('c') {
            continue;
        }
        if let Err(why) = cx.container.files.write(&path, b"", true) {
            complain(cx, "touch", &format!("cannot touch '{operand}': {why}"))?;
            status = 1;
        }
    }
    Ok(status)
}

/// Where `source` goes when copied or moved to `target`: into it when it is a directory.
fn destination(cx: &Cx<'_>, source: &str, target: &str) -> String {
    let target_path = resolve(cx.cwd, target);
    if cx.container.files.is_dir(&target_path) {
        let name = resolve(cx.cwd, source);
        let name = name.rsplit('/').next().unwrap_or("");
        resolve(&target_path, name)
    } else {
        target_path
    }
}

/// The sources and the target of `cp` and `mv`, or the message of a usage error.
fn sources_and_target<'a>(
    cx: &Cx<'_>,
    operands: &'a [String],
) -> Result<(&'a [String], &'a str), String> {
    match operands {
        [] => Err("missing file operand".into()),
        [only] => Err(format!("missing destination file operand after '{only}'")),
        [sources @ .., target] => {
            if sources.len() > 1 && !cx.container.files.is_dir(&resolve(cx.cwd, target)) {
                return Err(format!("target '{target}' is not a directory"));
            }
            Ok((sources, target))
        }
    }
}

/// Copy the directory `from` to `to` with everything under it.
fn copy_tree(cx: &Cx<'_>, from: &str, to: &str) -> Result<(), FsError> {
    for (path, node) in cx.container.files.walk(from) {
        let at = format!("{to}{}", &path[from.len()..]);
        match node {
            Node::Dir => cx.container.files.mkdir(&at, true)?,
            Node::File(bytes) => cx.container.files.write(&at, &bytes, false)?,
        }
    }
    Ok(())
}

/// `cp [-rRapf] SOURCE... TARGET`.
pub(super) fn cp(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (flags, operands) = parse_or_usage!(cx, "cp", args, "rRapfvdL");
    let recursive = flags.contains('r') || flags.contains('R') || flags.contains('a');
    let (sources, target) = match sources_and_target(cx, &operands) {
        Ok(split) => split,
        Err(why) => {
            complain(cx, "cp", &why)?;
            return Ok(1);
        }
    };
    let mut status = 0;
    for source in sources {
        let from = resolve(cx.cwd, source);
        let to = destination(cx, source, target);
        let outcome = match view::entry(cx, &from) {
            None => Err(format!("cannot stat '{source}': No such file or directory")),
            Some(Entry::Dir) if !recursive => {
                Err(format!("-r not specified; omitting directory '{source}'"))
            }
            Some(Entry::Dir) if to == from || to.starts_with(&format!("{from}/")) => Err(format!(
                "cannot copy a directory, '{source}', into itself, '{target}'"
            )),
            Some(Entry::Dir) => {
                copy_tree(cx, &from, &to).map_err(|why| format!("cannot create '{target}': {why}"))
            }
            Some(Entry::File(_)) if to == from => {
                Err(format!("'{source}' and '{target}' are the same file"))
            }
            Some(Entry::File(bytes)) => cx
                .container
                .files
                .write(&to, &bytes, false)
                .map_err(|why| format!("cannot create regular file '{target}': {why}")),
        };
        if let Err(why) = outcome {
            complain(cx, "cp", &why)?;
            status = 1;
        }
    }
    Ok(status)
}

/// `mv [-f] SOURCE... TARGET`.
pub(super) fn mv(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let (_, operands) = parse_or_usage!(cx, "mv", args, "fivn");
    let (sources, target) = match sources_and_target(cx, &operands) {
        Ok(split) => split,
        Err(why) => {
            complain(cx, "mv", &why)?;
            return Ok(1);
        }
    };
    let mut status = 0;
    for source in sources {
        let from = resolve(cx.cwd, source);
        let to = destination(cx, source, target);
        let outcome = match cx.container.files.rename(&from, &to) {
            Ok(()) => Ok(()),
            Err(FsError::NotFound) if cx.container.files.get(&from).is_none() => {
                Err(format!("cannot stat '{source}': No such file or directory"))
            }
            Err(FsError::InvalidArgument) => Err(format!(
                "cannot move '{source}' to a subdirectory of itself, '{target}'"
            )),
            Err(why) => Err(format!("cannot move '{source}' to '{target}': {why}")),
        };
        if let Err(why) = outcome {
            complain(cx, "mv", &why)?;
            status = 1;
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::{container, expect, run_in};

    #[tokio::test]
    async fn files_are_made_listed_copied_moved_and_removed() {
        let c = container();
        let cases: &[(&[&str], &str, &str, i32)] = &[
            (&["mkdir", "/tmp/d"], "", "", 0),
            (
                &["mkdir", "/tmp/d"],
                "",
                "mkdir: cannot create directory '/tmp/d': File exists\n",
                1,
            ),
            (
                &["mkdir", "/x/y"],
                "",
                "mkdir: cannot create directory '/x/y': No such file or directory\n",
                1,
            ),
            (&["mkdir", "-p", "/tmp/d/e/f"], "", "", 0),
            (&["touch", "/tmp/d/a", "/tmp/d/.hidden"], "", "", 0),
            (
                &["touch", "/nope/a"],
                "",
                "touch: cannot touch '/nope/a': No such file or directory\n",
                1,
            ),
            (&["ls", "/tmp/d"], "a\ne\n", "", 0),
            (&["ls", "-a", "/tmp/d"], ".\n..\n.hidden\na\ne\n", "", 0),
            (&["ls", "-A", "/tmp/d"], ".hidden\na\ne\n", "", 0),
            (
                &["ls", "-R", "/tmp/d"],
                "/tmp/d:\na\ne\n\n/tmp/d/e:\nf\n\n/tmp/d/e/f:\n",
                "",
                0,
            ),
            (
                &["ls", "/tmp/d/a", "/tmp/d/e"],
                "/tmp/d/a\n\n/tmp/d/e:\nf\n",
                "",
                0,
            ),
            (
                &["ls", "/nope"],
                "",
                "ls: cannot access '/nope': No such file or directory\n",
                2,
            ),
            (&["cp", "/tmp/d/a", "/tmp/b"], "", "", 0),
            (
                &["cp", "/tmp/d", "/tmp/c"],
                "",
                "cp: -r not specified; omitting directory '/tmp/d'\n",
                1,
            ),
            (&["cp", "-r", "/tmp/d", "/tmp/c"], "", "", 0),
            (&["ls", "/tmp/c/e"], "f\n", "", 0),
            (
                &["cp", "-r", "/tmp/d", "/tmp/d/e"],
                "",
                "cp: cannot copy a directory, '/tmp/d', into itself, '/tmp/d/e'\n",
                1,
            ),
            (
                &["cp", "/nope", "/tmp"],
                "",
                "cp: cannot stat '/nope': No such file or directory\n",
                1,
            ),
            (
                &["cp", "/tmp/b"],
                "",
                "cp: missing destination file operand after '/tmp/b'\n",
                1,
            ),
            (&["mv", "/tmp/b", "/tmp/d"], "", "", 0),
            (&["ls", "/tmp/d"], "a\nb\ne\n", "", 0),
            (
                &["mv", "/tmp/d", "/tmp/d/e"],
                "",
                "mv: cannot move '/tmp/d' to a subdirectory of itself, '/tmp/d/e'\n",
                1,
            ),
            (
                &["mv", "/nope", "/tmp"],
                "",
                "mv: cannot stat '/nope': No such file or directory\n",
                1,
            ),
            (
                &["rmdir", "/tmp/d"],
                "",
                "rmdir: failed to remove '/tmp/d': Directory not empty\n",
                1,
            ),
            (&["rmdir", "/tmp/d/e/f"], "", "", 0),
            (
                &["rm", "/tmp/d"],
                "",
                "rm: cannot remove '/tmp/d': Is a directory\n",
                1,
            ),
            (
                &["rm", "/nope"],
                "",
                "rm: cannot remove '/nope': No such file or directory\n",
                1,
            ),
            (&["rm", "-f", "/nope"], "", "", 0),
            (&["rm", "-rf", "/tmp/d", "/tmp/c"], "", "", 0),
            (&["ls", "/tmp"], "", "", 0),
            (
                &["rm", "-rf", "/"],
                "",
                "rm: it is dangerous to operate recursively on '/'\n",
                1,
            ),
            (&["ls", "-z"], "", "ls: invalid option -- 'z'\n", 1),
        ];
        expect(&c, cases).await;
    }

    #[tokio::test]
    async fn ls_shows_the_image_root_and_long_listings() {
        let c = container();
        let root = run_in(&c, &["ls", "/"], None).await.stdout;
        assert_eq!(
            root.lines().collect::<Vec<_>>(),
            [
                "bin", "dev", "etc", "home", "lib", "media", "mnt", "opt", "proc", "root", "run",
                "sbin", "srv", "sys", "tmp", "usr", "var"
            ]
        );
        let programs = run_in(&c, &["ls", "/usr/bin"], None).await.stdout;
        assert!(
            programs.lines().any(|p| p == "tar") && programs.lines().any(|p| p == "["),
            "{programs}"
        );
        c.files.write("/tmp/f", b"hello", false).unwrap();
        let long = run_in(&c, &["ls", "-l", "/tmp"], None).await.stdout;
        let lines: Vec<&str> = long.lines().collect();
        assert_eq!(lines[0], "total 4");
        let fields: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!((fields[0], fields[4], fields[8]), ("-rw-r--r--", "5", "f"));
    }
}
