//! The schema and its versioned migrations, recorded in the table `schema_version`.
//!
//! A migration, once released, is never edited: a database written by an older version is
//! brought up to date by running the migrations it lacks, in order, in one transaction that
//! first takes a transaction-scoped advisory lock derived from the schema name. Two processes
//! starting at once therefore migrate one after the other, and the second finds nothing left
//! to do. A schema whose version is newer than [`SCHEMA_VERSION`] is refused, never modified.

use memory_core::{MemoryError, Result};
use tokio_postgres::types::ToSql;

use crate::database::Database;
use crate::error::Context;
use crate::sql::analyzer_fingerprint;

/// The schema version this build writes and reads (the highest `version` in the
/// `schema_version` table).
pub const SCHEMA_VERSION: u32 = 6;

struct Migration {
    version: u32,
    summary: &'static str,
    sql: &'static str,
}

/// Every migration, oldest first; `MIGRATIONS[i].version == i + 1`. `{s}` is the schema.
const MIGRATIONS: [Migration; 6] = [
    Migration {
        version: 1,
        summary: "memories, knowledge pages and the knowledge graph, with GIN-indexed term vectors",
        sql: MIGRATION_1,
    },
    Migration {
        version: 2,
        summary: "search terms as GIN-indexed text arrays, without the tsvector size limit",
        sql: MIGRATION_2,
    },
    Migration {
        version: 3,
        summary: "the exact JSON text of metadata that jsonb cannot give back (negative zero)",
        sql: MIGRATION_3,
    },
    Migration {
        version: 4,
        summary: "facts that change: fact keys, validity, ends and links of memories, validity of relations; access statistics of pages and entities, creation time of entities",
        sql: MIGRATION_4,
    },
    Migration {
        version: 5,
        summary: "attributes of entities and relations",
        sql: MIGRATION_5,
    },
    Migration {
        version: 6,
        summary: "embeddings as packed big-endian float4 bytes, half the size of real[] on the wire",
        sql: MIGRATION_6,
    },
];

// Conventions:
// - Namespace, id, key and tag columns use the "C" collation: byte order, the order Rust
//   sorts strings in, so ORDER BY agrees with the other backends and a subtree scope is a
//   btree range scan whatever the database's default collation is.
// - Timestamps are bigint nanoseconds since the Unix epoch (UTC): timestamptz keeps only
//   microseconds, and a record must read back exactly as it was saved.
// - f32 fields are real, so they round-trip exactly; sums of scores are double precision.
// - `terms` holds the distinct terms of the shared analyzer (memory_core::text::Analyzer),
//   built by the client (sql::index_terms), under a GIN index: it decides what matches. It
//   was a tsvector in version 1 and is a text[] from version 2 (MIGRATION_2). `term_freqs` holds each term's frequency per field
//   ({"term": [f0, f1, ...]}) and the `*_len` columns each field's term count: BM25 reads
//   them (a key lookup per query term, instead of unnesting the whole tsvector). Memories
//   have two fields, content with tags (`doc_len`) and the context from metadata `_context`
//   (`context_len`); pages four: title, summary, tags, content. When the analyzer's behaviour
//   changes (its fingerprint in `meta` differs), the next migration rebuilds these columns.
const MIGRATION_1: &str = r#"
CREATE TABLE {s}.memories (
    rid            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ns             text COLLATE "C" NOT NULL,
    id             text COLLATE "C" NOT NULL,
    content        text NOT NULL,
    kind           text NOT NULL,
    importance     real NOT NULL,
    metadata       jsonb NOT NULL,
    tags           text[] COLLATE "C" NOT NULL,
    source         text,
    credibility    real NOT NULL,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL,
    last_accessed  bigint,
    access_count   bigint NOT NULL DEFAULT 0,
    embedding      real[],
    recall_count   bigint NOT NULL DEFAULT 0,
    recall_total   double precision NOT NULL DEFAULT 0,
    last_recall_at bigint,
    terms          tsvector NOT NULL,
    term_freqs     jsonb NOT NULL,
    doc_len        integer NOT NULL,
    context_len    integer NOT NULL,
    UNIQUE (ns, id)
);
-- The lengths are included so the BM25 statistics of a scope are an index-only scan.
CREATE INDEX memories_by_time ON {s}.memories (ns, created_at, id)
    INCLUDE (doc_len, context_len);
