//! Schema versions: a version-1 database written by hand opens and upgrades with its data
//! intact; files that are not ours, or newer, are refused and left untouched.

use memory_core::text::Analyzer;
use memory_core::{
    KnowledgeGraph, KnowledgeStore, MemoryError, MemoryFilter, MemoryItem, MemoryStore, Namespace,
    SearchQuery,
};
use memory_sqlite::{SCHEMA_VERSION, SqliteBackend};
use rusqlite::Connection;

use crate::common::TempDb;

/// The schema of version 1 exactly as released; a copy, so that a change to the crate's
/// migration 1 cannot make this test pass by accident.
const V1_SCHEMA: &str = "
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
PRAGMA user_version = 1;
";

const T0: i64 = 1_700_000_000_000_000_000;

fn terms(text: &str) -> String {
    Analyzer::default().terms(text).join(" ")
}

/// Writes a version-1 database the way version 1 of the crate did.
fn write_v1(path: &std::path::Path) {
    let connection = Connection::open(path).unwrap();
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .unwrap();
    connection.execute_batch(V1_SCHEMA).unwrap();
    let memories = [
        (
            1,
            "m1",
            "Alice adopted a grey cat",
            "[\"pets\",\"family\"]",
            Some(vec![0u8, 0, 128, 63]),
        ),
        (2, "m2", "Bob is learning Rust", "[\"coding\"]", None),
        (3, "m3", "用户喜欢 Rust 编程", "[]", None),
    ];
    for (rid, id, content, tags, embedding) in memories {
        connection
            .execute(
                "INSERT INTO memories (rid, ns, id, content, kind, importance, metadata, tags, \
                 source, credibility, created_at, updated_at, access_count, recall_count, \
                 recall_total, last_recall_at, embedding) \
                 VALUES (?1, 'user-1', ?2, ?3, 'semantic', 0.75, '{\"speaker\":\"ann\"}', ?4, \
                 'chat', 1.0, ?5, ?5, 3, 2, 1.5, ?5, ?6)",
                rusqlite::params![rid, id, content, tags, T0 + rid, embedding],
            )
            .unwrap();
        connection
            .execute(
                "INSERT INTO memories_fts (rowid, terms) VALUES (?1, ?2)",
                rusqlite::params![rid, terms(content)],
            )
            .unwrap();
    }
    connection
        .execute_batch(&format!(
            "INSERT INTO pages VALUES (1, 'user-1', 'cats', 'Cats', 'cats', 'Small felines', \
             'Cats purr.', '[\"pets\"]', '[\"dogs\"]', {T0}, {T0});
             INSERT INTO pages VALUES (2, 'user-1', 'dogs', 'Dogs', 'dogs', '', '', '[]', '[]', {T0}, {T0});
             INSERT INTO page_refs VALUES ('user-1', 'cats', 'dogs');
             INSERT INTO pages_fts (rowid, title, summary, tags, content) VALUES
                 (1, '{}', '{}', 'pet', '{}'), (2, 'dog', '', '', '');
             INSERT INTO entities VALUES (1, 'user-1', 'alice', 'Alice', 'alice', 'person', \
                 'person', '', '[\"family\"]');
             INSERT INTO entities VALUES (2, 'user-1', 'bob', 'Bob', 'bob', 'person', 'person', \
                 '', '[]');
             INSERT INTO entity_tags VALUES (1, 'family');
             INSERT INTO relations VALUES ('user-1', 'alice', 'bob', 'knows', 0.5);",
            terms("Cats"),
            terms("Small felines"),
            terms("Cats purr."),
        ))
        .unwrap();
}

