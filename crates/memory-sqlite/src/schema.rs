//! The schema and its versioned migrations, tracked in `PRAGMA user_version`.
//!
//! A migration, once released, is never edited: a database written by an older version is
//! brought up to date by running the migrations it lacks, in order, in one transaction.
//! A database whose version is newer than [`SCHEMA_VERSION`] is refused, never modified.

use memory_core::{MemoryError, Result};
use rusqlite::{Connection, OptionalExtension, Transaction};

use crate::error::Context;

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: u32 = 7;

/// `PRAGMA application_id` of an agent-memory database: the ASCII bytes `AMEM`.
pub const APPLICATION_ID: i32 = 0x414D_454D;

struct Migration {
    version: u32,
    summary: &'static str,
    sql: &'static str,
}

/// Every migration, oldest first; `MIGRATIONS[i].version == i + 1`.
const MIGRATIONS: [Migration; 7] = [
    Migration {
        version: 1,
        summary: "memories, knowledge pages and the knowledge graph, with FTS5 indexes",
        sql: MIGRATION_1,
    },
    Migration {
        version: 2,
        summary: "an indexed table of memory tags, filled from the tags column",
        sql: MIGRATION_2,
    },
    Migration {
        version: 3,
        summary: "namespace scope tokens in the full-text indexes, rebuilt from the records",
        sql: MIGRATION_3,
    },
    Migration {
        version: 4,
        summary: "full-text postings with per-namespace statistics replace the FTS5 tables",
        sql: MIGRATION_4,
    },
    Migration {
        version: 5,
        summary: "facts that change: fact key, validity and lineage of memories, validity of relations; access statistics of pages and entities, creation time of entities",
        sql: MIGRATION_5,
    },
    Migration {
        version: 6,
        summary: "attributes of entities and relations",
        sql: MIGRATION_6,
    },
    Migration {
        version: 7,
        summary: "an entity's relations indexed in the order they are read",
        sql: MIGRATION_7,
    },
];

// Timestamps are INTEGER nanoseconds since the Unix epoch (UTC). Tags, references, metadata
// are JSON text. The FTS5 tables are contentless: they hold the terms of the shared analyzer
// (memory_core::text::Analyzer), space-separated, under the `ascii` tokenizer, which keeps
// every analyzer term as one token (terms hold no ASCII punctuation, and it treats all
// non-ASCII characters as word characters). Their rowid is the record's `rid`.
const MIGRATION_1: &str = "
CREATE TABLE memories (
    rid            INTEGER PRIMARY KEY,
    ns             TEXT    NOT NULL,
    id             TEXT    NOT NULL,
    content        TEXT    NOT NULL,
    kind           TEXT    NOT NULL,
    importance     REAL    NOT NULL,
    metadata       TEXT    NOT NULL,
    tags           TEXT    NOT NULL,
    source         TEXT,
    credibility    REAL    NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    last_accessed  INTEGER,
    access_count   INTEGER NOT NULL DEFAULT 0,
    embedding      BLOB,
    recall_count   INTEGER NOT NULL DEFAULT 0,
    recall_total   REAL    NOT NULL DEFAULT 0,
    last_recall_at INTEGER,
    UNIQUE (ns, id)
);
CREATE INDEX memories_by_time ON memories (ns, created_at, id);
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    terms, content = '', contentless_delete = 1, tokenize = 'ascii'
);

