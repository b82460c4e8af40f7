//! Knowledge-store search: `InMemoryKnowledgeStore::search` (BM25F over title, summary, tags
//! and content, plus the match-rule boosts) over 10 000 pages in one namespace.
//!
//! Pages come from the Zipf corpus: a title of 2 to 5 words, a summary of 60 to 160
//! characters, content of 150 to 450 characters, 1 to 3 tags from a pool of 300 words, and up
//! to 3 references to other pages. Group `knowledge_10000`, one query per iteration:
//! - `search`: top 10.
//! - `search_top30`: top 30, what the retriever asks each channel for by default.
//! - `search_tagged`: top 10 of the pages carrying one frequent tag.
//! - `sqlite_search`: top 10 from `SqliteKnowledgeStore::search` over the same pages in a
//!   temporary file.
//! - `memory_search`: the reference of the target (page search at most 3x memory search):
//!   `InMemoryStore::search`, top 10, over 10 000 memories of the same corpus, same queries.

use std::hint::black_box;
use std::time::Instant;

use agent_memory::inmem::{InMemoryKnowledgeStore, InMemoryStore};
use agent_memory::sqlite::{SqliteBackend, SqliteOptions, Synchronous};
use agent_memory::{
    KnowledgePage, KnowledgeStore, MemoryItem, MemoryStore, Namespace, PageQuery, Scope,
    SearchQuery, Tag,
};
use chrono::{Duration, Utc};
use criterion::{Criterion, Throughput, criterion_main};
use memory_benches::corpus::{Rng, Zipf, corpus};
use tokio::runtime::Runtime;

const SEED: u64 = 0x5EED_2025;
const PAGES: usize = 10_000;
const QUERIES: usize = 256;
const TAG_POOL: usize = 300;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime")
}

fn pages(namespace: &Namespace) -> Vec<KnowledgePage> {
    // The same vocabulary as the memory corpus (same seed), so the same queries apply.
    let zipf = Zipf::new(20_000, SEED);
    let (contents, _) = corpus(PAGES, 0, SEED);
    let mut rng = Rng::new(SEED ^ 0x9A6E);
    let start = Utc::now() - Duration::hours(PAGES as i64);
    contents
        .into_iter()
        .enumerate()
        .map(|(i, content)| {
            let title_words = 2 + rng.below(4);
            let title = (0..title_words)
                .map(|_| zipf.word(&mut rng).to_owned())
                .collect::<Vec<_>>()
                .join(" ");
            let summary_len = 60 + rng.below(100);
            let summary = zipf.text(&mut rng, summary_len);
            let tags: Vec<String> = (0..1 + rng.below(3))
                .map(|_| zipf.words()[rng.below(TAG_POOL)].clone())
                .collect();
            let references: Vec<String> = (0..rng.below(4))
                .map(|_| format!("p{}", rng.below(PAGES)))
                .collect();
            KnowledgePage::new(namespace.clone(), format!("p{i}"), title)
                .map(|page| {
                    page.with_summary(summary)
                        .with_content(content)
                        .with_created_at(start + Duration::hours(i as i64))
                })
                .and_then(|page| page.with_tags(tags))
                .and_then(|page| page.with_references(references))
                .expect("a valid page")
        })
        .collect()
}

/// A temporary database file, removed (with its WAL files) on drop.
struct TempDatabase(std::path::PathBuf);

