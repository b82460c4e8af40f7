//! Embedding similarity search (`MemoryStore::search_similar`, the optional embedding
//! channel's store call): 10 000 memories with 384-value embeddings in one namespace, top 30
//! (what the retriever asks each channel for by default). Group `similar_10000`, one query
//! per iteration:
//! - `inmem`: `InMemoryStore`, compared in place under the shard's lock.
//! - `sqlite`: our SQLite backend (a temporary file).
//! - `postgres`: our PostgreSQL backend (schema `am_bench_similar`, emptied first), when
//!   `AGENT_MEMORY_POSTGRES_URL` or `AGENT_MEMORY_TEST_POSTGRES_URL` names a server; beside
//!   it `postgres_listing`, what the trait's default does (list the scope, compare in Rust),
//!   the peer the backend's own search is measured against.
//!
//! Vectors are seeded pseudo-random directions (values uniform in `[-1, 1]`): exact search
//! costs the same whatever the vectors mean.

use std::hint::black_box;
use std::time::Instant;

use agent_memory::backend::CosineQuery;
use agent_memory::inmem::InMemoryStore;
use agent_memory::sqlite::SqliteBackend;
use agent_memory::{MemoryFilter, MemoryItem, MemoryStore, Namespace};
use criterion::{Criterion, Throughput, criterion_main};
use memory_benches::corpus::{Rng, corpus};
use memory_benches::stores::{postgres, sqlite_path};
use tokio::runtime::Runtime;

const SEED: u64 = 0x5EED_2025;
const MEMORIES: usize = 10_000;
const DIMENSION: usize = 384;
const QUERIES: usize = 64;
const TOP_K: usize = 30;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn vector(rng: &mut Rng) -> Vec<f32> {
    (0..DIMENSION)
        .map(|_| (rng.next_f64() * 2.0 - 1.0) as f32)
        .collect()
}

fn items(namespace: &Namespace) -> Vec<MemoryItem> {
    let (contents, _) = corpus(MEMORIES, 0, SEED);
    let mut rng = Rng::new(SEED ^ 0xE5BE);
    contents
        .into_iter()
        .enumerate()
        .map(|(i, content)| {
            MemoryItem::new(namespace.clone(), content)
                .and_then(|item| item.with_id(format!("m{i}")))
                .and_then(|item| item.with_embedding(vector(&mut rng)))
                .expect("a valid memory")
        })
        .collect()
}

/// What the trait's default search does: the whole scope listed, each vector compared.
async fn listing(store: &dyn MemoryStore, filter: &MemoryFilter, query: &[f32]) -> usize {
    let cosine = CosineQuery::new(query);
    let items = store.list(filter).await.expect("list");
    let mut scores: Vec<f32> = items
        .iter()
        .filter_map(|item| item.embedding.as_deref().and_then(|e| cosine.similarity(e)))
        .collect();
    scores.sort_unstable_by(|a, b| b.total_cmp(a));
    scores.truncate(TOP_K);
    scores.len()
}

fn similar_benches(c: &mut Criterion) {
    let runtime = runtime();
    let namespace = Namespace::parse("bench/similar").expect("a valid namespace");
    let memories = items(&namespace);
    let inmem = InMemoryStore::new();
    let sqlite = SqliteBackend::open(sqlite_path("similar")).expect("a SQLite file");
    let postgres = postgres(&runtime, "am_bench_similar");
    if postgres.is_none() {
        eprintln!("similar_{MEMORIES}: no PostgreSQL server named; its rows are left out");
    }
    let mut stores: Vec<(&str, &dyn MemoryStore)> = vec![
        ("inmem", &inmem as &dyn MemoryStore),
        ("sqlite", sqlite.memory_store() as &dyn MemoryStore),
    ];
    if let Some(backend) = &postgres {
        stores.push(("postgres", backend.memory_store() as &dyn MemoryStore));
    }
    for &(name, store) in &stores {
        let started = Instant::now();
        runtime
            .block_on(store.save_many(memories.clone()))
            .expect("save_many");
        eprintln!(
            "similar_{MEMORIES}: built {name} in {:.2}s",
            started.elapsed().as_secs_f64()
        );
    }
    let mut rng = Rng::new(SEED ^ 0x9E7);
    let queries: Vec<Vec<f32>> = (0..QUERIES).map(|_| vector(&mut rng)).collect();
    let filter = MemoryFilter::new(namespace.exact());
    for query in queries.iter().take(8) {
        let ids = |store: &dyn MemoryStore| -> Vec<String> {
            runtime
                .block_on(store.search_similar(&filter, query, TOP_K))
                .expect("search_similar")
                .into_iter()
                .map(|hit| hit.item.id.clone())
                .collect()
        };
        for &(name, store) in &stores[1..] {
            assert_eq!(
                ids(&inmem),
                ids(store),
                "{name} ranks as the in-memory store"
            );
        }
    }

    let mut group = c.benchmark_group(format!("similar_{MEMORIES}"));
    group.throughput(Throughput::Elements(1));
    for &(name, store) in &stores {
        let mut next = 0usize;
        group.bench_function(name, |b| {
            b.iter(|| {
                next = (next + 1) % queries.len();
                let hits = runtime.block_on(store.search_similar(
                    black_box(&filter),
                    black_box(&queries[next]),
                    TOP_K,
                ));
                black_box(hits.map(|hits| hits.len()).unwrap_or(0))
            })
        });
    }
    if let Some(backend) = &postgres {
        let store = backend.memory_store() as &dyn MemoryStore;
        let mut next = 0usize;
        group.bench_function("postgres_listing", |b| {
            b.iter(|| {
                next = (next + 1) % queries.len();
                black_box(runtime.block_on(listing(
                    store,
                    black_box(&filter),
                    black_box(&queries[next]),
                )))
            })
        });
    }
    group.finish();
}

/// The criterion group, in a private module: the `pub fn` that `criterion_group!` generates
/// is then not exported and needs no doc.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::similar_benches);
}

criterion_main!(group::benches);
