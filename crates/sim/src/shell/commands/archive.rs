//! `tar`: archives created from, extracted into and listed against the container's own files, in memory, as GNU
//! tar does it — old-style bundled letters (`xf`, `cvzf`), dashed ones (`-xf`) and the long options `kubectl cp`
//! and kube-rs pass. Members never land outside the container's `/`: leading `/` and `../` are removed from their
//! names, and names with `..` inside are skipped.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use tar::{Builder, EntryType, Header};

use super::view::{self, Entry};
use super::{Status, complain};
use crate::shell::fs::{FsError, Node, resolve};
use crate::shell::io::{Cx, OutputLimit};

/// What `tar` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Create,
    Extract,
    List,
}

/// What `tar` was asked.
#[derive(Debug, Default)]
struct Request {
    mode: Option<Mode>,
    /// The archive (`-` or none: standard input or output).
    file: Option<String>,
    /// Where member names are relative to.
    directory: Option<String>,
    gzip: bool,
    verbose: bool,
    to_stdout: bool,
    names: Vec<String>,
}

/// The letters that are options of their own and change nothing here (permissions, owners, times, links).
const IGNORED_LETTERS: &str = "mopPhkUS";

/// The long options that change nothing here.
const IGNORED_LONG: &[&str] = &[
    "no-same-permissions",
    "no-same-owner",
    "same-permissions",
    "same-owner",
    "preserve-permissions",
    "numeric-owner",
    "touch",
    "overwrite",
    "no-overwrite-dir",
    "keep-old-files",
    "absolute-names",
    "dereference",
];

impl Request {
    /// Take one option letter; `value` gives the option's argument to those that take one.
    fn letter(
        &mut self,
        letter: char,
        value: &mut dyn FnMut() -> Option<String>,
    ) -> Result<(), String> {
        match letter {
            'c' => self.mode = Some(Mode::Create),
            'x' => self.mode = Some(Mode::Extract),
            't' => self.mode = Some(Mode::List),
            'z' => self.gzip = true,
            'v' => self.verbose = true,
            'O' => self.to_stdout = true,
            'f' => self.file = Some(value().ok_or("option requires an argument -- 'f'")?),
            'C' => self.directory = Some(value().ok_or("option requires an argument -- 'C'")?),
            l if IGNORED_LETTERS.contains(l) => {}
            other => return Err(format!("invalid option -- '{other}'")),
        }
        Ok(())
    }

    /// Read `args` as GNU tar does.
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut request = Self::default();
        let mut rest: std::collections::VecDeque<String> = args.iter().cloned().collect();
        if let Some(first) = rest
            .front()
            .filter(|a| !a.starts_with('-') && !a.is_empty())
            .cloned()
        {
            rest.pop_front();
            for letter in first.chars() {
                request.letter(letter, &mut || rest.pop_front())?;
            }
        }
        while let Some(arg) = rest.pop_front() {
            if let Some(long) = arg.strip_prefix("--") {
                let (name, attached) = match long.split_once('=') {
                    Some((name, value)) => (name, Some(value.to_owned())),
                    None => (long, None),
                };
                let mut value = || attached.clone().or_else(|| rest.pop_front());
                match name {
                    "create" => request.mode = Some(Mode::Create),
                    "extract" | "get" => request.mode = Some(Mode::Extract),
                    "list" => request.mode = Some(Mode::List),
                    "gzip" | "gunzip" | "ungzip" => request.gzip = true,
                    "verbose" => request.verbose = true,
                    "to-stdout" => request.to_stdout = true,
                    "file" => {
                        request.file = Some(value().ok_or("option '--file' requires an argument")?)
                    }
                    "directory" => {
                        request.directory =
                            Some(value().ok_or("option '--directory' requires an argument")?)
                    }
                    "" => request.names.extend(rest.drain(..)),
                    name if IGNORED_LONG.contains(&name) || name == "warning" => {}
                    _ => return Err(format!("unrecognized option '{arg}'")),
                }
            } else if let Some(letters) = arg.strip_prefix('-').filter(|l| !l.is_empty()) {
                for (at, letter) in letters.char_indices() {
                    let attached = &letters[at + letter.len_utf8()..];
                    if matches!(letter, 'f' | 'C') {
                        let value = if attached.is_empty() {
                            rest.pop_front()
                        } else {
                            Some(attached.to_owned())
                        };
                        request.letter(letter, &mut || value.clone())?;
                        break;
                    }
                    request.letter(letter, &mut || None)?;
                }
            } else {
                request.names.push(arg);
            }
        }
        Ok(request)
    }
}

