//! The container's own files: an in-memory tree its processes share (its main process, each exec), bounded by
//! [`Limits::file_bytes`](super::Limits::file_bytes). Nothing here reaches the host's files.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// Why a file operation failed, worded as coreutils words it after the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsError {
    NotFound,
    IsADirectory,
    NotADirectory,
    Exists,
    DirectoryNotEmpty,
    /// The container's files would hold more than their limit.
    NoSpace,
    /// A directory moved into itself.
    InvalidArgument,
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotFound => "No such file or directory",
            Self::IsADirectory => "Is a directory",
            Self::NotADirectory => "Not a directory",
            Self::Exists => "File exists",
            Self::DirectoryNotEmpty => "Directory not empty",
            Self::NoSpace => "No space left on device",
            Self::InvalidArgument => "Invalid argument",
        })
    }
}

/// One entry of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Dir,
    File(Vec<u8>),
}

/// The tree: absolute normalised paths to entries; `/` is always there.
#[derive(Debug)]
struct Tree {
    nodes: BTreeMap<String, Node>,
    bytes: u64,
    limit: u64,
}

/// The files of one container, shared by its processes.
#[derive(Clone)]
pub struct Files(Arc<Mutex<Tree>>);

impl fmt::Debug for Files {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Files").finish_non_exhaustive()
    }
}

/// The directories every image has: what `ls /` shows in a small (alpine) image, and the usual ones below.
const BASE_DIRS: &[&str] = &[
    "/bin",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/media",
    "/mnt",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/share",
    "/var",
    "/var/log",
    "/var/tmp",
];

/// What a simulated program's file holds: an executable's magic, then the name of the command it runs. A copy of
/// `/bin/echo` made with `cp` runs `echo`, whatever it is called.
pub(super) fn program_image(command: &str) -> Vec<u8> {
    format!("{PROGRAM_MAGIC}{command}\n").into_bytes()
}

/// The command a file runs when it is a simulated program's (see [`program_image`]).
pub(super) fn program_of(contents: &[u8]) -> Option<&str> {
    let name = contents
        .strip_prefix(PROGRAM_MAGIC.as_bytes())?
        .strip_suffix(b"\n")?;
    std::str::from_utf8(name).ok()
}

const PROGRAM_MAGIC: &str = "\x7fELF simulated program: ";

/// `path` made absolute against `cwd`, with `.`, `..` and repeated slashes resolved.
pub(super) fn resolve(cwd: &str, path: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{cwd}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// The directory holding `path` (an absolute normalised path); `/` for `/`.
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(at) => &path[..at],
    }
}

impl Files {
    /// A container's files as its image starts them: the usual directories and `/etc/hostname`, holding at most
    /// `limit` bytes of file contents.
    pub fn new(hostname: &str, limit: u64) -> Self {
        let mut nodes = BTreeMap::from([("/".to_owned(), Node::Dir)]);
        for dir in BASE_DIRS {
            nodes.insert((*dir).to_owned(), Node::Dir);
        }
        let files = Self(Arc::new(Mutex::new(Tree {
            nodes,
            bytes: 0,
            limit,
        })));
        let _ = files.write("/etc/hostname", format!("{hostname}\n").as_bytes(), false);
        files
    }

    fn tree(&self) -> MutexGuard<'_, Tree> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The entry at `path` (absolute, normalised: see [`resolve`]).
    pub fn get(&self, path: &str) -> Option<Node> {
        self.tree().nodes.get(path).cloned()
    }

    /// Whether `path` is a directory.
    pub fn is_dir(&self, path: &str) -> bool {
        matches!(self.tree().nodes.get(path), Some(Node::Dir))
    }

