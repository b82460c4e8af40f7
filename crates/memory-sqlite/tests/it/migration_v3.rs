//! A version-3 database (FTS5 tables ranked by `bm25()`) upgrades to version 4: the FTS5
//! tables are dropped, the postings index with per-namespace statistics is built from the
//! records in place, and search then ranks exactly as the in-memory backend does.

use memory_core::text::Analyzer;
use memory_core::{
    KnowledgeStore, MemoryFilter, MemoryStore, Namespace, PageQuery, SearchHit, SearchQuery,
};
use memory_inmem::{InMemoryKnowledgeStore, InMemoryStore};
use memory_sqlite::{SCHEMA_VERSION, SqliteBackend};
use rusqlite::Connection;

use crate::common::TempDb;

/// The schema a version-3 build left, with index layout 2, exactly; a copy, so that a
/// change to the crate's migrations cannot make this test pass by accident.
const V3_SCHEMA: &str = "
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
CREATE TABLE memory_tags (
    rid INTEGER NOT NULL REFERENCES memories (rid) ON DELETE CASCADE,
    tag TEXT    NOT NULL,
    PRIMARY KEY (rid, tag)
) WITHOUT ROWID;
CREATE INDEX memory_tags_by_tag ON memory_tags (tag);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    terms, context, scope, content = '', contentless_delete = 1, tokenize = 'ascii'
);
CREATE VIRTUAL TABLE pages_fts USING fts5 (
    title, summary, tags, content, scope,
    content = '', contentless_delete = 1, tokenize = 'ascii'
);
PRAGMA application_id = 1095583053;
PRAGMA user_version = 3;
";

const T0: i64 = 1_700_000_000_000_000_000;

fn terms(text: &str) -> String {
    Analyzer::default().terms(text).join(" ")
}

/// Memories of two namespaces: `(rid, ns, id, content, tags, context)`.
const MEMORIES: [(i64, &str, &str, &str, &str, &str); 8] = [
    (
        1,
        "user-1",
        "m1",
        "Alice adopted a grey cat named Miso",
        "[\"pets\"]",
        "",
    ),
    (
        2,
        "user-1",
        "m2",
        "Bob is learning Rust and likes cats",
        "[\"coding\"]",
        "",
    ),
    (3, "user-1", "m3", "用户喜欢 Rust 编程", "[]", ""),
    (
        4,
        "user-1",
        "m4",
        "The cat sleeps all day",
        "[]",
        "what does the cat do?",
    ),
    (
        5,
        "user-1",
        "m5",
        "A long note about the garden, the tomatoes, the cat next door and the weather in spring",
        "[\"garden\",\"pets\"]",
        "",
    ),
    (
        6,
        "user-1/chat",
        "c1",
        "I love my cat",
        "[]",
        "do you have pets?",
    ),
    (
        7,
        "user-1/chat",
        "c2",
        "Rust ownership rules",
        "[\"coding\"]",
        "",
    ),
    (8, "user-1/chat", "m1", "cat cat cat", "[]", ""),
];

/// Writes a version-3 database the way version 3 of the crate did.
fn write_v3(path: &std::path::Path) {
    let connection = Connection::open(path).unwrap();
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .unwrap();
    connection.execute_batch(V3_SCHEMA).unwrap();
    for (rid, ns, id, content, tags, context) in MEMORIES {
        let metadata = if context.is_empty() {
            "{}".to_owned()
        } else {
            serde_json::json!({ "_context": context }).to_string()
        };
        connection
            .execute(
                "INSERT INTO memories (rid, ns, id, content, kind, importance, metadata, tags, \
                 source, credibility, created_at, updated_at, access_count, recall_count, \
                 recall_total, last_recall_at) \
                 VALUES (?1, ?2, ?3, ?4, 'episodic', 0.5, ?5, ?6, NULL, 1.0, ?7, ?7, 1, ?1, 0.5, ?7)",
                rusqlite::params![rid, ns, id, content, metadata, tags, T0 + rid],
            )
            .unwrap();
        connection
            .execute(
                "INSERT INTO memory_tags (rid, tag) SELECT ?1, j.value FROM json_each(?2) AS j",
                rusqlite::params![rid, tags],
            )
            .unwrap();
        let tag_text: Vec<String> = serde_json::from_str(tags).unwrap();
        connection
            .execute(
                "INSERT INTO memories_fts (rowid, terms, context, scope) VALUES (?1, ?2, ?3, 'e0')",
                rusqlite::params![
                    rid,
                    terms(&format!("{content} {}", tag_text.join(" "))),
                    terms(context)
                ],
            )
            .unwrap();
    }
    connection
        .execute_batch(&format!(
            "INSERT INTO pages VALUES (1, 'user-1', 'cats', 'Cats', 'cats', 'Small felines', \
             'Cats purr and sleep.', '[\"pets\"]', '[\"dogs\"]', {T0}, {T0});
             INSERT INTO pages VALUES (2, 'user-1', 'dogs', 'Dogs', 'dogs', 'Loyal pets', \
             'Dogs bark at cats.', '[]', '[]', {T0}, {T0});
             INSERT INTO pages VALUES (3, 'user-1/chat', 'care', 'Cat care', 'cat care', '', \
             'Feed the cat twice a day.', '[\"cats\"]', '[]', {T0}, {T0});
             INSERT INTO page_refs VALUES ('user-1', 'cats', 'dogs');
             INSERT INTO pages_fts (rowid, title, summary, tags, content, scope) VALUES
                 (1, 'cat', 'small felin', 'pet', 'cat purr sleep', 'e0');
             INSERT INTO meta VALUES ('index', 'layout 2 analyzer {}');",
            Analyzer::default().fingerprint()
        ))
        .unwrap();
}