/// What one run of `tar` reports: its messages go out as they come; whether one was an error ends it with 2.
struct Run<'c, 'a> {
    cx: &'c mut Cx<'a>,
    failed: bool,
    warned_absolute: bool,
    warned_parent: bool,
}

impl Run<'_, '_> {
    fn error(&mut self, message: &str) -> Result<(), OutputLimit> {
        self.failed = true;
        complain(self.cx, "tar", message)
    }

    /// The status `tar` ends with, saying so when an error went before.
    fn finish(&mut self) -> Status {
        if self.failed {
            complain(
                self.cx,
                "tar",
                "Exiting with failure status due to previous errors",
            )?;
            return Ok(2);
        }
        Ok(0)
    }

    /// `name` without what would take it out of the directory it is extracted into; None (said) when it has
    /// `..` inside.
    fn safe_name(&mut self, name: &str) -> Result<Option<String>, OutputLimit> {
        let mut rest = name;
        if rest.starts_with('/') {
            rest = rest.trim_start_matches('/');
            if !self.warned_absolute {
                self.warned_absolute = true;
                complain(self.cx, "tar", "Removing leading `/' from member names")?;
            }
        }
        let mut parents = String::new();
        while let Some(after) = rest.strip_prefix("../") {
            parents.push_str("../");
            rest = after.trim_start_matches('/');
        }
        if !parents.is_empty() && !self.warned_parent {
            self.warned_parent = true;
            complain(
                self.cx,
                "tar",
                &format!("Removing leading `{parents}' from member names"),
            )?;
        }
        if rest.split('/').any(|part| part == "..") {
            self.error(&format!("{name}: Member name contains '..'"))?;
            return Ok(None);
        }
        Ok(Some(rest.to_owned()))
    }
}

/// The most a `tar` reads of an archive: what the container's files may hold, and room for the headers.
fn archive_limit(cx: &Cx<'_>) -> usize {
    let files = usize::try_from(cx.container.limits.file_bytes).unwrap_or(usize::MAX);
    files.saturating_add(files / 2).saturating_add(1 << 20)
}

/// `bytes` gunzipped when they are gzip data (tar reads compressed archives whether or not it is told), no more
/// than `limit` bytes of it; None when it is bigger.
pub(super) fn maybe_gunzip(
    bytes: Vec<u8>,
    limit: usize,
) -> Result<Option<Vec<u8>>, std::io::Error> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(Some(bytes));
    }
    let mut out = Vec::new();
    MultiGzDecoder::new(&bytes[..])
        .take(limit as u64 + 1)
        .read_to_end(&mut out)?;
    Ok((out.len() <= limit).then_some(out))
}

