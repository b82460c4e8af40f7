//! Export and import through memory-core's `agent-memory-jsonl` format: PostgreSQL to
//! PostgreSQL (another schema) and in-memory to PostgreSQL, every record and statistic kept;
//! a bad input changes nothing.

use memory_core::transfer::{
    FORMAT, Header, RecallStatsRecord, Record, VERSION, export_jsonl, import_jsonl,
};
use memory_core::{
    GraphEntity, GraphRelation, KnowledgeGraph, KnowledgePage, KnowledgeStore, MemoryError,
    MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, RecallStats, Scope,
};
use memory_inmem::{InMemoryKnowledgeStore, InMemoryStore};
use memory_postgres::PostgresBackend;

use crate::common::{TestSchema, schema_or_skip};

async fn fill(
    memories: &dyn MemoryStore,
    pages: &dyn KnowledgeStore,
    graph: Option<&dyn KnowledgeGraph>,
) {
    let ns = Namespace::parse("export/user-1").unwrap();
    let deeper = ns.child("session-2").unwrap();
    for (index, space) in [&ns, &deeper, &ns].into_iter().enumerate() {
        let item = MemoryItem::new(space.clone(), format!("memory number {index} 记忆"))
            .unwrap()
            .with_id(format!("m{index}"))
            .unwrap()
            .with_kind(MemoryKind::Semantic)
            .with_metadata(serde_json::json!({"index": index, "nested": {"ok": true}}))
            .unwrap()
            .with_tags(["Exported"])
            .unwrap();
        memories.save(item).await.unwrap();
    }
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 5).unwrap();
    memories.record_recall(&ns, "m0", 0.75, at).await.unwrap();
    memories.record_recall(&ns, "m0", 0.5, at).await.unwrap();
    pages
        .add_page(
            KnowledgePage::new(ns.clone(), "p1", "Exported page")
                .unwrap()
                .with_summary("a summary")
                .with_references(["p2"])
                .unwrap(),
        )
        .await
        .unwrap();
    pages
        .add_page(KnowledgePage::new(ns.clone(), "p2", "Second page").unwrap())
        .await
        .unwrap();
    if let Some(graph) = graph {
        for id in ["alice", "bob"] {
            graph
                .add_entity(
                    GraphEntity::new(ns.clone(), id, id, "person")
                        .unwrap()
                        .with_tags(["team"])
                        .unwrap(),
                )
                .await
                .unwrap();
        }
        graph
            .add_relation(GraphRelation::new(ns.clone(), "alice", "bob", "knows", 0.8).unwrap())
            .await
            .unwrap();
    }
}

async fn export(
    memories: &dyn MemoryStore,
    pages: &dyn KnowledgeStore,
    graph: Option<&dyn KnowledgeGraph>,
) -> Vec<u8> {
    let mut out = Vec::new();
    export_jsonl(&Scope::all(), Some(memories), Some(pages), graph, &mut out)
        .await
        .unwrap();
    out
}

