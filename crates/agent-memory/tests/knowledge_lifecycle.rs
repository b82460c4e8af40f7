//! Pages and graph entities have a lifecycle like memories: recall records their accesses,
//! and a `KnowledgePolicy` bounds each namespace's pages and entities by TTL (counted from
//! the last access, change or creation) and by capacity (the least accessed go first),
//! applied by `Memory::maintain`. Runs in memory, on SQLite and, when
//! `AGENT_MEMORY_TEST_POSTGRES_URL` names a server, on PostgreSQL.
#![cfg(all(feature = "retrieve", feature = "sqlite"))]

mod common;

use std::sync::Arc;

use agent_memory::prelude::*;
use agent_memory::{Clock, ManualClock, MemoryError};
use agent_memory::{KnowledgePolicy, Memory};
use chrono::{DateTime, Duration, Utc};
use common::{Backend, backends};

fn ns(text: &str) -> Namespace {
    Namespace::parse(text).expect("valid namespace")
}

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).expect("valid time")
}

/// A `Memory` over `backend` with `policy`, its clock at `clock`.
fn memory(backend: &Backend, clock: &Arc<ManualClock>, policy: KnowledgePolicy) -> Memory {
    Memory::builder()
        .store(Arc::clone(&backend.store))
        .knowledge(Arc::clone(&backend.knowledge))
        .graph(Arc::clone(&backend.graph))
        .clock(Arc::clone(clock) as Arc<dyn Clock>)
        .knowledge_policy(policy)
        .build()
        .expect("valid settings")
}

fn page(namespace: &Namespace, id: &str, title: &str, at: DateTime<Utc>) -> KnowledgePage {
    KnowledgePage::new(namespace.clone(), id, title)
        .expect("valid page")
        .with_summary(format!("{title} explained"))
        .with_created_at(at)
}

fn entity(namespace: &Namespace, id: &str, name: &str, at: Option<DateTime<Utc>>) -> GraphEntity {
    GraphEntity::new(namespace.clone(), id, name, "thing")
        .expect("valid entity")
        .with_created_at(at)
}

async fn page_stats(
    backend: &Backend,
    namespace: &Namespace,
    id: &str,
) -> (u64, Option<DateTime<Utc>>) {
    let page = backend
        .knowledge
        .get_page(namespace, id)
        .await
        .expect("get_page")
        .unwrap_or_else(|| panic!("{}: page {id} is gone", backend.name));
    (page.access_count, page.last_accessed)
}

async fn entity_stats(
    backend: &Backend,
    namespace: &Namespace,
    id: &str,
) -> (u64, Option<DateTime<Utc>>) {
    let entity = backend
        .graph
        .get_entity(namespace, id)
        .await
        .expect("get_entity")
        .unwrap_or_else(|| panic!("{}: entity {id} is gone", backend.name));
    (entity.access_count, entity.last_accessed)
}

async fn page_ids(backend: &Backend, namespace: &Namespace) -> Vec<String> {
    let mut ids: Vec<String> = backend
        .knowledge
        .list_pages(&namespace.exact())
        .await
        .expect("list_pages")
        .into_iter()
        .map(|page| page.id)
        .collect();
    ids.sort();
    ids
}

async fn entity_ids(backend: &Backend, namespace: &Namespace) -> Vec<String> {
    backend
        .graph
        .list_entities(&namespace.exact())
        .await
        .expect("list_entities")
        .into_iter()
        .map(|entity| entity.id)
        .collect()
}

