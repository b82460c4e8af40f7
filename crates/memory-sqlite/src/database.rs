//! The shared connection: opening, pragmas, and running blocking SQLite calls off the
//! async worker threads.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use memory_core::{MemoryError, Result, TagConstraints};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::error::Context;
use crate::schema;

mod group;
mod readers;

use group::Queue;
use readers::Readers;

/// How hard SQLite works to make a commit durable (`PRAGMA synchronous`).
///
/// The database runs in WAL mode: a commit appends to the write-ahead log, and checkpoints
/// copy the log into the database file. What each level risks:
///
/// | level | a crash of the process | power loss or an OS crash |
/// |---|---|---|
/// | [`Full`](Self::Full) (default) | nothing | nothing: a commit that returned is on disk |
/// | [`Normal`](Self::Normal) | nothing | the last commits before the loss may be missing; the file stays consistent |
/// | [`Off`](Self::Off) | nothing | the last commits may be missing, and the file may be corrupted |
///
/// `Full` syncs the log at every commit, so each single write pays one sync (milliseconds
/// on many disks); a batch ([`MemoryStore::save_many`](memory_core::MemoryStore::save_many),
/// `Memory::remember_many`) is one transaction and pays it once. `Normal` syncs only at
/// checkpoints, which suits a cache or data that can be imported again. `Off` never syncs:
/// only for a throwaway file, or a bulk load into a new file that is checked
/// ([`check_integrity`](crate::SqliteBackend::check_integrity)) or redone after a crash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synchronous {
    /// `FULL`: every commit is synced to disk before it returns, so an acknowledged write
    /// also survives power loss. The default.
    #[default]
    Full,
    /// `NORMAL`: the WAL is synced only at checkpoints. Much faster for many small
    /// transactions; after power loss the most recent commits may be missing (the database
    /// is never corrupted).
    Normal,
    /// `OFF`: nothing is ever synced. A crash of the process loses nothing that was
    /// committed, but after power loss or an operating-system crash recent commits may be
    /// missing and the database file may be corrupted.
    Off,
}

impl Synchronous {
    fn pragma_value(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
            Synchronous::Off => "OFF",
        }
    }
}

/// Settings for opening a database. `Default` is the safe choice: a 5 second busy timeout,
/// [`Synchronous::Full`], up to [`DEFAULT_READ_CONNECTIONS`] read connections, and the
/// default [`TagConstraints`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// How long a write waits for another connection (another process, or another
    /// [`SqliteBackend`](crate::SqliteBackend) on the same file) to release the write lock
    /// before failing with [`MemoryError::Conflict`].
    pub busy_timeout: Duration,
    /// Durability of each commit.
    pub synchronous: Synchronous,
    /// Tag limits of the knowledge graph.
    pub tag_constraints: TagConstraints,
    /// The most connections a file database opens for reads beside the one that writes
    /// (searches, lists, lookups, traversals). They are opened when reads overlap, so one
    /// reader at a time uses one; 0 sends every read through the writing connection. An
    /// in-memory database has no readers (its data lives in its one connection).
    pub read_connections: usize,
}

/// The default of [`SqliteOptions::read_connections`].
pub const DEFAULT_READ_CONNECTIONS: usize = 4;

/// The most read connections [`SqliteOptions::read_connections`] may ask for.
pub const MAX_READ_CONNECTIONS: usize = 64;

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            synchronous: Synchronous::Full,
            tag_constraints: TagConstraints::default(),
            read_connections: DEFAULT_READ_CONNECTIONS,
        }
    }
}

impl SqliteOptions {
    /// Sets the busy timeout.
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Sets the durability level.
    pub fn with_synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Sets the graph's tag limits.
    pub fn with_tag_constraints(mut self, constraints: TagConstraints) -> Self {
        self.tag_constraints = constraints;
        self
    }

    /// Sets the most read connections (0: reads share the writing connection).
    pub fn with_read_connections(mut self, connections: usize) -> Self {
        self.read_connections = connections;
        self
    }
}

