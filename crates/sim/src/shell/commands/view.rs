//! The files a command sees: the container's own, and the node's behind its `hostPath` mounts — the containerd
//! configuration, the installed shims and the runtime's socket, the node files the simulation models. The
//! container's own files come first; `/dev/null` reads empty.

use super::{NAMES, known};
use crate::machine::Machine;
use crate::shell::fs::{self, FsError, Node};
use crate::shell::io::Cx;

/// The node's runtime socket, where crictl looks when no endpoint is given.
pub(super) const CONTAINERD_SOCKET: &str = "/run/containerd/containerd.sock";

/// Directories whose files `ls -l` shows as executable and `test -x` takes for programs; the simulated commands
/// are in them, as a small image's applets are.
const PROGRAM_DIRS: &[&str] = &["/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"];

/// The directory `path` is in and its name there.
fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) => ("/", &path[1..]),
        Some(at) => (&path[..at], &path[at + 1..]),
        None => ("/", path),
    }
}

/// Whether the file at `path` reads as a program: it is in one of [`PROGRAM_DIRS`].
pub(super) fn is_program(path: &str) -> bool {
    PROGRAM_DIRS.contains(&split(path).0)
}

/// What a path holds, as a command sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Entry {
    Dir,
    File(Vec<u8>),
}

/// The machine of the container's node, read afresh: what the engine did to it since the last command shows.
pub(super) fn machine(cx: &Cx<'_>) -> Option<Machine> {
    cx.container.machines.get(&cx.container.node)
}

/// The node's files the simulation models, by their path on the node: its containerd configuration, its shims
/// (their contents are not modelled) and its runtime socket.
fn node_files(machine: &Machine) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![
        (
            machine.containerd.config_path.clone(),
            machine.containerd.config.clone().into_bytes(),
        ),
        (CONTAINERD_SOCKET.to_owned(), Vec::new()),
    ];
    files.extend(
        machine
            .shims
            .values()
            .map(|path| (path.clone(), Vec::new())),
    );
    files
}

/// What the node holds at `path` (absolute, normalised) in the container, when a mount covers it.
fn on_node(cx: &Cx<'_>, path: &str) -> Option<Entry> {
    let node_path = cx.container.mounts.on_node(path)?;
    let machine = machine(cx)?;
    let files = node_files(&machine);
    if let Some((_, bytes)) = files.iter().find(|(p, _)| *p == node_path) {
        return Some(Entry::File(bytes.clone()));
    }
    let prefix = if node_path == "/" {
        "/".to_owned()
    } else {
        format!("{node_path}/")
    };
    files
        .iter()
        .any(|(p, _)| p.starts_with(&prefix))
        .then_some(Entry::Dir)
}

/// The entry at `path` (absolute, normalised: see [`resolve`](crate::shell::fs::resolve)).
pub(super) fn entry(cx: &Cx<'_>, path: &str) -> Option<Entry> {
    if path == "/dev/null" {
        return Some(Entry::File(Vec::new()));
    }
    match cx.container.files.get(path) {
        Some(Node::Dir) => Some(Entry::Dir),
        Some(Node::File(bytes)) => Some(Entry::File(bytes)),
        None if is_program(path) && known(split(path).1) => {
            Some(Entry::File(fs::program_image(split(path).1)))
        }
        None => on_node(cx, path),
    }
}

/// The contents of the file at `path`.
pub(super) fn read(cx: &Cx<'_>, path: &str) -> Result<Vec<u8>, FsError> {
    match entry(cx, path) {
        Some(Entry::File(bytes)) => Ok(bytes),
        Some(Entry::Dir) => Err(FsError::IsADirectory),
        None => Err(FsError::NotFound),
    }
}

/// The names directly in the directory `path`, sorted: the container's own and, under a mount, the node's.
pub(super) fn list(cx: &Cx<'_>, path: &str) -> Result<Vec<String>, FsError> {
    let own = cx.container.files.list(path);
    let mut names = own.clone().unwrap_or_default();
    if PROGRAM_DIRS.contains(&path) {
        names.extend(NAMES.iter().map(|n| (*n).to_owned()));
    }
    let mut mounted = false;
    if let (Some(node_path), Some(machine)) = (cx.container.mounts.on_node(path), machine(cx)) {
        let prefix = format!("{}/", node_path.trim_end_matches('/'));
        for (file, _) in node_files(&machine) {
            if let Some(rest) = file.strip_prefix(&prefix) {
                mounted = true;
                let name = rest.split('/').next().unwrap_or(rest).to_owned();
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    if !mounted {
        own?;
    }
    names.sort();
    names.dedup();
    Ok(names)
}