CREATE INDEX memories_terms ON {s}.memories USING gin (terms);
CREATE INDEX memories_tags ON {s}.memories USING gin (tags);
CREATE INDEX memories_metadata ON {s}.memories USING gin (metadata jsonb_path_ops);

CREATE TABLE {s}.pages (
    rid         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ns          text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    title       text NOT NULL,
    title_key   text COLLATE "C" NOT NULL,
    summary     text NOT NULL,
    content     text NOT NULL,
    tags        text[] COLLATE "C" NOT NULL,
    refs        text[] COLLATE "C" NOT NULL,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL,
    terms       tsvector NOT NULL,
    term_freqs  jsonb NOT NULL,
    title_len   integer NOT NULL,
    summary_len integer NOT NULL,
    tags_len    integer NOT NULL,
    content_len integer NOT NULL,
    UNIQUE (ns, id)
);
CREATE INDEX pages_by_title ON {s}.pages (ns, title_key, id)
    INCLUDE (title_len, summary_len, tags_len, content_len);
CREATE INDEX pages_terms ON {s}.pages USING gin (terms);
CREATE INDEX pages_tags ON {s}.pages USING gin (tags);
CREATE TABLE {s}.page_refs (
    ns        text COLLATE "C" NOT NULL,
    source_id text COLLATE "C" NOT NULL,
    target_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (ns, target_id, source_id),
    FOREIGN KEY (ns, source_id) REFERENCES {s}.pages (ns, id) ON DELETE CASCADE
);
CREATE INDEX page_refs_by_source ON {s}.page_refs (ns, source_id);

CREATE TABLE {s}.entities (
    ns          text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    name        text NOT NULL,
    name_key    text COLLATE "C" NOT NULL,
    entity_type text NOT NULL,
    type_key    text COLLATE "C" NOT NULL,
    description text NOT NULL,
    tags        text[] COLLATE "C" NOT NULL,
    PRIMARY KEY (ns, id)
);
CREATE INDEX entities_tags ON {s}.entities USING gin (tags);
CREATE INDEX entities_by_type ON {s}.entities (ns, type_key);
CREATE TABLE {s}.relations (
    ns            text COLLATE "C" NOT NULL,
    source_id     text COLLATE "C" NOT NULL,
    target_id     text COLLATE "C" NOT NULL,
    relation_type text COLLATE "C" NOT NULL,
    weight        real NOT NULL,
    PRIMARY KEY (ns, source_id, relation_type, target_id),
    FOREIGN KEY (ns, source_id) REFERENCES {s}.entities (ns, id) ON DELETE CASCADE,
    FOREIGN KEY (ns, target_id) REFERENCES {s}.entities (ns, id) ON DELETE CASCADE
);
CREATE INDEX relations_by_target ON {s}.relations (ns, target_id, relation_type, source_id);

-- key 'analyzer': the fingerprint of the analyzer that built the terms columns.
CREATE TABLE {s}.meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
"#;

// A tsvector holds at most 1 MiB of lexemes, less than the distinct bigrams of 1 MiB of
// Chinese (about 2 MiB), so such content failed to save. A text[] has no such limit, its GIN
// index (array_ops) answers `terms && $1` as the tsvector's answered `terms @@ 'a' | 'b'`,
// and `tsvector_to_array` gives the same terms back, so nothing needs re-analysing.
const MIGRATION_2: &str = r#"
DROP INDEX {s}.memories_terms;
ALTER TABLE {s}.memories ALTER COLUMN terms TYPE text[] COLLATE "C"
    USING tsvector_to_array(terms);