/// How many prepared statements a connection keeps (rusqlite's default is 16, fewer than
/// the stores use, so they would be prepared again and again).
const STATEMENT_CACHE: usize = 128;

/// The most memory the connection's page cache may take, in KiB (`PRAGMA cache_size`;
/// SQLite's default is 2,000). The cache only grows as pages are read, so a small file
/// never takes more than its size. A record's postings land on one B-tree leaf per distinct
/// term, so a batch of a thousand records touches thousands of pages: with the default
/// cache they were written to the WAL and read back within the same transaction.
const PAGE_CACHE_KIB: i64 = 65_536;

/// The connections shared by the three stores of a backend: one that writes, and for a file
/// a pool of connections that only read.
///
/// SQLite calls block, so [`call`](Self::call) runs them on tokio's blocking pool when called
/// from a task of a tokio runtime (or anywhere under a current-thread runtime), and inline
/// otherwise: under a different executor, or on a thread blocked in a multi-threaded
/// runtime's `block_on`, where no async worker waits.
///
/// The writing connection is behind a mutex: writes on one backend run one at a time, which
/// is also what SQLite's single writer would impose. Reads ([`query`](Self::query),
/// [`read`](Self::read)) take a reader of their own: in WAL mode a reader sees every
/// transaction committed before its statement (or its read transaction) began, so a read
/// after an acknowledged write finds it, and it never waits for a write in progress, nor a
/// write for it. A recall used to queue behind the batch of recall statistics the previous
/// recalls had started, and behind every other read.
#[derive(Clone)]
pub(crate) struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    connection: Mutex<Connection>,
    /// The writes waiting for the connection, committed together by whichever of them
    /// takes it first ([`Database::write`]).
    queue: Queue,
    /// The read connections; `None` for an in-memory database or with no readers asked for.
    readers: Option<Readers>,
    path: Option<PathBuf>,
    /// The durability of the database's commits ([`SqliteOptions::synchronous`]).
    synchronous: Synchronous,
}

impl Inner {
    /// The writing connection, locked. A panic while the lock was held cannot leave a
    /// transaction open (dropping the transaction rolls it back), so a poisoned lock is safe
    /// to take over.
    fn writer(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Database")
            .field("location", &self.location())
            .finish()
    }
}

impl Database {
    /// Opens (creating if needed) the database file at `path` and brings its schema up to date.
    pub(crate) fn open(path: &Path, options: &SqliteOptions) -> Result<Self> {
        if options.read_connections > MAX_READ_CONNECTIONS {
            return Err(MemoryError::invalid(
                "read_connections",
                format!(
                    "{} is over the limit of {MAX_READ_CONNECTIONS}",
                    options.read_connections
                ),
            ));
        }
        let display = path.display().to_string();
        let connection = Connection::open(path).context(|| format!("opening {display}"))?;
        Self::prepare(connection, Some(path.to_path_buf()), &display, options)
    }

    /// A private in-memory database, gone when the last store is dropped.
    pub(crate) fn open_in_memory(options: &SqliteOptions) -> Result<Self> {
        let connection =
            Connection::open_in_memory().context(|| "opening an in-memory database")?;
        Self::prepare(connection, None, ":memory:", options)
    }