impl TempDatabase {
    fn new() -> Self {
        let path = std::env::temp_dir().join(format!(
            "agent-memory-bench-knowledge-{}.db",
            std::process::id()
        ));
        let database = Self(path);
        database.remove();
        database
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for TempDatabase {
    fn drop(&mut self) {
        self.remove();
    }
}

fn knowledge_benches(c: &mut Criterion) {
    let runtime = runtime();
    let namespace = Namespace::parse("bench/wiki").expect("a valid namespace");
    let store = InMemoryKnowledgeStore::new();
    let all_pages = pages(&namespace);
    let started = Instant::now();
    runtime.block_on(async {
        for page in all_pages.iter().cloned() {
            store.add_page(page).await.expect("add_page");
        }
    });
    // SQLite: loaded without syncs (the load is not measured), searched with the defaults.
    let file = TempDatabase::new();
    {
        let loading = SqliteBackend::open_with(
            &file.0,
            SqliteOptions::default().with_synchronous(Synchronous::Off),
        )
        .expect("open the SQLite backend");
        runtime.block_on(async {
            for page in all_pages {
                loading
                    .knowledge_store()
                    .add_page(page)
                    .await
                    .expect("add_page");
            }
        });
    }
    let sqlite = SqliteBackend::open(&file.0).expect("open the SQLite backend");
    let memories = InMemoryStore::new();
    let (contents, _) = corpus(PAGES, 0, SEED);
    runtime.block_on(async {
        let items = contents
            .iter()
            .map(|text| MemoryItem::new(namespace.clone(), text.as_str()).expect("a valid item"))
            .collect();
        memories.save_many(items).await.expect("save_many");
    });
    eprintln!(
        "knowledge_{PAGES}: added {PAGES} pages in {:.2}s",
        started.elapsed().as_secs_f64()
    );
    let (_, queries) = corpus(0, QUERIES, SEED);
    let scope: Scope = namespace.subtree();
    let zipf = Zipf::new(20_000, SEED);
    let tag = Tag::new(&zipf.words()[0]).expect("a valid tag");
    let found: usize = queries
        .iter()
        .take(32)
        .map(|query| {
            runtime
                .block_on(store.search(&PageQuery::new(scope.clone(), query.as_str(), 10)))
                .map(|hits| hits.len())
                .unwrap_or(0)
        })
        .sum();
    eprintln!(
        "knowledge_{PAGES}: {:.1} hits per query (top 10)",
        found as f64 / 32.0
    );

    let mut group = c.benchmark_group(format!("knowledge_{PAGES}"));
    group.throughput(Throughput::Elements(1));
    let mut next = 0usize;
    let mut query = |top_k: usize| {
        next = (next + 1) % queries.len();
        PageQuery::new(scope.clone(), queries[next].as_str(), top_k)
    };
    group.bench_function("search", |b| {
        b.iter(|| {
            let hits = runtime.block_on(store.search(black_box(&query(10))));
            black_box(hits.map(|hits| hits.len()).unwrap_or(0))
        })
    });
    group.bench_function("search_top30", |b| {
        b.iter(|| {
            let hits = runtime.block_on(store.search(black_box(&query(30))));
            black_box(hits.map(|hits| hits.len()).unwrap_or(0))
        })
    });
    group.bench_function("search_tagged", |b| {
        b.iter(|| {
            let mut tagged = query(10);
            tagged.tags = vec![tag.clone()];
            let hits = runtime.block_on(store.search(black_box(&tagged)));
            black_box(hits.map(|hits| hits.len()).unwrap_or(0))
        })
    });
    group.bench_function("sqlite_search", |b| {
        b.iter(|| {
            let hits = runtime.block_on(sqlite.knowledge_store().search(black_box(&query(10))));
            black_box(hits.map(|hits| hits.len()).unwrap_or(0))
        })
    });
    let mut next_memory = 0usize;
    group.bench_function("memory_search", |b| {
        b.iter(|| {
            next_memory = (next_memory + 1) % queries.len();
            let search = SearchQuery::new(scope.clone(), queries[next_memory].as_str(), 10);
            let hits = runtime.block_on(memories.search(black_box(&search)));
            black_box(hits.map(|hits| hits.len()).unwrap_or(0))
        })
    });
    group.finish();
    drop(sqlite);
    drop(file);
}

/// The criterion group, in a private module: the `pub fn` that `criterion_group!` generates
/// is then not exported and needs no doc.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::knowledge_benches);
}

criterion_main!(group::benches);
