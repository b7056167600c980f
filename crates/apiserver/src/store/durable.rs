//! The durable half of the store: SQLite in WAL mode, in the spirit of k3s's kine.
//!
//! Each write is one transaction that upserts (or deletes) the object row, appends the event to the log and
//! advances the stored resourceVersion. A write is acknowledged to the client only after that transaction has
//! committed, so it survives the process being killed (`kill -9`). With `synchronous=NORMAL` a power loss may lose
//! the last transactions but never corrupts the database; see the README.
//!
//! On start the objects and the newest events are loaded back, so resourceVersions keep increasing across restarts
//! and a watch that resumes from a recent resourceVersion sees exactly the events it missed.
//!
//! Each object row also keeps when it was last written (wall clock), so objects that expire a while after their
//! last write ([`super::expiry`]) expire on time across restarts, downtime included.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde_json::Value;

/// An open database.
pub struct Durable {
    conn: Connection,
}

/// One object row loaded at start.
pub struct LoadedObject {
    /// Resource key (`group/plural`).
    pub resource: String,
    /// The object.
    pub value: Value,
    /// Its resourceVersion.
    pub rv: u64,
}

/// One event row loaded at start.
pub struct LoadedEvent {
    /// resourceVersion of the write.
    pub rv: u64,
    /// Resource key.
    pub resource: String,
    /// Event type code.
    pub kind: i64,
    /// The object after the write.
    pub value: Value,
}

/// When one object was last written.
pub struct WriteTime {
    /// Its namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its resourceVersion.
    pub rv: u64,
    /// Milliseconds since the Unix epoch; `None` for a row written before the store recorded it.
    pub written: Option<i64>,
}

/// Everything an earlier run left, each row already turned into what the caller keeps of it.
pub struct Loaded<O, E> {
    /// Newest resourceVersion committed.
    pub rv: u64,
    /// All live objects.
    pub objects: Vec<O>,
    /// The newest events, oldest first.
    pub events: Vec<E>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, body BLOB NOT NULL, written INTEGER,
    PRIMARY KEY (resource, namespace, name)
);
CREATE TABLE IF NOT EXISTS events (
    rv INTEGER PRIMARY KEY, resource TEXT NOT NULL, kind INTEGER NOT NULL, body BLOB NOT NULL
);
";