    fn prepare(
        mut connection: Connection,
        path: Option<PathBuf>,
        display: &str,
        options: &SqliteOptions,
    ) -> Result<Self> {
        connection
            .busy_timeout(options.busy_timeout)
            .context(|| format!("opening {display}: setting the busy timeout"))?;
        // The first read of the header: fails with "not a database" for any other file.
        schema::check_compatible(&connection, display)?;
        if path.is_some() {
            let mode: String = connection
                .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
                .context(|| format!("opening {display}: switching to the WAL journal"))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(MemoryError::Storage {
                    message: format!(
                        "opening {display}: the WAL journal could not be enabled (journal mode is {mode})"
                    ),
                    source: None,
                });
            }
        }
        connection
            .pragma_update(None, "synchronous", options.synchronous.pragma_value())
            .context(|| format!("opening {display}: setting synchronous"))?;
        connection
            .pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
            .context(|| format!("opening {display}: sizing the page cache"))?;
        connection
            .pragma_update(None, "foreign_keys", "ON")
            .context(|| format!("opening {display}: enabling foreign keys"))?;
        // The query planner stability guarantee: a statement's plan never depends on the
        // values bound to it. Without it, SQLite marks statements whose plan a binding could
        // change (FTS5's own page lookup `WHERE segid = ? AND term <= ?` among them) and
        // re-parses them on every new binding. That was a fifth of a recall's CPU time on
        // 1,000 memories; with the guarantee, recall at 1k and 10k memories is 28 to 36%
        // faster (`cargo xtask bench`). Our statements have one good plan anyway.
        connection
            .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .context(|| format!("opening {display}: enabling the stable query planner"))?;
        // A store at this build's version needs no write to open: read first, so that a
        // command that only reads opens while another process writes (an import), instead
        // of waiting for the write lock to check the schema and failing past the busy
        // timeout. Otherwise migrate under the write lock (read again there).
        if !schema::is_current(&connection, display)? {
            let what = format!("opening {display}: migrating the schema");
            in_transaction(&mut connection, &what, |transaction| {
                schema::migrate(transaction, display, &what)
            })?;
        }
        // Statements are prepared once and cached by their text: the stores and the
        // full-text index use a few dozen.
        connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let readers = path
            .as_ref()
            .filter(|_| options.read_connections > 0)
            .map(|path| Readers::new(path.clone(), options.busy_timeout, options.read_connections));
        Ok(Self {
            inner: Arc::new(Inner {
                connection: Mutex::new(connection),
                queue: Queue::default(),
                readers,
                path,
                synchronous: options.synchronous,
            }),
        })
    }

    /// The file path, `None` for an in-memory database.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// The file path for messages, `:memory:` for an in-memory database.
    pub(crate) fn location(&self) -> String {
        match self.path() {
            Some(path) => path.display().to_string(),
            None => ":memory:".to_owned(),
        }
    }

    /// Runs `operation` with the connection, off the async worker threads.
    pub(crate) async fn call<T, F>(&self, operation: F) -> Result<T>
    where
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        off_workers(move || operation(&mut inner.writer())).await
    }

    /// Runs `operation` with a read connection (the writing one when there are no
    /// readers), off the async worker threads as [`call`](Self::call) does. The connection
    /// refuses writes.
    pub(crate) async fn query<T, F>(&self, operation: F) -> Result<T>
    where
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        off_workers(move || match inner.readers.as_ref() {
            Some(readers) => {
                let mut lease = readers.lease()?;
                match lease.connection.as_mut() {
                    Some(connection) => operation(connection),
                    None => Err(MemoryError::storage(
                        "reading",
                        "a read connection was lost",
                    )),
                }
            }
            None => operation(&mut inner.writer()),
        })
        .await
    }

    /// Runs `operation` in one read transaction (a deferred `BEGIN`) on a read connection
    /// ([`query`](Self::query)), so its statements see one snapshot of the file even while
    /// other connections write.
    pub(crate) async fn read<T, F>(&self, what: &'static str, operation: F) -> Result<T>
    where
        F: FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.query(move |connection| {
            let transaction = connection
                .transaction()
                .context(|| format!("{what}: beginning a transaction"))?;
            let out = operation(&transaction)?;
            transaction
                .commit()
                .context(|| format!("{what}: ending the transaction"))?;
            Ok(out)
        })
        .await
    }

    /// Runs `operation` with the connection on the calling thread, blocking it (for work
    /// that opening a database does before any store exists).
    pub(crate) fn blocking<T>(
        &self,
        operation: impl FnOnce(&mut Connection) -> Result<T>,
    ) -> Result<T> {
        operation(&mut self.inner.writer())
    }

    /// [`write`](Self::write) for statistics the database can do without after power loss
    /// (recall statistics: a recall already keeps them in memory until a batch is full, and
    /// a lost batch only makes memories look less recalled): the transaction is committed
    /// without a sync of its own (`synchronous = NORMAL` in WAL mode, so also never a
    /// corrupted file), and the next synced commit makes it durable with its own. A batch of
    /// recall statistics used to pay a sync of the log while holding the connection, which
    /// every recall behind it waited for.
    pub(crate) async fn write_statistics<T, F>(&self, what: &'static str, operation: F) -> Result<T>
    where
        F: FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let synchronous = self.inner.synchronous;
        self.call(move |connection| {
            if synchronous != Synchronous::Full {
                return in_transaction(connection, what, operation);
            }
            connection
                .pragma_update(None, "synchronous", Synchronous::Normal.pragma_value())
                .context(|| format!("{what}: relaxing synchronous"))?;
            let out = in_transaction(connection, what, operation);
            connection
                .pragma_update(None, "synchronous", synchronous.pragma_value())
                .context(|| format!("{what}: restoring synchronous"))?;
            out
        })
        .await
    }

    /// Runs `operation` in a write transaction (`BEGIN IMMEDIATE`): all of it is committed
    /// or none of it, and its result is returned only once the commit is done (synced, under
    /// [`Synchronous::Full`]).
    ///
    /// Writes that wait for the connection at the same time are committed together (group
    /// commit): the first to take the connection runs every write queued by then in one
    /// transaction, each inside a savepoint of its own, and commits once, so concurrent
    /// writers share one sync instead of paying one each. A write that fails is rolled back
    /// to its savepoint and gets its own error; the others still commit. If the transaction
    /// cannot begin or commit, every write of the group gets that error and none is stored.
    /// A write alone in the queue runs as before, without a savepoint.
    pub(crate) async fn write<T, F>(&self, what: &'static str, operation: F) -> Result<T>
    where
        F: FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let done = self.inner.queue.push(what, operation);
        let inner = Arc::clone(&self.inner);
        off_workers(move || {
            let mut connection = inner.writer();
            inner.queue.commit_waiting(&mut connection);
            Ok(())
        })
        .await?;
        done.await
            .unwrap_or_else(|_| Err(MemoryError::storage(what, "the write was abandoned")))
    }
}