CREATE INDEX memories_terms ON {s}.memories USING gin (terms);
DROP INDEX {s}.pages_terms;
ALTER TABLE {s}.pages ALTER COLUMN terms TYPE text[] COLLATE "C"
    USING tsvector_to_array(terms);
CREATE INDEX pages_terms ON {s}.pages USING gin (terms);
"#;

// jsonb keeps numbers as numeric, which has no negative zero: metadata holding -0.0 read back
// 0.0. Such metadata (and only such) is also kept as JSON text, which reads back exactly;
// filters still use the jsonb column.
const MIGRATION_3: &str = "ALTER TABLE {s}.memories ADD COLUMN metadata_exact text;";

// Facts that change (memory_core::fact): a memory may state a fact (`fact_key`), hold in the
// world for an interval (`valid_from`, `valid_until`, nanoseconds like every time column),
// and end, superseded or retracted, with links to the memories it supersedes or conflicts
// with. The links and the end are kept as memory_core::Lineage's JSON text (`lineage`, NULL
// when there are none; text, not jsonb: no query looks inside it, and the text reads back
// as it was written); `ended_at` copies the end's time so time views (`MemoryFilter::view`)
// filter in SQL, before a search's top-k cut. Lists by fact key ("the newest memory stating
// user.city") are served by a partial index holding only memories with a key, so rows
// without one (every row written before this version) cost it nothing. Relations gain their
// validity interval: traversals follow only relations current when they run. Every column
// is nullable without a default, so adding it rewrites no row and every existing record
// reads back unchanged, with no fact fields.
//
// Pages and entities gain access statistics (how often a recall returned them, and when it
// last did, for knowledge lifecycle policies) and entities their creation time. The counts
// default to 0, a constant default that PostgreSQL (11 and later) records in the catalogue
// without rewriting rows; the times are NULL: never accessed, and for an existing entity an
// unknown creation time, which a TTL never expires since nothing says how old it is. No
// index: a lifecycle pass reads a namespace's rows anyway.
const MIGRATION_4: &str = r#"
ALTER TABLE {s}.memories
    ADD COLUMN fact_key    text COLLATE "C",
    ADD COLUMN valid_from  bigint,
    ADD COLUMN valid_until bigint,
    ADD COLUMN ended_at    bigint,
    ADD COLUMN lineage     text;
CREATE INDEX memories_by_fact_key ON {s}.memories (ns, fact_key, created_at, id)
    WHERE fact_key IS NOT NULL;
ALTER TABLE {s}.relations
    ADD COLUMN valid_from  bigint,
    ADD COLUMN valid_until bigint;
ALTER TABLE {s}.pages
    ADD COLUMN access_count  bigint NOT NULL DEFAULT 0,
    ADD COLUMN last_accessed bigint;
ALTER TABLE {s}.entities
    ADD COLUMN created_at    bigint,
    ADD COLUMN access_count  bigint NOT NULL DEFAULT 0,
    ADD COLUMN last_accessed bigint;
"#;

// Entities and relations gain attributes: a JSON object as text (text, not jsonb: no query
// looks inside it, and the text reads back exactly as written, negative zero included), NULL
// when there are none, which is what every existing row means. Nullable without a default,
// so adding it rewrites no row.
const MIGRATION_5: &str = "ALTER TABLE {s}.entities ADD COLUMN attributes text;
ALTER TABLE {s}.relations ADD COLUMN attributes text;";

// Embeddings become bytea: each value's four bytes of float4 in network (big-endian) order,
// one after the other, as `float4send` writes them. A real[] sent each value with its own
// four-byte length and the array's header: twice the bytes for a similarity search's
// ranking pass, which reads every embedding in scope, and a decoding per value where the
// bytes are now read as they come. Every bit is kept (negative zero, subnormals). The
// conversion rewrites each row that has an embedding, in the migration's transaction;
// rows without one stay NULL. The new column goes last, which no statement notices: every
// statement names its columns.
const MIGRATION_6: &str = "ALTER TABLE {s}.memories ADD COLUMN embedding_packed bytea;
UPDATE {s}.memories SET embedding_packed = (
    SELECT string_agg(float4send(e.value), ''::bytea ORDER BY e.position)
    FROM unnest(embedding) WITH ORDINALITY AS e(value, position))
