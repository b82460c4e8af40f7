//! Opens the memory the `--store` URL or path names: SQLite, PostgreSQL or in memory.

pub(crate) use agent_memory::StoreLocation;
use agent_memory::{
    DecayConfig, EvictionConfig, EvictionPolicy, Memory, MemoryBuilder, PostgresBackend,
    PostgresOptions, RetrieverConfig, SqliteBackend, SqliteOptions, ValueBasedConfig,
};

use crate::failure::{ErrorKind, Failure};

/// How the memory is tuned beyond its store.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tuning {
    /// The capacity of each namespace, if any.
    pub(crate) max_memories: Option<usize>,
    /// Recall events per write of recall statistics, if not the library's default.
    pub(crate) recall_batch: Option<usize>,
    /// SQLite's read connections beside the writing one
    /// ([`SqliteOptions::read_connections`]), if not the library's default.
    pub(crate) sqlite_readers: Option<usize>,
    /// The settings of every recall (the configuration file's `[retriever]` table), if
    /// not the library's defaults.
    pub(crate) retriever: Option<RetrieverConfig>,
    /// What writes and `maintain` forget (the configuration file's `[eviction]` table), if
    /// anything; not beside `max_memories`.
    pub(crate) eviction: Option<EvictionConfig>,
    /// Importance decay (the configuration file's `[decay]` table), if any.
    pub(crate) decay: Option<DecayConfig>,
    /// The embedding service of the optional embedding channel (the configuration file's
    /// `[embeddings]` table or the environment), if any.
    pub(crate) embeddings: Option<agent_memory::models::HttpEmbedder>,
}

/// The memory's settings: a capacity per namespace, the batch of recall statistics, the
/// recall settings and the embedding service, when given.
fn configured(builder: MemoryBuilder, tuning: Tuning) -> Result<Memory, Failure> {
    let builder = match tuning.embeddings {
        Some(embedder) => builder.embedder(std::sync::Arc::new(embedder)),
        None => builder,
    };
    let builder = match tuning.retriever {
        Some(config) => builder.retriever_config(config),
        None => builder,
    };
    let builder = match tuning.recall_batch {
        Some(events) => builder.recall_batch(events),
        None => builder,
    };
    let builder = match tuning.decay {
        Some(config) => builder.decay(config),
        None => builder,
    };
    if let (Some(_), Some(_)) = (tuning.max_memories, &tuning.eviction) {
        return Err(Failure::invalid(
            "max_memories",
            "set either --max-memories or the configuration file's [eviction] table, not both",
        ));
    }
    if let Some(config) = tuning.eviction {
        return Ok(builder.eviction(config).build()?);
    }
    let max_memories = tuning.max_memories;
    let builder = match max_memories {
        Some(0) => {
            return Err(Failure::invalid(
                "max_memories",
                "max_memories must be at least 1",
            ));
        }
        // By value (importance, age and use), as `--help`, the README and the MCP tools
        // tell: an important memory outlives a trivial newer one.
        Some(max_items) => builder.eviction(EvictionConfig {
            policy: EvictionPolicy::ValueBased(ValueBasedConfig {
                max_items,
                ..ValueBasedConfig::default()
            }),
            ..EvictionConfig::default()
        }),
        None => builder,
    };
    Ok(builder.build()?)
}

/// The SQLite options of `tuning`: the library's defaults, with its read connections.
fn sqlite_options(tuning: &Tuning) -> SqliteOptions {
    let options = SqliteOptions::default();
    match tuning.sqlite_readers {
        Some(readers) => options.with_read_connections(readers),
        None => options,
    }
}

/// Opens the memory at `location`, tuned by `tuning`.
///
/// # Errors
/// Storage or unavailable failures, with a hint naming the store.
pub(crate) async fn open(
    location: &StoreLocation,
    postgres_schema: Option<&str>,
    tuning: Tuning,
) -> Result<Memory, Failure> {
    let stores = match location {
        // The builder's stores are in memory unless given.
        StoreLocation::InMemory => return configured(Memory::builder(), tuning),
        StoreLocation::Sqlite(path) => SqliteBackend::open_with(path, sqlite_options(&tuning))
            .map_err(|error| {
                let failure = Failure::from(error);
                let hint = format!(
                    "check that the directory of {} exists and is writable, and that the file is an agent-memory SQLite store (or choose another with --store)",
                    path.display()
                );
                failure.with_hint(hint)
            })?
            .stores(),
        StoreLocation::Postgres(url) => {
            let mut options = PostgresOptions::default();
            if let Some(schema) = postgres_schema {
                options = options.with_schema(schema);
            }
            PostgresBackend::connect(url, options)
                .await
                .map_err(|error| {
                    let failure = Failure::from(error);
                    // The connection's failures: the server gone or slow, a login or
                    // database it refuses (SQLSTATE classes 28 and 3D, or the client's own
                    // password and authentication errors), TLS. Not what the schema found
                    // there (a newer version, a table of another tool's).
                    let connecting = matches!(failure.kind, ErrorKind::Unavailable | ErrorKind::Timeout)
                        || [
                            "(sqlstate 28",
                            "(sqlstate 3D",
                            "TLS handshake",
                            "password",
                            "authentication",
                        ]
                            .iter()
                            .any(|mark| failure.message.contains(mark));
                    if connecting {
                        failure.with_hint(
                            "check that the PostgreSQL server in --store is running, reachable and accepts this user and database",
                        )
                    } else {
                        failure
                    }
                })?
                .stores()
        }
    };
    configured(Memory::builder().stores(stores), tuning)
}
