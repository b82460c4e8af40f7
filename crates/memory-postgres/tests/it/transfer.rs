//! Export and import through memory-core's `agent-memory-jsonl` format: PostgreSQL to
//! PostgreSQL (another schema) and in-memory to PostgreSQL, every record and statistic kept.

use memory_core::transfer::{export_jsonl, import_jsonl};
use memory_core::{
    GraphEntity, GraphRelation, KnowledgeGraph, KnowledgePage, KnowledgeStore, MemoryFilter,
    MemoryItem, MemoryKind, MemoryStore, Namespace, RecallStats, Scope,
};
use memory_inmem::{InMemoryKnowledgeStore, InMemoryStore};

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