fn hits(hits: &[SearchHit]) -> Vec<(String, String, f32)> {
    hits.iter()
        .map(|hit| {
            (
                hit.item.namespace.to_string(),
                hit.item.id.clone(),
                hit.score,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_3_database_upgrades_to_postings_that_rank_like_the_in_memory_backend() {
    let file = TempDb::new("v3");
    write_v3(file.path());
    let backend = SqliteBackend::open(file.path()).unwrap();
    let connection = Connection::open(file.path()).unwrap();
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, i64::from(SCHEMA_VERSION));
    let fts: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name IN ('memories_fts', 'pages_fts')",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(fts, 0, "the FTS5 tables are gone");
    let (postings, namespaces): (i64, i64) = connection
        .query_row(
            "SELECT (SELECT sum(count) FROM memory_blocks), (SELECT count(*) FROM memory_stats)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert!(
        postings > 20,
        "the postings were built from the rows: {postings}"
    );
    assert_eq!(namespaces, 2, "one statistics row per namespace");
    backend.check_integrity().await.unwrap();

    // The same records in the in-memory backends rank the same, score for score.
    let user = Namespace::parse("user-1").unwrap();
    let store = backend.memory_store();
    let items = store
        .list(&MemoryFilter::new(user.subtree()))
        .await
        .unwrap();
    assert_eq!(items.len(), MEMORIES.len());
    let reference = InMemoryStore::new();
    reference.save_many(items).await.unwrap();
    for scope in [user.exact(), user.subtree()] {
        for text in [
            "cat",
            "rust cats",
            "pets",
            "what does the cat do",
            "编程",
            "garden",
        ] {
            let query = SearchQuery::new(scope.clone(), text, 10);
            assert_eq!(
                hits(&store.search(&query).await.unwrap()),
                hits(&reference.search(&query).await.unwrap()),
                "{text:?} in {scope:?}"
            );
        }
    }
    let pages = backend.knowledge_store();
    let page_reference = InMemoryKnowledgeStore::new();
    for page in pages.list_pages(&user.subtree()).await.unwrap() {
        page_reference.add_page(page).await.unwrap();
    }
    for text in ["cats", "pets", "cat care", "dogs bark"] {
        let query = PageQuery::new(user.subtree(), text, 10);
        let ids = |hits: Vec<memory_core::PageHit>| {
            hits.into_iter()
                .map(|hit| {
                    (
                        hit.page.namespace.to_string(),
                        hit.page.id.clone(),
                        hit.score,
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(pages.search(&query).await.unwrap()),
            ids(page_reference.search(&query).await.unwrap()),
            "{text:?}"
        );
    }

    // Records, tags and recall statistics came through; writes keep the index in step.
    let stats = store.recall_stats(&user, "m2").await.unwrap().unwrap();
    assert_eq!((stats.recall_count, stats.total_score), (2, 0.5));
    let coding = store
        .list(
            &MemoryFilter::new(user.subtree())
                .with_tags(["coding"])
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(coding.len(), 2);
    assert!(store.delete(&user, "m4").await.unwrap());
    let mut m1 = store.get(&user, "m1").await.unwrap().unwrap();
    m1.content = "Alice adopted a dog".into();
    store.save(m1).await.unwrap();
    backend.check_integrity().await.unwrap();
    drop(backend);

    // Opening again finds the index current.
    let fingerprint: String = connection
        .query_row("SELECT value FROM meta WHERE key = 'index'", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert!(fingerprint.starts_with("layout 4 "), "{fingerprint}");
    let again = SqliteBackend::open(file.path()).unwrap();
    let hits = again
        .memory_store()
        .search(&SearchQuery::new(user.exact(), "dog", 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].item.id, "m1");
}
