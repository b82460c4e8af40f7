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

/// An update of a page that waits for its row (another writer holds it, having changed the
/// page's references) replaces the references that writer committed meanwhile: as one
/// statement with the row's update, the deletion of the old references read them as they
/// were when it began, and left the other writer's behind (the page then counted as citing
/// a page it no longer names).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_waiting_for_a_page_replaces_the_references_written_meanwhile() {
    let schema = schema_or_skip!("conc_page_refs");
    let backend = schema.connect().await;
    let ns = Namespace::parse("conc/refs").unwrap();
    let page = |refs: &[&str]| {
        KnowledgePage::new(ns.clone(), "p", "P")
            .unwrap()
            .with_references(refs.iter().copied())
            .unwrap()
    };
    let store = backend.knowledge_store().clone();
    store.add_page(page(&["a"])).await.unwrap();

    // The other writer: the page's row locked and a reference added, not committed yet.
    let mut raw = schema.raw_client().await;
    let other = raw.transaction().await.unwrap();
    let s = &schema.name;
    other
        .execute(
            &format!("UPDATE {s}.pages SET refs = '{{a,x}}' WHERE ns = $1 AND id = 'p'"),
            &[&ns.as_str()],
        )
        .await
        .unwrap();
    other
        .execute(
            &format!("INSERT INTO {s}.page_refs (ns, source_id, target_id) VALUES ($1, 'p', 'x')"),
            &[&ns.as_str()],
        )
        .await
        .unwrap();
    let update = {
        let store = store.clone();
        let page = page(&["b"]);
        tokio::spawn(async move { store.update_page(page).await })
    };
    // Committed once the update waits for the row.
    assert!(
        waits_for_a_lock(&schema).await,
        "the update waits for the row"
    );
    other.commit().await.unwrap();
    update.await.unwrap().unwrap();

    let targets: Vec<String> = raw
        .query(
            &format!(
                "SELECT target_id FROM {s}.page_refs WHERE ns = $1 AND source_id = 'p' \
                 ORDER BY target_id"
            ),
            &[&ns.as_str()],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(targets, ["b"], "the page cites only what it lists");
    let index = store.get_index(&ns.exact()).await.unwrap();
    assert_eq!(index.len(), 1);
}

/// A put of a page that waits for its row while another put of it commits is stored: its
/// delete read the row as it was before (and so found nothing left to delete) and its
/// insert found the id taken, so it answered Ok and wrote nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_waiting_for_another_put_of_the_page_is_stored() {
    let schema = schema_or_skip!("conc_page_put");
    let backend = schema.connect().await;
    let ns = Namespace::parse("conc/put").unwrap();
    let store = backend.knowledge_store().clone();
    store
        .add_page(KnowledgePage::new(ns.clone(), "p", "Zeroth").unwrap())
        .await
        .unwrap();

    // The other put: the row deleted and written again, not committed yet.
    let mut raw = schema.raw_client().await;
    let other = raw.transaction().await.unwrap();
    let s = &schema.name;
    other
        .batch_execute(&format!(
            "CREATE TEMP TABLE again ON COMMIT DROP AS \
             SELECT * FROM {s}.pages WHERE ns = 'conc/put' AND id = 'p'; \
             DELETE FROM {s}.pages WHERE ns = 'conc/put' AND id = 'p'; \
             UPDATE again SET title = 'First'; \
             INSERT INTO {s}.pages OVERRIDING SYSTEM VALUE SELECT * FROM again;"
        ))
        .await
        .unwrap();
    let put = {
        let store = store.clone();
        let page = KnowledgePage::new(ns.clone(), "p", "Second").unwrap();
        tokio::spawn(async move { store.put_page(page).await })
    };
    assert!(waits_for_a_lock(&schema).await, "the put waits for the row");
    other.commit().await.unwrap();
    put.await.unwrap().unwrap();
    let page = store.get_page(&ns, "p").await.unwrap().expect("the page");
    assert_eq!(page.title, "Second", "the later put is what is stored");
}

/// Whether a statement on `schema` comes to wait for a lock within five seconds (another
/// session holds the row it writes).
async fn waits_for_a_lock(schema: &crate::common::TestSchema) -> bool {
    let watcher = schema.raw_client().await;
    for _ in 0..500 {
        let row = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                 AND query LIKE $1",
                &[&format!("%{}%", schema.name)],
            )
            .await
            .unwrap();
        if row.get::<_, i64>(0) > 0 {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}
