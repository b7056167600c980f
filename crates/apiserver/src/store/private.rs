//! The store's files are private to their owner: they hold every Secret in clear. The directory must be the user's
//! and is made 0700, the database 0600, when the store opens, also when an earlier version left them readable by
//! others ([`crate::private_files`]). SQLite gives its write-ahead log and shared-memory files the database file's
//! mode, and they are corrected here too in case they were left from before; none of them is opened through a
//! symbolic link.

use std::path::Path;

use crate::private_files;

/// The files of a store in a directory: the database and what SQLite keeps beside it.
pub(super) const STORE_FILES: &[&str] = &["store.db", "store.db-wal", "store.db-shm"];

/// Make `dir` and the store's files in it private to their owner, creating the database file (empty, 0600) when
/// it does not exist yet so SQLite never creates it with the process's default mode. A directory or file of
/// someone else's, or one others may write to, is refused.
pub(super) fn make_private(dir: &Path) -> anyhow::Result<()> {
    private_files::private_dir(dir)?;
    for (index, file) in STORE_FILES.iter().enumerate() {
        let path = dir.join(file);
        // The database is created when missing; SQLite's own files are left for SQLite to create.
        if index == 0 || std::fs::symlink_metadata(&path).is_ok() {
            private_files::append(&path)?;
        }
    }
    Ok(())
}