fn returned(result: &RetrievalResult, id: &str, page: bool) -> bool {
    result.items.iter().any(|scored| match &scored.record {
        RetrievalSource::KnowledgePage(p) => page && p.id == id,
        RetrievalSource::GraphEntity(e) => !page && e.id == id,
        RetrievalSource::Memory(_) => false,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_counts_accesses_of_the_pages_and_entities_it_returns() {
    for backend in backends("kl_access").await {
        let name = backend.name;
        let clock = Arc::new(ManualClock::new(t0()));
        let memory = memory(&backend, &clock, KnowledgePolicy::default());
        let wiki = ns("kl/wiki");
        backend
            .knowledge
            .add_page(page(&wiki, "borrowing", "Rust borrowing", t0()))
            .await
            .expect("add_page");
        backend
            .knowledge
            .add_page(page(&wiki, "gardening", "Tomato gardening", t0()))
            .await
            .expect("add_page");
        backend
            .graph
            .add_entity(entity(&wiki, "rust", "Rust", Some(t0())))
            .await
            .expect("add_entity");
        for round in 1..=2u64 {
            clock.advance(Duration::hours(1));
            let result = memory
                .recall(&wiki.subtree(), "Rust borrowing")
                .await
                .expect("recall");
            assert!(returned(&result, "borrowing", true), "{name}: {result:?}");
            assert!(returned(&result, "rust", false), "{name}: {result:?}");
            assert!(!returned(&result, "gardening", true), "{name}");
            memory.flush().await.expect("flush");
            let at = Some(clock.now());
            assert_eq!(
                page_stats(&backend, &wiki, "borrowing").await,
                (round, at),
                "{name}: the recalled page counts an access"
            );
            assert_eq!(
                entity_stats(&backend, &wiki, "rust").await,
                (round, at),
                "{name}: the recalled entity counts an access"
            );
        }
        assert_eq!(
            page_stats(&backend, &wiki, "gardening").await,
            (0, None),
            "{name}: a page no recall returned has no access"
        );
        // maintain writes pending accesses too.
        clock.advance(Duration::hours(1));
        memory
            .recall_context(&wiki.subtree(), "Rust borrowing", 500)
            .await
            .expect("recall_context");
        memory.maintain(&wiki.subtree()).await.expect("maintain");
        assert_eq!(
            page_stats(&backend, &wiki, "borrowing").await.0,
            3,
            "{name}"
        );
        assert_eq!(entity_stats(&backend, &wiki, "rust").await.0, 3, "{name}");
        backend.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_expires_pages_and_entities_nobody_recalled() {
    for backend in backends("kl_ttl").await {
        let name = backend.name;
        let clock = Arc::new(ManualClock::new(t0()));
        let policy = KnowledgePolicy {
            page_ttl_days: Some(30),
            entity_ttl_days: Some(30),
            ..KnowledgePolicy::default()
        };
        let memory = memory(&backend, &clock, policy);
        let wiki = ns("kl/ttl");
        for (id, title) in [
            ("stale", "Forgotten almanac"),
            ("recalled", "Quantum kettles"),
            ("edited", "Seasonal recipes"),
        ] {
            backend
                .knowledge
                .add_page(page(&wiki, id, title, t0()))
                .await
                .expect("add_page");
        }
        for (id, name, created) in [
            ("stale", "Almanac", Some(t0())),
            ("kettle", "Kettle", Some(t0())),
            ("ageless", "Ageless", None),
        ] {
            backend
                .graph
                .add_entity(entity(&wiki, id, name, created))
                .await
                .expect("add_entity");
        }
        // Day 20: one page and one entity are recalled, another page is changed.
        clock.advance(Duration::days(20));
        let result = memory
            .recall(&wiki.subtree(), "quantum kettle")
            .await
            .expect("recall");
        assert!(returned(&result, "recalled", true), "{name}: {result:?}");
        assert!(returned(&result, "kettle", false), "{name}: {result:?}");
        assert!(!returned(&result, "stale", false), "{name}: {result:?}");
        // Added after the recall, so the traversal did not return `stale` through it.
        backend
            .graph
            .add_relation(GraphRelation::new(wiki.clone(), "kettle", "stale", "near", 0.5).unwrap())
            .await
            .expect("add_relation");
        let mut edited = backend
            .knowledge
            .get_page(&wiki, "edited")
            .await
            .unwrap()
            .unwrap();
        edited.summary = "Seasonal recipes, revised".into();
        edited.updated_at = clock.now();
        backend
            .knowledge
            .update_page(edited)
            .await
            .expect("update_page");
        let report = memory.maintain(&wiki.subtree()).await.expect("maintain");
        assert_eq!(
            (report.pages_expired, report.entities_expired),
            (0, 0),
            "{name}: nothing is 30 days idle yet"
        );

        // Day 35: 35 days since creation, 15 since the recall and the change.
        clock.advance(Duration::days(15));
        let report = memory.maintain(&wiki.subtree()).await.expect("maintain");
        assert_eq!(report.pages_expired, 1, "{name}: {report:?}");
        assert_eq!(report.entities_expired, 1, "{name}: {report:?}");
        assert_eq!((report.pages_evicted, report.entities_evicted), (0, 0));
        assert_eq!(
            page_ids(&backend, &wiki).await,
            ["edited", "recalled"],
            "{name}"
        );
        assert_eq!(
            entity_ids(&backend, &wiki).await,
            ["ageless", "kettle"],
            "{name}: an entity of unknown age never expires"
        );
        assert!(
            backend
                .graph
                .relations_of(&wiki, "kettle")
                .await
                .unwrap()
                .is_empty(),
            "{name}: the expired entity's relations went with it"
        );

        // Day 60: everything idle for 30 days goes, except the entity of unknown age.
        clock.advance(Duration::days(25));
        let report = memory.maintain(&wiki.subtree()).await.expect("maintain");
        assert_eq!(
            (report.pages_expired, report.entities_expired),
            (2, 1),
            "{name}"
        );
        assert!(page_ids(&backend, &wiki).await.is_empty(), "{name}");
        assert_eq!(entity_ids(&backend, &wiki).await, ["ageless"], "{name}");
        backend.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_keeps_the_most_accessed_in_each_namespace() {
    for backend in backends("kl_capacity").await {
        let name = backend.name;
        let clock = Arc::new(ManualClock::new(t0() + Duration::days(1)));
        let policy = KnowledgePolicy {
            max_pages: Some(2),
            max_entities: Some(2),
            ..KnowledgePolicy::default()
        };
        let memory = memory(&backend, &clock, policy);
        let (a, b) = (ns("kl/cap/a"), ns("kl/cap/b"));
        let (early, late) = (t0() + Duration::hours(1), t0() + Duration::hours(2));
        for namespace in [&a, &b] {
            // Pages: `popular` 5 accesses; `late` and `early` one each; `never` none.
            for (id, count, last) in [
                ("popular", 5, Some(early)),
                ("late", 1, Some(late)),
                ("early", 1, Some(early)),
                ("never", 0, None),
            ] {
                let mut page = page(namespace, id, id, t0());
                page.access_count = count;
                page.last_accessed = last;
                backend.knowledge.add_page(page).await.expect("add_page");
            }
            // Entities: `popular` 3 accesses; `late` one; `ageless` one but of unknown age
            // and no recorded time; `never` none.
            for (id, count, created, last) in [
                ("popular", 3, Some(t0()), Some(early)),
                ("late", 1, Some(t0()), Some(late)),
                ("ageless", 1, None, None),
                ("never", 0, Some(t0()), None),
            ] {
                let mut entity = entity(namespace, id, id, created);
                entity.access_count = count;
                entity.last_accessed = last;
                backend.graph.add_entity(entity).await.expect("add_entity");
            }
        }
        backend
            .graph
            .add_relation(GraphRelation::new(a.clone(), "popular", "never", "knows", 1.0).unwrap())
            .await
            .expect("add_relation");

        let report = memory.maintain(&a.exact()).await.expect("maintain");
        assert_eq!(
            (report.pages_evicted, report.entities_evicted),
            (2, 2),
            "{name}"
        );
        assert_eq!(
            (report.pages_expired, report.entities_expired),
            (0, 0),
            "{name}"
        );
        assert_eq!(
            page_ids(&backend, &a).await,
            ["late", "popular"],
            "{name}: fewest accesses go first, then the least recently used"
        );
        assert_eq!(
            entity_ids(&backend, &a).await,
            ["late", "popular"],
            "{name}: an entity of unknown age goes before a known one with as many accesses"
        );
        assert!(
            backend
                .graph
                .relations_of(&a, "popular")
                .await
                .unwrap()
                .is_empty(),
            "{name}: an evicted entity's relations went with it"
        );
        assert_eq!(
            page_ids(&backend, &b).await.len(),
            4,
            "{name}: another namespace is untouched"
        );
        assert_eq!(entity_ids(&backend, &b).await.len(), 4, "{name}");

        // A pass over both keeps each namespace at its own capacity.
        let report = memory
            .maintain(&ns("kl/cap").subtree())
            .await
            .expect("maintain");
        assert_eq!(
            (report.pages_evicted, report.entities_evicted),
            (2, 2),
            "{name}"
        );
        assert_eq!(page_ids(&backend, &b).await, ["late", "popular"], "{name}");
        assert_eq!(
            entity_ids(&backend, &a).await,
            ["late", "popular"],
            "{name}"
        );
        let again = memory
            .maintain(&ns("kl/cap").subtree())
            .await
            .expect("maintain");
        assert_eq!(
            (again.pages_evicted, again.entities_evicted),
            (0, 0),
            "{name}"
        );
        backend.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_leaves_other_namespaces_and_unbounded_memories_alone() {
    for backend in backends("kl_scope").await {
        let name = backend.name;
        let clock = Arc::new(ManualClock::new(t0()));
        let policy = KnowledgePolicy {
            page_ttl_days: Some(1),
            entity_ttl_days: Some(1),
            ..KnowledgePolicy::default()
        };
        let memory = memory(&backend, &clock, policy);
        let (mine, theirs, lookalike) = (ns("kl/user-4"), ns("kl/user-5"), ns("kl/user-42"));
        for namespace in [&mine, &theirs, &lookalike] {
            backend
                .knowledge
                .add_page(page(namespace, "p", "Old page", t0()))
                .await
                .expect("add_page");
            backend
                .graph
                .add_entity(entity(namespace, "e", "Old entity", Some(t0())))
                .await
                .expect("add_entity");
        }
        clock.advance(Duration::days(10));
        let report = memory.maintain(&mine.subtree()).await.expect("maintain");
        assert_eq!(
            (report.pages_expired, report.entities_expired),
            (1, 1),
            "{name}"
        );
        assert!(page_ids(&backend, &mine).await.is_empty(), "{name}");
        for namespace in [&theirs, &lookalike] {
            assert_eq!(
                page_ids(&backend, namespace).await,
                ["p"],
                "{name}: {namespace}"
            );
            assert_eq!(
                entity_ids(&backend, namespace).await,
                ["e"],
                "{name}: {namespace}"
            );
        }
        // Without a policy, maintenance removes no page or entity however old.
        let unbounded = self::memory(&backend, &clock, KnowledgePolicy::default());
        clock.advance(Duration::days(1000));
        let report = unbounded
            .maintain(&ns("kl").subtree())
            .await
            .expect("maintain");
        assert_eq!(
            (
                report.pages_expired,
                report.pages_evicted,
                report.entities_expired,
                report.entities_evicted
            ),
            (0, 0, 0, 0),
            "{name}"
        );
        assert_eq!(page_ids(&backend, &theirs).await, ["p"], "{name}");
        backend.cleanup().await;
    }
}

#[test]
fn bad_policy_values_are_invalid_input_naming_the_field() {
    let cases = [
        (
            KnowledgePolicy {
                page_ttl_days: Some(0),
                ..KnowledgePolicy::default()
            },
            "page_ttl_days",
        ),
        (
            KnowledgePolicy {
                max_pages: Some(0),
                ..KnowledgePolicy::default()
            },
            "max_pages",
        ),
        (
            KnowledgePolicy {
                entity_ttl_days: Some(0),
                ..KnowledgePolicy::default()
            },
            "entity_ttl_days",
        ),
        (
            KnowledgePolicy {
                max_entities: Some(0),
                ..KnowledgePolicy::default()
            },
            "max_entities",
        ),
    ];
    for (policy, field) in cases {
        match Memory::builder().knowledge_policy(policy).build() {
            Err(MemoryError::InvalidInput { field: named, .. }) => {
                assert_eq!(named, field, "{policy:?}");
            }
            other => panic!("{policy:?} was not refused by name: {other:?}"),
        }
    }
    let fine = KnowledgePolicy {
        page_ttl_days: Some(1),
        max_pages: Some(1),
        entity_ttl_days: Some(u32::MAX),
        max_entities: Some(usize::MAX),
    };
    assert!(Memory::builder().knowledge_policy(fine).build().is_ok());
}

/// The builder's settings, the summarizers and a conversation are named at the crate's
/// root, as the README names them.
#[tokio::test]
async fn the_builders_parts_are_at_the_root() {
    use agent_memory::{
        CompressionConfig, ConsolidationConfig, ConversationConfig, ConversationMemory,
        ExtractiveSummarizer, Message, Role, Summarizer,
    };
    let summary = ExtractiveSummarizer
        .summarize(&["The user moved to Lisbon in May."], 16)
        .await
        .expect("a summary");
    assert!(summary.contains("Lisbon"), "{summary}");
    let memory = Memory::builder()
        .compression(CompressionConfig::default())
        .consolidation(ConsolidationConfig::default())
        .knowledge_policy(KnowledgePolicy::default())
        .build()
        .expect("a memory");
    let session = ns("user/session");
    let conversation = ConversationMemory::open(
        Arc::clone(memory.store()),
        session,
        ConversationConfig::default(),
    )
    .await
    .expect("a conversation");
    conversation
        .add_message(Message::new(Role::User, "hello"))
        .await
        .expect("a message");
    assert_eq!(conversation.get_history().await.expect("history").len(), 1);
}

/// A put of a page or an entity (what every face's write is: add, or replace the one with
/// its id) racing a delete of it is stored, whichever comes first: deleted between its add
/// and its replace, it was answered "not found" and nothing was written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_racing_a_delete_is_stored() {
    for backend in backends("put_racing_delete").await {
        let name = backend.name;
        let namespace = ns("race/put");
        for round in 0..200 {
            let page = KnowledgePage::new(namespace.clone(), "contested", format!("Round {round}"))
                .expect("valid page");
            let entity = GraphEntity::new(namespace.clone(), "contested", "Contested", "thing")
                .expect("valid entity");
            let writer = {
                let (knowledge, graph) =
                    (Arc::clone(&backend.knowledge), Arc::clone(&backend.graph));
                tokio::spawn(async move {
                    (
                        agent_memory::write_page(knowledge.as_ref(), page, None).await,
                        agent_memory::write_entity(graph.as_ref(), entity).await,
                    )
                })
            };
            let deleter = {
                let (knowledge, graph) =
                    (Arc::clone(&backend.knowledge), Arc::clone(&backend.graph));
                let namespace = namespace.clone();
                tokio::spawn(async move {
                    for _ in 0..2 {
                        let _ = knowledge.delete_page(&namespace, "contested").await;
                        let _ = graph.remove_entity(&namespace, "contested").await;
                        tokio::task::yield_now().await;
                    }
                })
            };
            let (page, entity) = writer.await.expect("the writer");
            deleter.await.expect("the deleter");
            page.unwrap_or_else(|error| panic!("{name} round {round}: page: {error}"));
            entity.unwrap_or_else(|error| panic!("{name} round {round}: entity: {error}"));
        }
        backend.cleanup().await;
    }
}
