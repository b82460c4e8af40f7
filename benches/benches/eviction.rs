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
}

/// The criterion group, in a private module: the `pub fn` that `criterion_group!` generates
/// is then not exported and needs no doc.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::eviction_benches);
}

criterion_main!(group::benches);
