//! Crash safety, for real: a child process writes and acknowledges records and is killed
//! with SIGKILL at random moments; every acknowledged write must be there afterwards, nothing
//! half-written may be visible, and the file must pass `PRAGMA integrity_check`.
//!
//! The child is this test binary run again with [`CHILD_ENV`] set, executing only
//! [`crash_child_process`]. It prints `ACK <kind> <n>` after each write returned.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memory_core::{
    GraphEntity, GraphRelation, KnowledgeGraph, KnowledgePage, KnowledgeStore, MemoryFilter,
    MemoryItem, MemoryStore, Namespace, SearchQuery,
};
use memory_sqlite::SqliteBackend;
use rusqlite::Connection;

use crate::common::TempDb;

const CHILD_ENV: &str = "MEMORY_SQLITE_CRASH_CHILD_DB";
const TRIALS: usize = 30;
const BATCH: usize = 20;
/// The child gives up on its own after this long, in case the parent is gone.
const CHILD_LIFETIME: Duration = Duration::from_secs(60);

fn ns() -> Namespace {
    Namespace::parse("crash").unwrap()
}

fn content(n: usize) -> String {
    format!("crashword single {n} marker{n}")
}

fn batch_content(n: usize, k: usize) -> String {
    format!("crashword batch {n} part {k}")
}

/// The child's body. Without [`CHILD_ENV`] (a normal test run) it does nothing.
#[test]
fn crash_child_process() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(child_writes(Path::new(&path)));
}

async fn child_writes(path: &Path) {
    let backend = SqliteBackend::open(path).unwrap();
    let (store, pages, graph) = (
        backend.memory_store(),
        backend.knowledge_store(),
        backend.graph(),
    );
    let ns = ns();
    let started = Instant::now();
    let mut out = std::io::stdout().lock();
    let mut ack = |line: String| {
        writeln!(out, "ACK {line}").unwrap();
        out.flush().unwrap();
    };
    let mut n = 0usize;
    while started.elapsed() < CHILD_LIFETIME {
        match n % 5 {
            0 => {
                let item = MemoryItem::new(ns.clone(), content(n))
                    .unwrap()
                    .with_id(format!("s{n}"))
                    .unwrap();
                store.save(item).await.unwrap();
                ack(format!("single {n}"));
            }
            1 => {
                let items = (0..BATCH)
                    .map(|k| {
                        MemoryItem::new(ns.clone(), batch_content(n, k))
                            .unwrap()
                            .with_id(format!("b{n}-{k}"))
                            .unwrap()
                    })
                    .collect();
                store.save_many(items).await.unwrap();
                ack(format!("batch {n}"));
            }
            2 => {
                // Recall the single saved two steps before.
                store
                    .record_recall(&ns, &format!("s{}", n - 2), 0.5, chrono::Utc::now())
                    .await
                    .unwrap();
                ack(format!("recall {}", n - 2));
            }
            3 => {
                let page = KnowledgePage::new(ns.clone(), format!("p{n}"), format!("Page {n}"))
                    .unwrap()
                    .with_summary(format!("crashword summary {n}"))
                    .with_references([format!("p{}", n.saturating_sub(5))])
                    .unwrap();
                pages.add_page(page).await.unwrap();
                ack(format!("page {n}"));
            }
            _ => {
                let entity =
                    GraphEntity::new(ns.clone(), format!("e{n}"), format!("E{n}"), "thing")
                        .unwrap()
                        .with_tags(["crash"])
                        .unwrap();
                graph.add_entity(entity).await.unwrap();
                if n >= 9 {
                    let relation = GraphRelation::new(
                        ns.clone(),
                        format!("e{n}"),
                        format!("e{}", n - 5),
                        "follows",
                        0.5,
                    )
                    .unwrap();
                    graph.add_relation(relation).await.unwrap();
                }
                ack(format!("entity {n}"));
            }
        }
        n += 1;
    }
}

/// A small deterministic generator (xorshift64*), so every run makes the same choices; the
/// scheduler still makes each kill land at a different point of a write.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % bound
    }
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let mut random = Random(0x9E37_79B9_7F4A_7C15);
    let exe = std::env::current_exe().unwrap();
    let mut total_acks = 0;
    let mut unacknowledged_commits = 0;
    for trial in 0..TRIALS {
        let file = TempDb::new(&format!("crash-{trial}"));
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash::crash_child_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, file.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let kill_after = 1 + random.below(150) as usize;
        let mut acks: Vec<String> = Vec::new();
        let mut line = String::new();
        while acks.len() < kill_after {
            line.clear();
            if lines.read_line(&mut line).unwrap() == 0 {
                break;
            }
            if let Some(ack) = parse_ack(&line) {
                acks.push(ack);
            }
        }
        assert_eq!(
            acks.len(),
            kill_after,
            "trial {trial}: the child stopped early"
        );
        // Land the kill somewhere inside the next writes, not always right after an ack.
        std::thread::sleep(Duration::from_micros(random.below(3_000)));
        child.kill().unwrap();
        // Acknowledgements written before the kill are still in the pipe.
        loop {
            line.clear();
            if lines.read_line(&mut line).unwrap() == 0 {
                break;
            }
            if let Some(ack) = parse_ack(&line) {
                acks.push(ack);
            }
        }
        let status = child.wait().unwrap();
        assert!(!status.success(), "trial {trial}: the child was not killed");
        total_acks += acks.len();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        unacknowledged_commits += runtime.block_on(verify(file.path(), &acks, trial));
    }
    assert!(
        total_acks >= TRIALS,
        "the children acknowledged {total_acks} writes"
    );
    eprintln!(
        "crash test: {TRIALS} SIGKILLs, {total_acks} acknowledged writes all found; \
         {unacknowledged_commits} kills landed after a commit and before its acknowledgement"
    );
}

