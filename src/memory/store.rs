//! The SQLite database behind the memory tools: opening it safely, its schema and
//! migrations, and the one way to write (an immediate transaction).
//!
//! - **Shared by processes.** WAL journal (readers never block the writer), a busy
//!   timeout (a writer waits for another process's write instead of failing), and every
//!   write in a `BEGIN IMMEDIATE` transaction: the write lock is taken before the first
//!   read, so a read-check-write (is this hash stored? what is this utility?) can never
//!   interleave with another process's. Two servers on one database lose nothing.
//!   Processes starting together on a store that does not exist yet wait for each other
//!   too, though SQLite itself would not (`retry_while_busy`).
//! - **Durability.** `synchronous=NORMAL` under WAL: a committed transaction survives a
//!   process crash; a power loss may drop the last few commits (never corrupt the file).
//! - **Migrations** are numbered and recorded in the database itself
//!   (`schema_migrations`); each runs in the same transaction as its record, so a crash or
//!   a second process starting at the same time applies it exactly once. A database from a
//!   newer server (a migration this one does not know) is refused, not downgraded.
//! - **Paths.** The file is created through `paths::Root` (link-refusing, exclusive) and
//!   opened with `SQLITE_OPEN_NOFOLLOW`, which makes SQLite refuse a symbolic link at any
//!   component of the (canonical) path.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};
use serde_json::json;

use crate::error::{MemoryCode, ToolError};

/// The schema, one migration an entry: (version, what it adds, SQL).
const MIGRATIONS: &[(i64, &str, &str)] = &[(
    1,
    "claims, their text units and vectors, graph, feedback, active contexts, policies",
    "
    CREATE TABLE claims (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        content_hash TEXT NOT NULL UNIQUE,
        text TEXT NOT NULL,
        kind TEXT NOT NULL,
        scope TEXT NOT NULL,
        boundary_class TEXT NOT NULL,
        utility REAL NOT NULL DEFAULT 0,
        confidence REAL NOT NULL DEFAULT 0.5,
        helpful INTEGER NOT NULL DEFAULT 0,
        harmful INTEGER NOT NULL DEFAULT 0,
        outdated INTEGER NOT NULL DEFAULT 0,
        duplicate INTEGER NOT NULL DEFAULT 0,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        recency_anchor_ms INTEGER NOT NULL,
        provenance TEXT NOT NULL,
        actor TEXT NOT NULL
    );
    CREATE VIRTUAL TABLE claim_units USING fts5(units, content='', tokenize='unicode61 remove_diacritics 0');
    CREATE VIRTUAL TABLE claim_units_vocab USING fts5vocab(claim_units, row);
    CREATE TABLE claim_vectors (
        model TEXT NOT NULL,
        claim_seq INTEGER NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (model, claim_seq)
    ) WITHOUT ROWID;
    CREATE TABLE entities (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        name TEXT NOT NULL,
        canonical_key TEXT,
        attrs TEXT
    );
    CREATE TABLE claim_entities (
        claim_seq INTEGER NOT NULL,
        entity_id TEXT NOT NULL,
        PRIMARY KEY (claim_seq, entity_id)
    ) WITHOUT ROWID;
    CREATE TABLE relations (
        id TEXT PRIMARY KEY,
        src_id TEXT NOT NULL,
        dst_id TEXT NOT NULL,
        type TEXT NOT NULL,
        props TEXT,
        evidence_claim_id TEXT
    );
    CREATE TABLE evidence (
        id TEXT PRIMARY KEY,
        claim_seq INTEGER NOT NULL,
        source_type TEXT NOT NULL,
        source_id TEXT,
        snippet TEXT,
        at TEXT
    );
    CREATE INDEX evidence_by_claim ON evidence (claim_seq);
    CREATE TABLE feedback (
        claim_seq INTEGER NOT NULL,
        signal TEXT NOT NULL,
        bucket INTEGER NOT NULL,
        weight REAL NOT NULL,
        actor TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        PRIMARY KEY (claim_seq, signal, bucket)
    ) WITHOUT ROWID;
    CREATE TABLE scope_utility (
        scope TEXT PRIMARY KEY,
        claims INTEGER NOT NULL,
        sum REAL NOT NULL,
        sum_sq REAL NOT NULL
    );
    CREATE TABLE active_contexts (
        id TEXT PRIMARY KEY,
        created_ms INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        policy_version TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        total INTEGER NOT NULL
    );
    CREATE INDEX active_contexts_by_expiry ON active_contexts (expires_ms);
    CREATE TABLE active_context_items (
        context_id TEXT NOT NULL,
        rank INTEGER NOT NULL,
        claim_seq INTEGER NOT NULL,
        score REAL NOT NULL,
        breakdown TEXT NOT NULL,
        PRIMARY KEY (context_id, rank)
    ) WITHOUT ROWID;
    CREATE TABLE policies (
        revision INTEGER PRIMARY KEY,
        version TEXT NOT NULL UNIQUE,
        yaml TEXT NOT NULL,
        document TEXT NOT NULL,
        applied_ms INTEGER NOT NULL,
        actor TEXT NOT NULL,
        approver TEXT,
        signature TEXT
    );
    ",
)];

