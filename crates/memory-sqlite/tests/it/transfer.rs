//! Export and import through `memory_core::transfer`: SQLite to JSONL to SQLite, and the
//! in-memory backends to SQLite and back, lose nothing.

use chrono::{DateTime, Utc};
use memory_core::transfer::{
    FORMAT, Header, RecallStatsRecord, Record, VERSION, export_jsonl, import_jsonl, read_jsonl,
};
use memory_core::{
    GraphEntity, GraphRelation, KnowledgeGraph, KnowledgePage, KnowledgeStore, MemoryError,
    MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, PageIndexEntry, RecallStats,
    Scope,
};
use memory_graph::PetGraph;
use memory_inmem::{InMemoryKnowledgeStore, InMemoryStore};
use memory_sqlite::SqliteBackend;

use crate::common::TempDb;

fn ns(text: &str) -> Namespace {
    Namespace::parse(text).unwrap()
}

fn at(second: i64, nanos: u32) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000 + second, nanos).unwrap()
}

/// Writes a varied set of records under `user-1` (exported) and `user-2` (not exported).
async fn fill(memories: &dyn MemoryStore, pages: &dyn KnowledgeStore, graph: &dyn KnowledgeGraph) {
    for (space, id, text, second) in [
        ("user-1", "m1", "Alice adopted a grey cat named Miso", 1),
        (
            "user-1",
            "m2",
            "用户喜欢 Rust 编程, with \"quotes\" and\nnewlines",
            2,
        ),
        (
            "user-1/session-7",
            "m3",
            "Short-term: the user asked about trains",
            3,
        ),
        ("user-2", "other", "not part of the export", 4),
    ] {
        let item = MemoryItem::new(ns(space), text)
            .unwrap()
            .with_id(id)
            .unwrap()
            .with_kind(if id == "m3" {
                MemoryKind::ShortTerm
            } else {
                MemoryKind::Semantic
            })
            .with_importance(0.3 + second as f32 / 10.0)
            .unwrap()
            .with_credibility(0.9)
            .unwrap()
            .with_tags(["Pets", "family life"])
            .unwrap()
            .with_metadata(
                serde_json::json!({"speaker": "ann", "turn": second, "score": 0.1 + 0.2}),
            )
            .unwrap()
            .with_embedding(vec![0.1, -0.25, 3.5e-8])
            .unwrap()
            .with_source("chat")
            .with_created_at(at(second, 123_456_789));
        memories.save(item).await.unwrap();
    }
    memories
        .record_recall(&ns("user-1"), "m1", 0.7, at(100, 1))
        .await
        .unwrap();
    memories
        .record_recall(&ns("user-1"), "m1", 0.2, at(200, 2))
        .await
        .unwrap();
    memories
        .set_recall_stats(
            &ns("user-1/session-7"),
            "m3",
            RecallStats {
                recall_count: 5,
                total_score: 3.25,
                last_recall_at: Some(at(300, 3)),
            },
        )
        .await
        .unwrap();
    for (id, title, refs) in [
        ("langgraph", "LangGraph", vec!["state-graph", "missing"]),
        (
            "state-graph",
            "StateGraph 状态管理",
            vec!["langgraph", "state-graph"],
        ),
    ] {
        let page = KnowledgePage::new(ns("user-1"), id, title)
            .unwrap()
            .with_summary("summary of ".to_owned() + title)
            .with_content("content")
            .with_tags(["agents"])
            .unwrap()
            .with_references(refs)
            .unwrap()
            .with_created_at(at(10, 5));
        pages.add_page(page).await.unwrap();
    }
    pages
        .add_page(KnowledgePage::new(ns("user-2"), "hidden", "Hidden").unwrap())
        .await
        .unwrap();
    for (space, id, name) in [
        ("user-1", "alice", "Alice"),
        ("user-1", "bob", "Bob"),
        ("user-1/session-7", "train", "Train"),
        ("user-2", "carol", "Carol"),
    ] {
        let entity = GraphEntity::new(ns(space), id, name, "person")
            .unwrap()
            .with_description(format!("{name} is someone"))
            .with_tags(["friend", "Team Member"])
            .unwrap();
        graph.add_entity(entity).await.unwrap();
    }
    for (from, to, kind, weight) in [
        ("alice", "bob", "knows", 0.8),
        ("bob", "alice", "knows", 0.6),
        ("alice", "alice", "self", 1.0),
    ] {
        graph
            .add_relation(GraphRelation::new(ns("user-1"), from, to, kind, weight).unwrap())
            .await
            .unwrap();
    }
}

