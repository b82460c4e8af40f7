//! A version-4 database, as the released crate wrote it, upgrades to version 5 (facts that
//! change, access statistics of pages and entities): every record reads back exactly as
//! written, with no fact key, no validity, no end and no links, pages and entities never
//! accessed and entities of unknown age; search ranks the records as before; and the new
//! fields can be written.
//!
//! `tests/fixtures/v4.sqlite` was written by memory-sqlite at commit 0fb7fb2 (schema 4)
//! through its public API: the memories, page, entities and relations below, three
//! recalls, then an integrity check; the file was then switched out of WAL and vacuumed to
//! 1 KiB pages so that it is one small file. The expectations here are built with today's
//! API from the same values, so a record that reads back differently fails.

use chrono::{DateTime, Duration, Utc};
use memory_core::{
    AccessEvent, EndReason, Ended, GraphEntity, GraphRelation, KnowledgeGraph, KnowledgeGraphExt,
    KnowledgePage, KnowledgeStore, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace,
    PageQuery, RecallStats, SearchHit, SearchQuery, TimeView,
};
use memory_inmem::InMemoryStore;
use memory_sqlite::{SCHEMA_VERSION, SqliteBackend};
use rusqlite::Connection;

use crate::common::TempDb;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/v4.sqlite");

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(1_709_294_400_123_456_789)
}

fn user() -> Namespace {
    Namespace::parse("user-1").unwrap()
}

fn agent() -> Namespace {
    Namespace::parse("user-1/agent-a").unwrap()
}

/// The memories as the fixture holds them, recalls included.
fn memories() -> Vec<MemoryItem> {
    let mut m1 = MemoryItem::new(user(), "Alice adopted a grey cat")
        .unwrap()
        .with_id("m1")
        .unwrap()
        .with_kind(MemoryKind::Semantic)
        .with_importance(0.75)
        .unwrap()
        .with_credibility(0.9)
        .unwrap()
        .with_tags(["pets", "family"])
        .unwrap()
        .with_metadata(serde_json::json!({"speaker": "ann", "score": 1.5, "nested": {"k": [1, 2]}}))
        .unwrap()
        .with_context("a chat about pets")
        .with_source("chat")
        .with_embedding(vec![0.5, -0.25, 1.0])
        .unwrap()
        .with_created_at(t0());
    m1.last_accessed = Some(t0() + Duration::hours(2));
    m1.access_count = 2;
    let mut m2 = MemoryItem::new(user(), "Bob is learning Rust")
        .unwrap()
        .with_id("m2")
        .unwrap()
        .with_tags(["coding"])
        .unwrap()
        .with_created_at(t0() + Duration::seconds(1));
    m2.updated_at = t0() + Duration::seconds(5);
    m2.last_accessed = Some(t0() + Duration::hours(3));
    m2.access_count = 1;
    let m3 = MemoryItem::new(agent(), "用户喜欢 Rust 编程")
        .unwrap()
        .with_id("m3")
        .unwrap()
        .with_kind(MemoryKind::LongTerm)
        .with_embedding(vec![1.0, 0.0, 0.0])
        .unwrap()
        .with_created_at(t0() + Duration::seconds(2));
    let m4 = MemoryItem::new(user(), "The cat is called Miso")
        .unwrap()
        .with_id("m4")
        .unwrap()
        .with_tags(["pets"])
        .unwrap()
        .with_pinned(true)
        .with_created_at(t0() + Duration::seconds(3));
    vec![m1, m2, m3, m4]
}

fn pages() -> Vec<KnowledgePage> {
    vec![
        KnowledgePage::new(user(), "cats", "Cats")
            .unwrap()
            .with_summary("Small felines")
            .with_content("Cats purr when they are content.")
            .with_tags(["pets"])
            .unwrap()
            .with_references(["dogs"])
            .unwrap()
            .with_created_at(t0()),
        KnowledgePage::new(user(), "dogs", "Dogs")
            .unwrap()
            .with_created_at(t0() + Duration::seconds(1)),
    ]
}

