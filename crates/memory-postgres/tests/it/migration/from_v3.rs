//! Upgrading a database written by the release at schema version 3: the schema is built by the
//! SQL that release ran (`schema_v3.sql`, frozen), its rows are inserted as that release wrote
//! them, then the current build opens it, migrates it, reads every record back unchanged
//! (with no fact fields), ranks them, and writes and reads fact fields.

use chrono::{DateTime, Duration, TimeZone, Utc};
use memory_core::text::Analyzer;
use memory_core::{
    AccessEvent, EndReason, Ended, GraphEntity, GraphRelation, KnowledgeGraph, KnowledgePage,
    KnowledgeStore, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, PageQuery,
    RecallStats, SearchQuery, TimeView,
};
use memory_inmem::InMemoryStore;
use memory_postgres::SCHEMA_VERSION;
use serde_json::json;
use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use crate::common::schema_or_skip;

/// What the release's `migrate` ran on an empty schema, `{s}` for the quoted schema name.
const SCHEMA_V3: &str = include_str!("schema_v3.sql");

/// The rows the release's `migrate` recorded in `schema_version`.
const V3_VERSIONS: [(i32, &str); 3] = [
    (
        1,
        "memories, knowledge pages and the knowledge graph, with GIN-indexed term vectors",
    ),
    (
        2,
        "search terms as GIN-indexed text arrays, without the tsvector size limit",
    ),
    (
        3,
        "the exact JSON text of metadata that jsonb cannot give back (negative zero)",
    ),
];

/// A time with nanoseconds (the schema stores them exactly).
fn at(day: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000, 123_456_789).unwrap() + Duration::days(day)
}

fn nanos(at: DateTime<Utc>) -> i64 {
    at.timestamp_nanos_opt().unwrap()
}

/// The search columns as the release computed them: the distinct terms of the shared
/// analyzer, sorted; each term's frequency per field; each field's term count.
fn index_terms(fields: &[&str]) -> (Vec<String>, serde_json::Value, Vec<i32>) {
    let analyzer = Analyzer::default();
    let mut counts: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    let mut lengths = Vec::new();
    for (index, text) in fields.iter().enumerate() {
        let mut length = 0;
        analyzer.for_each_term(text, |term| {
            length += 1;
            counts
                .entry(term.to_owned())
                .or_insert_with(|| vec![0; fields.len()])[index] += 1;
        });
        lengths.push(length);
    }
    let terms = counts.keys().cloned().collect();
    let frequencies = counts
        .into_iter()
        .map(|(term, per_field)| (term, json!(per_field)))
        .collect::<serde_json::Map<_, _>>();
    (terms, serde_json::Value::Object(frequencies), lengths)
}

/// Builds the version 3 schema as the release did.
async fn create_v3(client: &Client, quoted: &str) {
    client
        .batch_execute(&SCHEMA_V3.replace("{s}", quoted))
        .await
        .unwrap();
    for (version, summary) in V3_VERSIONS {
        client
            .execute(
                &format!(
                    "INSERT INTO {quoted}.schema_version (version, summary) \
                     VALUES ($1::integer, $2::text)"
                ),
                &[&version, &summary],
            )
            .await
            .unwrap();
    }
    // The release recorded the analyzer's fingerprint; it has not changed since.
    client
        .execute(
            &format!("INSERT INTO {quoted}.meta (key, value) VALUES ('analyzer', $1::text)"),
            &[&Analyzer::default().fingerprint()],
        )
        .await
        .unwrap();
}

