//! Eviction passes (`memory_retrieve::evict`) on an in-memory store at capacity: 10 000
//! memories in one namespace, a capacity of 9 000, so each pass evicts 1 000.
//!
//! Each iteration's untimed setup (`iter_batched`, one setup per iteration) writes 1 000 new
//! memories, a third of them with recall statistics, which brings the store back to 10 000;
//! the timed pass then evicts 1 000 again. That is the steady state of a store that runs at
//! capacity, and costs a fraction of rebuilding the store every iteration. Group
//! `eviction_10000` (throughput in evicted memories per second):
//! - `capacity`: `EvictionPolicy::Capacity`, the oldest go.
//! - `recall_based`: `EvictionPolicy::RecallBased`, the least valuable by recall statistics go.
//!
//! Group `maintain_100000`: one whole `Memory::maintain` pass over 100 000 memories in
//! memory (see [`maintenance_pass`]); group `recall_during_maintain_100000`: recall on that
//! namespace idle, and while scheduled passes run back to back (criterion's mean; the
//! 50th, 99th percentiles of 2 000 timed recalls of each are printed after it).
//!
//! Group `ingest_evicting_100000` (see [`ingest_evicting`]): 1 000 `remember` calls per
//! iteration into a namespace of 100 000 memories in memory, with a capacity of 100 000
//! (`evicting`: the writes that take the namespace over it run the eviction passes that
//! keep it there) and without a policy (`unbounded`: the setup forgets the previous
//! iteration's memories instead). Reconciliation is off in both, so the difference is what
//! keeping the namespace bounded costs a write. One quick run on 2 shared cores: 74.2 ms
//! evicting against 66.2 ms unbounded (1.12x). Before deletes went through the index in
//! one pass and new memories took new slots, the same run took 1.06 s against 196 ms:
//! every evicted memory shifted each of its terms' posting lists, and every new memory
//! reused a freed low slot and was inserted at the front of its lists.

use std::cell::RefCell;
use std::hint::black_box;

use agent_memory::inmem::InMemoryStore;
use agent_memory::retrieve::evict;
use agent_memory::{
    EvictionPolicy, MemoryItem, MemoryStore, Namespace, RecallBasedConfig, RecallStats, Scope,
};
use chrono::{DateTime, Duration, Utc};
use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_main};
use memory_benches::corpus::{Rng, corpus};
use tokio::runtime::Runtime;

const SEED: u64 = 0x5EED_2025;
const ITEMS: usize = 10_000;
const CAPACITY: usize = 9_000;
/// Distinct texts, reused in turn by the memories written.
const TEXTS: usize = 4_000;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime")
}

/// A store being kept at capacity, and what it needs to write the next memories.
struct Fixture {
    store: InMemoryStore,
    namespace: Namespace,
    scope: Scope,
    texts: Vec<String>,
    start: DateTime<Utc>,
    written: usize,
    rng: Rng,
}

impl Fixture {
    fn new(runtime: &Runtime) -> Self {
        let namespace = Namespace::parse("bench/eviction").expect("a valid namespace");
        let mut fixture = Self {
            store: InMemoryStore::new(),
            scope: namespace.subtree(),
            namespace,
            texts: corpus(TEXTS, 0, SEED).0,
            start: Utc::now() - Duration::days(30),
            written: 0,
            rng: Rng::new(SEED ^ 0xE71C7),
        };
        fixture.top_up(runtime);
        fixture
    }

    /// Writes new memories, one minute apart, until the store holds [`ITEMS`]; every third
    /// gets recall statistics (1 to 20 recalls, recent or not).
    fn top_up(&mut self, runtime: &Runtime) {
        runtime.block_on(async {
            let missing = ITEMS.saturating_sub(
                self.store
                    .count(&self.scope)
                    .await
                    .expect("count the memories"),
            );
            for _ in 0..missing {
                let i = self.written;
                self.written += 1;
                let created = self.start + Duration::minutes(i as i64);
                let item = MemoryItem::new(self.namespace.clone(), &self.texts[i % TEXTS])
                    .expect("a valid item")
                    .with_created_at(created);
                let id = item.id.clone();
                self.store.save(item).await.expect("save");
                if i.is_multiple_of(3) {
                    let mut stats = RecallStats::default();
                    for _ in 0..1 + self.rng.below(20) {
                        let at = created + Duration::minutes(self.rng.below(60 * 24 * 7) as i64);
                        stats.record(self.rng.next_f64() as f32, at);
                    }
                    self.store
                        .set_recall_stats(&self.namespace, &id, stats)
                        .await
                        .expect("set_recall_stats");
                }
            }
        });
    }
}

