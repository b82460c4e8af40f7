//! Many tasks on two pools at once: no lost recall increment, no lost or duplicated write.

use std::sync::Arc;

use memory_core::{
    GraphEntity, KnowledgeGraph, KnowledgePage, KnowledgeStore, MemoryError, MemoryItem,
    MemoryStore, Namespace, RecallEvent,
};

use crate::common::schema_or_skip;

const TASKS: usize = 16;
const ROUNDS: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_recall_increments_lose_nothing() {
    let schema = schema_or_skip!("conc_recall");
    // Two pools on one schema: as two processes would.
    let first = schema.connect().await;
    let second = schema.connect().await;
    let ns = Namespace::parse("conc/recall").unwrap();
    let item = MemoryItem::new(ns.clone(), "often recalled")
        .unwrap()
        .with_id("hot")
        .unwrap();
    first.memory_store().save(item).await.unwrap();
    let at = |n: usize| chrono::DateTime::from_timestamp(1_800_000_000 + n as i64, 0).unwrap();
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let store = if task % 2 == 0 {
            first.memory_store().clone()
        } else {
            second.memory_store().clone()
        };
        let ns = ns.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                let n = task * ROUNDS + round;
                if round % 2 == 0 {
                    store.record_recall(&ns, "hot", 0.5, at(n)).await.unwrap();
                } else {
                    // A batch naming the item twice counts twice.
                    let event = RecallEvent {
                        namespace: ns.clone(),
                        id: "hot".into(),
                        score: 0.25,
                        at: at(n),
                    };
                    store.record_recalls(&[event.clone(), event]).await.unwrap();
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let stats = first
        .memory_store()
        .recall_stats(&ns, "hot")
        .await
        .unwrap()
        .unwrap();
    let singles = TASKS * ROUNDS / 2;
    let batched = TASKS * ROUNDS / 2 * 2;
    assert_eq!(
        stats.recall_count as usize,
        singles + batched,
        "no increment lost"
    );
    let expected_total = singles as f64 * 0.5 + batched as f64 * 0.25;
    assert!((stats.total_score - expected_total).abs() < 1e-9);
    assert_eq!(
        stats.last_recall_at,
        Some(at(TASKS * ROUNDS - 1)),
        "latest time kept"
    );
    let item = second
        .memory_store()
        .get(&ns, "hot")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(item.access_count as usize, singles + batched);
    assert_eq!(item.last_accessed, Some(at(TASKS * ROUNDS - 1)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_lose_and_duplicate_nothing() {
    let schema = schema_or_skip!("conc_writes");
    let backend = Arc::new(schema.connect().await);
    let ns = Namespace::parse("conc/writes").unwrap();
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let backend = Arc::clone(&backend);
        let ns = ns.clone();
        tasks.push(tokio::spawn(async move {
            let store = backend.memory_store();
            for round in 0..ROUNDS {
                let id = format!("t{task:02}-r{round:02}");
                let entry = MemoryItem::new(ns.clone(), format!("note {task} {round} shared"))
                    .unwrap()
                    .with_id(id)
                    .unwrap();
                if round % 4 == 0 {
                    store.save_many(vec![entry.clone(), entry]).await.unwrap();
                } else {
                    store.save(entry).await.unwrap();
                }
                // Everyone also rewrites one common id: it must stay one row.
                let common = MemoryItem::new(ns.clone(), format!("common by {task}"))
                    .unwrap()
                    .with_id("common")
                    .unwrap();
                store.save(common).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let store = backend.memory_store();
    assert_eq!(
        store.count(&ns.exact()).await.unwrap(),
        TASKS * ROUNDS + 1,
        "every write is there exactly once"
    );
    let hits = store
        .search(&memory_core::SearchQuery::new(ns.exact(), "shared", 1_000))
        .await
        .unwrap();
    assert_eq!(hits.len(), TASKS * ROUNDS, "and searchable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_adds_of_one_key_succeed_once() {
    let schema = schema_or_skip!("conc_adds");
    let backend = Arc::new(schema.connect().await);
    let ns = Namespace::parse("conc/adds").unwrap();
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let backend = Arc::clone(&backend);
        let ns = ns.clone();
        tasks.push(tokio::spawn(async move {
            let page = KnowledgePage::new(ns.clone(), "contested", format!("Page by {task}"))
                .unwrap()
                .with_references(["other"])
                .unwrap();
            let entity = GraphEntity::new(ns.clone(), "contested", "Entity", "x").unwrap();
            (
                backend.knowledge_store().add_page(page).await,
                backend.graph().add_entity(entity).await,
            )
        }));
    }
    let mut page_wins = 0;
    let mut entity_wins = 0;
    for task in tasks {
        let (page, entity) = task.await.unwrap();
        match page {
            Ok(()) => page_wins += 1,
            Err(MemoryError::AlreadyExists(_)) => {}
            Err(other) => panic!("add_page failed otherwise: {other}"),
        }
        match entity {
            Ok(()) => entity_wins += 1,
            Err(MemoryError::AlreadyExists(_)) => {}
            Err(other) => panic!("add_entity failed otherwise: {other}"),
        }
    }
    assert_eq!(
        (page_wins, entity_wins),
        (1, 1),
        "exactly one add of each wins"
    );
    let index = backend
        .knowledge_store()
        .get_index(&ns.exact())
        .await
        .unwrap();
    assert_eq!(index.len(), 1);
}