/// Everything observable about a scope, in the traits' orders.
#[derive(Debug, PartialEq)]
struct Snapshot {
    memories: Vec<MemoryItem>,
    stats: Vec<Option<RecallStats>>,
    pages: Vec<KnowledgePage>,
    index: Vec<PageIndexEntry>,
    entities: Vec<GraphEntity>,
    relations: Vec<GraphRelation>,
}

async fn snapshot(
    scope: &Scope,
    memories: &dyn MemoryStore,
    pages: &dyn KnowledgeStore,
    graph: &dyn KnowledgeGraph,
) -> Snapshot {
    let items = memories
        .list(&MemoryFilter::new(scope.clone()))
        .await
        .unwrap();
    let mut stats = Vec::new();
    for item in &items {
        stats.push(
            memories
                .recall_stats(&item.namespace, &item.id)
                .await
                .unwrap(),
        );
    }
    Snapshot {
        memories: items,
        stats,
        pages: pages.list_pages(scope).await.unwrap(),
        index: pages.get_index(scope).await.unwrap(),
        entities: graph.list_entities(scope).await.unwrap(),
        relations: graph.list_relations(scope).await.unwrap(),
    }
}

async fn export(
    scope: &Scope,
    memories: &dyn MemoryStore,
    pages: &dyn KnowledgeStore,
    graph: &dyn KnowledgeGraph,
) -> Vec<u8> {
    let mut out = Vec::new();
    export_jsonl(scope, Some(memories), Some(pages), Some(graph), &mut out)
        .await
        .unwrap();
    out
}

/// What an export holds of `scope`, imported into fresh in-memory stores.
async fn read_into_memory(bytes: &[u8], scope: &Scope) -> Snapshot {
    let (memories, pages, graph) = (
        InMemoryStore::new(),
        InMemoryKnowledgeStore::new(),
        PetGraph::new(),
    );
    import_jsonl(&mut &bytes[..], Some(&memories), Some(&pages), Some(&graph))
        .await
        .unwrap();
    snapshot(scope, &memories, &pages, &graph).await
}

