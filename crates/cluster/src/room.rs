//! Checking, before the store opens, that the state directory can take writes. On a full disk SQLite reports only
//! "disk I/O error" or a failed bootstrap write without a path; a probe write reports the operating system's own
//! cause (no space, quota, read-only) and the directory it concerns, before anything is half written.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use rand::Rng;

/// How much the probe writes: room for a new store with the cluster's CRDs and roles, its write-ahead log, the
/// certificates and the kubeconfig (about 1.5 MiB), with some to spare.
pub const RESERVE: usize = 4 << 20;

/// Fail with the cause and the path unless `dir` has room for [`RESERVE`] more bytes. The probe is random data, so a
/// compressing filesystem cannot store it in less, and it is removed again.
pub fn ensure(dir: &Path) -> anyhow::Result<()> {
    let probe = dir.join(".room-check");
    let mut data = vec![0u8; RESERVE];
    rand::rng().fill(&mut data[..]);
    let written = std::fs::File::create(&probe).and_then(|mut file| file.write_all(&data));
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
