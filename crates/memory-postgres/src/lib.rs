//! The shared backend of agent-memory: memories, knowledge pages and the knowledge graph in
//! PostgreSQL, for many agent processes on many machines at once.
//!
//! [`PostgresBackend::connect`] opens a connection pool, brings the schema up to date and
//! gives the three stores, which share the pool: [`PostgresStore`]
//! ([`MemoryStore`](memory_core::MemoryStore)), [`PostgresKnowledgeStore`]
//! ([`KnowledgeStore`](memory_core::KnowledgeStore)) and [`PostgresGraph`]
//! ([`KnowledgeGraph`](memory_core::KnowledgeGraph)). The driver is `tokio-postgres` (pure
//! Rust, asynchronous, no libpq) behind a `deadpool-postgres` pool, so the backend needs a
//! tokio runtime with its I/O and time drivers enabled (`#[tokio::main]` has them).
//!
//! ```no_run
//! use memory_core::{MemoryItem, MemoryStore, Namespace, SearchQuery};
//! use memory_postgres::{PostgresBackend, PostgresOptions};
//! # async fn example() -> memory_core::Result<()> {
//! let backend = PostgresBackend::connect(
//!     "postgres://agent@db.internal:5432/memory",
//!     PostgresOptions::default(), // schema agent_memory, 16 connections
//! )
//! .await?;
//! let store = backend.memory_store();
//! let ns = Namespace::parse("user-1")?;
//! store.save(MemoryItem::new(ns.clone(), "The user's cat is called Miso")?).await?;
//! let hits = store.search(&SearchQuery::new(ns.exact(), "cats", 5)).await?;
//! assert_eq!(hits.len(), 1);
//! # Ok(()) }
//! ```
//!
//! Across machines, encrypt (feature `tls`): the server's certificate is verified against the
//! given roots and the host name of the URL.
//!
//! ```no_run
//! # #[cfg(feature = "tls")]
//! # async fn example() -> memory_core::Result<()> {
//! use memory_postgres::{PostgresBackend, PostgresOptions, PostgresTls, TlsRoots};
//! let tls = PostgresTls::Required(TlsRoots::PemFile("/etc/agent-memory/db-ca.pem".into()));
//! let backend = PostgresBackend::connect(
//!     "postgres://agent@db.internal:5432/memory",
//!     PostgresOptions::default().with_tls(tls),
//! )
//! .await?;
//! # Ok(()) }
//! ```
//!
//! # Schema
//!
//! Every table lives in one PostgreSQL schema ([`PostgresOptions::schema`], default
//! [`DEFAULT_SCHEMA`]), created on first connect, so several deployments or test runs can share
//! a database. The schema is versioned in its `schema_version` table ([`SCHEMA_VERSION`]) and
//! migrated on connect (or by [`PostgresBackend::migrate`]) in one transaction under an
//! advisory lock, so processes starting at once migrate one after the other. A schema written
//! by a newer version is refused with [`MemoryError::Storage`](memory_core::MemoryError::Storage)
//! and left untouched.
//!
//! # Search
//!
//! The stores index the terms of the shared [`Analyzer`](memory_core::text::Analyzer)
//! (stemmed English, Chinese and Japanese bigrams) in GIN-indexed `text[]` columns of
//! distinct terms, and queries are analysed the same way, so PostgreSQL agrees with the
//! in-memory and SQLite backends on what matches; PostgreSQL's own parser and dictionaries
//! are not used. A query's terms are bound as one array parameter (`terms && $1`): user text
//! is never query syntax. (Not a `tsvector`: it holds at most 1 MiB of lexemes, less than the
//! distinct bigrams of 1 MiB of Chinese.) Ranking is BM25F (memories: content with tags, and
//! the context; pages: title, summary, tags and content) computed in SQL from per-field term
//! frequencies kept beside the terms, exactly as [`memory_core::search`] defines it for every
//! backend: its constants, and statistics per namespace searched (a scope of several
//! namespaces ranks each on its own and merges the hits by score, then id), so rankings
//! match the in-memory backend's.
//!
//! # Concurrency and errors
//!
//! Every write is one statement or one transaction; recall statistics are incremented in
//! place (`recall_count = recall_count + 1`), so concurrent writers in any number of processes
//! lose nothing. Failures map onto [`MemoryError`](memory_core::MemoryError) with the driver's
//! error as the source: a refused or lost connection is `Unavailable`, a connect or pool wait
//! past its deadline is `Timeout`, a serialization failure or deadlock is `Conflict` (all three
//! recoverable: retry), a duplicate key where the contract forbids one is `AlreadyExists`, and
//! anything else is `Storage` (an operation on a closed backend among them). Every value is a
//! bound parameter; the only text spliced into SQL is the schema name, validated as a plain
//! identifier.
//!
//! # Limits
//!
//! Connections are unencrypted unless [`PostgresOptions::tls`] asks for TLS (feature `tls`,
//! rustls): then every connection is encrypted and the server's certificate and host name are
//! verified. Timestamps are stored as 64-bit nanoseconds (lossless,
//! unlike `timestamptz`), so records dated before 1678 or after 2261 are rejected with
//! `InvalidInput`; so is text holding the NUL character, which PostgreSQL cannot store.