    /// The contents of the file at `path`.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, FsError> {
        match self.tree().nodes.get(path) {
            Some(Node::File(bytes)) => Ok(bytes.clone()),
            Some(Node::Dir) => Err(FsError::IsADirectory),
            None => Err(FsError::NotFound),
        }
    }

    /// Write `bytes` to the file at `path`, replacing or (`append`) extending it; its directory must exist.
    pub fn write(&self, path: &str, bytes: &[u8], append: bool) -> Result<(), FsError> {
        let mut tree = self.tree();
        match tree.nodes.get(parent(path)) {
            Some(Node::Dir) => {}
            Some(Node::File(_)) => return Err(FsError::NotADirectory),
            None => return Err(FsError::NotFound),
        }
        let before = match tree.nodes.get(path) {
            Some(Node::Dir) => return Err(FsError::IsADirectory),
            Some(Node::File(old)) => old.len() as u64,
            None => 0,
        };
        let after = if append {
            before + bytes.len() as u64
        } else {
            bytes.len() as u64
        };
        if tree.bytes - before + after > tree.limit {
            return Err(FsError::NoSpace);
        }
        tree.bytes = tree.bytes - before + after;
        let entry = tree
            .nodes
            .entry(path.to_owned())
            .or_insert_with(|| Node::File(Vec::new()));
        if let Node::File(contents) = entry {
            if !append {
                contents.clear();
            }
            contents.extend_from_slice(bytes);
        }
        Ok(())
    }

    /// Make the directory `path`; with `parents`, its missing parents too and no error when it exists.
    pub fn mkdir(&self, path: &str, parents: bool) -> Result<(), FsError> {
        let mut tree = self.tree();
        if parents {
            let mut at = String::new();
            for part in path.split('/').filter(|p| !p.is_empty()) {
                at.push('/');
                at.push_str(part);
                match tree.nodes.get(&at) {
                    Some(Node::Dir) => {}
                    Some(Node::File(_)) => return Err(FsError::NotADirectory),
                    None => {
                        tree.nodes.insert(at.clone(), Node::Dir);
                    }
                }
            }
            return Ok(());
        }
        if tree.nodes.contains_key(path) {
            return Err(FsError::Exists);
        }
        match tree.nodes.get(parent(path)) {
            Some(Node::Dir) => {
                tree.nodes.insert(path.to_owned(), Node::Dir);
                Ok(())
            }
            Some(Node::File(_)) => Err(FsError::NotADirectory),
            None => Err(FsError::NotFound),
        }
    }

    /// Remove the entry at `path`; a directory only when empty, or (`recursive`) with everything under it.
    pub fn remove(&self, path: &str, recursive: bool) -> Result<(), FsError> {
        if path == "/" {
            return Err(FsError::DirectoryNotEmpty);
        }
        let mut tree = self.tree();
        let prefix = format!("{path}/");
        let under: Vec<String> = tree
            .nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .map(|(p, _)| p.clone())
            .collect();
        if !tree.nodes.contains_key(path) {
            return Err(FsError::NotFound);
        }
        if !under.is_empty() && !recursive {
            return Err(FsError::DirectoryNotEmpty);
        }
        for gone in under.iter().map(String::as_str).chain([path]) {
            if let Some(Node::File(bytes)) = tree.nodes.remove(gone) {
                tree.bytes -= bytes.len() as u64;
            }
        }
        Ok(())
    }

    /// Move the entry at `from`, with everything under it, to `to` (both absolute, normalised), replacing a file
    /// or an empty directory there; `to`'s directory must exist and must not be under `from`.
    pub fn rename(&self, from: &str, to: &str) -> Result<(), FsError> {
        if from == to {
            return Ok(());
        }
        let mut tree = self.tree();
        let moving_dir = match tree.nodes.get(from) {
            None => return Err(FsError::NotFound),
            Some(node) => matches!(node, Node::Dir),
        };
        let from_prefix = format!("{from}/");
        if from == "/" || to.starts_with(&from_prefix) {
            return Err(FsError::InvalidArgument);
        }
        match tree.nodes.get(parent(to)) {
            Some(Node::Dir) => {}
            Some(Node::File(_)) => return Err(FsError::NotADirectory),
            None => return Err(FsError::NotFound),
        }
        let to_prefix = format!("{to}/");
        match tree.nodes.get(to) {
            Some(Node::Dir) if !moving_dir => return Err(FsError::IsADirectory),
            Some(Node::Dir) => {
                let occupied = tree
                    .nodes
                    .range(to_prefix.clone()..)
                    .next()
                    .is_some_and(|(p, _)| p.starts_with(&to_prefix));
                if occupied {
                    return Err(FsError::DirectoryNotEmpty);
                }
            }
            Some(Node::File(_)) if moving_dir => return Err(FsError::NotADirectory),
            Some(Node::File(old)) => {
                let freed = old.len() as u64;
                tree.bytes -= freed;
            }
            None => {}
        }
        let moved: Vec<String> = std::iter::once(from.to_owned())
            .chain(
                tree.nodes
                    .range(from_prefix.clone()..)
                    .take_while(|(p, _)| p.starts_with(&from_prefix))
                    .map(|(p, _)| p.clone()),
            )
            .collect();
        for path in moved {
            if let Some(node) = tree.nodes.remove(&path) {
                tree.nodes
                    .insert(format!("{to}{}", &path[from.len()..]), node);
            }
        }
        Ok(())
    }

    /// The names directly in the directory `path`, sorted.
    pub fn list(&self, path: &str) -> Result<Vec<String>, FsError> {
        let tree = self.tree();
        match tree.nodes.get(path) {
            Some(Node::Dir) => {}
            Some(Node::File(_)) => return Err(FsError::NotADirectory),
            None => return Err(FsError::NotFound),
        }
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        Ok(tree
            .nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, _)| {
                let name = &p[prefix.len()..];
                (!name.is_empty() && !name.contains('/')).then(|| name.to_owned())
            })
            .collect())
    }

    /// Every entry at or under `path`, in path order: what `tar c` and `ls -R` walk.
    pub fn walk(&self, path: &str) -> Vec<(String, Node)> {
        let tree = self.tree();
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        tree.nodes
            .get(path)
            .map(|node| (path.to_owned(), node.clone()))
            .into_iter()
            .chain(
                tree.nodes
                    .range(prefix.clone()..)
                    .take_while(|(p, _)| p.starts_with(&prefix))
                    .filter(|(p, _)| p.as_str() != path)
                    .map(|(p, n)| (p.clone(), n.clone())),
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_against_the_working_directory() {
        assert_eq!(resolve("/tmp", "a/../b/./c"), "/tmp/b/c");
        assert_eq!(resolve("/tmp", "/etc//hostname"), "/etc/hostname");
        assert_eq!(resolve("/", "../.."), "/");
    }

    #[test]
    fn files_are_written_listed_and_removed_within_the_limit() {
        let files = Files::new("pod-a", 32);
        assert_eq!(files.read("/etc/hostname").unwrap(), b"pod-a\n");
        files.mkdir("/data/x", true).unwrap();
        files.write("/data/x/f", b"hello", false).unwrap();
        files.write("/data/x/f", b" you", true).unwrap();
        assert_eq!(files.read("/data/x/f").unwrap(), b"hello you");
        assert_eq!(files.list("/data").unwrap(), ["x"]);
        assert_eq!(files.write("/nope/f", b"", false), Err(FsError::NotFound));
        assert_eq!(
            files.write("/data/big", &[0; 32], false),
            Err(FsError::NoSpace)
        );
        assert_eq!(
            files.remove("/data", false),
            Err(FsError::DirectoryNotEmpty)
        );
        files.remove("/data", true).unwrap();
        assert!(files.get("/data/x/f").is_none());
        files.write("/data2", &[0; 26], false).unwrap();
    }

    #[test]
    fn entries_are_renamed_with_everything_under_them() {
        let files = Files::new("pod-a", 64);
        files.mkdir("/a/b", true).unwrap();
        files.write("/a/b/f", b"x", false).unwrap();
        files.write("/ab", b"other", false).unwrap();
        files.write("/a-b", b"", false).unwrap();
        files.rename("/a", "/c").unwrap();
        assert_eq!(files.read("/c/b/f").unwrap(), b"x");
        assert!(files.get("/a").is_none());
        assert_eq!(files.read("/ab").unwrap(), b"other");
        assert_eq!(files.rename("/c", "/c/b/d"), Err(FsError::InvalidArgument));
        assert_eq!(files.rename("/nope", "/x"), Err(FsError::NotFound));
        files.write("/g", b"12345", false).unwrap();
        files.rename("/g", "/ab").unwrap();
        assert_eq!(files.read("/ab").unwrap(), b"12345");
        // The replaced file's bytes are free again: 6 + 1 + 5 of 64 are used.
        files.write("/big", &[0; 52], false).unwrap();
    }
}