fn user_version(path: &std::path::Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_1_database_upgrades_with_its_data() {
    let file = TempDb::new("v1");
    write_v1(file.path());
    assert_eq!(user_version(file.path()), 1);

    let backend = SqliteBackend::open(file.path()).unwrap();
    assert_eq!(user_version(file.path()), i64::from(SCHEMA_VERSION));
    let ns = Namespace::parse("user-1").unwrap();
    let store = backend.memory_store();

    let m1 = store.get(&ns, "m1").await.unwrap().unwrap();
    assert_eq!(m1.content, "Alice adopted a grey cat");
    assert_eq!(m1.importance, 0.75);
    assert_eq!(m1.tags, ["pets", "family"]);
    assert_eq!(m1.embedding, Some(vec![1.0]));
    assert_eq!(m1.source.as_deref(), Some("chat"));
    assert_eq!(m1.access_count, 3);
    assert_eq!(m1.metadata, serde_json::json!({"speaker": "ann"}));
    assert_eq!(m1.created_at.timestamp_nanos_opt(), Some(T0 + 1));
    let stats = store.recall_stats(&ns, "m1").await.unwrap().unwrap();
    assert_eq!((stats.recall_count, stats.total_score), (2, 1.5));

    // Migration 2 filled the tag table from the version-1 tags column.
    let tagged = store
        .list(&MemoryFilter::new(ns.exact()).with_tags(["family"]).unwrap())
        .await
        .unwrap();
    assert_eq!(
        tagged.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
        ["m1"]
    );
    let coding = store
        .list(&MemoryFilter::new(ns.exact()).with_tags(["coding"]).unwrap())
        .await
        .unwrap();
    assert_eq!(coding.len(), 1);
    assert_eq!(store.count(&ns.exact()).await.unwrap(), 3);

    // The version-1 full-text index still answers.
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "cats", 5))
        .await
        .unwrap();
    assert_eq!(hits.first().map(|h| h.item.id.as_str()), Some("m1"));
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "编程", 5))
        .await
        .unwrap();
    assert_eq!(hits.first().map(|h| h.item.id.as_str()), Some("m3"));

    let pages = backend.knowledge_store();
    assert_eq!(pages.reference_count(&ns, "dogs").await.unwrap(), 1);
    let hits = pages
        .search(&memory_core::PageQuery::new(ns.exact(), "felines", 5))
        .await
        .unwrap();
    assert_eq!(hits.first().map(|h| h.page.id.as_str()), Some("cats"));
    let graph = backend.graph();
    assert_eq!(graph.relations_of(&ns, "alice").await.unwrap().len(), 1);
    assert_eq!(
        graph
            .entity_count_by_tag(&ns.exact(), "family")
            .await
            .unwrap(),
        1
    );

    // Writes after the upgrade keep both old and new tables in step.
    let mut m2 = store.get(&ns, "m2").await.unwrap().unwrap();
    m2.tags = vec![memory_core::Tag::new("rust").unwrap()];
    store.save(m2).await.unwrap();
    let rust = store
        .list(&MemoryFilter::new(ns.exact()).with_tags(["rust"]).unwrap())
        .await
        .unwrap();
    assert_eq!(rust.len(), 1);
    assert!(store.delete(&ns, "m1").await.unwrap());
    backend.check_integrity().await.unwrap();
    drop(backend);

    // Opening again is a no-op.
    let again = SqliteBackend::open(file.path()).unwrap();
    assert_eq!(again.memory_store().count(&ns.exact()).await.unwrap(), 2);
    assert_eq!(user_version(file.path()), i64::from(SCHEMA_VERSION));
}

