//! Maintenance killed mid-pass: a child process runs scheduled maintenance (eviction,
//! decay, consolidation) over a SQLite file and is killed with SIGKILL at random moments;
//! the file reopens intact, its full-text index agrees with its records, no memory is left
//! half-consolidated, and a pass after the restart finishes the work.
//!
//! The child is this test binary run again with [`CHILD_ENV`] set, executing only
//! [`maintenance_child_process`]. It prints `PASS <n>` after each finished pass.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use memory_core::{
    DecayConfig, EvictionConfig, EvictionPolicy, ManualClock, MemoryFilter, MemoryItem, MemoryKind,
    MemoryStore, Namespace,
};
use memory_retrieve::{ConsolidationConfig, Memory};
use memory_sqlite::SqliteBackend;

const CHILD_ENV: &str = "MEMORY_RETRIEVE_MAINTENANCE_CHILD_DB";
const TRIALS: u64 = 5;
const MEMORIES: usize = 1_200;
const CAPACITY: usize = 800;

fn ns() -> Namespace {
    Namespace::parse("upkeep").unwrap()
}

fn now() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 6, 1, 0, 0, 0).unwrap()
}

fn memory_over(backend: &SqliteBackend) -> Memory {
    Memory::builder()
        .stores(backend.stores())
        .clock(Arc::new(ManualClock::new(now())))
        .eviction(EvictionConfig {
            policy: EvictionPolicy::Capacity {
                max_items: CAPACITY,
            },
            check_interval: 1_000,
        })
        .decay(DecayConfig::default())
        .consolidation(ConsolidationConfig {
            min_group: 4,
            ..ConsolidationConfig::default()
        })
        .build()
        .unwrap()
}

/// The child's body. Without [`CHILD_ENV`] (a normal test run) it does nothing.
#[test]
fn maintenance_child_process() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let backend = SqliteBackend::open(&path).unwrap();
        let memory = Arc::new(memory_over(&backend));
        let mut handle = memory.spawn_maintenance(Duration::from_millis(1), ns().subtree());
        let mut passes = 0;
        while let Some(report) = handle.wait_for(passes + 1).await {
            passes = report.passes;
            println!("PASS {passes}");
        }
    });
}

fn temp_path(label: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "memory-retrieve-upkeep-{}-{label}.db",
        std::process::id()
    ));
    remove(&path);
    path
}

fn remove(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Old episodes in sessions of eight, more than the capacity allows: old enough to be
/// consolidated (over 30 days) and to decay, not so old that decay forgets them all (at 150
/// days an importance of 0.5 decays to about 0.12, above the 0.05 threshold), so whenever
/// the kill lands (in the first pass or after several) the file holds memories to check.
async fn populate(path: &Path) {
    let backend = SqliteBackend::open(path).unwrap();
    let items: Vec<MemoryItem> = (0..MEMORIES)
        .map(|n| {
            MemoryItem::new(
                ns(),
                format!("upkeep episode {n} about topic{} and more", n % 37),
            )
            .unwrap()
            .with_id(format!("m{n:05}"))
            .unwrap()
            .with_kind(MemoryKind::Episodic)
            .with_metadata(serde_json::json!({ "session": format!("s{}", n / 8) }))
            .unwrap()
            .with_created_at(
                now() - chrono::Duration::days(150) + chrono::Duration::minutes(n as i64),
            )
        })
        .collect();
    backend.memory_store().save_many(items).await.unwrap();
}

/// Every invariant a killed pass must leave intact.
async fn verify(path: &Path, trial: u64) {
    let backend = SqliteBackend::open(path).unwrap();
    backend
        .check_integrity()
        .await
        .unwrap_or_else(|error| panic!("trial {trial}: {error}"));
    let store = backend.memory_store();
    let all = store.list(&MemoryFilter::new(ns().exact())).await.unwrap();
    assert!(!all.is_empty(), "trial {trial}: everything gone");
    let ids: std::collections::HashSet<&str> = all.iter().map(|item| item.id.as_str()).collect();
    for item in &all {
        // A consolidated source names a summary that exists and lists it: the fold is one
        // transaction.
        if let Some(into) = item.ended.as_ref().and_then(|ended| ended.successor()) {
            let summary = all
                .iter()
                .find(|other| other.id == into)
                .unwrap_or_else(|| panic!("trial {trial}: {} names missing {into}", item.id));
            assert!(summary.supersedes.contains(&item.id), "trial {trial}");
        }
        for source in &item.supersedes {
            // Sources may have been evicted since, but never left current.
            if ids.contains(source.as_str()) {
                let source = all.iter().find(|other| &other.id == source).unwrap();
                assert!(
                    source.ended.is_some(),
                    "trial {trial}: {} still current",
                    source.id
                );
            }
        }
    }
    // A pass after the restart finishes, and the capacity holds afterwards.
    let memory = memory_over(&backend);
    memory.maintain(&ns().subtree()).await.unwrap();
    let left = store.count(&ns().exact()).await.unwrap();
    assert!(
        left <= CAPACITY,
        "trial {trial}: {left} memories after a full pass"
    );
    backend.check_integrity().await.unwrap();
}

#[test]
fn maintenance_killed_mid_pass_leaves_a_consistent_file() {
    let exe = std::env::current_exe().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut killed_mid_pass = 0;
    for trial in 0..TRIALS {
        let path = temp_path(&format!("kill-{trial}"));
        runtime.block_on(populate(&path));
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "maintenance_crash::maintenance_child_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Somewhere in the first pass or the ones after it.
        std::thread::sleep(Duration::from_millis(20 + seed % 600));
        child.kill().unwrap();
        let mut passes = 0;
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while lines.read_line(&mut line).unwrap() > 0 {
            passes += usize::from(line.contains("PASS "));
            line.clear();
        }
        assert!(
            !child.wait().unwrap().success(),
            "trial {trial}: not killed"
        );
        killed_mid_pass += usize::from(passes == 0);
        runtime.block_on(verify(&path, trial));
        remove(&path);
    }
    assert!(killed_mid_pass > 0, "no kill landed inside the first pass");
}

/// A pass at the same time as the one before finds nothing left to do: the summaries
/// consolidation wrote start their decay where their sources' stood (their importance had
/// decayed already), so they are neither decayed again nor forgotten with their sources.
#[tokio::test]
async fn a_second_pass_at_the_same_time_changes_nothing() {
    let path = temp_path("second-pass");
    populate(&path).await;
    let backend = SqliteBackend::open(&path).unwrap();
    let memory = memory_over(&backend);
    let first = memory.maintain(&ns().subtree()).await.unwrap();
    assert_eq!(first.summaries, MEMORIES / 8);
    let store = backend.memory_store();
    assert_eq!(store.count(&ns().exact()).await.unwrap(), CAPACITY);
    let second = memory.maintain(&ns().subtree()).await.unwrap();
    assert_eq!((second.decayed, second.evicted), (0, 0), "{second:?}");
    assert_eq!(store.count(&ns().exact()).await.unwrap(), CAPACITY);
    drop(backend);
    verify(&path, 0).await;
    remove(&path);
}