fn eviction_benches(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group(format!("eviction_{ITEMS}"));
    group.throughput(Throughput::Elements((ITEMS - CAPACITY) as u64));
    group.sample_size(10);
    // Iterations of tens of milliseconds or more: the same count in every sample.
    group.sampling_mode(SamplingMode::Flat);

    let cases = [
        (
            "capacity",
            EvictionPolicy::Capacity {
                max_items: CAPACITY,
            },
        ),
        (
            "recall_based",
            EvictionPolicy::RecallBased(RecallBasedConfig {
                max_items: CAPACITY,
                ..RecallBasedConfig::default()
            }),
        ),
    ];
    for (name, policy) in cases {
        let fixture = RefCell::new(Fixture::new(&runtime));
        // Later than every write, however many iterations run.
        let now = Utc::now() + Duration::days(3650);
        group.bench_function(name, |b| {
            b.iter_batched(
                || fixture.borrow_mut().top_up(&runtime),
                |()| {
                    let fixture = fixture.borrow();
                    let report = runtime
                        .block_on(evict(&fixture.store, &fixture.scope, &policy, now))
                        .expect("eviction pass");
                    assert_eq!(report.evicted, ITEMS - CAPACITY, "a pass at capacity");
                    black_box(report)
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
    maintenance_pass(c, &runtime);
}

/// Memories in the namespace of `maintain_100000`.
const MAINTAINED: usize = 100_000;

/// `maintain_100000`: one `Memory::maintain` pass over a namespace of 100 000 memories in
/// memory, with a capacity policy above the count (nothing to evict, so every iteration
/// does the same work: the capacity check, the TTL scan, and the consistency check that
/// reads every memory's conflict links). The lifecycle target is a pass under 1 s.
fn maintenance_pass(c: &mut Criterion, runtime: &Runtime) {
    let (texts, _) = corpus(TEXTS, 0, SEED ^ 0x100);
    let namespace = Namespace::parse("bench/maintain").expect("a valid namespace");
    let memory = agent_memory::retrieve::Memory::builder()
        .store(std::sync::Arc::new(InMemoryStore::new()))
        .eviction(agent_memory::EvictionConfig {
            policy: EvictionPolicy::Capacity {
                max_items: 2 * MAINTAINED,
            },
            check_interval: 1_000,
        })
        .build()
        .expect("valid settings");
    let start = Utc::now() - Duration::days(400);
    runtime.block_on(async {
        for chunk in 0..MAINTAINED / 10_000 {
            let items = (0..10_000)
                .map(|offset| {
                    let i = chunk * 10_000 + offset;
                    MemoryItem::new(namespace.clone(), texts[i % TEXTS].as_str())
                        .map(|item| item.with_created_at(start + Duration::minutes(i as i64)))
                        .expect("a valid item")
                })
                .collect();
            memory.store().save_many(items).await.expect("save_many");
        }
    });
    let scope = namespace.subtree();
    let mut group = c.benchmark_group(format!("maintain_{MAINTAINED}"));
    group.throughput(Throughput::Elements(MAINTAINED as u64));
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.bench_function("in_memory_pass", |b| {
        b.iter(|| {
            let report = runtime
                .block_on(memory.maintain(&scope))
                .expect("maintenance pass");
            assert_eq!(report.evicted, 0, "nothing over capacity");
            black_box(report)
        })
    });
    group.finish();

    // Recall on the same namespace, idle and while passes run back to back on another
    // worker: what a pass costs the agent that keeps recalling.
    let memory = std::sync::Arc::new(memory);
    let workers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let query = "remember the project meeting notes";
    let mut group = c.benchmark_group(format!("recall_during_maintain_{MAINTAINED}"));
    group.sample_size(50);
    group.bench_function("idle", |b| {
        b.iter(|| {
            black_box(
                workers
                    .block_on(memory.recall(&scope, query))
                    .expect("recall"),
            )
        })
    });
    let passes = {
        // The task runs on the workers' runtime.
        let _runtime = workers.enter();
        memory.spawn_maintenance(std::time::Duration::from_millis(1), scope.clone())
    };
    group.bench_function("during_passes", |b| {
        b.iter(|| {
            black_box(
                workers
                    .block_on(memory.recall(&scope, query))
                    .expect("recall"),
            )
        })
    });
    group.finish();
    // Percentiles, which criterion does not report: the same recalls timed one by one.
    let percentiles = |label: &str| {
        let mut times: Vec<f64> = (0..2_000)
            .map(|_| {
                let started = std::time::Instant::now();
                black_box(
                    workers
                        .block_on(memory.recall(&scope, query))
                        .expect("recall"),
                );
                started.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        times.sort_by(f64::total_cmp);
        eprintln!(
            "recall_during_maintain_{MAINTAINED}/{label}: p50 {:.2} us, p99 {:.2} us",
            times[times.len() / 2],
            times[times.len() * 99 / 100]
        );
    };
    percentiles("during_passes");
    workers.block_on(passes.stop());
    percentiles("idle");
    ingest_evicting(c, runtime);
}

/// Memories in the namespace of `ingest_evicting_100000`, and its capacity.
const BOUNDED: usize = 100_000;
/// Memories remembered per iteration of `ingest_evicting_100000`.
const WRITES: usize = 1_000;

/// `ingest_evicting_100000`: see the module docs.
fn ingest_evicting(c: &mut Criterion, runtime: &Runtime) {
    use agent_memory::retrieve::{FactsConfig, Memory};

    let (texts, _) = corpus(BOUNDED + WRITES, 0, SEED ^ 0x200);
    let (prefilled, batch) = texts.split_at(BOUNDED);
    let build = |policy: EvictionPolicy| {
        let memory = Memory::builder()
            .store(std::sync::Arc::new(InMemoryStore::new()))
            .facts(FactsConfig::off())
            .eviction(agent_memory::EvictionConfig {
                policy,
                ..agent_memory::EvictionConfig::default()
            })
            .build()
            .expect("valid settings");
        let namespace = Namespace::parse("bench/bounded").expect("a valid namespace");
        let start = Utc::now() - Duration::days(400);
        runtime.block_on(async {
            for (chunk, texts) in prefilled.chunks(10_000).enumerate() {
                let items = texts
                    .iter()
                    .enumerate()
                    .map(|(offset, text)| {
                        let i = chunk * 10_000 + offset;
                        MemoryItem::new(namespace.clone(), text.as_str())
                            .map(|item| item.with_created_at(start + Duration::minutes(i as i64)))
                            .expect("a valid item")
                    })
                    .collect();
                memory.store().save_many(items).await.expect("save_many");
            }
        });
        (memory, namespace)
    };
    let mut group = c.benchmark_group(format!("ingest_evicting_{BOUNDED}"));
    group.throughput(Throughput::Elements(WRITES as u64));
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    for (name, policy) in [
        ("evicting", EvictionPolicy::Capacity { max_items: BOUNDED }),
        ("unbounded", EvictionPolicy::None),
    ] {
        let (memory, namespace) = build(policy.clone());
        let bounded = policy != EvictionPolicy::None;
        let remembered = RefCell::new(Vec::<String>::new());
        let forget = || {
            let ids = std::mem::take(&mut *remembered.borrow_mut());
            if !bounded {
                runtime.block_on(async {
                    for id in ids {
                        memory.forget(&namespace, &id).await.expect("forget");
                    }
                });
            }
        };
        group.bench_function(name, |b| {
            b.iter_batched(
                &forget,
                |()| {
                    let ids = runtime.block_on(async {
                        let mut ids = Vec::with_capacity(batch.len());
                        for text in batch {
                            ids.push(memory.remember(&namespace, text).await.expect("remember"));
                        }
                        ids
                    });
                    *remembered.borrow_mut() = black_box(ids);
                },
                BatchSize::PerIteration,
            )
        });
        let count = runtime
            .block_on(memory.store().count(&namespace.subtree()))
            .expect("count");
        assert!(count <= BOUNDED || !bounded, "{name}: {count} memories");
    }
    group.finish();
}

/// The criterion group, in a private module: the `pub fn` that `criterion_group!` generates
/// is then not exported and needs no doc.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::eviction_benches);
}

criterion_main!(group::benches);