fn storage_message(result: memory_core::Result<SqliteBackend>) -> String {
    match result {
        Err(error @ MemoryError::Storage { .. }) => error.to_string(),
        other => panic!("expected a storage error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newer_schema_is_refused_and_left_alone() {
    let file = TempDb::new("newer");
    let backend = SqliteBackend::open(file.path()).unwrap();
    let ns = Namespace::parse("u").unwrap();
    backend
        .memory_store()
        .save(MemoryItem::new(ns.clone(), "kept").unwrap())
        .await
        .unwrap();
    drop(backend);
    let newer = i64::from(SCHEMA_VERSION) + 1;
    Connection::open(file.path())
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    let message = storage_message(SqliteBackend::open(file.path()));
    assert!(message.contains("newer"), "{message}");
    assert!(
        message.contains(&file.path().display().to_string()),
        "{message}"
    );
    assert_eq!(user_version(file.path()), newer);
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_alone() {
    let file = TempDb::new("garbage");
    let garbage = "these are my notes, not a database\n".repeat(200);
    std::fs::write(file.path(), &garbage).unwrap();
    let message = storage_message(SqliteBackend::open(file.path()));
    assert!(message.contains("not an sqlite database"), "{message}");
    assert_eq!(std::fs::read_to_string(file.path()).unwrap(), garbage);
}

#[test]
fn databases_of_other_applications_are_refused() {
    let file = TempDb::new("foreign");
    Connection::open(file.path())
        .unwrap()
        .execute_batch("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);")
        .unwrap();
    let message = storage_message(SqliteBackend::open(file.path()));
    assert!(
        message.contains("no agent-memory schema version"),
        "{message}"
    );

    let other = TempDb::new("foreign-id");
    Connection::open(other.path())
        .unwrap()
        .pragma_update(None, "application_id", 42)
        .unwrap();
    let message = storage_message(SqliteBackend::open(other.path()));
    assert!(message.contains("another application"), "{message}");
}

/// The file's bytes, and which of its journal, WAL and shared-memory files exist.
fn file_state(path: &std::path::Path) -> (Vec<u8>, Vec<&'static str>) {
    let companions = ["-journal", "-wal", "-shm"]
        .into_iter()
        .filter(|suffix| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            std::path::PathBuf::from(name).exists()
        })
        .collect();
    (std::fs::read(path).unwrap(), companions)
}

#[test]
fn files_of_other_applications_are_left_byte_for_byte_untouched() {
    for (label, setup, expected) in [
        (
            "tables-no-version",
            "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);
             INSERT INTO invoices (total) VALUES (12.5), (99.0);",
            "no agent-memory schema version",
        ),
        (
            "other-version",
            "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);
             PRAGMA user_version = 2;",
            "not an agent-memory database",
        ),
        (
            "other-id",
            "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);
             PRAGMA application_id = 42;",
            "another application",
        ),
    ] {
        let file = TempDb::new(label);
        Connection::open(file.path())
            .unwrap()
            .execute_batch(setup)
            .unwrap();
        let before = file_state(file.path());
        assert!(before.1.is_empty(), "{label}: {:?}", before.1);
        let message = storage_message(SqliteBackend::open(file.path()));
        assert!(message.contains(expected), "{label}: {message}");
        assert!(
            message.contains(&file.path().display().to_string()),
            "{label}: {message}"
        );
        assert_eq!(
            file_state(file.path()),
            before,
            "{label}: the file or its companions changed"
        );
    }
}

#[test]
fn a_directory_is_refused() {
    let message = storage_message(SqliteBackend::open(std::env::temp_dir()));
    assert!(message.contains("opening"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_reopening() {
    let file = TempDb::new("reopen");
    let ns = Namespace::parse("u").unwrap();
    let item = MemoryItem::new(ns.clone(), "persisted across restarts")
        .unwrap()
        .with_embedding(vec![0.25, -1.5])
        .unwrap();
    {
        let backend = SqliteBackend::open(file.path()).unwrap();
        backend.memory_store().save(item.clone()).await.unwrap();
    }
    let backend = SqliteBackend::open(file.path()).unwrap();
    assert_eq!(
        backend.memory_store().get(&ns, &item.id).await.unwrap(),
        Some(item)
    );
    assert_eq!(backend.path(), Some(file.path()));
}

/// The index fingerprint recorded in the database at `path`.
fn recorded_index(path: &std::path::Path) -> String {
    Connection::open(path)
        .unwrap()
        .query_row("SELECT value FROM meta WHERE key = 'index'", [], |row| {
            row.get(0)
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_built_by_another_analyzer_is_rebuilt_on_open() {
    let file = TempDb::new("analyzer");
    let ns = Namespace::parse("u/a").unwrap();
    {
        let backend = SqliteBackend::open(file.path()).unwrap();
        backend
            .memory_store()
            .save(MemoryItem::new(ns.clone(), "the user adores gardening").unwrap())
            .await
            .unwrap();
        backend
            .knowledge_store()
            .add_page(memory_core::KnowledgePage::new(ns.clone(), "g", "Gardening tips").unwrap())
            .await
            .unwrap();
    }
    // Pretend an analyzer that behaves differently built the index: a foreign fingerprint,
    // and terms this build would never produce.
    let connection = Connection::open(file.path()).unwrap();
    connection
        .execute_batch(
            "UPDATE meta SET value = 'another-analyzer' WHERE key = 'index';
             DELETE FROM memory_blocks;
             DELETE FROM page_blocks;
             INSERT INTO memory_blocks (nid, term, first, count, max_tf0, max_tf1, min_len0,
                 min_len1, data)
                 SELECT nid, 'zzz', rid, 1, 1, 0, 1, 4294967295, x'0001000100' FROM memory_docs;",
        )
        .unwrap();
    drop(connection);

    let backend = SqliteBackend::open(file.path()).unwrap();
    let hits = backend
        .memory_store()
        .search(&SearchQuery::new(ns.subtree(), "gardens", 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "the memory index was rebuilt");
    let pages = backend
        .knowledge_store()
        .search(&memory_core::PageQuery::new(ns.exact(), "garden", 5))
        .await
        .unwrap();
    assert_eq!(pages.len(), 1, "the page index was rebuilt");
    backend.check_integrity().await.unwrap();
    let fingerprint = recorded_index(file.path());
    assert_ne!(fingerprint, "another-analyzer");
}

/// An index recorded by the release before fact keys were indexed (its fingerprint names
/// no fields version) is rebuilt on open, the new fingerprint recorded, and a keyed memory
/// is found by its key's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_from_before_fact_keys_were_searched_is_rebuilt_on_open() {
    let file = TempDb::new("fields");
    let ns = Namespace::parse("u/a").unwrap();
    {
        let backend = SqliteBackend::open(file.path()).unwrap();
        let item = MemoryItem::new(ns.clone(), "the user moved to Lisbon")
            .unwrap()
            .with_fact_key("user.city")
            .unwrap();
        backend.memory_store().save(item).await.unwrap();
    }
    // As the previous release recorded it.
    let previous = format!("layout 4 analyzer {}", Analyzer::default().fingerprint());
    let connection = Connection::open(file.path()).unwrap();
    connection
        .execute(
            "UPDATE meta SET value = ?1 WHERE key = 'index'",
            [&previous],
        )
        .unwrap();
    drop(connection);

    let backend = SqliteBackend::open(file.path()).unwrap();
    let hits = backend
        .memory_store()
        .search(&SearchQuery::new(ns.subtree(), "which city?", 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "the key's words are searched");
    backend.check_integrity().await.unwrap();
    let fingerprint = recorded_index(file.path());
    assert_ne!(fingerprint, previous, "rebuilt and recorded");
    assert!(fingerprint.contains("fields 2"), "{fingerprint}");
}
