//! The embedded persistent backend of agent-memory: memories, knowledge pages and the
//! knowledge graph in one SQLite file, with BM25F full-text search.
//!
//! [`SqliteBackend::open`] opens (or creates) the file and gives the three stores, which share
//! one connection: [`SqliteStore`] ([`MemoryStore`](memory_core::MemoryStore)),
//! [`SqliteKnowledgeStore`] ([`KnowledgeStore`](memory_core::KnowledgeStore)) and
//! [`SqliteGraph`] ([`KnowledgeGraph`](memory_core::KnowledgeGraph)). SQLite is compiled into
//! the crate (rusqlite's `bundled` feature): no system library or server is needed.
//!
//! ```
//! use memory_core::{MemoryItem, MemoryStore, Namespace, SearchQuery};
//! use memory_sqlite::SqliteBackend;
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let backend = SqliteBackend::open_in_memory()?; // or SqliteBackend::open("memory.db")?
//! let store = backend.memory_store();
//! let ns = Namespace::parse("user-1")?;
//! store.save(MemoryItem::new(ns.clone(), "The user's cat is called Miso")?).await?;
//! let hits = store.search(&SearchQuery::new(ns.exact(), "cats", 5)).await?;
//! assert_eq!(hits.len(), 1);
//! # Ok::<(), memory_core::MemoryError>(()) }).unwrap();
//! ```
//!
//! # Durability
//!
//! The database runs in WAL mode with a busy timeout; every operation that changes more than
//! one row (a save with its index entries, `save_many`, `clear`, removing an entity with its
//! relations) is one `BEGIN IMMEDIATE` transaction, so a crash at any moment leaves each
//! change wholly applied or not at all. With the default [`Synchronous::Full`] a write that
//! returned is on disk; [`Synchronous`] says what `Normal` and `Off` risk for their speed. A
//! batch (`save_many`, `Memory::remember_many`) is one transaction, so it pays one sync. A test kills a writing child process with SIGKILL at random moments
//! and checks every acknowledged write afterwards.
//!
//! The schema is versioned in `PRAGMA user_version` and upgraded on open by migrations that
//! run in one transaction ([`SCHEMA_VERSION`]). A file that is not a database, a database of
//! another application, or one written by a newer version is refused with
//! [`MemoryError::Storage`] and left untouched.
//!
//! # Search
//!
//! The full-text index holds the terms of the shared [`Analyzer`](memory_core::text::Analyzer)
//! (stemmed English, Chinese and Japanese bigrams), and queries are analysed the same way,
//! so the SQLite and in-memory backends agree on what matches: user text is only ever split
//! into terms, never interpreted, so `AND OR NEAR( "x` or `title:x*` search for those words.
//! Memories are indexed with their tags, and their [context](memory_core::MemoryItem::context)
//! as a second field; pages by title, summary, tags and content.
//!
//! Ranking is [`memory_core::search`]'s BM25F, the one every backend uses, with the
//! statistics (record count, mean field lengths, document frequencies) of each record's own
//! namespace: a search over a subtree ranks each namespace with its own, as the in-memory
//! backend does, so the same records give the same hits in the same order and scores. The
//! index is a set of tables written in the same transaction as each record: per namespace
//! its statistics, and per term its postings in blocks of up to 128 (with the frequencies and
//! field lengths scoring reads, and per block the largest frequency and shortest length, which
//! bound the score of anything in it). A search reads the statistics of the namespaces in
//! scope and one row per block of the query's terms, then prunes with MaxScore: records are
//! visited through the terms that can still reach the `top_k`-th score, the others are looked
//! up only for records their block bounds can lift to the cut, and a block is decoded only
//! when it can matter. Only the best rows are then read and decoded. A batch of records
//! ([`save_many`](memory_core::MemoryStore::save_many)) rewrites each term's last block
//! once, not once per record.
//!
//! The file keeps a fingerprint of the analyzer and index layout that built its index; when
//! a newer memory-core analyses text differently, the index is rebuilt from the records on
//! open, so stored and query terms always agree.
//!
//! # Concurrency
//!
//! SQLite calls block; they run on tokio's blocking pool when called from a task, never on
//! the async worker threads. Where no worker waits (no tokio runtime, or a thread blocked in
//! a multi-threaded runtime's `block_on`, such as `main` under `#[tokio::main]`) they run
//! inline, without the blocking pool's two thread switches. The stores of one backend share one
//! connection behind a mutex, so their calls run one at a time. Several backends, or several
//! processes, may open the same file: WAL lets readers proceed during a write, and a writer
//! waits up to the busy timeout for another's transaction, then fails with
//! [`MemoryError::Conflict`], which is recoverable.
//!
//! # Limits
//!
//! Timestamps are stored as 64-bit nanoseconds, so records dated before 1678 or after 2261
//! are rejected with `InvalidInput`. Graph traversals use memory-core's default algorithms
//! over indexed relation lookups; [`SqliteGraph`] says why.

mod database;
mod error;
mod fulltext;
mod graph_store;
mod knowledge_store;
mod memory_store;
mod rebuild;
mod schema;
mod sql;
mod terms;

use std::path::Path;

use memory_core::{MemoryError, Result};

use crate::database::Database;
use crate::error::Context;