/// The acknowledgement on a line of the child's output. The first one shares its line with
/// the test harness's `test crash::crash_child_process ... `.
fn parse_ack(line: &str) -> Option<String> {
    line.find("ACK ")
        .map(|start| line[start + "ACK ".len()..].trim_end().to_owned())
}

/// Checks one killed child's file; returns how many memory writes committed without being
/// acknowledged (the kill landed between commit and acknowledgement).
async fn verify(path: &Path, acks: &[String], trial: usize) -> usize {
    let connection = Connection::open(path).unwrap();
    let integrity: String = connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok", "trial {trial}");
    drop(connection);

    let backend = SqliteBackend::open(path).unwrap();
    backend
        .check_integrity()
        .await
        .unwrap_or_else(|error| panic!("trial {trial}: {error}"));
    let ns = ns();
    let store = backend.memory_store();
    for ack in acks {
        let (kind, n) = ack.split_once(' ').unwrap();
        let n: usize = n.parse().unwrap();
        match kind {
            "single" => {
                let item = store.get(&ns, &format!("s{n}")).await.unwrap();
                assert_eq!(
                    item.map(|i| i.content),
                    Some(content(n)),
                    "trial {trial}: {ack}"
                );
            }
            "batch" => {
                let ids: Vec<String> = (0..BATCH).map(|k| format!("b{n}-{k}")).collect();
                let items = store.get_many(&ns, &ids).await.unwrap();
                assert_eq!(items.len(), BATCH, "trial {trial}: {ack}");
                for (k, item) in items.iter().enumerate() {
                    assert_eq!(item.content, batch_content(n, k));
                }
            }
            "recall" => {
                let stats = store.recall_stats(&ns, &format!("s{n}")).await.unwrap();
                assert_eq!(
                    stats.map(|s| s.recall_count),
                    Some(1),
                    "trial {trial}: {ack}"
                );
                let item = store.get(&ns, &format!("s{n}")).await.unwrap().unwrap();
                assert_eq!(item.access_count, 1, "trial {trial}: {ack}");
            }
            "page" => {
                let page = backend
                    .knowledge_store()
                    .get_page(&ns, &format!("p{n}"))
                    .await
                    .unwrap();
                assert!(page.is_some(), "trial {trial}: {ack}");
            }
            "entity" => {
                let graph = backend.graph();
                assert!(
                    graph
                        .get_entity(&ns, &format!("e{n}"))
                        .await
                        .unwrap()
                        .is_some(),
                    "trial {trial}: {ack}"
                );
                if n >= 9 {
                    let degree = graph.degree(&ns, &format!("e{n}")).await.unwrap();
                    assert!(degree >= 1, "trial {trial}: {ack} lost its relation");
                }
            }
            other => panic!("unknown ack {other}"),
        }
    }
    // Nothing half-written: every batch, acknowledged or not, is complete or absent.
    let mut batches: BTreeMap<String, usize> = BTreeMap::new();
    let all = store
        .list(&MemoryFilter::new(ns.exact()).with_id_prefix("b"))
        .await
        .unwrap();
    for item in &all {
        let batch = item.id.split_once('-').map(|(b, _)| b.to_owned()).unwrap();
        *batches.entry(batch).or_default() += 1;
    }
    for (batch, count) in batches {
        assert_eq!(count, BATCH, "trial {trial}: batch {batch} is partly there");
    }
    // The full-text index is in step with the table.
    let count = store.count(&ns.exact()).await.unwrap();
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "crashword", count + 10))
        .await
        .unwrap();
    assert_eq!(hits.len(), count, "trial {trial}: index and table disagree");
    // Every recall is whole: statistics and access count moved together.
    for item in store
        .list(&MemoryFilter::new(ns.exact()).with_id_prefix("s"))
        .await
        .unwrap()
    {
        let stats = store.recall_stats(&ns, &item.id).await.unwrap().unwrap();
        assert_eq!(
            stats.recall_count, item.access_count,
            "trial {trial}: {}",
            item.id
        );
    }
    let acknowledged = acks
        .iter()
        .filter(|ack| ack.starts_with("single ") || ack.starts_with("batch "))
        .count();
    let committed = all.len() / BATCH
        + store
            .list(&MemoryFilter::new(ns.exact()).with_id_prefix("s"))
            .await
            .unwrap()
            .len();
    assert!(
        committed == acknowledged || committed == acknowledged + 1,
        "trial {trial}: {committed} memory writes committed, {acknowledged} acknowledged; \
         only the one in flight may be extra"
    );
    // The database still takes writes.
    store
        .save(MemoryItem::new(ns.clone(), "after the crash").unwrap())
        .await
        .unwrap();
    committed - acknowledged
}
