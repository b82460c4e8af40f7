//! Concurrent writers, on one backend and on two connections to the same file: no write is
//! lost, and a database locked past the busy timeout is a recoverable conflict.

use std::time::Duration;

use memory_core::{MemoryError, MemoryItem, MemoryStore, Namespace, SearchQuery};
use memory_sqlite::{SqliteBackend, SqliteOptions};
use rusqlite::Connection;

use crate::common::TempDb;

const TASKS: usize = 16;
const SAVES_PER_TASK: usize = 20;
const BATCH: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_lose_nothing() {
    let file = TempDb::new("concurrent");
    // Two backends on one file: two connections competing for SQLite's write lock.
    let backends = [
        SqliteBackend::open(file.path()).unwrap(),
        SqliteBackend::open(file.path()).unwrap(),
    ];
    let ns = Namespace::parse("busy").unwrap();
    let hot = MemoryItem::new(ns.clone(), "the hot item everybody recalls")
        .unwrap()
        .with_id("hot")
        .unwrap();
    backends[0].memory_store().save(hot).await.unwrap();

    let mut handles = Vec::new();
    for task in 0..TASKS {
        let store = backends[task % 2].memory_store().clone();
        let ns = ns.clone();
        handles.push(tokio::spawn(async move {
            for i in 0..SAVES_PER_TASK {
                let item = MemoryItem::new(ns.clone(), format!("concurrent note {task} {i}"))?
                    .with_id(format!("t{task}-{i}"))?;
                store.save(item).await?;
                store
                    .record_recall(&ns, "hot", 0.5, chrono::Utc::now())
                    .await?;
            }
            let batch = (0..BATCH)
                .map(|i| {
                    MemoryItem::new(ns.clone(), format!("concurrent batch {task} {i}"))?
                        .with_id(format!("t{task}-batch-{i}"))
                })
                .collect::<memory_core::Result<Vec<_>>>()?;
            store.save_many(batch).await?;
            Ok::<(), MemoryError>(())
        }));
    }
    for handle in handles {
        handle.await.unwrap().unwrap();
    }

    let store = backends[1].memory_store();
    let expected = TASKS * (SAVES_PER_TASK + BATCH);
    assert_eq!(store.count(&ns.exact()).await.unwrap(), expected + 1);
    for task in 0..TASKS {
        let ids: Vec<String> = (0..SAVES_PER_TASK)
            .map(|i| format!("t{task}-{i}"))
            .chain((0..BATCH).map(|i| format!("t{task}-batch-{i}")))
            .collect();
        assert_eq!(store.get_many(&ns, &ids).await.unwrap().len(), ids.len());
    }
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "concurrent", expected + 10))
        .await
        .unwrap();
    assert_eq!(
        hits.len(),
        expected,
        "every write reached the full-text index"
    );
    let stats = store.recall_stats(&ns, "hot").await.unwrap().unwrap();
    assert_eq!(
        stats.recall_count,
        (TASKS * SAVES_PER_TASK) as u64,
        "no lost recall"
    );
    assert!((stats.total_score - 0.5 * (TASKS * SAVES_PER_TASK) as f64).abs() < 1e-9);
    let hot = store.get(&ns, "hot").await.unwrap().unwrap();
    assert_eq!(hot.access_count, (TASKS * SAVES_PER_TASK) as u64);
    backends[0].check_integrity().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_database_is_a_recoverable_conflict() {
    let file = TempDb::new("locked");
    let backend = SqliteBackend::open_with(
        file.path(),
        SqliteOptions::default().with_busy_timeout(Duration::from_millis(20)),
    )
    .unwrap();
    let ns = Namespace::parse("locked").unwrap();
    let blocker = Connection::open(file.path()).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let item = MemoryItem::new(ns.clone(), "waits for the lock").unwrap();
    let error = backend.memory_store().save(item.clone()).await.unwrap_err();
    assert!(matches!(error, MemoryError::Conflict { .. }), "{error:?}");
    assert!(error.is_recoverable());
    assert!(std::error::Error::source(&error).is_some());
    // Reads are not blocked by a writer under WAL.
    assert_eq!(backend.memory_store().count(&ns.exact()).await.unwrap(), 0);
    blocker.execute_batch("ROLLBACK").unwrap();
    backend.memory_store().save(item).await.unwrap();
    assert_eq!(backend.memory_store().count(&ns.exact()).await.unwrap(), 1);
}

/// A store at this build's version opens while another process holds the write lock (an
/// import running): opening reads the schema's version without taking the lock, so a
/// command that only reads (`list`, `recall`) is not refused for a write it never makes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_current_store_opens_while_another_process_writes() {
    let file = TempDb::new("open-locked");
    let ns = Namespace::parse("opened").unwrap();
    {
        let backend = SqliteBackend::open(file.path()).unwrap();
        let item = MemoryItem::new(ns.clone(), "stored before the lock").unwrap();
        backend.memory_store().save(item).await.unwrap();
    }
    let blocker = Connection::open(file.path()).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let backend = SqliteBackend::open_with(
        file.path(),
        SqliteOptions::default().with_busy_timeout(Duration::from_millis(20)),
    )
    .expect("opened under another's write lock");
    assert_eq!(backend.memory_store().count(&ns.exact()).await.unwrap(), 1);
    blocker.execute_batch("ROLLBACK").unwrap();
}

/// Writes that wait together are committed together (group commit); one that fails gets
/// its own error and the others are stored: concurrent saves with updates of missing
/// memories between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_write_among_concurrent_ones_fails_alone() {
    let file = TempDb::new("group");
    let backend = SqliteBackend::open(file.path()).unwrap();
    let ns = Namespace::parse("group").unwrap();
    let mut handles = Vec::new();
    for task in 0..TASKS {
        let store = backend.memory_store().clone();
        let ns = ns.clone();
        handles.push(tokio::spawn(async move {
            let item = MemoryItem::new(ns.clone(), format!("grouped note {task}"))?
                .with_id(format!("g{task}"))?;
            let missing =
                MemoryItem::new(ns.clone(), "never stored")?.with_id(format!("missing{task}"))?;
            let (saved, updated) = tokio::join!(store.save(item), store.update(missing));
            saved?;
            assert!(
                matches!(updated, Err(MemoryError::NotFound { .. })),
                "{updated:?}"
            );
            Ok::<(), MemoryError>(())
        }));
    }
    for handle in handles {
        handle.await.unwrap().unwrap();
    }
    let store = backend.memory_store();
    assert_eq!(store.count(&ns.exact()).await.unwrap(), TASKS);
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "grouped", TASKS + 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), TASKS);
}