pub use crate::{
    database::{DEFAULT_READ_CONNECTIONS, MAX_READ_CONNECTIONS, SqliteOptions, Synchronous},
    graph_store::SqliteGraph,
    knowledge_store::SqliteKnowledgeStore,
    memory_store::SqliteStore,
    schema::{APPLICATION_ID, SCHEMA_VERSION},
};

/// One SQLite database with its three stores.
///
/// Cheap to clone; every clone and every store taken from it shares the same connections
/// (one that writes, and for a file up to [`SqliteOptions::read_connections`] that read).
/// The database closes when the last of them is dropped.
#[derive(Clone, Debug)]
pub struct SqliteBackend {
    db: Database,
    memories: SqliteStore,
    knowledge: SqliteKnowledgeStore,
    graph: SqliteGraph,
}

impl SqliteBackend {
    /// Opens the database file at `path`, creating it if needed, with default
    /// [`SqliteOptions`].
    ///
    /// # Errors
    /// As [`open_with`](Self::open_with).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// Opens the database file at `path`, creating it if needed: switches it to the WAL
    /// journal and migrates an older schema. Blocks while it does (usually milliseconds).
    ///
    /// Opening takes the write lock for a moment, even when nothing needs changing: it must
    /// check the schema version and the derived index's fingerprint under the lock that a
    /// migrating or rebuilding process holds, or it could read a half-migrated file. So a
    /// second process opening the file waits (up to the busy timeout) while another writes.
    /// There is no read-only open: every store takes writes (recall statistics included).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `read_connections` when it is over
    /// [`MAX_READ_CONNECTIONS`];
    /// [`MemoryError::Storage`] when the file cannot be opened, is not an SQLite database,
    /// belongs to another application, or has a newer schema than this build reads;
    /// [`MemoryError::Conflict`] when another connection holds the database locked past the
    /// busy timeout.
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        Self::from_database(Database::open(path.as_ref(), &options)?, &options)
    }

    /// A private in-memory database (for tests and throwaway sessions), gone when the last
    /// clone or store is dropped.
    ///
    /// # Errors
    /// [`MemoryError::Storage`] if SQLite cannot allocate it.
    pub fn open_in_memory() -> Result<Self> {
        Self::open_in_memory_with(SqliteOptions::default())
    }

    /// [`open_in_memory`](Self::open_in_memory) with options.
    ///
    /// # Errors
    /// [`MemoryError::Storage`] if SQLite cannot allocate it.
    pub fn open_in_memory_with(options: SqliteOptions) -> Result<Self> {
        Self::from_database(Database::open_in_memory(&options)?, &options)
    }

    /// The stores over a migrated database, once its full-text index is current (rebuilt
    /// from the records if the schema reports it stale).
    fn from_database(db: Database, options: &SqliteOptions) -> Result<Self> {
        let display = db.location();
        db.blocking(|connection| rebuild::refresh(connection, &display))?;
        Ok(Self {
            memories: SqliteStore::new(db.clone()),
            knowledge: SqliteKnowledgeStore::new(db.clone()),
            graph: SqliteGraph::new(db.clone(), options.tag_constraints),
            db,
        })
    }

    /// The memory store. Clone it (cheap) or wrap it in an `Arc` to keep it.
    pub fn memory_store(&self) -> &SqliteStore {
        &self.memories
    }

    /// The knowledge-page store.
    pub fn knowledge_store(&self) -> &SqliteKnowledgeStore {
        &self.knowledge
    }

    /// The three stores, for `MemoryBuilder::stores`: opening a persistent memory is
    /// `Memory::builder().stores(backend.stores()).build()`.
    pub fn stores(&self) -> memory_core::Stores {
        memory_core::Stores::new(
            std::sync::Arc::new(self.memories.clone()),
            std::sync::Arc::new(self.knowledge.clone()),
            std::sync::Arc::new(self.graph.clone()),
        )
    }

    /// The knowledge graph.
    pub fn graph(&self) -> &SqliteGraph {
        &self.graph
    }

    /// The database file, `None` for an in-memory database.
    pub fn path(&self) -> Option<&Path> {
        self.db.path()
    }

    /// Checks the database file (`PRAGMA integrity_check`) and both full-text indexes: each
    /// record is indexed exactly as its text analyses, and the namespace statistics and
    /// document frequencies add up to the postings. Reads everything: `O(n)`.
    ///
    /// # Errors
    /// [`MemoryError::Storage`] naming the problems SQLite found, or the failure to check.
    pub async fn check_integrity(&self) -> Result<()> {
        self.db
            .call(|connection| {
                let problems = connection
                    .prepare("PRAGMA integrity_check")
                    .and_then(|mut statement| {
                        statement
                            .query_map([], |row| row.get::<_, String>(0))?
                            .collect::<rusqlite::Result<Vec<String>>>()
                    })
                    .context(|| "checking integrity")?;
                if problems != ["ok"] {
                    return Err(MemoryError::Storage {
                        message: format!("integrity check failed: {}", problems.join("; ")),
                        source: None,
                    });
                }
                let problems = rebuild::check(connection)?;
                if !problems.is_empty() {
                    return Err(MemoryError::Storage {
                        message: format!("full-text index check failed: {}", problems.join("; ")),
                        source: None,
                    });
                }
                Ok(())
            })
            .await
    }
}
