//! The store's files are private to their owner: they hold every Secret in clear. The directory is made 0700 and
//! the database 0600 when the store opens, also when an earlier version left them readable by others. SQLite gives
//! its write-ahead log and shared-memory files the database file's mode, and they are corrected here too in case
//! they were left from before.

use std::fs;
use std::io;
use std::path::Path;

/// The files of a store in a directory: the database and what SQLite keeps beside it.
pub const STORE_FILES: &[&str] = &["store.db", "store.db-wal", "store.db-shm"];

/// Make `dir` and the store's files in it private to their owner, creating the database file (empty, 0600) when
/// it does not exist yet so SQLite never creates it with the process's default mode.
#[cfg(unix)]
pub fn make_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    restrict(dir, 0o700)?;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join(STORE_FILES[0]))?;
    for file in STORE_FILES {
        match fs::metadata(dir.join(file)) {
            Ok(_) => restrict(&dir.join(file), 0o600)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    return Ok(());

    /// Take away every permission `path` has beyond `mode`.
    fn restrict(path: &Path, mode: u32) -> io::Result<()> {
        let current = fs::metadata(path)?.permissions().mode() & 0o777;
        if current & !mode != 0 {
            fs::set_permissions(path, fs::Permissions::from_mode(current & mode))?;
        }
        Ok(())
    }
}

/// Elsewhere the platform's own access control applies.
#[cfg(not(unix))]
pub fn make_private(_dir: &Path) -> io::Result<()> {
    Ok(())
}