/// `bytes` gzipped.
pub(super) fn gzipped(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    // Writing to a vector cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// `tar`.
pub(super) async fn tar(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let request = match Request::parse(args) {
        Ok(request) => request,
        Err(why) => {
            complain(cx, "tar", &why)?;
            complain(
                cx,
                "tar",
                "Try 'tar --help' or 'tar --usage' for more information.",
            )?;
            return Ok(2);
        }
    };
    let Some(mode) = request.mode else {
        complain(
            cx,
            "tar",
            "You must specify one of the '-Acdtrux', '--delete' or '--test-label' options",
        )?;
        return Ok(2);
    };
    let directory = resolve(cx.cwd, request.directory.as_deref().unwrap_or("."));
    if !matches!(view::entry(cx, &directory), Some(Entry::Dir)) {
        let shown = request.directory.as_deref().unwrap_or(".");
        complain(
            cx,
            "tar",
            &format!("{shown}: Cannot chdir: No such file or directory"),
        )?;
        complain(cx, "tar", "Error is not recoverable: exiting now")?;
        return Ok(2);
    }
    let mut run = Run {
        cx,
        failed: false,
        warned_absolute: false,
        warned_parent: false,
    };
    match mode {
        Mode::Create => create(&mut run, &request, &directory).await,
        Mode::Extract | Mode::List => read_archive(&mut run, &request, &directory, mode).await,
    }
}

/// A member's header: owned by root, its mode and size set, its time the host's clock now.
fn header(kind: EntryType, mode: u32, size: u64) -> Header {
    let mut header = Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_uid(0);
    header.set_gid(0);
    // Names this short always fit.
    let _ = header.set_username("root");
    let _ = header.set_groupname("root");
    header.set_mtime(u64::try_from(jiff::Timestamp::now().as_second()).unwrap_or(0));
    header
}

/// `tar c`: the named files and directories (with everything under them) into an archive.
async fn create(run: &mut Run<'_, '_>, request: &Request, directory: &str) -> Status {
    if request.names.is_empty() {
        run.error("Cowardly refusing to create an empty archive")?;
        complain(
            run.cx,
            "tar",
            "Try 'tar --help' or 'tar --usage' for more information.",
        )?;
        return Ok(2);
    }
    let to_stdout = request.file.as_deref().is_none_or(|f| f == "-");
    let mut builder = Builder::new(Vec::new());
    let mut listed = String::new();
    for name in &request.names {
        let path = resolve(directory, name);
        let mut member = name.trim_end_matches('/').to_owned();
        if member.is_empty() {
            member = "/".into();
        }
        if member.starts_with('/') {
            member = member.trim_start_matches('/').to_owned();
            if !run.warned_absolute {
                run.warned_absolute = true;
                complain(run.cx, "tar", "Removing leading `/' from member names")?;
            }
        }
        let found: Vec<(String, Node)> = match view::entry(run.cx, &path) {
            None => {
                run.error(&format!("{name}: Cannot stat: No such file or directory"))?;
                continue;
            }
            Some(Entry::File(bytes)) => vec![(path.clone(), Node::File(bytes))],
            Some(Entry::Dir) => run.cx.container.files.walk(&path),
        };
        for (at, node) in found {
            let suffix = &at[path.len().min(at.len())..];
            let suffix = if path == "/" && at != "/" {
                at.as_str()
            } else {
                suffix
            };
            let joined = format!("{member}{suffix}");
            let joined = joined.trim_start_matches('/');
            let appended = match &node {
                Node::Dir => {
                    let shown = if joined.is_empty() {
                        "./".to_owned()
                    } else {
                        format!("{joined}/")
                    };
                    listed.push_str(&format!("{shown}\n"));
                    let mut h = header(EntryType::Directory, 0o755, 0);
                    builder.append_data(&mut h, &shown, std::io::empty())
                }
                Node::File(bytes) => {
                    listed.push_str(&format!("{joined}\n"));
                    let mut h = header(EntryType::Regular, 0o644, bytes.len() as u64);
                    builder.append_data(&mut h, joined, &bytes[..])
                }
            };
            if let Err(why) = appended {
                run.error(&format!("{joined}: Cannot add: {why}"))?;
            }
        }
    }
    if request.verbose {
        if to_stdout {
            run.cx.stderr.print(&listed)?;
        } else {
            run.cx.stdout.print(&listed)?;
        }
    }
    let mut archive = builder.into_inner().unwrap_or_default();
    if request.gzip {
        archive = gzipped(&archive);
    }
    match request.file.as_deref() {
        None | Some("-") => run.cx.stdout.write(&archive)?,
        Some(file) => {
            let at = resolve(run.cx.cwd, file);
            if let Err(why) = run.cx.container.files.write(&at, &archive, false) {
                let verb = if why == FsError::NoSpace {
                    "Cannot write"
                } else {
                    "Cannot open"
                };
                run.error(&format!("{file}: {verb}: {why}"))?;
            }
        }
    }
    run.finish()
}

/// A member's line in `tar tv`.
fn long_listing(header: &Header, name: &str) -> String {
    let kind = match header.entry_type() {
        EntryType::Directory => 'd',
        EntryType::Symlink => 'l',
        EntryType::Link => 'h',
        _ => '-',
    };
    let mode = header.mode().unwrap_or(0o644);
    let bits: String = (0..9)
        .map(|i| {
            let on = mode & (0o400 >> i) != 0;
            match (on, i % 3) {
                (false, _) => '-',
                (true, 0) => 'r',
                (true, 1) => 'w',
                (true, _) => 'x',
            }
        })
        .collect();
    let owner = header
        .username()
        .ok()
        .flatten()
        .map_or_else(|| header.uid().unwrap_or(0).to_string(), str::to_owned);
    let group = header
        .groupname()
        .ok()
        .flatten()
        .map_or_else(|| header.gid().unwrap_or(0).to_string(), str::to_owned);
    let when =
        jiff::Timestamp::from_second(i64::try_from(header.mtime().unwrap_or(0)).unwrap_or(0))
            .map(|t| {
                jiff::fmt::strtime::format("%Y-%m-%d %H:%M", &t.to_zoned(jiff::tz::TimeZone::UTC))
                    .unwrap_or_default()
            })
            .unwrap_or_default();
    format!(
        "{kind}{bits} {owner}/{group} {:>9} {when} {name}\n",
        header.size().unwrap_or(0)
    )
}

/// Whether the member `name` is one of `wanted` or under one (no `wanted`: every member).
fn wanted_index(wanted: &[String], name: &str) -> Option<Option<usize>> {
    if wanted.is_empty() {
        return Some(None);
    }
    let name = name.trim_end_matches('/');
    wanted
        .iter()
        .position(|w| {
            let w = w.trim_end_matches('/');
            name == w || name.starts_with(&format!("{w}/"))
        })
        .map(Some)
}

/// `tar x` and `tar t`: the archive's members into the directory, or their names.
async fn read_archive(
    run: &mut Run<'_, '_>,
    request: &Request,
    directory: &str,
    mode: Mode,
) -> Status {
    let limit = archive_limit(run.cx);
    let raw = match request.file.as_deref() {
        None | Some("-") => run.cx.stdin.read_to_end(limit).await,
        Some(file) => match view::read(run.cx, &resolve(run.cx.cwd, file)) {
            Ok(bytes) => Some(bytes),
            Err(why) => {
                run.error(&format!("{file}: Cannot open: {why}"))?;
                complain(run.cx, "tar", "Error is not recoverable: exiting now")?;
                return Ok(2);
            }
        },
    };
    let bytes = match raw.map(|raw| maybe_gunzip(raw, limit)) {
        Some(Ok(Some(bytes))) => bytes,
        None | Some(Ok(None)) => {
            run.error("Cannot write: No space left on device")?;
            return run.finish();
        }
        Some(Err(_)) => {
            run.error("Child returned status 1")?;
            return run.finish();
        }
    };
    let mut archive = tar::Archive::new(&bytes[..]);
    let mut found = vec![false; request.names.len()];
    let entries = match archive.entries() {
        Ok(entries) => entries,
        Err(_) => {
            run.error("This does not look like a tar archive")?;
            return run.finish();
        }
    };
    let mut listed = String::new();
    for entry in entries {
        let mut entry = match entry {
            Ok(entry) => entry,
            Err(_) => {
                run.error("This does not look like a tar archive")?;
                break;
            }
        };
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Some(index) = wanted_index(&request.names, &name) else {
            continue;
        };
        if let Some(i) = index {
            found[i] = true;
        }
        if mode == Mode::List {
            if request.verbose {
                listed.push_str(&long_listing(entry.header(), &name));
            } else {
                listed.push_str(&format!("{name}\n"));
            }
            continue;
        }
        let Some(safe) = run.safe_name(&name)? else {
            continue;
        };
        if request.verbose {
            run.cx.stdout.print(&format!("{name}\n"))?;
        }
        let at = resolve(directory, &safe);
        let kind = entry.header().entry_type();
        let mut contents = Vec::new();
        if kind.is_file() && entry.read_to_end(&mut contents).is_err() {
            run.error("Unexpected EOF in archive")?;
            break;
        }
        if request.to_stdout {
            run.cx.stdout.write(&contents)?;
            continue;
        }
        let files = &run.cx.container.files;
        let parent = resolve(&at, "..");
        let outcome = match kind {
            EntryType::Directory => files
                .mkdir(&at, true)
                .map_err(|why| format!("{name}: Cannot mkdir: {why}")),
            EntryType::Link => {
                let target = entry
                    .link_name_bytes()
                    .map(|t| String::from_utf8_lossy(&t).into_owned());
                let target = target.map(|t| resolve(directory, t.trim_start_matches('/')));
                match target.map(|t| files.read(&t)) {
                    Some(Ok(bytes)) => files
                        .mkdir(&parent, true)
                        .and_then(|()| files.write(&at, &bytes, false))
                        .map_err(|why| format!("{name}: Cannot hard link: {why}")),
                    _ => Err(format!(
                        "{name}: Cannot hard link: No such file or directory"
                    )),
                }
            }
            EntryType::Symlink => Err(format!(
                "{name}: Cannot create symlink: Operation not supported"
            )),
            kind if kind.is_file() => files
                .mkdir(&parent, true)
                .and_then(|()| files.write(&at, &contents, false))
                .map_err(|why| match why {
                    FsError::NoSpace => format!("{name}: Cannot write: {why}"),
                    _ => format!("{name}: Cannot open: {why}"),
                }),
            _ => Err(format!("{name}: Cannot mknod: Operation not permitted")),
        };
        if let Err(why) = outcome {
            run.error(&why)?;
        }
    }
    run.cx.stdout.print(&listed)?;
    for (name, found) in request.names.iter().zip(found) {
        if !found {
            run.error(&format!("{name}: Not found in archive"))?;
        }
    }
    run.finish()
}

#[cfg(test)]
mod tests;
