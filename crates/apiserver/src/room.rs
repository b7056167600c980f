//! Checking, before the store opens, that the state directory can take writes. On a full disk SQLite reports only
//! "disk I/O error" or a failed bootstrap write without a path; a probe write reports the operating system's own
//! cause (no space, quota, read-only) and the directory it concerns, before anything is half written. The probe is
//! created where nothing is ([`crate::private_files::create`]), so a link left at its name is never written through.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use rand::Rng;

use crate::private_files::{self, Readers};

/// How much the probe writes: room for a new store with the cluster's CRDs and roles, its write-ahead log, the
/// certificates and the kubeconfig (about 1.5 MiB), with some to spare.
pub const RESERVE: usize = 4 << 20;

/// Fail with the cause and the path unless `dir` (a directory [`crate::private_files::private_dir`] accepted) has
/// room for [`RESERVE`] more bytes. The probe is random data, so a compressing filesystem cannot store it in less,
/// and it is removed again; one left by a start that was killed (or anything else at its name) goes first.
pub fn ensure(dir: &Path) -> anyhow::Result<()> {
    let probe = dir.join(".room-check");
    match std::fs::remove_file(&probe) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", probe.display()));
        }
        _ => {}
    }
    let mut data = vec![0u8; RESERVE];
    rand::rng().fill(&mut data[..]);
    let written = private_files::create(&probe, Readers::Owner).and_then(|mut file| {
        file.write_all(&data)
            .with_context(|| format!("writing {}", probe.display()))
    });
    let removed = std::fs::remove_file(&probe);
    written.with_context(|| {
        format!(
            "the state directory {} has no room for {} MiB (writing {} failed)",
            dir.display(),
            RESERVE >> 20,
            probe.display()
        )
    })?;
    removed.with_context(|| format!("removing {}", probe.display()))
}