WHERE embedding IS NOT NULL;
ALTER TABLE {s}.memories DROP COLUMN embedding;
ALTER TABLE {s}.memories RENAME COLUMN embedding_packed TO embedding;";

const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS {s}.schema_version (
    version    integer PRIMARY KEY,
    summary    text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

/// The advisory-lock key of a schema's migrations: FNV-1a of `agent-memory/<schema>`, so it
/// is the same in every process and every PostgreSQL version.
fn lock_key(schema: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in "agent-memory/".bytes().chain(schema.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// The schema's version: 0 when it has no `schema_version` table (a new or empty schema).
pub(crate) async fn current_version(db: &Database) -> Result<u32> {
    Ok(read_state(db).await?.0)
}

/// The schema's version and the analyzer fingerprint its search columns were built with.
async fn read_state(db: &Database) -> Result<(u32, Option<String>)> {
    let what = || format!("reading the schema version of {}", db.schema());
    let client = db.client(&what()).await?;
    let table = format!("\"{}\".schema_version", db.schema());
    let params: [&(dyn ToSql + Sync); 1] = [&table];
    let exists: bool = client
        .query_one("SELECT to_regclass($1::text) IS NOT NULL", &params)
        .await
        .and_then(|row| row.try_get(0))
        .context(what)?;
    if !exists {
        return Ok((0, None));
    }
    let version: i32 = client
        .query_one(
            &db.qualify("SELECT coalesce(max(version), 0) FROM {s}.schema_version"),
            &[],
        )
        .await
        .and_then(|row| row.try_get(0))
        .context(what)?;
    let version = u32::try_from(version).unwrap_or(0);
    if version == 0 {
        return Ok((0, None));
    }
    let fingerprint: Option<String> = client
        .query_opt(
            &db.qualify("SELECT value FROM {s}.meta WHERE key = 'analyzer'"),
            &[],
        )
        .await
        .and_then(|row| row.map(|row| row.try_get(0)).transpose())
        .context(what)?;
    Ok((version, fingerprint))
}

/// Brings the schema up to date and returns the version it is at: runs the migrations it
/// lacks and, when its search columns were built by an analyzer that behaves differently
/// from this build's, rebuilds them. Does nothing (and needs no privilege to change the
/// schema) when both are current.
pub(crate) async fn migrate(db: &Database) -> Result<u32> {
    let (version, fingerprint) = read_state(db).await?;
    check_not_newer(db, version)?;
    if version == SCHEMA_VERSION && fingerprint.as_deref() == Some(&analyzer_fingerprint()) {
        return Ok(version);
    }
    let what = || format!("migrating schema {} on {}", db.schema(), db.target());
    let mut client = db.client(&what()).await?;
    let transaction = client.transaction().await.context(what)?;
    let key = lock_key(db.schema());
    let params: [&(dyn ToSql + Sync); 1] = [&key];
    // Held until commit or rollback: a concurrent migration of this schema waits here.
    transaction
        .execute("SELECT pg_advisory_xact_lock($1::bigint)", &params)
        .await
        .context(|| format!("{}: taking the migration lock", what()))?;
    transaction
        .batch_execute(&db.qualify(&format!(
            "CREATE SCHEMA IF NOT EXISTS {{s}}; {VERSION_TABLE}"
        )))
        .await
        .context(|| format!("{}: creating the schema", what()))?;
    // Read again under the lock: another process may have migrated meanwhile.
    let version: i32 = transaction
        .query_one(
            &db.qualify("SELECT coalesce(max(version), 0) FROM {s}.schema_version"),
            &[],
        )
        .await
        .and_then(|row| row.try_get(0))
        .context(what)?;
    let version = u32::try_from(version).unwrap_or(0);
    check_not_newer(db, version)?;
    for migration in MIGRATIONS.iter().filter(|m| m.version > version) {
        let step = || {
            format!(
                "{}: migration {} ({})",
                what(),
                migration.version,
                migration.summary
            )
        };
        transaction
            .batch_execute(&db.qualify(migration.sql))
            .await
            .context(step)?;
        let number = i32::try_from(migration.version).unwrap_or(i32::MAX);
        let params: [&(dyn ToSql + Sync); 2] = [&number, &migration.summary];
        transaction
            .execute(
                &db.qualify(
                    "INSERT INTO {s}.schema_version (version, summary) VALUES ($1::integer, $2::text)",
                ),
                &params,
            )
            .await
            .context(step)?;
    }
    refresh_index(&transaction, db).await?;
    transaction
        .commit()
        .await
        .context(|| format!("{}: committing", what()))?;
    Ok(SCHEMA_VERSION)
}

/// Rebuilds the search columns when the stored analyzer fingerprint differs from this
/// build's, then records this build's. (Without a stored fingerprint the tables were just
/// created, empty.) Runs under the migration lock, in its transaction.
async fn refresh_index(
    transaction: &deadpool_postgres::Transaction<'_>,
    db: &Database,
) -> Result<()> {
    let what = || format!("re-indexing schema {} on {}", db.schema(), db.target());
    let current = analyzer_fingerprint();
    let stored: Option<String> = transaction
        .query_opt(
            &db.qualify("SELECT value FROM {s}.meta WHERE key = 'analyzer'"),
            &[],
        )
        .await
        .and_then(|row| row.map(|row| row.try_get(0)).transpose())
        .context(what)?;
    if stored.as_deref() == Some(current.as_str()) {
        return Ok(());
    }
    if stored.is_some() {
        crate::memory_store::reindex(transaction, db).await?;
        crate::knowledge_store::reindex(transaction, db).await?;
    }
    let params: [&(dyn ToSql + Sync); 1] = [&current];
    transaction
        .execute(
            &db.qualify(
                "INSERT INTO {s}.meta (key, value) VALUES ('analyzer', $1::text) \
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            ),
            &params,
        )
        .await
        .context(what)?;
    Ok(())
}

/// Errors unless the schema is exactly at [`SCHEMA_VERSION`] with search columns built by
/// this build's analyzer (when migrations are left to an explicit call).
pub(crate) async fn require_current(db: &Database) -> Result<()> {
    let (version, fingerprint) = read_state(db).await?;
    check_not_newer(db, version)?;
    if version < SCHEMA_VERSION {
        return Err(storage(format!(
            "schema {} on {} is at version {version}, this build needs {SCHEMA_VERSION}; run PostgresBackend::migrate or connect with apply_migrations",
            db.schema(),
            db.target()
        )));
    }
    if fingerprint.as_deref() != Some(&analyzer_fingerprint()) {
        return Err(storage(format!(
            "schema {} on {} was indexed by a text analyzer that behaves differently from this build's; run PostgresBackend::migrate to rebuild the search columns",
            db.schema(),
            db.target()
        )));
    }
    Ok(())
}

fn check_not_newer(db: &Database, version: u32) -> Result<()> {
    if version > SCHEMA_VERSION {
        return Err(storage(format!(
            "schema {} on {} is at version {version}, newer than this build of memory-postgres reads ({SCHEMA_VERSION}); upgrade memory-postgres",
            db.schema(),
            db.target()
        )));
    }
    Ok(())
}

fn storage(message: String) -> MemoryError {
    MemoryError::Storage {
        message,
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order() {
        for (index, migration) in MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version as usize, index + 1);
        }
        assert_eq!(MIGRATIONS.len(), SCHEMA_VERSION as usize);
    }

    #[test]
    fn lock_keys_are_stable_and_per_schema() {
        assert_eq!(lock_key("agent_memory"), lock_key("agent_memory"));
        assert_ne!(lock_key("agent_memory"), lock_key("agent_memory2"));
        // FNV-1a is fixed: the key must not change between builds or processes.
        assert_eq!(lock_key("agent_memory"), -177_492_126_047_125_894);
    }
}