/// The export without its header line (which carries the export time).
fn records(export: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(export)
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_to_postgres_round_trip() {
    let source_schema = schema_or_skip!("xfer_source");
    let Some(target_schema) = TestSchema::new("xfer_target") else {
        return;
    };
    let source = source_schema.connect().await;
    let target = target_schema.connect().await;
    fill(
        source.memory_store(),
        source.knowledge_store(),
        Some(source.graph()),
    )
    .await;
    let first = export(
        source.memory_store(),
        source.knowledge_store(),
        Some(source.graph()),
    )
    .await;
    let report = import_jsonl(
        &mut first.as_slice(),
        Some(target.memory_store()),
        Some(target.knowledge_store()),
        Some(target.graph()),
    )
    .await
    .unwrap();
    assert_eq!(report.imported.memories, 3);
    assert_eq!(report.imported.recall_stats, 1);
    assert_eq!(
        (
            report.imported.pages,
            report.imported.entities,
            report.imported.relations
        ),
        (2, 2, 1)
    );
    let second = export(
        target.memory_store(),
        target.knowledge_store(),
        Some(target.graph()),
    )
    .await;
    assert_eq!(
        records(&first),
        records(&second),
        "the copy exports the same records"
    );
    let ns = Namespace::parse("export/user-1").unwrap();
    assert_eq!(
        target.memory_store().recall_stats(&ns, "m0").await.unwrap(),
        Some(RecallStats {
            recall_count: 2,
            total_score: 1.25,
            last_recall_at: Some(chrono::DateTime::from_timestamp(1_800_000_000, 5).unwrap()),
        })
    );
    assert_eq!(
        target
            .knowledge_store()
            .reference_count(&ns, "p2")
            .await
            .unwrap(),
        1
    );
    // Importing again is idempotent.
    import_jsonl(
        &mut first.as_slice(),
        Some(target.memory_store()),
        Some(target.knowledge_store()),
        Some(target.graph()),
    )
    .await
    .unwrap();
    assert_eq!(target.memory_store().count(&Scope::all()).await.unwrap(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_to_postgres_keeps_every_record() {
    let schema = schema_or_skip!("xfer_inmem");
    let memories = InMemoryStore::new();
    let pages = InMemoryKnowledgeStore::new();
    fill(&memories, &pages, None).await;
    let dump = export(&memories, &pages, None).await;
    let backend = schema.connect().await;
    import_jsonl(
        &mut dump.as_slice(),
        Some(backend.memory_store()),
        Some(backend.knowledge_store()),
        None,
    )
    .await
    .unwrap();
    let all = MemoryFilter::new(Scope::all());
    assert_eq!(
        backend.memory_store().list(&all).await.unwrap(),
        memories.list(&all).await.unwrap(),
        "items read back exactly as the in-memory store holds them"
    );
    assert_eq!(
        backend
            .knowledge_store()
            .list_pages(&Scope::all())
            .await
            .unwrap(),
        pages.list_pages(&Scope::all()).await.unwrap()
    );
    let ns = Namespace::parse("export/user-1").unwrap();
    assert_eq!(
        backend
            .memory_store()
            .recall_stats(&ns, "m0")
            .await
            .unwrap(),
        memories.recall_stats(&ns, "m0").await.unwrap()
    );
}

/// Everything the stores hold, in the traits' orders.
#[derive(Debug, PartialEq)]
struct Snapshot {
    memories: Vec<MemoryItem>,
    stats: Vec<Option<RecallStats>>,
    pages: Vec<KnowledgePage>,
    entities: Vec<GraphEntity>,
    relations: Vec<GraphRelation>,
}

async fn snapshot(backend: &PostgresBackend) -> Snapshot {
    let all = Scope::all();
    let memories = backend
        .memory_store()
        .list(&MemoryFilter::new(all.clone()))
        .await
        .unwrap();
    let mut stats = Vec::new();
    for item in &memories {
        stats.push(
            backend
                .memory_store()
                .recall_stats(&item.namespace, &item.id)
                .await
                .unwrap(),
        );
    }
    Snapshot {
        memories,
        stats,
        pages: backend.knowledge_store().list_pages(&all).await.unwrap(),
        entities: backend.graph().list_entities(&all).await.unwrap(),
        relations: backend.graph().list_relations(&all).await.unwrap(),
    }
}

/// An input under `import/`: 600 memories (each followed by its statistics), a page, two
/// entities and a relation between them, one JSON line each after a header without counts.
fn import_lines() -> Vec<String> {
    let space = Namespace::parse("import").unwrap();
    let at = |second: i64| chrono::DateTime::from_timestamp(1_700_000_000 + second, 0).unwrap();
    let header = Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        scope: Scope::all(),
        exported_at: at(0),
        counts: None,
    };
    let line = |record: Record| serde_json::to_string(&record).unwrap();
    let mut lines = vec![serde_json::to_string(&header).unwrap()];
    for index in 0..600 {
        let id = format!("i{index}");
        let item = MemoryItem::new(space.clone(), format!("imported memory {index}"))
            .unwrap()
            .with_id(id.clone())
            .unwrap()
            .with_created_at(at(index));
        lines.push(line(Record::Memory(item)));
        let stats = RecallStats {
            recall_count: 1,
            total_score: 0.5,
            last_recall_at: Some(at(index + 1)),
        };
        lines.push(line(Record::RecallStats(RecallStatsRecord::new(
            space.clone(),
            id,
            stats,
        ))));
    }
    lines.push(line(Record::Page(
        KnowledgePage::new(space.clone(), "page", "Imported page").unwrap(),
    )));
    for id in ["a", "b"] {
        lines.push(line(Record::Entity(
            GraphEntity::new(space.clone(), id, id, "thing").unwrap(),
        )));
    }
    lines.push(line(Record::Relation(
        GraphRelation::new(space, "a", "b", "knows", 0.5).unwrap(),
    )));
    lines
}

/// `lines` with `field` of line `index` set to `value`, as one input.
fn edited(mut lines: Vec<String>, index: usize, field: &str, value: serde_json::Value) -> String {
    let mut record: serde_json::Value = serde_json::from_str(&lines[index]).unwrap();
    record[field] = value;
    lines[index] = record.to_string();
    lines.join("\n") + "\n"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_import_leaves_postgres_unchanged() {
    let schema = schema_or_skip!("xfer_atomic");
    let backend = schema.connect().await;
    fill(
        backend.memory_store(),
        backend.knowledge_store(),
        Some(backend.graph()),
    )
    .await;
    let before = snapshot(&backend).await;
    // Line 0 is the header; memory `n` is line 1 + 2n, its statistics the line after.
    let middle = 1 + 2 * 300;
    let mut ghost = import_lines();
    ghost.push(
        serde_json::to_string(&Record::Relation(
            GraphRelation::new(
                Namespace::parse("import").unwrap(),
                "a",
                "ghost",
                "knows",
                0.5,
            )
            .unwrap(),
        ))
        .unwrap(),
    );
    let year_3000 = serde_json::Value::from("3000-01-01T00:00:00Z");
    for (name, text) in [
        (
            "a relation to a missing entity at the end",
            ghost.join("\n") + "\n",
        ),
        (
            "a memory created in the year 3000",
            edited(import_lines(), middle, "created_at", year_3000.clone()),
        ),
        (
            "a NUL character in a memory's content",
            edited(import_lines(), middle, "content", "before\u{0}after".into()),
        ),
        (
            "a NUL character in a memory's metadata",
            edited(
                import_lines(),
                middle,
                "metadata",
                serde_json::json!({"key": "a\u{0}b"}),
            ),
        ),
        (
            "statistics recalled in the year 3000",
            edited(import_lines(), middle + 1, "last_recall_at", year_3000),
        ),
        (
            "a recall count above 2^63 - 1",
            edited(import_lines(), middle + 1, "recall_count", u64::MAX.into()),
        ),
    ] {
        let result = import_jsonl(
            &mut text.as_bytes(),
            Some(backend.memory_store()),
            Some(backend.knowledge_store()),
            Some(backend.graph()),
        )
        .await;
        assert!(
            matches!(result, Err(MemoryError::InvalidInput { .. })),
            "{name}: {result:?}"
        );
        assert_eq!(snapshot(&backend).await, before, "{name} changed the store");
    }

    // The same input without the bad line imports whole.
    let text = import_lines().join("\n");
    let report = import_jsonl(
        &mut text.as_bytes(),
        Some(backend.memory_store()),
        Some(backend.knowledge_store()),
        Some(backend.graph()),
    )
    .await
    .unwrap();
    assert_eq!(
        (report.imported.memories, report.imported.recall_stats),
        (600, 600)
    );
    assert_eq!(report.ignored.total(), 0);
    assert_eq!(
        backend.memory_store().count(&Scope::all()).await.unwrap(),
        before.memories.len() + 600
    );
}

/// What the planner believes the memories table of `schema` holds (-1: never analysed).
async fn believed_rows(schema: &TestSchema) -> f64 {
    schema
        .raw_client()
        .await
        .query_one(
            "SELECT c.reltuples::float8 FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = 'memories'",
            &[&schema.name],
        )
        .await
        .unwrap()
        .get(0)
}

/// An import searched at once is planned with statistics that know its rows: a batch of a
/// thousand memories or more, over a tenth of what the planner believed the table held,
/// analyses the table; a small batch leaves the statistics to autovacuum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_batch_refreshes_the_planner_statistics() {
    let schema = schema_or_skip!("analyze_batch");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("import/analysed").unwrap();
    let batch = |from: usize, count: usize| -> Vec<MemoryItem> {
        (from..from + count)
            .map(|at| {
                MemoryItem::new(
                    ns.clone(),
                    format!("imported note {at} about the greenhouse"),
                )
                .unwrap()
                .with_id(format!("m{at}"))
                .unwrap()
            })
            .collect()
    };
    store.save_many(batch(0, 10)).await.unwrap();
    assert!(
        believed_rows(&schema).await < 0.0,
        "ten memories leave the table unanalysed"
    );
    store.save_many(batch(10, 1_500)).await.unwrap();
    assert_eq!(
        believed_rows(&schema).await,
        1_510.0,
        "the planner knows the imported rows"
    );
    let hits = store
        .search(&memory_core::SearchQuery::new(ns.exact(), "note 1234", 1))
        .await
        .unwrap();
    assert_eq!(hits[0].item.id, "m1234");
}