mod bm25;
mod database;
mod error;
mod graph_store;
mod knowledge_store;
mod memory_store;
mod options;
mod schema;
mod sql;
#[cfg(feature = "tls")]
mod tls;

use memory_core::Result;

use crate::database::Database;

pub use crate::{
    graph_store::PostgresGraph,
    knowledge_store::PostgresKnowledgeStore,
    memory_store::PostgresStore,
    options::{DEFAULT_SCHEMA, PostgresOptions, PostgresTls, TlsRoots},
    schema::SCHEMA_VERSION,
};

/// One PostgreSQL schema with its three stores over one connection pool.
///
/// Cheap to clone; every clone and every store taken from it shares the pool. Connections
/// close when the last of them is dropped (or at once with [`close`](Self::close)).
#[derive(Clone, Debug)]
pub struct PostgresBackend {
    db: Database,
    memories: PostgresStore,
    knowledge: PostgresKnowledgeStore,
    graph: PostgresGraph,
}

impl PostgresBackend {
    /// Connects to the server at `url` (`postgres://user:password@host:port/database`, or the
    /// `key=value` form libpq accepts), creates the schema if needed and applies missing
    /// migrations (unless [`PostgresOptions::apply_migrations`] is `false`, in which case the
    /// schema must already be current).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) naming `url` or
    /// an option; [`MemoryError::Unavailable`](memory_core::MemoryError::Unavailable) when the
    /// server cannot be reached or refuses the connection;
    /// [`MemoryError::Timeout`](memory_core::MemoryError::Timeout) past
    /// [`PostgresOptions::connect_timeout`];
    /// [`MemoryError::Storage`](memory_core::MemoryError::Storage) when the schema is newer
    /// than this build reads, older and migrations are off, or a migration fails (for example
    /// for lack of privileges).
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<Self> {
        let db = Database::new(url, &options)?;
        if options.apply_migrations {
            schema::migrate(&db).await?;
        } else {
            schema::require_current(&db).await?;
        }
        Ok(Self {
            memories: PostgresStore::new(db.clone()),
            knowledge: PostgresKnowledgeStore::new(db.clone()),
            graph: PostgresGraph::new(db.clone(), options.tag_constraints),
            db,
        })
    }

    /// The memory store. Clone it (cheap) or wrap it in an `Arc` to keep it.
    pub fn memory_store(&self) -> &PostgresStore {
        &self.memories
    }

    /// The knowledge-page store.
    pub fn knowledge_store(&self) -> &PostgresKnowledgeStore {
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
    pub fn graph(&self) -> &PostgresGraph {
        &self.graph
    }

    /// The PostgreSQL schema holding the tables.
    pub fn schema(&self) -> &str {
        self.db.schema()
    }

    /// Applies missing migrations (safe to run from several processes at once) and returns
    /// the schema version, [`SCHEMA_VERSION`].
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    pub async fn migrate(&self) -> Result<u32> {
        schema::migrate(&self.db).await
    }

    /// The version the schema is at: [`SCHEMA_VERSION`] after a successful connect with
    /// migrations on, 0 for a schema without tables.
    ///
    /// # Errors
    /// Backend errors only.
    pub async fn schema_version(&self) -> Result<u32> {
        schema::current_version(&self.db).await
    }

    /// Closes the pool: idle connections close now, busy ones when they are returned, and
    /// every later operation fails with
    /// [`MemoryError::Storage`](memory_core::MemoryError::Storage), which is not recoverable:
    /// the backend stays closed, so retrying cannot succeed.
    pub fn close(&self) {
        self.db.close();
    }
}