async fn import(bytes: &[u8], backend: &SqliteBackend) -> memory_core::Result<()> {
    import_jsonl(
        &mut &bytes[..],
        Some(backend.memory_store()),
        Some(backend.knowledge_store()),
        Some(backend.graph()),
    )
    .await
    .map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_to_jsonl_to_sqlite_loses_nothing() {
    let (from_file, to_file) = (TempDb::new("export-from"), TempDb::new("export-to"));
    let source = SqliteBackend::open(from_file.path()).unwrap();
    fill(
        source.memory_store(),
        source.knowledge_store(),
        source.graph(),
    )
    .await;
    let scope = ns("user-1").subtree();
    let bytes = export(
        &scope,
        source.memory_store(),
        source.knowledge_store(),
        source.graph(),
    )
    .await;

    let dump = read_jsonl(&mut bytes.as_slice()).unwrap();
    let counts = dump.header.counts.unwrap();
    assert_eq!(
        (
            counts.memories,
            counts.recall_stats,
            counts.pages,
            counts.entities,
            counts.relations
        ),
        (3, 2, 2, 3, 3)
    );

    let target = SqliteBackend::open(to_file.path()).unwrap();
    let report = import_jsonl(
        &mut bytes.as_slice(),
        Some(target.memory_store()),
        Some(target.knowledge_store()),
        Some(target.graph()),
    )
    .await
    .unwrap();
    assert_eq!(report.imported, counts);
    assert_eq!(report.skipped.total(), 0);

    let expected = snapshot(
        &scope,
        source.memory_store(),
        source.knowledge_store(),
        source.graph(),
    )
    .await;
    let got = snapshot(
        &scope,
        target.memory_store(),
        target.knowledge_store(),
        target.graph(),
    )
    .await;
    assert_eq!(got, expected);
    assert!(expected.index.iter().any(|entry| entry.referenced_by == 1));
    assert!(
        target.memory_store().count(&Scope::all()).await.unwrap() == 3,
        "records outside the scope were not exported"
    );

    // Importing again changes nothing, and a second export has the same records.
    import(&bytes, &target).await.unwrap();
    let again = snapshot(
        &scope,
        target.memory_store(),
        target.knowledge_store(),
        target.graph(),
    )
    .await;
    assert_eq!(again, expected);
    let bytes_again = export(
        &scope,
        target.memory_store(),
        target.knowledge_store(),
        target.graph(),
    )
    .await;
    assert_eq!(
        read_jsonl(&mut bytes_again.as_slice()).unwrap().records,
        dump.records
    );
    target.check_integrity().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_to_sqlite_and_back_loses_nothing() {
    let (memories, pages, graph) = (
        InMemoryStore::new(),
        InMemoryKnowledgeStore::new(),
        PetGraph::new(),
    );
    fill(&memories, &pages, &graph).await;
    let scope = Scope::all();
    let bytes = export(&scope, &memories, &pages, &graph).await;

    let file = TempDb::new("from-memory");
    let sqlite = SqliteBackend::open(file.path()).unwrap();
    import(&bytes, &sqlite).await.unwrap();
    let expected = snapshot(&scope, &memories, &pages, &graph).await;
    let got = snapshot(
        &scope,
        sqlite.memory_store(),
        sqlite.knowledge_store(),
        sqlite.graph(),
    )
    .await;
    assert_eq!(got, expected);

    let back = export(
        &scope,
        sqlite.memory_store(),
        sqlite.knowledge_store(),
        sqlite.graph(),
    )
    .await;
    assert_eq!(read_into_memory(&back, &scope).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_import_writes_nothing() {
    let source = SqliteBackend::open_in_memory().unwrap();
    fill(
        source.memory_store(),
        source.knowledge_store(),
        source.graph(),
    )
    .await;
    let bytes = export(
        &Scope::all(),
        source.memory_store(),
        source.knowledge_store(),
        source.graph(),
    )
    .await;
    let mut text = String::from_utf8(bytes).unwrap();
    text.push_str("{\"type\":\"memory\",\"id\":\"broken\"\n");
    let lines = text.lines().count();

    let target = SqliteBackend::open_in_memory().unwrap();
    let error = import(text.as_bytes(), &target).await.unwrap_err();
    assert!(
        matches!(error, MemoryError::Serialization { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(&format!("line {lines}")),
        "{error}"
    );
    assert_eq!(target.memory_store().count(&Scope::all()).await.unwrap(), 0);
    assert!(
        target
            .graph()
            .list_entities(&Scope::all())
            .await
            .unwrap()
            .is_empty()
    );
}

/// An input under `import/`: 600 memories (each followed by its statistics), a page, two
/// entities and a relation between them, one JSON line each after a header without counts.
fn import_lines() -> Vec<String> {
    let space = ns("import");
    let header = Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        scope: Scope::all(),
        exported_at: at(0, 0),
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
            .with_created_at(at(index, 0));
        lines.push(line(Record::Memory(item)));
        let stats = RecallStats {
            recall_count: 1,
            total_score: 0.5,
            last_recall_at: Some(at(index, 1)),
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

/// The format fixes no order of records: a relation given before the entities it joins
/// imports with them, on SQLite and in memory. It had failed after the memories were stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relation_before_its_entities_imports() {
    let mut lines = import_lines();
    let relation = lines.pop().expect("the relation line");
    lines.insert(1, relation);
    let text = lines.join("\n") + "\n";
    let sqlite = SqliteBackend::open_in_memory().unwrap();
    let (memories, pages, graph) = (
        InMemoryStore::new(),
        InMemoryKnowledgeStore::new(),
        PetGraph::new(),
    );
    let targets: [(&dyn MemoryStore, &dyn KnowledgeStore, &dyn KnowledgeGraph); 2] = [
        (
            sqlite.memory_store(),
            sqlite.knowledge_store(),
            sqlite.graph(),
        ),
        (&memories, &pages, &graph),
    ];
    for (memories, pages, graph) in targets {
        import_jsonl(
            &mut text.as_bytes(),
            Some(memories),
            Some(pages),
            Some(graph),
        )
        .await
        .expect("imported");
        assert_eq!(memories.count(&Scope::all()).await.unwrap(), 600);
        let relations = graph.list_relations(&Scope::all()).await.unwrap();
        assert_eq!(relations.len(), 1);
        assert_eq!(
            (
                relations[0].source_id.as_str(),
                relations[0].target_id.as_str()
            ),
            ("a", "b")
        );
    }
}

/// Line `index` of `lines` with `field` set to `value`.
fn edit(lines: &mut [String], index: usize, field: &str, value: serde_json::Value) {
    let mut record: serde_json::Value = serde_json::from_str(&lines[index]).unwrap();
    record[field] = value;
    lines[index] = record.to_string();
}

/// Inputs that are bad in one record (in the middle or at the end), each with a name.
fn bad_imports() -> Vec<(&'static str, String)> {
    // Line 0 is the header; memory `n` is line 1 + 2n, its statistics the line after.
    let middle = 1 + 2 * 300;
    let mut cases = Vec::new();
    let mut lines = import_lines();
    lines.push(
        serde_json::to_string(&Record::Relation(
            GraphRelation::new(ns("import"), "a", "ghost", "knows", 0.5).unwrap(),
        ))
        .unwrap(),
    );
    cases.push(("a relation to a missing entity at the end", lines));
    let mut lines = import_lines();
    edit(
        &mut lines,
        middle,
        "created_at",
        "3000-01-01T00:00:00Z".into(),
    );
    cases.push(("a memory created in the year 3000", lines));
    let mut lines = import_lines();
    edit(&mut lines, middle, "content", "before\u{0}after".into());
    cases.push(("a NUL character in a memory's content", lines));
    let mut lines = import_lines();
    edit(
        &mut lines,
        middle + 1,
        "last_recall_at",
        "3000-01-01T00:00:00Z".into(),
    );
    cases.push(("statistics recalled in the year 3000", lines));
    let mut lines = import_lines();
    edit(&mut lines, middle + 1, "recall_count", u64::MAX.into());
    cases.push(("a recall count above 2^63 - 1", lines));
    cases
        .into_iter()
        .map(|(name, lines)| (name, lines.join("\n") + "\n"))
        .collect()
}

/// Every bad input fails with `InvalidInput` and leaves the stores exactly as they were.
async fn check_failed_imports_change_nothing(
    memories: &dyn MemoryStore,
    pages: &dyn KnowledgeStore,
    graph: &dyn KnowledgeGraph,
) {
    fill(memories, pages, graph).await;
    let before = snapshot(&Scope::all(), memories, pages, graph).await;
    for (name, text) in bad_imports() {
        let result = import_jsonl(
            &mut text.as_bytes(),
            Some(memories),
            Some(pages),
            Some(graph),
        )
        .await;
        assert!(
            matches!(result, Err(MemoryError::InvalidInput { .. })),
            "{name}: {result:?}"
        );
        assert_eq!(
            snapshot(&Scope::all(), memories, pages, graph).await,
            before,
            "{name} changed the stores"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_import_leaves_sqlite_unchanged() {
    let backend = SqliteBackend::open_in_memory().unwrap();
    check_failed_imports_change_nothing(
        backend.memory_store(),
        backend.knowledge_store(),
        backend.graph(),
    )
    .await;
    backend.check_integrity().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_import_leaves_the_in_memory_stores_unchanged() {
    check_failed_imports_change_nothing(
        &InMemoryStore::new(),
        &InMemoryKnowledgeStore::new(),
        &PetGraph::new(),
    )
    .await;
}

/// Statistics of a memory that neither the input nor the store holds are counted as ignored,
/// not imported; a relation may end at an entity the graph already holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_without_their_memory_are_counted_as_ignored() {
    let backend = SqliteBackend::open_in_memory().unwrap();
    let space = ns("import");
    backend
        .graph()
        .add_entity(GraphEntity::new(space.clone(), "stored", "Stored", "thing").unwrap())
        .await
        .unwrap();
    let mut lines = import_lines();
    let stats = RecallStats {
        recall_count: 3,
        total_score: 1.0,
        last_recall_at: None,
    };
    let extra = [
        Record::RecallStats(RecallStatsRecord::new(space.clone(), "nowhere", stats)),
        Record::Relation(GraphRelation::new(space.clone(), "a", "stored", "knows", 0.5).unwrap()),
    ];
    lines.extend(
        extra
            .iter()
            .map(|record| serde_json::to_string(record).unwrap()),
    );
    let text = lines.join("\n");
    let report = import_jsonl(
        &mut text.as_bytes(),
        Some(backend.memory_store()),
        Some(backend.knowledge_store()),
        Some(backend.graph()),
    )
    .await
    .unwrap();
    assert_eq!(
        (
            report.imported.memories,
            report.imported.recall_stats,
            report.imported.relations
        ),
        (600, 600, 2)
    );
    assert_eq!(report.ignored.recall_stats, 1);
    assert_eq!(report.ignored.total(), 1);
    assert_eq!(report.skipped.total(), 0);
    assert_eq!(
        backend
            .memory_store()
            .recall_stats(&space, "nowhere")
            .await
            .unwrap(),
        None
    );
}

/// A store larger than an export reads at a time (512 memories, entities or relations) is
/// exported whole, every record once, from SQLite and from memory: the pages, many of
/// whose memories share a creation time, join up. Read back into fresh stores, it equals
/// the source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_larger_than_its_pages_loses_nothing() {
    let file = TempDb::new("large-export");
    let sqlite = SqliteBackend::open(file.path()).unwrap();
    let (memories, pages, graph) = (
        InMemoryStore::new(),
        InMemoryKnowledgeStore::new(),
        PetGraph::new(),
    );
    let stores: [(&dyn MemoryStore, &dyn KnowledgeGraph); 2] =
        [(sqlite.memory_store(), sqlite.graph()), (&memories, &graph)];
    for (store, graph) in stores {
        let mut items = Vec::new();
        for n in 0..1300 {
            let space = ["big/a", "big/b", "big/a/c"][n % 3];
            items.push(
                MemoryItem::new(ns(space), format!("note {n} about the garden"))
                    .unwrap()
                    .with_id(format!("m{n:04}"))
                    .unwrap()
                    // Runs of 25 memories at one time: pages end inside a run.
                    .with_created_at(at((n / 25) as i64, 0)),
            );
        }
        store.save_many(items).await.unwrap();
        for n in (0..1300).step_by(31) {
            let space = ["big/a", "big/b", "big/a/c"][n % 3];
            store
                .record_recall(&ns(space), &format!("m{n:04}"), 0.5, at(100, 0))
                .await
                .unwrap();
        }
        for n in 0..700 {
            let space = ["big/a", "big/b"][n % 2];
            graph
                .add_entity(
                    GraphEntity::new(ns(space), format!("e{n:04}"), format!("Plant {n}"), "plant")
                        .unwrap(),
                )
                .await
                .unwrap();
        }
        for n in 2..700 {
            let space = ["big/a", "big/b"][n % 2];
            graph
                .add_relation(
                    GraphRelation::new(
                        ns(space),
                        format!("e{n:04}"),
                        format!("e{:04}", n - 2),
                        "near",
                        0.5,
                    )
                    .unwrap(),
                )
                .await
                .unwrap();
        }
    }
    let scope = ns("big").subtree();
    for (source, store, graph) in [
        (
            "sqlite",
            sqlite.memory_store() as &dyn MemoryStore,
            sqlite.graph() as &dyn KnowledgeGraph,
        ),
        ("memory", &memories, &graph),
    ] {
        let knowledge: &dyn KnowledgeStore = if source == "sqlite" {
            sqlite.knowledge_store()
        } else {
            &pages
        };
        let bytes = export(&scope, store, knowledge, graph).await;
        let dump = read_jsonl(&mut bytes.as_slice()).unwrap();
        let counts = dump.header.counts.unwrap();
        assert_eq!(
            (
                counts.memories,
                counts.recall_stats,
                counts.entities,
                counts.relations
            ),
            (1300, 42, 700, 698),
            "{source}"
        );
        assert_eq!(
            read_into_memory(&bytes, &scope).await,
            snapshot(&scope, store, knowledge, graph).await,
            "{source}"
        );
    }
}

/// A graph that gains an entity, and a relation to it, between an export's pass over the
/// entities and its pass over the relations, as one an agent writes to during an export
/// does. Every other call is the wrapped graph's.
#[derive(Debug)]
struct GrowingGraph {
    inner: PetGraph,
    grown: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl KnowledgeGraph for GrowingGraph {
    async fn add_entity(&self, entity: GraphEntity) -> memory_core::Result<()> {
        self.inner.add_entity(entity).await
    }
    async fn update_entity(&self, entity: GraphEntity) -> memory_core::Result<()> {
        self.inner.update_entity(entity).await
    }
    async fn get_entity(
        &self,
        namespace: &Namespace,
        id: &str,
    ) -> memory_core::Result<Option<GraphEntity>> {
        self.inner.get_entity(namespace, id).await
    }
    async fn remove_entity(&self, namespace: &Namespace, id: &str) -> memory_core::Result<bool> {
        self.inner.remove_entity(namespace, id).await
    }
    async fn add_relation(&self, relation: GraphRelation) -> memory_core::Result<()> {
        self.inner.add_relation(relation).await
    }
    async fn remove_relation(
        &self,
        namespace: &Namespace,
        source_id: &str,
        target_id: &str,
        relation_type: &str,
    ) -> memory_core::Result<bool> {
        self.inner
            .remove_relation(namespace, source_id, target_id, relation_type)
            .await
    }
    async fn relations_of(
        &self,
        namespace: &Namespace,
        id: &str,
    ) -> memory_core::Result<Vec<GraphRelation>> {
        self.inner.relations_of(namespace, id).await
    }
    async fn find_by_keywords(
        &self,
        scope: &Scope,
        keywords: &[String],
    ) -> memory_core::Result<Vec<std::sync::Arc<GraphEntity>>> {
        self.inner.find_by_keywords(scope, keywords).await
    }
    async fn find_tags(&self, scope: &Scope, prefix: &str) -> memory_core::Result<Vec<String>> {
        self.inner.find_tags(scope, prefix).await
    }
    async fn entity_count_by_tag(&self, scope: &Scope, tag: &str) -> memory_core::Result<usize> {
        self.inner.entity_count_by_tag(scope, tag).await
    }
    async fn set_entity_tags(
        &self,
        namespace: &Namespace,
        id: &str,
        tags: Vec<String>,
    ) -> memory_core::Result<()> {
        self.inner.set_entity_tags(namespace, id, tags).await
    }
    fn tag_constraints(&self) -> memory_core::TagConstraints {
        self.inner.tag_constraints()
    }
    async fn list_entities(&self, scope: &Scope) -> memory_core::Result<Vec<GraphEntity>> {
        self.inner.list_entities(scope).await
    }
    async fn list_relations(&self, scope: &Scope) -> memory_core::Result<Vec<GraphRelation>> {
        self.inner.list_relations(scope).await
    }
    async fn list_entities_after(
        &self,
        scope: &Scope,
        after: Option<&memory_core::EntityPosition>,
        limit: usize,
    ) -> memory_core::Result<Vec<GraphEntity>> {
        self.inner.list_entities_after(scope, after, limit).await
    }
    async fn list_relations_after(
        &self,
        scope: &Scope,
        after: Option<&memory_core::RelationPosition>,
        limit: usize,
    ) -> memory_core::Result<Vec<GraphRelation>> {
        if !self.grown.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let space = ns("user-1");
            self.inner
                .add_entity(GraphEntity::new(space.clone(), "late", "Late", "person").unwrap())
                .await?;
            self.inner
                .add_relation(GraphRelation::new(space, "ada", "late", "knows", 0.5).unwrap())
                .await?;
        }
        self.inner.list_relations_after(scope, after, limit).await
    }
    async fn clear(&self, scope: &Scope) -> memory_core::Result<usize> {
        self.inner.clear(scope).await
    }
    async fn list_namespaces(&self, scope: &Scope) -> memory_core::Result<Vec<Namespace>> {
        self.inner.list_namespaces(scope).await
    }
}

/// An export taken while an entity and a relation to it are added between its entities and
/// its relations can still be imported: the relation to the entity it did not write is left
/// out, and the header counts what was written.
#[tokio::test]
async fn an_export_of_a_graph_written_meanwhile_can_be_imported() {
    let graph = GrowingGraph {
        inner: PetGraph::new(),
        grown: std::sync::atomic::AtomicBool::new(false),
    };
    let space = ns("user-1");
    for id in ["ada", "bob"] {
        graph
            .add_entity(GraphEntity::new(space.clone(), id, id, "person").unwrap())
            .await
            .unwrap();
    }
    graph
        .add_relation(GraphRelation::new(space.clone(), "ada", "bob", "knows", 0.5).unwrap())
        .await
        .unwrap();
    let mut out = Vec::new();
    let counts = export_jsonl(&space.subtree(), None, None, Some(&graph), &mut out)
        .await
        .unwrap();
    assert_eq!((counts.entities, counts.relations), (2, 1));
    assert_eq!(
        graph.list_relations(&space.subtree()).await.unwrap().len(),
        2,
        "the relation was added during the export"
    );
    let fresh = PetGraph::new();
    import_jsonl(&mut &out[..], None, None, Some(&fresh))
        .await
        .expect("the export imports");
    let relations = fresh.list_relations(&space.subtree()).await.unwrap();
    assert_eq!(relations.len(), 1);
    assert_eq!(
        (
            relations[0].source_id.as_str(),
            relations[0].target_id.as_str()
        ),
        ("ada", "bob")
    );
}