/// The entities as the fixture holds them: schema 4 kept no creation time, so they read
/// back with none (unknown), and never accessed.
fn entities() -> Vec<GraphEntity> {
    vec![
        GraphEntity::new(user(), "alice", "Alice", "person")
            .unwrap()
            .with_description("Adopted a grey cat")
            .with_tags(["family"])
            .unwrap()
            .with_created_at(None),
        GraphEntity::new(user(), "bob", "Bob", "person")
            .unwrap()
            .with_created_at(None),
        GraphEntity::new(user(), "miso", "Miso", "animal")
            .unwrap()
            .with_tags(["pets", "cat"])
            .unwrap()
            .with_created_at(None),
    ]
}

/// The relations of `alice` in the order `relations_of` lists them.
fn relations() -> Vec<GraphRelation> {
    vec![
        GraphRelation::new(user(), "alice", "bob", "knows", 0.5).unwrap(),
        GraphRelation::new(user(), "alice", "miso", "owns", 0.9).unwrap(),
    ]
}

fn user_version(path: &std::path::Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
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

fn ids(items: &[MemoryItem]) -> Vec<&str> {
    items.iter().map(|item| item.id.as_str()).collect()
}

/// A copy of the fixture in a temporary file (the test must not change the original).
fn fixture_copy(label: &str) -> TempDb {
    let file = TempDb::new(label);
    std::fs::copy(FIXTURE, file.path()).unwrap();
    assert_eq!(
        user_version(file.path()),
        4,
        "the fixture is a version-4 file"
    );
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_4_records_read_back_exactly_after_the_upgrade() {
    let file = fixture_copy("v4-records");
    let backend = SqliteBackend::open(file.path()).unwrap();
    let version = user_version(file.path());
    assert_eq!(version, i64::from(SCHEMA_VERSION));
    assert!(version >= 5, "migration 5 ran: {version}");
    backend.check_integrity().await.unwrap();

    let store = backend.memory_store();
    let expected = memories();
    for item in &expected {
        let read = store.get(&item.namespace, &item.id).await.unwrap();
        assert_eq!(read.as_ref(), Some(item), "memory {}", item.id);
        let read = read.unwrap();
        assert_eq!(read.fact_key, None);
        assert_eq!((read.valid_from, read.valid_until), (None, None));
        assert!(read.ended.is_none() && read.is_current());
        assert!(read.supersedes.is_empty() && read.conflicts_with.is_empty());
    }
    assert_eq!(
        store
            .list(&MemoryFilter::new(user().subtree()))
            .await
            .unwrap(),
        expected,
        "list, oldest first"
    );
    assert_eq!(
        store
            .get_many(&user(), &["m4".to_owned(), "m1".to_owned()])
            .await
            .unwrap(),
        [expected[3].clone(), expected[0].clone()]
    );
    // Migrated records are current in every view that covers their recording time.
    for view in [
        TimeView::Current(Utc::now()),
        TimeView::AsOf(t0() + Duration::days(1)),
    ] {
        let filter = MemoryFilter::new(user().subtree()).with_view(view);
        assert_eq!(store.list(&filter).await.unwrap(), expected, "{view:?}");
    }
    let before = MemoryFilter::new(user().subtree()).with_view(TimeView::AsOf(t0()));
    assert_eq!(ids(&store.list(&before).await.unwrap()), ["m1"]);

    let m1 = store.recall_stats(&user(), "m1").await.unwrap().unwrap();
    assert_eq!(
        m1,
        RecallStats {
            recall_count: 2,
            total_score: f64::from(0.8f32) + f64::from(0.6f32),
            last_recall_at: Some(t0() + Duration::hours(2)),
        }
    );
    let m2 = store.recall_stats(&user(), "m2").await.unwrap().unwrap();
    assert_eq!(
        (m2.recall_count, m2.total_score, m2.last_recall_at),
        (1, 0.5, Some(t0() + Duration::hours(3)))
    );
    let m3 = store.recall_stats(&agent(), "m3").await.unwrap().unwrap();
    assert_eq!(m3.recall_count, 0);

    // The postings written by version 4 rank exactly as the in-memory backend ranks the
    // same records, in the default view and the current one.
    let reference = InMemoryStore::new();
    reference.save_many(expected.clone()).await.unwrap();
    for scope in [user().exact(), user().subtree()] {
        for text in ["cat", "rust cats", "pets", "who is Miso", "编程"] {
            for view in [TimeView::All, TimeView::Current(Utc::now())] {
                let query = SearchQuery::new(scope.clone(), text, 10)
                    .with_filter(MemoryFilter::new(scope.clone()).with_view(view));
                let found = store.search(&query).await.unwrap();
                assert_eq!(
                    hits(&found),
                    hits(&reference.search(&query).await.unwrap()),
                    "{text:?} in {scope:?}, {view:?}"
                );
            }
        }
    }
    let found = store
        .search(&SearchQuery::new(user().subtree(), "cat", 10))
        .await
        .unwrap();
    assert_eq!(
        found
            .iter()
            .map(|hit| hit.item.id.as_str())
            .collect::<Vec<_>>(),
        ["m4", "m1"]
    );
    let similar = store
        .search_similar(&MemoryFilter::new(user().subtree()), &[1.0, 0.0, 0.0], 5)
        .await
        .unwrap();
    assert_eq!(
        similar
            .iter()
            .map(|hit| hit.item.id.as_str())
            .collect::<Vec<_>>(),
        ["m3", "m1"]
    );

    let knowledge = backend.knowledge_store();
    for page in pages() {
        let read = knowledge.get_page(&page.namespace, &page.id).await.unwrap();
        assert_eq!(read.as_ref(), Some(&page), "page {}", page.id);
        let read = read.unwrap();
        assert_eq!((read.access_count, read.last_accessed), (0, None));
    }
    assert_eq!(knowledge.reference_count(&user(), "dogs").await.unwrap(), 1);
    let found = knowledge
        .search(&PageQuery::new(user().exact(), "felines", 5))
        .await
        .unwrap();
    assert_eq!(found.first().map(|hit| hit.page.id.as_str()), Some("cats"));

    let graph = backend.graph();
    let listed = graph.list_entities(&user().exact()).await.unwrap();
    assert_eq!(listed, entities());
    assert!(
        listed.iter().all(|entity| entity.created_at.is_none()
            && entity.access_count == 0
            && entity.last_accessed.is_none()),
        "old entities are of unknown age and never accessed: {listed:?}"
    );
    assert_eq!(
        graph.relations_of(&user(), "alice").await.unwrap(),
        relations()
    );
    assert_eq!(
        graph
            .entity_count_by_tag(&user().exact(), "pets")
            .await
            .unwrap(),
        1
    );
    let mut reached: Vec<String> = graph
        .get_related(&user(), "alice", 1)
        .await
        .unwrap()
        .into_iter()
        .map(|scored| scored.entity.id.clone())
        .collect();
    reached.sort();
    assert_eq!(reached, ["bob", "miso"], "migrated relations are current");
    drop(backend);

    // Opening again changes nothing.
    let again = SqliteBackend::open(file.path()).unwrap();
    assert_eq!(user_version(file.path()), i64::from(SCHEMA_VERSION));
    assert_eq!(
        again.memory_store().get(&user(), "m1").await.unwrap(),
        Some(memories().swap_remove(0))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_are_written_and_read_after_the_upgrade() {
    let file = fixture_copy("v4-facts");
    let backend = SqliteBackend::open(file.path()).unwrap();
    let store = backend.memory_store();

    // A migrated record takes the new fields: m2 is retracted, under a fact key.
    let mut m2 = store.get(&user(), "m2").await.unwrap().unwrap();
    m2.fact_key = Some("bob.language".to_owned());
    m2.ended = Some(Ended {
        at: t0() + Duration::days(2),
        reason: EndReason::Retracted {
            reason: "Bob learns Go".to_owned(),
        },
    });
    store.update(m2.clone()).await.unwrap();
    // A new record with every fact field.
    let mut go = MemoryItem::new(user(), "Bob is learning Go")
        .unwrap()
        .with_id("m5")
        .unwrap()
        .with_created_at(t0() + Duration::days(2))
        .with_fact_key("Bob.Language")
        .unwrap()
        .with_validity(
            Some(t0() + Duration::days(1)),
            Some(t0() + Duration::days(400)),
        )
        .unwrap();
    go.supersedes = vec!["m2".to_owned()];
    go.conflicts_with = vec!["m3".to_owned()];
    store.save(go.clone()).await.unwrap();
    assert_eq!(store.get(&user(), "m2").await.unwrap(), Some(m2.clone()));
    assert_eq!(store.get(&user(), "m5").await.unwrap(), Some(go.clone()));

    let keyed = MemoryFilter::new(user().subtree())
        .with_fact_key("bob.language")
        .unwrap();
    assert_eq!(store.list(&keyed).await.unwrap(), [m2.clone(), go.clone()]);
    let now = t0() + Duration::days(3);
    let current = keyed.clone().with_view(TimeView::Current(now));
    assert_eq!(store.list(&current).await.unwrap(), [go.clone()]);
    let as_of = keyed.with_view(TimeView::AsOf(t0() + Duration::days(1)));
    assert_eq!(store.list(&as_of).await.unwrap(), [m2.clone()]);
    // The retracted record leaves a current-view search before the cut.
    let query = SearchQuery::new(user().exact(), "Bob is learning Rust", 1)
        .with_filter(MemoryFilter::new(user().exact()).with_view(TimeView::Current(now)));
    let found = store.search(&query).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].item.id, "m5");
    let all = SearchQuery::new(user().exact(), "Bob is learning Rust", 1);
    assert_eq!(store.search(&all).await.unwrap()[0].item.id, "m2");

    // Relations: closing a migrated one, and reopening it.
    let graph = backend.graph();
    graph
        .add_entity(GraphEntity::new(user(), "tom", "Tom", "animal").unwrap())
        .await
        .unwrap();
    let adopted = t0() + Duration::days(5);
    let tom = GraphRelation::new(user(), "alice", "tom", "owns", 1.0)
        .unwrap()
        .with_validity(Some(adopted), None)
        .unwrap();
    let closed = graph.relate(tom.clone(), true, adopted).await.unwrap();
    let mut miso = relations().swap_remove(1);
    miso.valid_until = Some(adopted);
    assert_eq!(closed, [miso.clone()]);
    assert_eq!(
        graph.relations_of(&user(), "alice").await.unwrap(),
        [relations().swap_remove(0), miso.clone(), tom]
    );
    assert!(
        graph
            .shortest_path(&user(), "alice", "miso")
            .await
            .unwrap()
            .is_none()
    );
    miso.valid_until = None;
    graph.add_relation(miso).await.unwrap();
    assert!(
        graph
            .shortest_path(&user(), "alice", "miso")
            .await
            .unwrap()
            .is_some()
    );
    // Migrated pages and entities count accesses; an update fills an unknown creation time.
    let seen = t0() + Duration::days(6);
    let accesses = [
        AccessEvent::new(user(), "cats", seen),
        AccessEvent::new(user(), "cats", seen - Duration::hours(1)),
        AccessEvent::new(user(), "alice", seen),
    ];
    backend
        .knowledge_store()
        .record_accesses(&accesses)
        .await
        .unwrap();
    graph.record_accesses(&accesses).await.unwrap();
    let cats = backend
        .knowledge_store()
        .get_page(&user(), "cats")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((cats.access_count, cats.last_accessed), (2, Some(seen)));
    let alice = graph.get_entity(&user(), "alice").await.unwrap().unwrap();
    assert_eq!((alice.access_count, alice.last_accessed), (1, Some(seen)));
    graph
        .update_entity(alice.clone().with_created_at(Some(t0())))
        .await
        .unwrap();
    let alice = graph.get_entity(&user(), "alice").await.unwrap().unwrap();
    assert_eq!(
        (alice.created_at, alice.access_count),
        (Some(t0()), 1),
        "update_entity fills an unknown created_at and keeps the count"
    );
    backend.check_integrity().await.unwrap();
    drop(backend);

    let again = SqliteBackend::open(file.path()).unwrap();
    assert_eq!(
        again.memory_store().get(&user(), "m5").await.unwrap(),
        Some(go)
    );
    assert_eq!(
        again.graph().get_entity(&user(), "alice").await.unwrap(),
        Some(alice)
    );
    assert_eq!(
        again.memory_store().get(&user(), "m2").await.unwrap(),
        Some(m2)
    );
}
