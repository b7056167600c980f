//! A command's input, line by line or chunk by chunk, alike whether it is its standard input (read as it arrives)
//! or a file's contents.

use super::view;
use crate::shell::fs::{FsError, resolve};
use crate::shell::io::{Cx, Input};

/// Standard input, or the bytes of a file.
pub(super) enum Reader<'a> {
    Stdin(&'a mut Input),
    Bytes { bytes: Vec<u8>, at: usize },
}

impl<'a> Reader<'a> {
    /// A file's contents.
    pub(super) fn bytes(bytes: Vec<u8>) -> Self {
        Self::Bytes { bytes, at: 0 }
    }

    /// The next line with its `\n` (the last may have none); None at the end.
    pub(super) async fn line(&mut self) -> Option<Vec<u8>> {
        match self {
            Self::Stdin(input) => input.line().await,
            Self::Bytes { bytes, at } => {
                let rest = bytes.get(*at..).filter(|r| !r.is_empty())?;
                let len = rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(rest.len(), |i| i + 1);
                let line = rest[..len].to_vec();
                *at += len;
                Some(line)
            }
        }
    }

    /// The next bytes; None at the end.
    pub(super) async fn chunk(&mut self) -> Option<Vec<u8>> {
        match self {
            Self::Stdin(input) => input.chunk().await,
            Self::Bytes { bytes, at } => {
                let rest = bytes.get(*at..).filter(|r| !r.is_empty())?.to_vec();
                *at = bytes.len();
                Some(rest)
            }
        }
    }
}

/// `line` without its line end.
pub(super) fn chomp(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

/// The contents of the operand `name` of a command (resolved against the working directory), or None for `-`,
/// which reads standard input.
pub(super) fn load(cx: &Cx<'_>, name: &str) -> Result<Option<Vec<u8>>, FsError> {
    if name == "-" {
        return Ok(None);
    }
    view::read(cx, &resolve(cx.cwd, name)).map(Some)
}

/// Bytes `writer` produced so far, against the process's output limit: a command that writes without reading
/// (`yes`, `seq`) stops producing once it has written that much, even to `/dev/null`, which spends no budget.
pub(super) struct Produced {
    written: u64,
    limit: u64,
}

impl Produced {
    /// Nothing produced yet, by a process of `cx`.
    pub(super) fn new(cx: &Cx<'_>) -> Self {
        Self {
            written: 0,
            limit: cx.container.limits.output_bytes,
        }
    }

    /// Count `bytes` more; false once the process has produced as much as it may write.
    pub(super) fn add(&mut self, bytes: usize) -> bool {
        self.written += bytes as u64;
        self.written <= self.limit
    }
}