/// Most of the database file SQLite maps into memory for reading.
const MMAP_BYTES: i64 = 1 << 30;
/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 64;
/// SQLite's page cache for the connection, KiB.
const PAGE_CACHE_KIB: i64 = 32 * 1024;

/// One connection per process, shared by its calls; other processes have their own.
pub(crate) struct Store {
    connection: Mutex<Connection>,
}

/// A store failure as the tools report it: INTERNAL with SQLite's error code (never a
/// path or a value; the message of a constraint names only columns).
pub(crate) fn internal(error: rusqlite::Error) -> ToolError {
    let busy = error.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy);
    ToolError::memory(
        MemoryCode::Internal,
        if busy {
            "the memory store stayed locked by another process past MEMORY_BUSY_TIMEOUT_MS; retry"
        } else {
            "the memory store failed"
        },
        json!({ "sqlite": error.to_string(), "retry": busy }),
    )
}

impl Store {
    /// Opens (creating it if missing, with its folder) the database at `path`, sets WAL and
    /// the busy timeout, and applies the migrations it lacks.
    pub(crate) fn open(path: &Path, busy_timeout_ms: u64) -> rusqlite::Result<Store> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut connection = Connection::open_with_flags(path, flags)?;
        let busy_timeout = Duration::from_millis(busy_timeout_ms);
        connection.busy_timeout(busy_timeout)?;
        retry_while_busy(busy_timeout, || set_up(&mut connection))?;
        Ok(Store {
            connection: Mutex::new(connection),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `read` on the connection (one consistent snapshot only inside a transaction;
    /// single statements are consistent on their own).
    pub(crate) fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        read(&self.lock())
    }

    /// Runs `write` in an immediate transaction: committed when it returns `Ok`, rolled
    /// back when it returns `Err` (or panics).
    pub(crate) fn write<T>(
        &self,
        write: impl FnOnce(&Transaction) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let mut connection = self.lock();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(internal)?;
        let value = write(&transaction)?;
        transaction.commit().map_err(internal)?;
        Ok(value)
    }
}

/// WAL, the connection's settings and the migrations: what every open does before the
/// first call.
fn set_up(connection: &mut Connection) -> rusqlite::Result<()> {
    let mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(
            mode,
            "memory store: WAL is not available; other processes wait on writes"
        );
    }
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    // Reads through a memory map and a 32 MiB page cache instead of a `pread` per
    // page: a text query walks posting lists across much of the file (at 100,000
    // claims this halves an activate's time).
    connection.pragma_update(None, "mmap_size", MMAP_BYTES)?;
    connection.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
    // Every statement the memory tools run stays prepared (the default keeps 16, and
    // re-preparing an FTS5 statement reconnects the virtual table).
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    migrate(connection)
}

/// Runs `step` again while it fails with SQLITE_BUSY, until `patience` has passed.
/// SQLite calls the busy handler only when waiting cannot deadlock: a connection that
/// already reads and asks for the write lock gets SQLITE_BUSY at once. Switching a fresh
/// file to WAL does exactly that, so processes starting together on a store that does
/// not exist yet would fail where they should wait (one of them sets it up, the others
/// then find it set up). A failed step holds no lock, so trying again is safe.
fn retry_while_busy(
    patience: Duration,
    mut step: impl FnMut() -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + patience;
    let mut pause = Duration::from_millis(1);
    loop {
        match step() {
            Err(error)
                if error.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() + pause < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            result => return result,
        }
    }
}

/// The newest migration recorded in the database.
pub(crate) fn schema_version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row(
        "SELECT coalesce(max(version), 0) FROM schema_migrations",
        [],
        |row| row.get(0),
    )
}

