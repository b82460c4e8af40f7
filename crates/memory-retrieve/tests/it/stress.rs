//! Concurrency stress: many tasks on a multi-threaded runtime remember, recall, update,
//! forget, record recalls and maintain on shared namespaces. Without eviction, the final
//! state matches the acknowledged operations exactly, recall counts included; with a
//! capacity that evicts during the run, every namespace stays within it and every memory
//! left holds its last acknowledged text. Updates write copies that have not seen the
//! recalls counted meanwhile, and the accesses still add up. The run finishes in bounded time.

use std::collections::HashSet;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use memory_core::{
    EvictionConfig, EvictionPolicy, MemoryError, MemoryItem, Namespace, RetrievalSource,
};
use memory_retrieve::{Memory, Remember};
use tokio::sync::Mutex;

const TASKS: usize = 16;

/// Expected final content (None: forgotten) and recall count per (namespace, id).
type Expected = HashMap<(String, String), (Option<String>, u64)>;
const ROUNDS: usize = 60;

/// A TTL far in the future: maintain runs real passes that must delete nothing.
fn eviction() -> EvictionConfig {
    EvictionConfig {
        policy: EvictionPolicy::Ttl {
            ttl_secs: 10 * 365 * 86_400,
        },
        check_interval: 7,
    }
}

/// Each namespace receives about 80 distinct ids: a capacity of 30 evicts during the run.
const CAPACITY: usize = 30;

