//! The stores the backend benchmarks compare: a fresh SQLite file, and the PostgreSQL
//! server the environment names, if any.

use std::path::PathBuf;

use agent_memory::postgres::{PostgresBackend, PostgresOptions};
use agent_memory::{MemoryStore, Scope};
use tokio::runtime::Runtime;

/// A fresh SQLite file `agent-memory-bench-{name}.db` under the system's temporary
/// directory, removed first (with its WAL and shared-memory files).
pub fn sqlite_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("agent-memory-bench-{name}.db"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

/// The PostgreSQL backend named by `AGENT_MEMORY_POSTGRES_URL` or
/// `AGENT_MEMORY_TEST_POSTGRES_URL`, on `schema` with its memories cleared, or `None`
/// without a server named.
///
/// # Panics
/// When a server is named but cannot be reached or cleared: a benchmark asked to measure
/// it must not quietly leave it out.
pub fn postgres(runtime: &Runtime, schema: &str) -> Option<PostgresBackend> {
    let url = std::env::var("AGENT_MEMORY_POSTGRES_URL")
        .or_else(|_| std::env::var("AGENT_MEMORY_TEST_POSTGRES_URL"))
        .ok()?;
    let backend = runtime
        .block_on(PostgresBackend::connect(
            &url,
            PostgresOptions::default().with_schema(schema),
        ))
        .expect("the PostgreSQL server named by the environment");
    runtime
        .block_on(backend.memory_store().clear(&Scope::all()))
        .unwrap_or_else(|error| panic!("emptying {schema}: {error}"));
    Some(backend)
}