/// Runs the blocking `run` on tokio's blocking pool when called from a task of a tokio
/// runtime (or anywhere under a current-thread runtime), and inline otherwise
/// ([`blocks_no_worker`]).
async fn off_workers<T: Send + 'static>(
    run: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if !blocks_no_worker(&handle) => handle
            .spawn_blocking(run)
            .await
            .map_err(|error| MemoryError::storage("running an sqlite call", error))?,
        _ => run(),
    }
}

/// Whether running a blocking call on the current thread, in the context of the runtime
/// `handle`, keeps every async worker free: the thread is not running a task (it is blocked in
/// `Runtime::block_on`, as a program's `main` is under `#[tokio::main]`) and the runtime has
/// workers of its own to run its tasks meanwhile (it is not a current-thread runtime, whose
/// `block_on` thread is its only worker). Then the call runs inline, without the two thread
/// switches of the blocking pool: about half of a search's time on 1,000 memories.
fn blocks_no_worker(handle: &tokio::runtime::Handle) -> bool {
    handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread
        && tokio::task::try_id().is_none()
}

/// Runs `operation` in an immediate transaction on `connection`. Taking the write lock at
/// `BEGIN` makes a busy database wait for the busy timeout instead of failing on the first
/// write after a read.
pub(crate) fn in_transaction<T>(
    connection: &mut Connection,
    what: &str,
    operation: impl FnOnce(&Transaction<'_>) -> Result<T>,
) -> Result<T> {
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .context(|| format!("{what}: beginning a transaction"))?;
    let out = operation(&transaction)?;
    transaction
        .commit()
        .context(|| format!("{what}: committing"))?;
    Ok(out)
}

#[cfg(test)]
mod tests;