fn capacity() -> EvictionConfig {
    EvictionConfig {
        policy: EvictionPolicy::Capacity {
            max_items: CAPACITY,
        },
        check_interval: 7,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_operations_keep_every_acknowledged_write() {
    let memory = Memory::builder()
        .eviction(eviction())
        .recall_batch(5)
        .build()
        .unwrap();
    mixed_operations(Arc::new(memory), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_operations_under_eviction_keep_capacity_and_last_writes() {
    let memory = Memory::builder()
        .eviction(capacity())
        .recall_batch(5)
        .build()
        .unwrap();
    mixed_operations(Arc::new(memory), Some(CAPACITY)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_operations_on_sqlite_keep_every_acknowledged_write() {
    let path =
        std::env::temp_dir().join(format!("agent-memory-stress-{}.db", memory_core::new_id()));
    let sqlite = memory_sqlite::SqliteBackend::open(&path).unwrap();
    let memory = Memory::builder()
        .store(Arc::new(sqlite.memory_store().clone()))
        .knowledge(Arc::new(sqlite.knowledge_store().clone()))
        .graph(Arc::new(sqlite.graph().clone()))
        .eviction(eviction())
        .recall_batch(5)
        .build()
        .unwrap();
    mixed_operations(Arc::new(memory), None).await;
    sqlite.check_integrity().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Runs the tasks; `capacity` is the eviction policy's bound, if it has one.
async fn mixed_operations(memory: Arc<Memory>, capacity: Option<usize>) {
    let spaces: Vec<Namespace> = ["shared/a", "shared/b"]
        .iter()
        .map(|s| Namespace::parse(s).unwrap())
        .collect();
    // Expected final content and recall count per (namespace, id), filled by each task.
    let expected: Arc<Mutex<Expected>> = Arc::default();
    // Ids forgotten at some point: a recall event batched before the forget may land after
    // it, so their counts are not compared.
    let forgotten: Arc<Mutex<HashSet<(String, String)>>> = Arc::default();
    let run = async {
        let mut tasks = Vec::new();
        for task in 0..TASKS {
            let memory = Arc::clone(&memory);
            let spaces = spaces.clone();
            let expected = Arc::clone(&expected);
            let forgotten = Arc::clone(&forgotten);
            tasks.push(tokio::spawn(async move {
                let mut mine: Expected = HashMap::new();
                let mut recalled: HashMap<(String, String), u64> = HashMap::new();
                for round in 0..ROUNDS {
                    let ns = &spaces[(task + round) % spaces.len()];
                    let id = format!("t{task}-r{}", round % 10);
                    let key = (ns.to_string(), id.clone());
                    match round % 6 {
                        0 | 1 => {
                            let text = format!("task {task} round {round} likes topic{task}");
                            memory
                                .remember_with(
                                    Remember::new(ns.clone(), text.clone()).id(id.clone()),
                                )
                                .await
                                .unwrap();
                            let entry = mine.entry(key).or_insert((None, 0));
                            entry.0 = Some(text);
                        }
                        2 => {
                            if let Some((Some(_), _)) = mine.get(&key) {
                                let text = format!("task {task} round {round} updated topic{task}");
                                let item = MemoryItem::new(ns.clone(), text.clone())
                                    .unwrap()
                                    .with_id(id.clone())
                                    .unwrap();
                                match memory.store().update(item).await {
                                    Ok(()) => mine.get_mut(&key).unwrap().0 = Some(text),
                                    // Evicted since it was written: nothing to update.
                                    Err(MemoryError::NotFound { .. }) if capacity.is_some() => {}
                                    Err(error) => panic!("update {key:?}: {error}"),
                                }
                            }
                        }
                        3 => {
                            if mine.get(&key).is_some_and(|(text, _)| text.is_some()) {
                                memory
                                    .store()
                                    .record_recall(ns, &id, 0.5, chrono::Utc::now())
                                    .await
                                    .unwrap();
                                mine.get_mut(&key).unwrap().1 += 1;
                            }
                        }
                        4 => {
                            let found = memory
                                .recall(&ns.exact(), &format!("topic{task}"))
                                .await
                                .unwrap();
                            for item in found.items {
                                if let RetrievalSource::Memory(item) = item.record {
                                    *recalled
                                        .entry((item.namespace.to_string(), item.id.clone()))
                                        .or_default() += 1;
                                }
                            }
                        }
                        _ => {
                            if round % 12 == 5 && memory.forget(ns, &id).await.unwrap() {
                                forgotten.lock().await.insert(key.clone());
                                mine.insert(key, (None, 0));
                            } else {
                                memory.maintain(&ns.exact()).await.unwrap();
                            }
                        }
                    }
                }
                let mut all = expected.lock().await;
                for (key, value) in mine {
                    all.insert(key, value);
                }
                for (key, count) in recalled {
                    // Counts from recall feedback; ids are unique to their task, so only this
                    // task's feedback touches them. A forgotten id restarts at zero.
                    all.entry(key).or_insert((None, 0)).1 += count;
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the stress run deadlocked or stalled");
    memory.flush().await.unwrap();
    let expected = expected.lock().await;
    let forgotten = forgotten.lock().await;
    let mut live = 0;
    let mut counted = 0;
    for ((ns, id), (text, recalls)) in expected.iter() {
        let ns = Namespace::parse(ns).unwrap();
        let stored = memory.store().get(&ns, id).await.unwrap();
        let stored_text = stored.as_ref().map(|item| item.content.clone());
        match capacity {
            // Without eviction: exactly what was acknowledged last.
            None => assert_eq!(stored_text, text.clone(), "{ns}/{id}"),
            // With eviction: evicted, or its last acknowledged text.
            Some(_) => assert!(
                stored_text.is_none() || stored_text == *text,
                "{ns}/{id}: {stored_text:?} is not the last write {text:?}"
            ),
        }
        live += usize::from(stored_text.is_some());
        if capacity.is_none()
            && text.is_some()
            && !forgotten.contains(&(ns.to_string(), id.clone()))
        {
            let stats = memory.store().recall_stats(&ns, id).await.unwrap();
            let count = stats.map_or(0, |stats| stats.recall_count);
            assert_eq!(count, *recalls, "{ns}/{id}: direct and feedback recalls");
            // Each recall is an access too; the updates and re-remembers written over the
            // memory meanwhile (copies that had not seen them) undo none.
            let accesses = stored.as_ref().map_or(0, |item| item.access_count);
            assert_eq!(accesses, *recalls, "{ns}/{id}: accesses");
            counted += 1;
        }
    }
    let stats = memory
        .stats(&Namespace::parse("shared").unwrap().subtree())
        .await
        .unwrap();
    assert_eq!(
        stats.total, live,
        "nothing but the acknowledged writes is stored"
    );
    match capacity {
        None => {
            assert!(live > TASKS, "the run wrote a real amount: {live}");
            assert!(counted > TASKS, "recall counts were compared: {counted}");
        }
        Some(capacity) => {
            for ns in &spaces {
                let held = memory.store().count(&ns.exact()).await.unwrap();
                assert!(held <= capacity, "{ns} holds {held}");
            }
            assert!(
                expected.values().filter(|(text, _)| text.is_some()).count() > live,
                "eviction deleted something during the run"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_recall_counts_are_not_lost() {
    let memory = Arc::new(Memory::in_memory());
    let ns = Namespace::parse("counts").unwrap();
    let id = memory
        .remember(&ns, "the one memory everyone recalls")
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let memory = Arc::clone(&memory);
        let ns = ns.clone();
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..50 {
                memory
                    .store()
                    .record_recall(&ns, &id, 1.0, chrono::Utc::now())
                    .await
                    .unwrap();
                memory
                    .recall(&ns.exact(), "everyone recalls")
                    .await
                    .unwrap();
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(60), async {
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await
    .expect("stalled");
    memory.flush().await.unwrap();
    let stats = memory
        .store()
        .recall_stats(&ns, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stats.recall_count,
        16 * 50 * 2,
        "direct and feedback recalls all counted"
    );
}