/// Inserts a memory and its recall statistics as the release wrote them.
async fn insert_memory_v3(
    client: &Client,
    quoted: &str,
    item: &MemoryItem,
    exact: Option<&str>,
    stats: &RecallStats,
) {
    let mut indexed = item.content.clone();
    for tag in &item.tags {
        indexed.push(' ');
        indexed.push_str(tag.as_str());
    }
    let (terms, term_freqs, lengths) = index_terms(&[&indexed, item.context()]);
    let tags: Vec<String> = item
        .tags
        .iter()
        .map(|tag| tag.as_str().to_owned())
        .collect();
    let params: [&(dyn ToSql + Sync); 22] = [
        &item.namespace.as_str(),
        &item.id,
        &item.content,
        &item.kind.as_str(),
        &item.importance,
        &item.metadata,
        &tags,
        &item.source,
        &item.credibility,
        &nanos(item.created_at),
        &nanos(item.updated_at),
        &item.last_accessed.map(nanos),
        &i64::try_from(item.access_count).unwrap(),
        &item.embedding,
        &terms,
        &term_freqs,
        &lengths[0],
        &lengths[1],
        &exact,
        &i64::try_from(stats.recall_count).unwrap(),
        &stats.total_score,
        &stats.last_recall_at.map(nanos),
    ];
    client
        .execute(
            &format!(
                "INSERT INTO {quoted}.memories (ns, id, content, kind, importance, metadata, \
                 tags, source, credibility, created_at, updated_at, last_accessed, \
                 access_count, embedding, terms, term_freqs, doc_len, context_len, \
                 metadata_exact, recall_count, recall_total, last_recall_at) \
                 VALUES ($1::text, $2::text, $3::text, $4::text, $5::real, $6::jsonb, \
                 $7::text[], $8::text, $9::real, $10::bigint, $11::bigint, $12::bigint, \
                 $13::bigint, $14::real[], $15::text[], $16::jsonb, $17::integer, \
                 $18::integer, $19::text, $20::bigint, $21::float8, $22::bigint)"
            ),
            &params,
        )
        .await
        .unwrap();
}

/// Inserts a page and its references as the release wrote them.
async fn insert_page_v3(client: &Client, quoted: &str, page: &KnowledgePage) {
    let tags: Vec<String> = page
        .tags
        .iter()
        .map(|tag| tag.as_str().to_owned())
        .collect();
    let (terms, term_freqs, lengths) =
        index_terms(&[&page.title, &page.summary, &tags.join(" "), &page.content]);
    let params: [&(dyn ToSql + Sync); 16] = [
        &page.namespace.as_str(),
        &page.id,
        &page.title,
        &page.title.to_lowercase(),
        &page.summary,
        &page.content,
        &tags,
        &page.references,
        &nanos(page.created_at),
        &nanos(page.updated_at),
        &terms,
        &term_freqs,
        &lengths[0],
        &lengths[1],
        &lengths[2],
        &lengths[3],
    ];
    client
        .execute(
            &format!(
                "INSERT INTO {quoted}.pages (ns, id, title, title_key, summary, content, tags, \
                 refs, created_at, updated_at, terms, term_freqs, title_len, summary_len, \
                 tags_len, content_len) VALUES ($1::text, $2::text, $3::text, $4::text, \
                 $5::text, $6::text, $7::text[], $8::text[], $9::bigint, $10::bigint, \
                 $11::text[], $12::jsonb, $13::integer, $14::integer, $15::integer, \
                 $16::integer)"
            ),
            &params,
        )
        .await
        .unwrap();
    for target in &page.references {
        client
            .execute(
                &format!(
                    "INSERT INTO {quoted}.page_refs (ns, source_id, target_id) \
                     VALUES ($1::text, $2::text, $3::text)"
                ),
                &[&page.namespace.as_str(), &page.id, target],
            )
            .await
            .unwrap();
    }
}

/// Inserts an entity as the release wrote it.
async fn insert_entity_v3(client: &Client, quoted: &str, entity: &GraphEntity) {
    let tags: Vec<String> = entity
        .tags
        .iter()
        .map(|tag| tag.as_str().to_owned())
        .collect();
    let params: [&(dyn ToSql + Sync); 8] = [
        &entity.namespace.as_str(),
        &entity.id,
        &entity.name,
        &entity.name.to_lowercase(),
        &entity.entity_type,
        &entity.entity_type.to_lowercase(),
        &entity.description,
        &tags,
    ];
    client
        .execute(
            &format!(
                "INSERT INTO {quoted}.entities (ns, id, name, name_key, entity_type, type_key, \
                 description, tags) VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, \
                 $6::text, $7::text, $8::text[])"
            ),
            &params,
        )
        .await
        .unwrap();
}

/// Inserts a relation as the release wrote it.
async fn insert_relation_v3(client: &Client, quoted: &str, relation: &GraphRelation) {
    let params: [&(dyn ToSql + Sync); 5] = [
        &relation.namespace.as_str(),
        &relation.source_id,
        &relation.target_id,
        &relation.relation_type,
        &relation.weight,
    ];
    client
        .execute(
            &format!(
                "INSERT INTO {quoted}.relations (ns, source_id, target_id, relation_type, \
                 weight) VALUES ($1::text, $2::text, $3::text, $4::text, $5::real)"
            ),
            &params,
        )
        .await
        .unwrap();
}

