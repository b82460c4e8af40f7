//! Tests of the database's connections, transactions and where calls run.

use super::*;

#[tokio::test]
async fn statements_keep_their_plan_across_bindings() {
    let database = Database::open_in_memory(&SqliteOptions::default()).expect("opened");
    let stable = database
        .call(|connection| {
            connection
                .db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG)
                .map_err(|error| MemoryError::storage("reading the config", error))
        })
        .await
        .expect("read");
    assert!(
        stable,
        "the stable query planner must be on: see `Database::prepare`"
    );
}

/// A call runs on the caller's thread only where no async worker waits for it: blocked in
/// a multi-threaded runtime's `block_on`; from a task, or under a current-thread runtime,
/// it runs on the blocking pool.
#[test]
fn calls_run_inline_only_where_no_async_worker_waits() {
    let database = Database::open_in_memory(&SqliteOptions::default()).expect("opened");
    let thread_of_call = |database: Database| async move {
        database
            .call(|_| Ok(std::thread::current().id()))
            .await
            .expect("called")
    };
    let me = std::thread::current().id();
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    assert_eq!(multi.block_on(thread_of_call(database.clone())), me);
    let (task, call) = multi.block_on(async {
        let database = database.clone();
        tokio::spawn(async move {
            let task = std::thread::current().id();
            (task, thread_of_call(database).await)
        })
        .await
        .expect("the task ran")
    });
    assert_ne!(task, call, "a task's call leaves its worker free");
    let current = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    assert_ne!(current.block_on(thread_of_call(database)), me);
}

#[tokio::test]
async fn the_page_cache_is_sized() {
    let database = Database::open_in_memory(&SqliteOptions::default()).expect("opened");
    let size: i64 = database
        .call(|connection| {
            connection
                .pragma_query_value(None, "cache_size", |row| row.get(0))
                .map_err(|error| MemoryError::storage("reading cache_size", error))
        })
        .await
        .expect("read");
    assert_eq!(size, -PAGE_CACHE_KIB);
}

