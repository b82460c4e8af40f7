//! Two OS processes share one schema: they connect to it at once (both migrating a fresh
//! schema), write to the same namespaces at the same time, increment one shared recall
//! counter, and each must see every memory of the other. No write may be lost.
//!
//! The workers are this test binary run again with [`WORKER_ENV`] set, executing only
//! [`multi_process_worker`]; each prints `SAW <n>` with the number of the other's memories it
//! read back.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memory_core::{MemoryFilter, MemoryItem, MemoryStore, Namespace, SearchQuery};
use memory_postgres::{PostgresBackend, PostgresOptions};

use crate::common::{URL_ENV, schema_or_skip};

/// Set in a worker's environment to `<schema>:<worker number>`.
const WORKER_ENV: &str = "MEMORY_POSTGRES_TEST_WORKER";
const WORKERS: usize = 2;
const WRITES: usize = 150;
const RECALLS: usize = 100;
/// A worker gives up waiting for the other after this long.
const PATIENCE: Duration = Duration::from_secs(20);

fn namespaces() -> [Namespace; 2] {
    [
        Namespace::parse("fleet/shared-a").unwrap(),
        Namespace::parse("fleet/shared-b").unwrap(),
    ]
}

fn counter_namespace() -> Namespace {
    Namespace::parse("fleet/counter").unwrap()
}

/// The worker's body. Without [`WORKER_ENV`] (a normal test run) it does nothing.
#[test]
fn multi_process_worker() {
    let Ok(spec) = std::env::var(WORKER_ENV) else {
        return;
    };
    let (schema, worker) = spec.split_once(':').unwrap();
    let worker: usize = worker.parse().unwrap();
    let url = std::env::var(URL_ENV).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let saw = runtime.block_on(work(&url, schema, worker));
    let mut out = std::io::stdout().lock();
    writeln!(out, "\nSAW {saw}").unwrap();
    out.flush().unwrap();
}

async fn work(url: &str, schema: &str, worker: usize) -> usize {
    let options = PostgresOptions::default()
        .with_schema(schema)
        .with_max_connections(4);
    let backend = PostgresBackend::connect(url, options).await.unwrap();
    let store = backend.memory_store();
    let spaces = namespaces();
    let counter = counter_namespace();
    // Writes alternate between the two shared namespaces, interleaved with recalls of the
    // one shared counter item (saved by whoever gets there first; a save keeps the counts).
    let shared = MemoryItem::new(counter.clone(), "the shared counter")
        .unwrap()
        .with_id("counter")
        .unwrap();
    if store.get(&counter, "counter").await.unwrap().is_none() {
        store.save(shared).await.unwrap();
    }
    for n in 0..WRITES {
        let ns = &spaces[n % 2];
        let item = MemoryItem::new(ns.clone(), format!("worker{worker} fleetword note {n}"))
            .unwrap()
            .with_id(format!("w{worker}-{n:04}"))
            .unwrap();
        store.save(item).await.unwrap();
        if n < RECALLS {
            store
                .record_recall(&counter, "counter", 1.0, chrono::Utc::now())
                .await
                .unwrap();
        }
    }
    let done = MemoryItem::new(counter.clone(), format!("worker {worker} is done"))
        .unwrap()
        .with_id(format!("done-{worker}"))
        .unwrap();
    store.save(done).await.unwrap();
    // Wait for the other worker's marker, then read everything it wrote.
    let other = 1 - worker;
    let started = Instant::now();
    while store
        .get(&counter, &format!("done-{other}"))
        .await
        .unwrap()
        .is_none()
    {
        assert!(
            started.elapsed() < PATIENCE,
            "worker {other} never finished"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let prefix = format!("w{other}-");
    let mut saw = 0;
    for ns in &spaces {
        let filter = MemoryFilter::new(ns.exact()).with_id_prefix(prefix.clone());
        saw += store.list(&filter).await.unwrap().len();
    }
    saw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_namespaces_without_losing_writes() {
    let schema = schema_or_skip!("multi_process");
    let binary = std::env::current_exe().unwrap();
    let started = Instant::now();
    // Both start at once on a schema that does not exist yet.
    let children: Vec<_> = (0..WORKERS)
        .map(|worker| {
            Command::new(&binary)
                .args([
                    "--exact",
                    "multi_process::multi_process_worker",
                    "--nocapture",
                ])
                .args(["--test-threads", "1"])
                .env(WORKER_ENV, format!("{}:{worker}", schema.name))
                .env(URL_ENV, &schema.url)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<_> = tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(|child| child.wait_with_output().unwrap())
            .collect()
    })
    .await
    .unwrap();
    for (worker, output) in outputs.iter().enumerate() {
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "worker {worker} failed: {}\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let saw: usize = stdout
            .lines()
            .find_map(|line| line.split("SAW ").nth(1))
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or_else(|| panic!("worker {worker} printed no count:\n{stdout}"));
        assert_eq!(
            saw, WRITES,
            "worker {worker} sees every memory of the other"
        );
    }
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let spaces = namespaces();
    let mut total = 0;
    for ns in &spaces {
        total += store.count(&ns.exact()).await.unwrap();
    }
    assert_eq!(total, WORKERS * WRITES, "no write lost");
    let hits = store
        .search(&SearchQuery::new(
            Namespace::parse("fleet").unwrap().subtree(),
            "fleetword",
            10_000,
        ))
        .await
        .unwrap();
    assert_eq!(hits.len(), WORKERS * WRITES, "every write is searchable");
    let stats = store
        .recall_stats(&counter_namespace(), "counter")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stats.recall_count as usize,
        WORKERS * RECALLS,
        "no recall increment lost across processes"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}