fn migrate(connection: &mut Connection) -> rusqlite::Result<()> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    transaction.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms INTEGER NOT NULL)",
        [],
    )?;
    let current = schema_version(&transaction)?;
    let newest_known = MIGRATIONS.last().map_or(0, |(version, _, _)| *version);
    if current > newest_known {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
            Some(format!(
                "the memory database has schema {current}; this server knows up to {newest_known}"
            )),
        ));
    }
    for (version, name, sql) in MIGRATIONS
        .iter()
        .filter(|(version, _, _)| *version > current)
    {
        transaction.execute_batch(sql)?;
        transaction.execute(
            "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?1, ?2, ?3)",
            rusqlite::params![version, name, crate::clock::now_millis()],
        )?;
    }
    transaction.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_once_and_records_the_version() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("memory.sqlite3");
        let store = Store::open(&path, 1000).unwrap();
        let version = store.read(|c| schema_version(c).map_err(internal)).unwrap();
        assert_eq!(version, 1);
        drop(store);
        let again = Store::open(&path, 1000).unwrap();
        let rows: i64 = again
            .read(|c| {
                Ok(
                    c.query_row("SELECT count(*) FROM schema_migrations", [], |r| r.get(0))
                        .unwrap(),
                )
            })
            .unwrap();
        assert_eq!(rows, 1);
        let mode: String = again
            .read(|c| {
                Ok(c.query_row("PRAGMA journal_mode", [], |r| r.get(0))
                    .unwrap())
            })
            .unwrap();
        assert_eq!(mode, "wal");
    }

    /// Another process's write lock on a database still in rollback mode (a fresh file)
    /// makes `PRAGMA journal_mode = WAL` fail at once, busy timeout or not: SQLite does
    /// not wait when a connection already reading asks for the write lock. The open waits
    /// for it anyway, as it waits for any other write.
    #[test]
    fn an_open_waits_for_another_process_setting_up_the_store() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("memory.sqlite3");
        std::fs::write(&path, b"").unwrap();
        let other = Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            other.execute_batch("COMMIT").unwrap();
        });
        let store = Store::open(&path, 5000);
        release.join().unwrap();
        let store = store.unwrap();
        assert_eq!(
            store.read(|c| schema_version(c).map_err(internal)).unwrap(),
            1
        );
    }

    #[test]
    fn a_newer_database_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("memory.sqlite3");
        let store = Store::open(&path, 1000).unwrap();
        store
            .write(|t| {
                t.execute("INSERT INTO schema_migrations VALUES (99, 'future', 0)", [])
                    .map_err(internal)?;
                Ok(())
            })
            .unwrap();
        drop(store);
        assert!(Store::open(&path, 1000).is_err());
    }

    #[test]
    fn a_symlinked_database_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        let real = folder.path().join("real.sqlite3");
        Store::open(&real, 1000).unwrap();
        let link = folder.path().join("link.sqlite3");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(Store::open(&link, 1000).is_err());
    }

    #[test]
    fn a_failed_write_leaves_nothing() {
        let folder = tempfile::tempdir().unwrap();
        let store = Store::open(&folder.path().join("m.sqlite3"), 1000).unwrap();
        let result: Result<(), ToolError> = store.write(|t| {
            t.execute("INSERT INTO scope_utility VALUES ('project', 1, 0, 0)", [])
                .map_err(internal)?;
            Err(ToolError::memory(MemoryCode::Internal, "stop", json!({})))
        });
        assert!(result.is_err());
        let rows: i64 = store
            .read(|c| {
                Ok(
                    c.query_row("SELECT count(*) FROM scope_utility", [], |r| r.get(0))
                        .unwrap(),
                )
            })
            .unwrap();
        assert_eq!(rows, 0);
    }
}