/// The durability the docs promise: a file opened with default options commits with
/// `synchronous = FULL` (2) in WAL mode; `Synchronous::Normal` is 1 and
/// `Synchronous::Off` 0 when asked for.
#[tokio::test]
async fn files_sync_fully_by_default() {
    let dir = std::env::temp_dir().join(format!("agent-memory-sync-{}", memory_core::new_id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let read = |database: Database| async move {
        database
            .call(|connection| {
                let sync: i64 = connection
                    .pragma_query_value(None, "synchronous", |row| row.get(0))
                    .map_err(|error| MemoryError::storage("reading synchronous", error))?;
                let journal: String = connection
                    .pragma_query_value(None, "journal_mode", |row| row.get(0))
                    .map_err(|error| MemoryError::storage("reading journal_mode", error))?;
                Ok((sync, journal))
            })
            .await
            .expect("read")
    };
    let full = Database::open(&dir.join("full.db"), &SqliteOptions::default()).expect("opened");
    assert_eq!(read(full).await, (2, "wal".to_owned()));
    let normal = Database::open(
        &dir.join("normal.db"),
        &SqliteOptions::default().with_synchronous(Synchronous::Normal),
    )
    .expect("opened");
    assert_eq!(read(normal).await.0, 1);
    let off = Database::open(
        &dir.join("off.db"),
        &SqliteOptions::default().with_synchronous(Synchronous::Off),
    )
    .expect("opened");
    assert_eq!(read(off).await.0, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Statistics commit with `synchronous = NORMAL` (1), and every other write keeps the
/// level the database was opened with: `FULL` (2) is back after the statistics, also
/// when their transaction failed; `OFF` (0) is never raised.
#[tokio::test]
async fn statistics_commit_unsynced_and_leave_the_level_alone() {
    let level = |connection: &Connection| -> Result<i64> {
        connection
            .pragma_query_value(None, "synchronous", |row| row.get(0))
            .map_err(|error| MemoryError::storage("reading synchronous", error))
    };
    let dir = std::env::temp_dir().join(format!("agent-memory-stats-{}", memory_core::new_id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    for (name, synchronous, during, after) in [
        ("full.db", Synchronous::Full, 1, 2),
        ("off.db", Synchronous::Off, 0, 0),
    ] {
        let options = SqliteOptions::default().with_synchronous(synchronous);
        let database = Database::open(&dir.join(name), &options).expect("opened");
        let inside = database
            .write_statistics("test", move |transaction| level(transaction))
            .await
            .expect("written");
        assert_eq!(inside, during, "{name}: during the statistics");
        let failed = database
            .write_statistics("test", |_| -> Result<()> {
                Err(MemoryError::storage("test", "a failed batch"))
            })
            .await;
        assert!(failed.is_err());
        let outside = database.call(move |connection| level(connection)).await;
        assert_eq!(
            outside.expect("read"),
            after,
            "{name}: after the statistics"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn scratch(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("agent-memory-{name}-{}", memory_core::new_id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let file = dir.join("db.sqlite");
    (dir, file)
}

/// A read runs while a write transaction is open on the writing connection, and sees
/// what was committed before it began, not the write in progress; once the write
/// commits, the next read sees it.
#[test]
fn reads_do_not_wait_for_a_write_in_progress() {
    let (dir, file) = scratch("readers");
    let database = Database::open(&file, &SqliteOptions::default()).expect("opened");
    let count = |database: &Database| {
        futures_lite_block_on(database.query(|connection| {
            connection
                .query_row("SELECT count(*) FROM meta WHERE key = 'test'", [], |row| {
                    row.get::<_, i64>(0)
                })
                .map_err(|error| MemoryError::storage("counting", error))
        }))
        .expect("read")
    };
    let (started, start) = std::sync::mpsc::channel();
    let (finish, finished) = std::sync::mpsc::channel::<()>();
    let writer = {
        let database = database.clone();
        std::thread::spawn(move || {
            futures_lite_block_on(database.write("test", move |transaction| {
                transaction
                    .execute("INSERT INTO meta (key, value) VALUES ('test', 'x')", [])
                    .map_err(|error| MemoryError::storage("inserting", error))?;
                started.send(()).expect("told");
                finished.recv().expect("released");
                Ok(())
            }))
        })
    };
    start.recv().expect("the write began");
    assert_eq!(count(&database), 0, "a read sees only committed writes");
    finish.send(()).expect("release");
    writer.join().expect("joined").expect("written");
    assert_eq!(count(&database), 1, "a read after the commit sees it");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Read connections refuse writes, never open more than asked for, and with none asked
/// for (or in memory) reads go through the writing connection.
#[test]
fn read_connections_are_bounded_and_read_only() {
    let (dir, file) = scratch("readers-bounded");
    let options = SqliteOptions::default().with_read_connections(2);
    let database = Database::open(&file, &options).expect("opened");
    let refused = futures_lite_block_on(database.query(|connection| {
        connection
            .execute("INSERT INTO meta (key, value) VALUES ('test', 'x')", [])
            .map_err(|error| MemoryError::storage("inserting", error))
    }));
    assert!(refused.is_err(), "a read connection must refuse writes");
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let database = database.clone();
            std::thread::spawn(move || {
                futures_lite_block_on(database.query(|_| {
                    std::thread::sleep(Duration::from_millis(20));
                    Ok(())
                }))
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("joined").expect("read");
    }
    let readers = database.inner.readers.as_ref().expect("a file has readers");
    assert_eq!(readers.state().open, 2);
    assert_eq!(readers.state().idle.len(), 2);

    let none =
        Database::open(&file, &SqliteOptions::default().with_read_connections(0)).expect("opened");
    assert!(none.inner.readers.is_none());
    let memory = Database::open_in_memory(&SqliteOptions::default()).expect("opened");
    assert!(memory.inner.readers.is_none());
    let written = futures_lite_block_on(memory.query(|connection| {
        connection
            .execute("INSERT INTO meta (key, value) VALUES ('test', 'x')", [])
            .map_err(|error| MemoryError::storage("inserting", error))
    }));
    assert_eq!(written.expect("the writer reads in memory"), 1);

    let too_many = SqliteOptions::default().with_read_connections(MAX_READ_CONNECTIONS + 1);
    match Database::open(&file, &too_many) {
        Err(MemoryError::InvalidInput { field, .. }) => assert_eq!(field, "read_connections"),
        other => panic!("expected InvalidInput, got {:?}", other.map(|_| ())),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Polls `future` on this thread until it is ready (no runtime: calls run inline).
fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Wake(std::thread::Thread);
    impl std::task::Wake for Wake {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Wake(std::thread::current())));
    let mut context = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut context) {
            return out;
        }
        std::thread::park();
    }
}
