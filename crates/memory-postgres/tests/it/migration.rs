//! Schema creation and versioned migrations: concurrent connects, explicit migration, newer
//! schemas refused, bad schema names refused before any SQL runs, and databases written by
//! earlier releases opened by this one (`from_v3`).

use memory_core::{MemoryError, MemoryItem, MemoryStore, Namespace};
use memory_postgres::{PostgresBackend, PostgresOptions, SCHEMA_VERSION};

use crate::common::schema_or_skip;

mod from_v3;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_connects_migrate_a_fresh_schema_once() {
    let schema = schema_or_skip!("mig_concurrent");
    let connects = (0..6).map(|_| {
        let url = schema.url.clone();
        let options = schema.options().with_max_connections(2);
        tokio::spawn(async move { PostgresBackend::connect(&url, options).await })
    });
    let mut backends = Vec::new();
    for connect in connects {
        backends.push(connect.await.unwrap().unwrap());
    }
    for backend in &backends {
        assert_eq!(backend.schema_version().await.unwrap(), SCHEMA_VERSION);
    }
    let client = schema.raw_client().await;
    let rows = client
        .query(
            &format!(
                "SELECT version FROM \"{}\".schema_version ORDER BY version",
                schema.name
            ),
            &[],
        )
        .await
        .unwrap();
    let versions: Vec<i32> = rows.iter().map(|row| row.get(0)).collect();
    let expected: Vec<i32> = (1..=SCHEMA_VERSION as i32).collect();
    assert_eq!(versions, expected, "each migration recorded once");
    // And the schema works from every pool.
    let ns = Namespace::parse("mig").unwrap();
    for (index, backend) in backends.iter().enumerate() {
        let item = MemoryItem::new(ns.clone(), format!("from backend {index}"))
            .unwrap()
            .with_id(format!("m{index}"))
            .unwrap();
        backend.memory_store().save(item).await.unwrap();
    }
    assert_eq!(
        backends[0].memory_store().count(&ns.exact()).await.unwrap(),
        backends.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_off_needs_a_current_schema_and_migrate_is_idempotent() {
    let schema = schema_or_skip!("mig_explicit");
    let off = schema.options().with_apply_migrations(false);
    let error = PostgresBackend::connect(&schema.url, off.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(error, MemoryError::Storage { .. }) && error.to_string().contains("version 0"),
        "{error}"
    );
    let backend = schema.connect().await;
    assert_eq!(backend.migrate().await.unwrap(), SCHEMA_VERSION);
    assert_eq!(backend.migrate().await.unwrap(), SCHEMA_VERSION);
    let again = PostgresBackend::connect(&schema.url, off).await.unwrap();
    assert_eq!(again.schema(), schema.name);
    assert_eq!(again.schema_version().await.unwrap(), SCHEMA_VERSION);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused_and_left_untouched() {
    let schema = schema_or_skip!("mig_newer");
    let backend = schema.connect().await;
    let ns = Namespace::parse("kept").unwrap();
    let item = MemoryItem::new(ns.clone(), "written before the upgrade")
        .unwrap()
        .with_id("m1")
        .unwrap();
    backend.memory_store().save(item.clone()).await.unwrap();
    let client = schema.raw_client().await;
    client
        .batch_execute(&format!(
            "INSERT INTO \"{}\".schema_version (version, summary) VALUES (99, 'from the future')",
            schema.name
        ))
        .await
        .unwrap();
    for options in [
        schema.options(),
        schema.options().with_apply_migrations(false),
    ] {
        let error = PostgresBackend::connect(&schema.url, options)
            .await
            .unwrap_err();
        assert!(
            matches!(error, MemoryError::Storage { .. }) && error.to_string().contains("newer"),
            "{error}"
        );
    }
    assert_eq!(
        backend.memory_store().get(&ns, "m1").await.unwrap(),
        Some(item),
        "the data is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_with_foreign_tables_is_not_overwritten() {
    let schema = schema_or_skip!("mig_foreign");
    let client = schema.raw_client().await;
    client
        .batch_execute(&format!(
            "CREATE SCHEMA \"{s}\"; CREATE TABLE \"{s}\".memories (x integer); \
             INSERT INTO \"{s}\".memories VALUES (7);",
            s = schema.name
        ))
        .await
        .unwrap();
    let error = PostgresBackend::connect(&schema.url, schema.options())
        .await
        .unwrap_err();
    assert!(matches!(error, MemoryError::Storage { .. }), "{error}");
    let kept: i32 = client
        .query_one(&format!("SELECT x FROM \"{}\".memories", schema.name), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        kept, 7,
        "the failed migration rolled back and changed nothing"
    );
}

#[tokio::test]
async fn bad_options_are_refused_before_connecting() {
    // No server needed: validation comes first.
    for (options, field) in [
        (PostgresOptions::default().with_schema("Bad-Name"), "schema"),
        (
            PostgresOptions::default().with_schema("x\"; DROP SCHEMA public; --"),
            "schema",
        ),
        (PostgresOptions::default().with_schema("pg_temp"), "schema"),
        (
            PostgresOptions::default().with_max_connections(0),
            "max_connections",
        ),
    ] {
        let error = PostgresBackend::connect("postgres://nobody@127.0.0.1:1/none", options)
            .await
            .unwrap_err();
        assert!(
            matches!(error, MemoryError::InvalidInput { field: ref message, .. } if message.contains(field)),
            "{error}"
        );
    }
    let error = PostgresBackend::connect(
        "postgres://u:secret@host:notaport/db",
        PostgresOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, MemoryError::InvalidInput { .. }), "{error}");
    assert!(
        !error.to_string().contains("secret"),
        "no password in messages: {error}"
    );
}

/// How many memories of `ns` a search of `store` for `text` finds, at most `top_k`.
async fn hits(
    store: memory_postgres::PostgresStore,
    ns: &Namespace,
    text: &str,
    top_k: usize,
) -> usize {
    store
        .search(&memory_core::SearchQuery::new(ns.exact(), text, top_k))
        .await
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_analyzer_rebuilds_the_search_columns() {
    let schema = schema_or_skip!("mig_analyzer");
    let backend = schema.connect().await;
    let ns = Namespace::parse("analyzer").unwrap();
    for n in 0..(3 * 1_000 / 2) {
        let item = MemoryItem::new(ns.clone(), format!("The cats are running, note {n}"))
            .unwrap()
            .with_id(format!("m{n:04}"))
            .unwrap();
        backend.memory_store().save(item).await.unwrap();
    }
    let page = memory_core::KnowledgePage::new(ns.clone(), "p", "Running cats")
        .unwrap()
        .with_summary("about felines");
    memory_core::KnowledgeStore::add_page(backend.knowledge_store(), page)
        .await
        .unwrap();
    // As if an older analyzer had built the columns: other fingerprint, other terms.
    let client = schema.raw_client().await;
    client
        .batch_execute(&format!(
            "UPDATE \"{s}\".meta SET value = 'an older analyzer' WHERE key = 'analyzer';
             UPDATE \"{s}\".memories SET terms = '{{stale}}', doc_len = 1;
             UPDATE \"{s}\".pages SET terms = '{{stale}}';",
            s = schema.name
        ))
        .await
        .unwrap();
    let search = |store: memory_postgres::PostgresStore| hits(store, &ns, "cat", 5_000);
    assert_eq!(
        search(backend.memory_store().clone()).await,
        0,
        "stale columns"
    );
    let error =
        PostgresBackend::connect(&schema.url, schema.options().with_apply_migrations(false))
            .await
            .unwrap_err();
    assert!(error.to_string().contains("analyzer"), "{error}");
    let rebuilt = schema.connect().await;
    assert_eq!(
        search(rebuilt.memory_store().clone()).await,
        1_500,
        "rebuilt in batches"
    );
    let pages = memory_core::KnowledgeStore::search(
        rebuilt.knowledge_store(),
        &memory_core::PageQuery::new(ns.exact(), "running", 5),
    )
    .await
    .unwrap();
    assert_eq!(pages.len(), 1);
    let stored: String = client
        .query_one(
            &format!(
                "SELECT value FROM \"{}\".meta WHERE key = 'analyzer'",
                schema.name
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_ne!(stored, "an older analyzer");
    PostgresBackend::connect(&schema.url, schema.options().with_apply_migrations(false))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_schema_migrates_with_its_search_terms() {
    let schema = schema_or_skip!("mig_v1_terms");
    let ns = Namespace::parse("v1").unwrap();
    {
        let backend = schema.connect().await;
        backend
            .memory_store()
            .save(MemoryItem::new(ns.clone(), "The cats are running 状态管理").unwrap())
            .await
            .unwrap();
        memory_core::KnowledgeStore::add_page(
            backend.knowledge_store(),
            memory_core::KnowledgePage::new(ns.clone(), "p", "Running cats").unwrap(),
        )
        .await
        .unwrap();
        memory_core::KnowledgeGraph::add_entity(
            backend.graph(),
            memory_core::GraphEntity::new(ns.clone(), "cat", "Cat", "animal").unwrap(),
        )
        .await
        .unwrap();
    }
    // Back to version 1 as released: tsvector columns of the same terms, without positions,
    // no exact metadata column, no fact columns, no access statistics, no attributes, and
    // embeddings as real[] (the memory has none).
    let client = schema.raw_client().await;
    client
        .batch_execute(&format!(
            "DROP INDEX \"{s}\".memories_terms;
             ALTER TABLE \"{s}\".memories ALTER COLUMN terms TYPE tsvector
                 USING array_to_tsvector(terms);
             CREATE INDEX memories_terms ON \"{s}\".memories USING gin (terms);
             DROP INDEX \"{s}\".pages_terms;
             ALTER TABLE \"{s}\".pages ALTER COLUMN terms TYPE tsvector
                 USING array_to_tsvector(terms);
             CREATE INDEX pages_terms ON \"{s}\".pages USING gin (terms);
             ALTER TABLE \"{s}\".memories DROP COLUMN metadata_exact, DROP COLUMN fact_key,
                 DROP COLUMN valid_from, DROP COLUMN valid_until, DROP COLUMN ended_at,
                 DROP COLUMN lineage;
             ALTER TABLE \"{s}\".relations DROP COLUMN valid_from, DROP COLUMN valid_until,
                 DROP COLUMN attributes;
             ALTER TABLE \"{s}\".pages DROP COLUMN access_count, DROP COLUMN last_accessed;
             ALTER TABLE \"{s}\".entities DROP COLUMN created_at, DROP COLUMN access_count,
                 DROP COLUMN last_accessed, DROP COLUMN attributes;
             ALTER TABLE \"{s}\".memories DROP COLUMN embedding,
                 ADD COLUMN embedding real[];
             DELETE FROM \"{s}\".schema_version WHERE version > 1;",
            s = schema.name
        ))
        .await
        .unwrap();
    let backend = schema.connect().await;
    assert_eq!(backend.schema_version().await.unwrap(), SCHEMA_VERSION);
    let cat = memory_core::KnowledgeGraph::get_entity(backend.graph(), &ns, "cat")
        .await
        .unwrap()
        .expect("the entity survives");
    assert!(
        cat.attributes.is_empty() && cat.created_at.is_none(),
        "{cat:?}"
    );
    for query in ["cat", "管理"] {
        let hits = backend
            .memory_store()
            .search(&memory_core::SearchQuery::new(ns.exact(), query, 5))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "{query}");
    }
    let pages = memory_core::KnowledgeStore::search(
        backend.knowledge_store(),
        &memory_core::PageQuery::new(ns.exact(), "running", 5),
    )
    .await
    .unwrap();
    assert_eq!(pages.len(), 1);
    let kind: String = client
        .query_one(
            &format!(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = '\"{}\".memories'::regclass AND attname = 'terms'",
                schema.name
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kind, "text[]");
}

/// Search columns recorded by the release before fact keys were indexed (its fingerprint
/// names no fields version) are rebuilt by the next migration, and a keyed memory is then
/// found by its key's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_from_before_fact_keys_were_searched_are_rebuilt() {
    let schema = schema_or_skip!("mig_fields");
    let backend = schema.connect().await;
    let ns = Namespace::parse("fields").unwrap();
    let item = MemoryItem::new(ns.clone(), "the user moved to Lisbon")
        .unwrap()
        .with_fact_key("user.city")
        .unwrap();
    backend.memory_store().save(item).await.unwrap();
    // As the previous release left them: its fingerprint, and the terms of the text alone.
    let client = schema.raw_client().await;
    client
        .batch_execute(&format!(
            "UPDATE \"{s}\".meta SET value = '{fingerprint}' WHERE key = 'analyzer';
             UPDATE \"{s}\".memories SET terms = array_remove(terms, 'citi'),
                 term_freqs = term_freqs - 'citi';",
            s = schema.name,
            fingerprint = memory_core::text::Analyzer::default().fingerprint(),
        ))
        .await
        .unwrap();
    let search = |store: memory_postgres::PostgresStore| hits(store, &ns, "which city?", 5);
    assert_eq!(search(backend.memory_store().clone()).await, 0, "stale");
    let rebuilt = schema.connect().await;
    assert_eq!(search(rebuilt.memory_store().clone()).await, 1, "rebuilt");
}

/// Version 6 packs embeddings into bytea: a version 5 schema's real[] embeddings read back
/// bit for bit (negative zero, subnormals, extremes), rows without one stay without, and
/// the similarity search ranks the migrated rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_5_embeddings_are_packed_bit_for_bit() {
    let schema = schema_or_skip!("mig_v5_packed");
    let ns = Namespace::parse("v5").unwrap();
    let vectors: [Vec<f32>; 3] = [
        vec![0.25, -0.5, 1.0],
        vec![-0.0, f32::MIN_POSITIVE / 2.0, f32::MAX, f32::MIN, 1e-30],
        vec![0.5, 0.5, 0.0],
    ];
    {
        let backend = schema.connect().await;
        backend
            .memory_store()
            .save(
                MemoryItem::new(ns.clone(), "no vector")
                    .unwrap()
                    .with_id("plain")
                    .unwrap(),
            )
            .await
            .unwrap();
    }
    // Back to version 5: embeddings as real[], written as version 5 wrote them.
    let client = schema.raw_client().await;
    client
        .batch_execute(&format!(
            "ALTER TABLE \"{s}\".memories DROP COLUMN embedding, ADD COLUMN embedding real[];
             DELETE FROM \"{s}\".schema_version WHERE version > 5;",
            s = schema.name
        ))
        .await
        .unwrap();
    let mut expected = Vec::new();
    for (n, vector) in vectors.iter().enumerate() {
        let id = format!("v{n}");
        client
            .execute(
                &format!(
                    "INSERT INTO \"{s}\".memories (ns, id, content, kind, importance, metadata, \
                     tags, credibility, created_at, updated_at, embedding, terms, term_freqs, \
                     doc_len, context_len) \
                     SELECT ns, $1::text, content, kind, importance, metadata, tags, \
                     credibility, created_at, updated_at, $2::real[], terms, term_freqs, \
                     doc_len, context_len FROM \"{s}\".memories WHERE id = 'plain'",
                    s = schema.name
                ),
                &[&id, vector],
            )
            .await
            .unwrap();
        expected.push((id, vector.clone()));
    }
    let backend = schema.connect().await;
    assert_eq!(backend.schema_version().await.unwrap(), SCHEMA_VERSION);
    let store = backend.memory_store();
    for (id, vector) in &expected {
        let item = store.get(&ns, id).await.unwrap().expect("migrated");
        let bits = |values: &[f32]| values.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
        assert_eq!(
            item.embedding.as_deref().map(bits),
            Some(bits(vector)),
            "{id}"
        );
    }
    let plain = store.get(&ns, "plain").await.unwrap().expect("kept");
    assert_eq!(plain.embedding, None);
    let hits = store
        .search_similar(
            &memory_core::MemoryFilter::new(ns.exact()),
            &[0.25, -0.5, 1.0],
            3,
        )
        .await
        .unwrap();
    let ids: Vec<&str> = hits.iter().map(|hit| hit.item.id.as_str()).collect();
    assert_eq!(ids, ["v0", "v2"], "the 3-value vectors, nearest first");
}