/// The memories of the old release, each with its exact metadata text (as the release kept
/// it for negative zero) and recall statistics.
fn old_memories(ns: &Namespace) -> Vec<(MemoryItem, Option<String>, RecallStats)> {
    let mut miso = MemoryItem::new(ns.clone(), "The user's cat Miso likes tuna and naps")
        .unwrap()
        .with_id("miso")
        .unwrap()
        .with_kind(MemoryKind::Semantic)
        .with_importance(0.75)
        .unwrap()
        .with_credibility(0.5)
        .unwrap()
        .with_tags(["pets", "cat"])
        .unwrap()
        .with_metadata(json!({"mood": "happy", "offset": -0.0, "nested": {"n": [1, 2.5]}}))
        .unwrap()
        .with_context("talking about the cat at breakfast")
        .with_source("chat")
        .with_created_at(at(1))
        .with_embedding(vec![0.25, -0.5, 1.0])
        .unwrap();
    miso.updated_at = at(2);
    miso.last_accessed = Some(at(3));
    miso.access_count = 4;
    let miso_exact = Some(miso.metadata.to_string());
    let miso_stats = RecallStats {
        recall_count: 4,
        total_score: 2.75,
        last_recall_at: Some(at(3)),
    };
    let tea = MemoryItem::new(ns.clone(), "The user drinks green tea every morning")
        .unwrap()
        .with_id("tea")
        .unwrap()
        .with_created_at(at(2));
    let sofa = MemoryItem::new(ns.clone(), "The cat sleeps on the sofa; cats love sofas")
        .unwrap()
        .with_id("sofa")
        .unwrap()
        .with_kind(MemoryKind::LongTerm)
        .with_tags(["home"])
        .unwrap()
        .with_created_at(at(3))
        .with_pinned(true);
    vec![
        (miso, miso_exact, miso_stats),
        (tea, None, RecallStats::default()),
        (sofa, None, RecallStats::default()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_3_database_reads_back_unchanged_and_takes_facts() {
    let schema = schema_or_skip!("mig_from_v3");
    let quoted = format!("\"{}\"", schema.name);
    let client = schema.raw_client().await;
    create_v3(&client, &quoted).await;

    let ns = Namespace::parse("v3/user-1").unwrap();
    let memories = old_memories(&ns);
    for (item, exact, stats) in &memories {
        insert_memory_v3(&client, &quoted, item, exact.as_deref(), stats).await;
    }
    let page = KnowledgePage::new(ns.clone(), "cats", "Cats of the household")
        .unwrap()
        .with_summary("Miso and the sofa")
        .with_content("Miso is a tabby cat who sleeps on the sofa.")
        .with_tags(["pets"])
        .unwrap()
        .with_references(["tea-page"])
        .unwrap()
        .with_created_at(at(4));
    insert_page_v3(&client, &quoted, &page).await;
    // Version 3 kept no creation time of entities: they read back with none (unknown).
    let entities = [
        GraphEntity::new(ns.clone(), "user", "User", "person")
            .unwrap()
            .with_created_at(None),
        GraphEntity::new(ns.clone(), "miso", "Miso", "cat")
            .unwrap()
            .with_description("a tabby")
            .with_tags(["pets"])
            .unwrap()
            .with_created_at(None),
        GraphEntity::new(ns.clone(), "sofa", "Sofa", "furniture")
            .unwrap()
            .with_created_at(None),
    ];
    for entity in &entities {
        insert_entity_v3(&client, &quoted, entity).await;
    }
    let owns = GraphRelation::new(ns.clone(), "user", "miso", "owns", 0.9).unwrap();
    let sleeps = GraphRelation::new(ns.clone(), "miso", "sofa", "sleeps_on", 0.5).unwrap();
    for relation in [&owns, &sleeps] {
        insert_relation_v3(&client, &quoted, relation).await;
    }

    // The current build opens it and migrates it.
    let backend = schema.connect().await;
    assert_eq!(SCHEMA_VERSION, 6);
    assert_eq!(backend.schema_version().await.unwrap(), SCHEMA_VERSION);
    let versions: Vec<i32> = client
        .query(
            &format!("SELECT version FROM {quoted}.schema_version ORDER BY version"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(versions, [1, 2, 3, 4, 5, 6]);
    let index: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = $1::text \
             AND indexname = 'memories_by_fact_key'",
            &[&schema.name],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(index, 1, "the fact key index exists");

    // Every memory reads back as written, with no fact fields, by every read path.
    let store = backend.memory_store();
    for (item, _, stats) in &memories {
        let read = store.get(&ns, &item.id).await.unwrap().unwrap();
        assert_eq!(&read, item, "{}", item.id);
        assert_eq!(
            read.metadata.to_string(),
            item.metadata.to_string(),
            "metadata reads back exactly (negative zero too)"
        );
        assert_eq!(read.fact_key, None);
        assert_eq!((read.valid_from, read.valid_until), (None, None));
        assert_eq!(read.ended, None);
        assert!(read.supersedes.is_empty() && read.conflicts_with.is_empty());
        assert_eq!(
            store.recall_stats(&ns, &item.id).await.unwrap().as_ref(),
            Some(stats),
            "{}",
            item.id
        );
    }
    let expected: Vec<MemoryItem> = memories.iter().map(|(item, _, _)| item.clone()).collect();
    assert_eq!(
        store.list(&MemoryFilter::new(ns.exact())).await.unwrap(),
        expected
    );
    let ids: Vec<String> = expected.iter().map(|item| item.id.clone()).collect();
    assert_eq!(store.get_many(&ns, &ids).await.unwrap(), expected);
    // Old rows have no end and no validity: every view sees them from their recording on.
    for view in [TimeView::Current(Utc::now()), TimeView::AsOf(at(10))] {
        let filter = MemoryFilter::new(ns.exact()).with_view(view);
        assert_eq!(store.list(&filter).await.unwrap(), expected, "{view:?}");
    }
    assert_eq!(
        store
            .list(&MemoryFilter::new(ns.exact()).with_view(TimeView::AsOf(at(2))))
            .await
            .unwrap(),
        expected[..2].to_vec()
    );

    // Search ranks them as the in-memory backend ranks the same items.
    let reference = InMemoryStore::new();
    for item in &expected {
        reference.save(item.clone()).await.unwrap();
    }
    for text in ["cat", "green tea", "cats sofa breakfast", "pets"] {
        for view in [TimeView::All, TimeView::Current(Utc::now())] {
            let query = SearchQuery::new(ns.exact(), text, 10)
                .with_filter(MemoryFilter::new(ns.exact()).with_view(view));
            let got = store.search(&query).await.unwrap();
            let want = reference.search(&query).await.unwrap();
            assert!(!got.is_empty(), "{text:?} finds something");
            assert_eq!(
                got.iter().map(|hit| &hit.item.id).collect::<Vec<_>>(),
                want.iter().map(|hit| &hit.item.id).collect::<Vec<_>>(),
                "ranking of {text:?}"
            );
            for (a, b) in got.iter().zip(&want) {
                assert!(
                    (a.score - b.score).abs() <= 1e-4 * b.score.abs().max(1.0),
                    "score of {} for {text:?}: {} vs in-memory {}",
                    a.item.id,
                    a.score,
                    b.score
                );
                assert_eq!(*a.item, *b.item);
            }
        }
    }

    // The page, the entities and the relations read back unchanged, never accessed.
    let pages = backend.knowledge_store();
    let read = pages.get_page(&ns, "cats").await.unwrap();
    assert_eq!(read.as_ref(), Some(&page));
    assert_eq!(
        read.map(|page| (page.access_count, page.last_accessed)),
        Some((0, None))
    );
    let hits = pages
        .search(&PageQuery::new(ns.exact(), "tabby cat", 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(*hits[0].page, page);
    let graph = backend.graph();
    for entity in &entities {
        let read = graph.get_entity(&ns, &entity.id).await.unwrap();
        assert_eq!(read.as_ref(), Some(entity));
        assert_eq!(
            read.map(|e| (e.created_at, e.access_count, e.last_accessed)),
            Some((None, 0, None)),
            "old entities are of unknown age and never accessed"
        );
    }
    // Migrated pages and entities count accesses; an update fills an unknown creation time.
    let accesses = [
        AccessEvent::new(ns.clone(), "cats", at(8)),
        AccessEvent::new(ns.clone(), "cats", at(7)),
        AccessEvent::new(ns.clone(), "miso", at(8)),
    ];
    pages.record_accesses(&accesses).await.unwrap();
    graph.record_accesses(&accesses).await.unwrap();
    let cats = pages.get_page(&ns, "cats").await.unwrap().unwrap();
    assert_eq!((cats.access_count, cats.last_accessed), (2, Some(at(8))));
    graph
        .update_entity(entities[1].clone().with_created_at(Some(at(1))))
        .await
        .unwrap();
    let miso = graph.get_entity(&ns, "miso").await.unwrap().unwrap();
    assert_eq!(
        (miso.created_at, miso.access_count, miso.last_accessed),
        (Some(at(1)), 1, Some(at(8)))
    );
    assert_eq!(
        graph.list_relations(&ns.exact()).await.unwrap(),
        [sleeps.clone(), owns.clone()]
    );
    let reached = graph.get_related(&ns, "user", 2).await.unwrap();
    assert_eq!(
        reached
            .iter()
            .map(|scored| scored.entity.id.as_str())
            .collect::<Vec<_>>(),
        ["miso", "sofa"]
    );
    assert_eq!(
        reached[1].path,
        [
            std::sync::Arc::new(owns.clone()),
            std::sync::Arc::new(sleeps.clone())
        ]
    );

    // Fact fields are written and read back on the migrated schema: a new fact through save,
    // an old memory given a key through update (its recall statistics kept).
    let mut moved = MemoryItem::new(ns.clone(), "The user moved to Berlin")
        .unwrap()
        .with_id("berlin")
        .unwrap()
        .with_created_at(at(5))
        .with_fact_key("user.city")
        .unwrap()
        .with_validity(Some(at(5)), None)
        .unwrap();
    moved.supersedes = vec!["paris".into()];
    moved.conflicts_with = vec!["rome".into()];
    store.save(moved.clone()).await.unwrap();
    assert_eq!(store.get(&ns, "berlin").await.unwrap(), Some(moved.clone()));
    let mut miso = expected[0].clone();
    miso.fact_key = Some("user.pet".into());
    miso.valid_until = Some(at(6));
    miso.ended = Some(Ended {
        at: at(6),
        reason: EndReason::Retracted {
            reason: "the cat was a neighbour's".into(),
        },
    });
    store.update(miso.clone()).await.unwrap();
    assert_eq!(store.get(&ns, "miso").await.unwrap(), Some(miso.clone()));
    assert_eq!(
        store.recall_stats(&ns, "miso").await.unwrap(),
        Some(memories[0].2),
        "update keeps the recall statistics"
    );
    let keyed = MemoryFilter::new(ns.exact())
        .with_fact_key("User.City")
        .unwrap();
    assert_eq!(store.list(&keyed).await.unwrap(), [moved.clone()]);
    let current = MemoryFilter::new(ns.exact()).with_view(TimeView::Current(at(7)));
    assert_eq!(
        store
            .list(&current)
            .await
            .unwrap()
            .iter()
            .map(|item| item.id.as_str())
            .collect::<Vec<_>>(),
        ["tea", "sofa", "berlin"],
        "the retracted memory leaves the current view"
    );
    let best = SearchQuery::new(ns.exact(), "miso cat", 1);
    assert_eq!(store.search(&best).await.unwrap()[0].item.id, "miso");
    let hits = store.search(&best.with_filter(current)).await.unwrap();
    assert_eq!(hits.len(), 1, "the top-k cut comes after the view");
    assert_eq!(hits[0].item.id, "sofa");

    // Relations take validity; a closed one is kept but no longer followed.
    let closed = sleeps
        .clone()
        .with_validity(Some(at(0)), Some(at(1)))
        .unwrap();
    graph.add_relation(closed.clone()).await.unwrap();
    assert_eq!(graph.relations_of(&ns, "sofa").await.unwrap(), [closed]);
    let reached = graph.get_related(&ns, "user", 2).await.unwrap();
    assert_eq!(reached.len(), 1, "the closed relation is not followed");
    assert!(
        graph
            .shortest_path(&ns, "user", "sofa")
            .await
            .unwrap()
            .is_none()
    );
    let open = owns.clone().with_validity(Some(at(0)), None).unwrap();
    graph.add_relation(open.clone()).await.unwrap();
    let path = graph
        .shortest_path(&ns, "miso", "user")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(path, std::slice::from_ref(&open), "paths carry validity");
    let hop = graph
        .multi_hop(&ns, "user", &["owns".to_owned()])
        .await
        .unwrap();
    assert_eq!(hop.paths, [vec![open]]);
}