impl Durable {
    /// Open (or create) `dir/store.db`, private to its owner, and load its content: every object, and the newest
    /// events up to `history_limit` of them and `history_bytes` of their bodies, so a restart holds no more history
    /// than the server keeps in memory while it runs.
    ///
    /// Each row is handed to `object` or `event` as soon as it is parsed, and only what those keep stays: a parsed
    /// tree costs about ten times its JSON, so parsing the whole history before keeping it serialised made every
    /// restart peak at several hundred MiB for a 32 MiB history, and left the memory of the run that followed
    /// fragmented and higher.
    pub fn open<O, E>(
        dir: &Path,
        history_limit: usize,
        history_bytes: usize,
        mut object: impl FnMut(LoadedObject) -> O,
        mut event: impl FnMut(LoadedEvent) -> E,
    ) -> anyhow::Result<(Self, Loaded<O, E>)> {
        super::private::make_private(dir)?;
        // Never through a symbolic link, whoever put one there after the check above.
        let conn = Connection::open_with_flags(
            dir.join("store.db"),
            OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )?;
        reclaim_space_on_compaction(&conn)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(SCHEMA)?;
        add_written_column(&conn)?;
        let rv: u64 = conn
            .query_row("SELECT value FROM meta WHERE key = 'rv'", [], |r| {
                r.get::<_, i64>(0)
            })
            .optional()?
            .unwrap_or(0) as u64;
        let mut objects = Vec::new();
        {
            let mut stmt = conn.prepare("SELECT resource, rv, body FROM objects")?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                ))
            })?;
            for row in rows {
                let (resource, rv, body) = row?;
                if let Ok(value) = serde_json::from_slice(&body) {
                    objects.push(object(LoadedObject {
                        resource,
                        value,
                        rv: rv as u64,
                    }));
                }
            }
        }
        let mut events = Vec::new();
        {
            let mut stmt = conn
                .prepare("SELECT rv, resource, kind, body FROM events ORDER BY rv DESC LIMIT ?1")?;
            let rows = stmt.query_map([history_limit as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })?;
            let mut loaded_bytes = 0;
            for row in rows {
                let (rv, resource, kind, body) = row?;
                loaded_bytes += body.len();
                if loaded_bytes > history_bytes && !events.is_empty() {
                    break;
                }
                if let Ok(value) = serde_json::from_slice(&body) {
                    events.push(event(LoadedEvent {
                        rv: rv as u64,
                        resource,
                        kind,
                        value,
                    }));
                }
            }
            events.reverse();
        }
        Ok((
            Self { conn },
            Loaded {
                rv,
                objects,
                events,
            },
        ))
    }

    /// Commit one write made at `written` (milliseconds since the Unix epoch): object row, event row and
    /// resourceVersion, atomically.
    #[allow(clippy::too_many_arguments)]
    pub fn commit(
        &mut self,
        resource: &str,
        namespace: &str,
        name: &str,
        kind: i64,
        rv: u64,
        body: &[u8],
        written: i64,
    ) -> rusqlite::Result<()> {
        // Statements are prepared once per connection and reused instead of parsed again on every write.
        let tx = self.conn.transaction()?;
        if kind == 2 {
            tx.prepare_cached(
                "DELETE FROM objects WHERE resource = ?1 AND namespace = ?2 AND name = ?3",
            )?
            .execute(params![resource, namespace, name])?;
        } else {
            tx.prepare_cached(
                "INSERT INTO objects (resource, namespace, name, rv, body, written) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (resource, namespace, name)
                 DO UPDATE SET rv = excluded.rv, body = excluded.body, written = excluded.written",
            )?
            .execute(params![resource, namespace, name, rv as i64, body, written])?;
        }
        tx.prepare_cached("INSERT INTO events (rv, resource, kind, body) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![rv as i64, resource, kind, body])?;
        tx.prepare_cached(
            "INSERT INTO meta (key, value) VALUES ('rv', ?1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )?
        .execute(params![rv as i64])?;
        tx.commit()
    }

    /// When each object of `resource` was last written: namespace, name, resourceVersion and milliseconds since
    /// the Unix epoch (unknown for rows an older version of the store wrote).
    pub fn write_times(&self, resource: &str) -> rusqlite::Result<Vec<WriteTime>> {
        let mut stmt = self
            .conn
            .prepare("SELECT namespace, name, rv, written FROM objects WHERE resource = ?1")?;
        let rows = stmt.query_map([resource], |r| {
            Ok(WriteTime {
                namespace: r.get(0)?,
                name: r.get(1)?,
                rv: r.get::<_, i64>(2)? as u64,
                written: r.get(3)?,
            })
        })?;
        rows.collect()
    }

    /// Drop events at or below `through`; they can no longer be resumed from.
    /// The freed pages go back to the file system and the write-ahead log is emptied, so the files stay near the
    /// live objects and the history kept.
    pub fn compact(&mut self, through: u64) -> rusqlite::Result<()> {
        let deleted = self
            .conn
            .execute("DELETE FROM events WHERE rv <= ?1", params![through as i64])?;
        if deleted > 0 {
            // Each step of the statement frees pages; it is done when it returns no more rows.
            let mut vacuum = self.conn.prepare_cached("PRAGMA incremental_vacuum")?;
            let mut rows = vacuum.query([])?;
            while rows.next()?.is_some() {}
            self.conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        }
        Ok(())
    }
}

/// Have deleted rows' pages returned to the file system when asked (`incremental_vacuum`), which SQLite does only
/// in a database made that way: a new one is, and one made before is rebuilt once (`VACUUM`) to become so.
fn reclaim_space_on_compaction(conn: &Connection) -> rusqlite::Result<()> {
    const INCREMENTAL: i64 = 2;
    let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
    if mode != INCREMENTAL {
        conn.pragma_update(None, "auto_vacuum", INCREMENTAL)?;
        conn.execute_batch("VACUUM")?;
    }
    Ok(())
}

/// Give an objects table made before write times were recorded its `written` column (empty for the rows it has).
fn add_written_column(conn: &Connection) -> rusqlite::Result<()> {
    let mut columns = conn.prepare("SELECT name FROM pragma_table_info('objects')")?;
    let has_written = columns
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .iter()
        .any(|column| column == "written");
    if !has_written {
        conn.execute("ALTER TABLE objects ADD COLUMN written INTEGER", [])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_from_before_write_times_opens_with_them_unknown() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        {
            let conn = Connection::open(dir.path().join("store.db")).expect("created");
            conn.execute_batch(
                "CREATE TABLE objects (
                    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
                    rv INTEGER NOT NULL, body BLOB NOT NULL,
                    PRIMARY KEY (resource, namespace, name)
                );
                INSERT INTO objects VALUES ('/events', 'ns', 'old', 3, CAST('{\"metadata\":{\"name\":\"old\"}}' AS BLOB));",
            )
            .expect("an old database");
        }
        let (mut db, loaded) =
            Durable::open(dir.path(), 10, usize::MAX, |row| row.rv, |event| event.rv)
                .expect("opened");
        assert_eq!(loaded.objects.len(), 1);
        db.commit("/events", "ns", "new", 0, 4, b"{}", 1_000)
            .expect("written");
        let mut times: Vec<(String, Option<i64>)> = db
            .write_times("/events")
            .expect("read")
            .into_iter()
            .map(|row| (row.name, row.written))
            .collect();
        times.sort();
        assert_eq!(
            times,
            vec![("new".to_owned(), Some(1_000)), ("old".to_owned(), None)]
        );
    }
}