CREATE TABLE pages (
    rid        INTEGER PRIMARY KEY,
    ns         TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    title      TEXT    NOT NULL,
    title_key  TEXT    NOT NULL,
    summary    TEXT    NOT NULL,
    content    TEXT    NOT NULL,
    tags       TEXT    NOT NULL,
    refs       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (ns, id)
);
CREATE INDEX pages_by_title ON pages (ns, title_key, id);
CREATE TABLE page_refs (
    ns        TEXT NOT NULL,
    source_id TEXT NOT NULL,
    target_id TEXT NOT NULL,
    PRIMARY KEY (ns, target_id, source_id),
    FOREIGN KEY (ns, source_id) REFERENCES pages (ns, id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX page_refs_by_source ON page_refs (ns, source_id);
CREATE VIRTUAL TABLE pages_fts USING fts5 (
    title, summary, tags, content, content = '', contentless_delete = 1, tokenize = 'ascii'
);

CREATE TABLE entities (
    rid         INTEGER PRIMARY KEY,
    ns          TEXT NOT NULL,
    id          TEXT NOT NULL,
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    type_key    TEXT NOT NULL,
    description TEXT NOT NULL,
    tags        TEXT NOT NULL,
    UNIQUE (ns, id)
);
CREATE TABLE entity_tags (
    rid INTEGER NOT NULL REFERENCES entities (rid) ON DELETE CASCADE,
    tag TEXT    NOT NULL,
    PRIMARY KEY (rid, tag)
) WITHOUT ROWID;
CREATE INDEX entity_tags_by_tag ON entity_tags (tag);
CREATE TABLE relations (
    ns            TEXT NOT NULL,
    source_id     TEXT NOT NULL,
    target_id     TEXT NOT NULL,
    relation_type TEXT NOT NULL,
    weight        REAL NOT NULL,
    PRIMARY KEY (ns, source_id, target_id, relation_type),
    FOREIGN KEY (ns, source_id) REFERENCES entities (ns, id) ON DELETE CASCADE,
    FOREIGN KEY (ns, target_id) REFERENCES entities (ns, id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX relations_by_target ON relations (ns, target_id);

PRAGMA application_id = 1095583053;
";

// Version 1 filtered memories by tag with json_each over the tags column, a scan of every
// item in scope; this table makes the tag filter an index lookup.
const MIGRATION_2: &str = "
CREATE TABLE memory_tags (
    rid INTEGER NOT NULL REFERENCES memories (rid) ON DELETE CASCADE,
    tag TEXT    NOT NULL,
    PRIMARY KEY (rid, tag)
) WITHOUT ROWID;
CREATE INDEX memory_tags_by_tag ON memory_tags (tag);
INSERT OR IGNORE INTO memory_tags (rid, tag)
    SELECT m.rid, j.value FROM memories AS m, json_each(m.tags) AS j WHERE j.type = 'text';
";

// Version 2 ranked every full-text match in the file and only then dropped those outside
// the scope, so a search in one tenant's namespace cost as much as a search of all of them.
// The `scope` column held tokens naming the record's namespace and its ancestors (hashes of
// them); a scoped query required its token, so FTS5 narrowed to the scope before ranking.
// Contentless tables cannot be altered or re-read, so both were recreated and refilled from
// the records; since then the full-text tables are derived state, rebuilt on open
// (`crate::rebuild`), and the `meta` table records what built them.
const MIGRATION_3: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    terms, scope, content = '', contentless_delete = 1, tokenize = 'ascii'
);
DROP TABLE pages_fts;
CREATE VIRTUAL TABLE pages_fts USING fts5 (
    title, summary, tags, content, scope,
    content = '', contentless_delete = 1, tokenize = 'ascii'
);
";

// Version 3 ranked with FTS5's bm25(), whose statistics span the whole file and whose
// parameters are fixed; every other backend ranks with memory-core's BM25F over the
// statistics of the namespace searched. The FTS5 tables give way to postings tables with
// per-namespace statistics (`crate::fulltext`). Those are derived state, created and filled
// from the records by the rebuild that runs on open when the index fingerprint differs,
// which it does after this migration (index layout 3). The version changes so that a build
// that would write records without their postings refuses the file.
const MIGRATION_4: &str = "
DROP TABLE IF EXISTS memories_fts;
DROP TABLE IF EXISTS pages_fts;
";

// Memories state facts that change (memory_core::fact): a fact key, when the fact holds in
// the world, and how the memory ended with what it supersedes or conflicts with; relations
// hold in the world for a time too. Reads filter by time view and fact key in SQL, so the
// times are columns of their own (`ended_at` copies the end time out of `lineage`, the
// `Lineage::to_json` text, NULL when the memory has no links). The index on the fact key
// lists a fact's versions in one namespace in time order without a scan (it holds only
// keyed rows). The version changes so that a build that would drop these fields on rewrite
// refuses the file. Every new column is NULL in existing rows, which is what those records
// mean: no key, always valid, never ended, no links.
//
// Pages and entities gain access statistics (how often a recall returned them and when it
// last did, for knowledge lifecycle policies) and entities their creation time. Existing
// rows read as never accessed (`access_count` 0, `last_accessed` NULL) and, for entities, of
// unknown age (`created_at` NULL): a TTL never expires them, since nothing says how old they
// are. No index: a lifecycle pass reads a namespace's rows in order anyway.
const MIGRATION_5: &str = "
ALTER TABLE memories ADD COLUMN fact_key TEXT;
ALTER TABLE memories ADD COLUMN valid_from INTEGER;
ALTER TABLE memories ADD COLUMN valid_until INTEGER;
ALTER TABLE memories ADD COLUMN ended_at INTEGER;
ALTER TABLE memories ADD COLUMN lineage TEXT;
CREATE INDEX memories_by_fact_key ON memories (ns, fact_key, created_at, id)
    WHERE fact_key IS NOT NULL;
ALTER TABLE relations ADD COLUMN valid_from INTEGER;
ALTER TABLE relations ADD COLUMN valid_until INTEGER;
ALTER TABLE pages ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pages ADD COLUMN last_accessed INTEGER;
ALTER TABLE entities ADD COLUMN created_at INTEGER;
ALTER TABLE entities ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE entities ADD COLUMN last_accessed INTEGER;
";

// Entities and relations gain attributes: a JSON object as text, NULL when there are none,
// which is what every existing row means. The version changes so that a build that would
// drop them on rewrite refuses the file.
const MIGRATION_6: &str = "
ALTER TABLE entities ADD COLUMN attributes TEXT;
ALTER TABLE relations ADD COLUMN attributes TEXT;
";

// An entity's relations are read outgoing then incoming, each by relation type then the
// other end (`relations_of`, and a page of them for an entity read): indexes in that order
// let a read of the first relations stop at them, where the primary key (target before
// type) sorted every outgoing relation first, and the index on the target alone was passed
// over for a scan of the namespace. The version changes so that an older build, which
// would not maintain them, refuses the file.
const MIGRATION_7: &str = "
DROP INDEX relations_by_target;
CREATE INDEX relations_by_target ON relations (ns, target_id, relation_type, source_id);
CREATE INDEX relations_by_source ON relations (ns, source_id, relation_type, target_id);
";

fn user_version(connection: &Connection, display: &str) -> Result<i64> {
    connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .context(|| format!("opening {display}: reading the schema version"))
}

/// Refuses files that are not databases, databases of other applications, and databases
/// written by a newer version of this crate. Only reads, so it runs before anything that
/// could change the file (the WAL switch among them): a refused file is left byte for byte
/// as it was.
///
/// Ours are the databases carrying [`APPLICATION_ID`] (every migration since the first sets
/// it) and empty ones (no schema version, no table), which the migrations then create.
pub(crate) fn check_compatible(connection: &Connection, display: &str) -> Result<()> {
    let version = user_version(connection, display)?;
    let application_id: i64 = connection
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .context(|| format!("opening {display}: reading the application id"))?;
    if application_id == i64::from(APPLICATION_ID) {
        if version > i64::from(SCHEMA_VERSION) {
            return Err(newer(display, version));
        }
        return Ok(());
    }
    if application_id != 0 {
        return Err(storage(format!(
            "opening {display}: the database belongs to another application (application_id {application_id:#x})"
        )));
    }
    if version != 0 {
        return Err(storage(format!(
            "opening {display}: not an agent-memory database (schema version {version} but no agent-memory application id); refusing to change it"
        )));
    }
    if foreign_objects(connection, display)? > 0 {
        return Err(has_tables(display));
    }
    Ok(())
}

/// How many tables, indexes, views and triggers the database holds besides SQLite's own.
fn foreign_objects(connection: &Connection, display: &str) -> Result<i64> {
    connection
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
            [],
            |row| row.get(0),
        )
        .context(|| format!("opening {display}: listing tables"))
}

fn has_tables(display: &str) -> MemoryError {
    storage(format!(
        "opening {display}: the database has tables but no agent-memory schema version; refusing to change it"
    ))
}

/// Whether the store is at this build's schema version (no migration to run), read
/// without a transaction of its own.
pub(crate) fn is_current(connection: &Connection, display: &str) -> Result<bool> {
    Ok(user_version(connection, display)? == i64::from(SCHEMA_VERSION))
}

/// Runs the migrations the database lacks, in `transaction` (an immediate one, so no other
/// connection migrates at the same time). The derived index is not
/// touched: [`stale_index`] says whether it needs the rebuild (`crate::rebuild`).
pub(crate) fn migrate(transaction: &Transaction<'_>, display: &str, what: &str) -> Result<()> {
    // Read again under the write lock: another process may have migrated meanwhile.
    let version = user_version(transaction, display)?;
    if version > i64::from(SCHEMA_VERSION) {
        return Err(newer(display, version));
    }
    if version == 0 && foreign_objects(transaction, display)? > 0 {
        return Err(has_tables(display));
    }
    for migration in MIGRATIONS
        .iter()
        .filter(|migration| i64::from(migration.version) > version)
    {
        transaction.execute_batch(migration.sql).context(|| {
            format!(
                "{what}: migration {} ({})",
                migration.version, migration.summary
            )
        })?;
        transaction
            .pragma_update(None, "user_version", migration.version)
            .context(|| format!("{what}: recording version {}", migration.version))?;
    }
    Ok(())
}

/// The fingerprint of the index this build writes: the index layout
/// ([`INDEX_LAYOUT`](crate::fulltext::INDEX_LAYOUT)), what the indexed fields hold
/// ([`INDEXED_FIELDS_VERSION`](memory_core::search::INDEXED_FIELDS_VERSION)) and the
/// analyzer's behaviour.
pub(crate) fn index_fingerprint() -> String {
    format!(
        "layout {} fields {} analyzer {}",
        crate::fulltext::INDEX_LAYOUT,
        memory_core::search::INDEXED_FIELDS_VERSION,
        crate::terms::analyzer_fingerprint()
    )
}

/// `Some(fingerprint)` when the derived index must be rebuilt: it is missing, or was built
/// with another layout or by an analyzer that behaves differently (stored terms and query
/// terms must come from the same analyzer); `fingerprint` is this build's, to record with
/// [`record_index`] once rebuilt. `None` when the index is current.
pub(crate) fn stale_index(connection: &Connection, what: &str) -> Result<Option<String>> {
    let fingerprint = index_fingerprint();
    let stored: Option<String> = connection
        .query_row("SELECT value FROM meta WHERE key = 'index'", [], |row| {
            row.get(0)
        })
        .optional()
        .context(|| format!("{what}: reading the index fingerprint"))?;
    Ok((stored.as_deref() != Some(fingerprint.as_str())).then_some(fingerprint))
}

/// Records the fingerprint of a rebuilt index.
pub(crate) fn record_index(
    transaction: &Transaction<'_>,
    fingerprint: &str,
    what: &str,
) -> Result<()> {
    transaction
        .execute(
            "INSERT INTO meta (key, value) VALUES ('index', ?1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [fingerprint],
        )
        .context(|| format!("{what}: recording the index fingerprint"))?;
    Ok(())
}

fn newer(display: &str, version: i64) -> MemoryError {
    storage(format!(
        "opening {display}: schema version {version} is newer than this build of memory-sqlite reads ({SCHEMA_VERSION}); upgrade memory-sqlite"
    ))
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
        assert!(MIGRATION_1.contains(&APPLICATION_ID.to_string()));
    }

    #[test]
    fn migrating_twice_is_a_no_op() {
        let mut connection = Connection::open_in_memory().unwrap();
        for _ in 0..2 {
            let transaction = connection.transaction().unwrap();
            migrate(&transaction, "test", "migrating").unwrap();
            transaction.commit().unwrap();
        }
        assert_eq!(
            user_version(&connection, "test").unwrap(),
            i64::from(SCHEMA_VERSION)
        );
        check_compatible(&connection, "test").unwrap();
    }

    #[test]
    fn the_index_is_stale_until_its_fingerprint_is_recorded() {
        let mut connection = Connection::open_in_memory().unwrap();
        let transaction = connection.transaction().unwrap();
        migrate(&transaction, "test", "migrating").unwrap();
        let fingerprint = stale_index(&transaction, "test").unwrap().unwrap();
        assert_eq!(fingerprint, index_fingerprint());
        record_index(&transaction, &fingerprint, "test").unwrap();
        assert_eq!(stale_index(&transaction, "test").unwrap(), None);
        transaction.commit().unwrap();
    }
}
