//! Search latency at 1k, 10k and 100k memories (1M with `AGENT_MEMORY_BENCH_1M=1`), ours and
//! the peers in the same run, on the same corpus and queries, top 10.
//!
//! Group `search_<n>`, one query per iteration (the queries rotate, the same sequence for
//! every engine):
//! - `agent_memory_store`: `InMemoryStore::search`, top 10: the raw BM25 store search, the
//!   apples-to-apples comparison with the peers.
//! - `agent_memory_recall`: `Memory::recall_with` (in-memory backends, default retriever
//!   settings, 10 results): keyword extraction, every channel, fusion, scoring, the score
//!   breakdowns and the batched recall feedback; what an agent calls.
//! - `agent_memory_sqlite`: the same recall on our SQLite backend (a temporary file), up to
//!   100k memories.
//! - `agent_memory_sqlite_store`: `SqliteStore::search` on that file, top 10: the SQLite
//!   backend's own search, beside FTS5's `bm25()` on the same corpus.
//! - `tantivy`: an in-RAM index (`Index::create_in_ram`), one TEXT field, default tokenizer
//!   and BM25, the query's tokens as a disjunction of term queries, `TopDocs` 10.
//! - `sqlite_fts5`: rusqlite with the bundled SQLite, an in-memory database,
//!   `fts5(body)`, the query's words double-quoted and joined by `OR`, `bm25()` ranking,
//!   `LIMIT 10`.
//!
//! Group `haystack_500` runs the same engines on 500 turns the size of a LongMemEval
//! question's haystack ([`haystack`]: short turns and long ones, 100 to 3,000 characters),
//! with the main queries.
//!
//! Group `frequent_10000` runs the same engines on 10,000 memories whose words each occur in
//! about a third of them, with queries of those words ([`frequent_words`]): the case where no
//! posting list is short.
//!
//! Our results are whole records (and for recall, scored results with their breakdowns); the
//! peers return row ids or doc addresses only, so the comparison is conservative for us.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use agent_memory::inmem::InMemoryStore;
use agent_memory::retrieve::{Memory, RecallOptions, Remember};
use agent_memory::sqlite::{SqliteBackend, SqliteStore};
use agent_memory::{MemoryItem, MemoryKind, MemoryStore, Namespace, Scope, SearchQuery};
use chrono::{DateTime, Duration, Utc};
use criterion::{Criterion, Throughput, criterion_main};
use memory_benches::corpus::{Rng, Zipf, corpus};
use rusqlite::Connection;
use tantivy::collector::TopDocs;
use tantivy::query::BooleanQuery;
use tantivy::schema::{Field, Schema, TEXT};
use tantivy::tokenizer::{TextAnalyzer, TokenStream};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Term, doc};
use tokio::runtime::Runtime;

const SEED: u64 = 0x5EED_2025;
const QUERIES: usize = 256;
const TOP_K: usize = 10;
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const MILLION: usize = 1_000_000;
/// The turns of the LongMemEval-sized haystack ([`haystack`]).
const HAYSTACK: usize = 500;
/// The memories of the frequent-word corpus ([`frequent_words`]).
const FREQUENT: usize = 10_000;
/// Our SQLite backend is built up to this size (bulk-loading 1M rows takes minutes).
const SQLITE_MAX: usize = 100_000;
/// tantivy's indexing memory, one thread (as our single-threaded ingest).
const TANTIVY_BUDGET: usize = 512 * 1024 * 1024;
/// Queries whose results are compared across engines before measuring.
const CHECKED_QUERIES: usize = 32;

/// A multi-threaded runtime with one worker: the benchmark drives `block_on` on its own
/// thread, and the recall feedback a full batch spawns runs on the worker, as in an
/// application.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn namespace() -> Namespace {
    Namespace::parse("bench/recall").expect("a valid namespace")
}

/// Creation times one minute apart, ending now: recency and time order are realistic.
fn created_at(start: DateTime<Utc>, i: usize) -> DateTime<Utc> {
    start + Duration::minutes(i as i64)
}

fn memory_id(i: usize) -> String {
    format!("m{i}")
}

/// Our in-memory backends behind the high-level API, with direct access to the store.
struct Ours {
    memory: Memory,
    store: Arc<InMemoryStore>,
    scope: Scope,
    options: RecallOptions,
}

impl Ours {
    fn build(runtime: &Runtime, docs: &[String], start: DateTime<Utc>) -> Self {
        let store = Arc::new(InMemoryStore::new());
        let memory = Memory::builder()
            .store(Arc::clone(&store) as Arc<dyn MemoryStore>)
            .build()
            .expect("the default settings are valid");
        let namespace = namespace();
        runtime.block_on(async {
            for (i, text) in docs.iter().enumerate() {
                memory
                    .remember_with(
                        Remember::new(namespace.clone(), text.as_str())
                            .id(memory_id(i))
                            .created_at(created_at(start, i)),
                    )
                    .await
                    .expect("remember");
            }
        });
        Self {
            memory,
            store,
            scope: namespace.subtree(),
            options: RecallOptions::default().max_results(TOP_K),
        }
    }

    async fn search_ids(&self, query: &str) -> Vec<String> {
        let hits = self
            .store
            .search(&SearchQuery::new(self.scope.clone(), query, TOP_K))
            .await
            .expect("search");
        hits.into_iter().map(|hit| hit.item.id.clone()).collect()
    }
}

/// Recall through [`Memory`] on any backend; returns how many results came back.
async fn recall(memory: &Memory, scope: &Scope, options: &RecallOptions, query: &str) -> usize {
    memory
        .recall_with(scope, query, options)
        .await
        .map(|found| found.items.len())
        .expect("recall")
}

/// A temporary database file, removed (with its WAL files) on drop.
struct TempDatabase(PathBuf);

impl TempDatabase {
    fn new(label: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "agent-memory-bench-{label}-{}.db",
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

/// Our SQLite backend (memories, pages and graph in one temporary file) behind [`Memory`].
/// Fields drop in order: the connection closes before the file is removed.
struct OursSqlite {
    memory: Memory,
    store: SqliteStore,
    _file: TempDatabase,
}

impl OursSqlite {
    /// Bulk-loads with `save_many` in chunks (one transaction each): the load is not measured.
    fn build(runtime: &Runtime, docs: &[String], start: DateTime<Utc>) -> Self {
        let file = TempDatabase::new(&format!("recall-{}", docs.len()));
        let backend = SqliteBackend::open(&file.0).expect("open the SQLite backend");
        let namespace = namespace();
        runtime.block_on(async {
            for (chunk_at, chunk) in docs.chunks(10_000).enumerate() {
                let items = chunk
                    .iter()
                    .enumerate()
                    .map(|(offset, text)| {
                        let i = chunk_at * 10_000 + offset;
                        MemoryItem::new(namespace.clone(), text.as_str())
                            .and_then(|item| item.with_id(memory_id(i)))
                            .map(|item| {
                                item.with_kind(MemoryKind::Episodic)
                                    .with_created_at(created_at(start, i))
                            })
                            .expect("a valid item")
                    })
                    .collect();
                backend
                    .memory_store()
                    .save_many(items)
                    .await
                    .expect("save_many");
            }
        });
        let memory = Memory::builder()
            .store(Arc::new(backend.memory_store().clone()))
            .knowledge(Arc::new(backend.knowledge_store().clone()))
            .graph(Arc::new(backend.graph().clone()))
            .build()
            .expect("the default settings are valid");
        Self {
            memory,
            store: backend.memory_store().clone(),
            _file: file,
        }
    }
}

/// tantivy, in RAM, BM25 over one TEXT field.
struct Tantivy {
    reader: IndexReader,
    body: Field,
    analyzer: TextAnalyzer,
}

impl Tantivy {
    fn build(docs: &[String]) -> Self {
        let mut schema = Schema::builder();
        let body = schema.add_text_field("body", TEXT);
        let index = Index::create_in_ram(schema.build());
        let mut writer: IndexWriter = index
            .writer_with_num_threads(1, TANTIVY_BUDGET)
            .expect("a tantivy writer");
        for text in docs {
            writer
                .add_document(doc!(body => text.as_str()))
                .expect("add_document");
        }
        writer.commit().expect("commit");
        writer.wait_merging_threads().expect("merges");
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .expect("a tantivy reader");
        reader.reload().expect("reload after commit");
        let analyzer = index.tokenizer_for_field(body).expect("the body tokenizer");
        Self {
            reader,
            body,
            analyzer,
        }
    }

    /// The top 10 for `query`: its tokens (the field's own tokenizer) as a disjunction, so
    /// user text is never query syntax.
    fn search(&mut self, query: &str) -> usize {
        let body = self.body;
        let mut terms = Vec::new();
        self.analyzer
            .token_stream(query)
            .process(&mut |token| terms.push(Term::from_field_text(body, &token.text)));
        let query = BooleanQuery::new_multiterms_query(terms);
        self.reader
            .searcher()
            .search(&query, &TopDocs::with_limit(TOP_K).order_by_score())
            .map(|top| top.len())
            .expect("tantivy search")
    }
}

/// SQLite FTS5 (bundled), an in-memory database.
struct Fts5 {
    connection: Connection,
}

const FTS5_SEARCH: &str = "SELECT rowid FROM docs WHERE docs MATCH ?1 ORDER BY bm25(docs) LIMIT 10";

/// The query's words, each double-quoted (quotes doubled), joined by `OR`: never FTS5 syntax.
fn fts5_match(query: &str) -> String {
    query
        .split_whitespace()
        .map(|word| format!("\"{}\"", word.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

impl Fts5 {
    fn build(docs: &[String]) -> Self {
        let mut connection = Connection::open_in_memory().expect("an in-memory database");
        connection
            .execute("CREATE VIRTUAL TABLE docs USING fts5(body)", [])
            .expect("create the fts5 table");
        let transaction = connection.transaction().expect("a transaction");
        {
            let mut insert = transaction
                .prepare("INSERT INTO docs(rowid, body) VALUES (?1, ?2)")
                .expect("prepare the insert");
            for (i, text) in docs.iter().enumerate() {
                insert
                    .execute(rusqlite::params![i as i64, text])
                    .expect("insert");
            }
        }
        transaction.commit().expect("commit");
        Self { connection }
    }

    fn search_ids(&self, query: &str) -> Vec<i64> {
        let mut statement = self
            .connection
            .prepare_cached(FTS5_SEARCH)
            .expect("prepare the search");
        statement
            .query_map([fts5_match(query)], |row| row.get::<_, i64>(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<i64>>>())
            .expect("fts5 search")
    }
}

/// Builds each engine, logging how long it took.
fn timed<T>(what: &str, n: usize, build: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let built = build();
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "search_{n}: built {what} in {seconds:.2}s ({:.0} docs/s)",
        n as f64 / seconds.max(1e-9)
    );
    built
}

/// Before measuring: every engine finds results, and ours and FTS5 (both BM25 over the same
/// words) largely agree on the top 10, so the engines do comparable work.
fn check(
    label: &str,
    runtime: &Runtime,
    ours: &Ours,
    tantivy: &mut Tantivy,
    fts5: &Fts5,
    queries: &[String],
) {
    let checked = &queries[..CHECKED_QUERIES.min(queries.len())];
    let (mut ours_hits, mut recall_hits, mut tantivy_hits, mut fts5_hits, mut shared) =
        (0, 0, 0, 0, 0);
    for query in checked {
        let ids = runtime.block_on(ours.search_ids(query));
        let rows: Vec<String> = fts5
            .search_ids(query)
            .into_iter()
            .map(|row| memory_id(row as usize))
            .collect();
        ours_hits += ids.len();
        fts5_hits += rows.len();
        shared += ids.iter().filter(|id| rows.contains(id)).count();
        tantivy_hits += tantivy.search(query);
        recall_hits += runtime.block_on(recall(&ours.memory, &ours.scope, &ours.options, query));
    }
    let per_query = |hits: usize| hits as f64 / checked.len() as f64;
    eprintln!(
        "{label}: results per query: store {:.1}, recall {:.1}, tantivy {:.1}, fts5 {:.1}; \
         top-10 shared by our store and fts5: {:.0}%",
        per_query(ours_hits),
        per_query(recall_hits),
        per_query(tantivy_hits),
        per_query(fts5_hits),
        100.0 * shared as f64 / ours_hits.max(1) as f64
    );
}

fn search_size(c: &mut Criterion, runtime: &Runtime, n: usize, queries: &[String]) {
    let (docs, _) = corpus(n, 0, SEED);
    search_corpus(c, runtime, &format!("search_{n}"), docs, queries);
}

/// A haystack the size of a LongMemEval question's (about 500 turns of a long chat): turns
/// alternately short (100 to 400 characters, a user's) and long (800 to 3,000, an
/// assistant's), over the vocabulary of the main corpus, so its queries apply. Generated,
/// not read from the benchmark.
fn haystack(n: usize) -> Vec<String> {
    let zipf = Zipf::new(20_000, SEED);
    let mut rng = Rng::new(SEED ^ 0x4A57);
    (0..n)
        .map(|turn| {
            let chars = if turn % 2 == 0 {
                100 + rng.below(300)
            } else {
                800 + rng.below(2_200)
            };
            zipf.text(&mut rng, chars)
        })
        .collect()
}

/// The e2e load test's second query mix as a corpus: every memory twelve words drawn from a
/// vocabulary of 26 (so each word is in about a third of the memories) and a numbered note;
/// every query made of those words. Nothing can be pruned on its term bounds alone: the
/// worst case for a top-k search, and for SQLite, whose postings are read from the file.
fn frequent_words(n: usize) -> (Vec<String>, Vec<String>) {
    const WORDS: [&str; 26] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra",
        "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
    ];
    let mut rng = Rng::new(SEED);
    let docs = (0..n)
        .map(|i| {
            let mut text = String::new();
            for _ in 0..12 {
                text.push_str(WORDS[rng.below(WORDS.len())]);
                text.push(' ');
            }
            format!("{text}note {i}")
        })
        .collect();
    let queries = (0..QUERIES)
        .map(|_| {
            (0..1 + rng.below(3))
                .map(|_| WORDS[rng.below(WORDS.len())])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    (docs, queries)
}

fn search_corpus(
    c: &mut Criterion,
    runtime: &Runtime,
    label: &str,
    docs: Vec<String>,
    queries: &[String],
) {
    let n = docs.len();
    let start = Utc::now() - Duration::minutes(n as i64);
    let ours = timed("agent_memory (remember)", n, || {
        Ours::build(runtime, &docs, start)
    });
    let mut tantivy = timed("tantivy", n, || Tantivy::build(&docs));
    let fts5 = timed("sqlite_fts5", n, || Fts5::build(&docs));
    let sqlite = (n <= SQLITE_MAX).then(|| {
        timed("agent_memory_sqlite (save_many)", n, || {
            OursSqlite::build(runtime, &docs, start)
        })
    });
    drop(docs);
    check(label, runtime, &ours, &mut tantivy, &fts5, queries);

    let mut group = c.benchmark_group(label);
    group.throughput(Throughput::Elements(1));
    if n >= 100_000 {
        group.sample_size(10);
    }
    let mut next = 0usize;
    let mut query = || {
        next = (next + 1) % queries.len();
        queries[next].as_str()
    };
    group.bench_function("agent_memory_store", |b| {
        b.iter(|| {
            let text = query();
            let hits = runtime.block_on(ours.store.search(&SearchQuery::new(
                ours.scope.clone(),
                black_box(text),
                TOP_K,
            )));
            black_box(hits.map(|hits| hits.len()).unwrap_or(0))
        })
    });
    group.bench_function("agent_memory_recall", |b| {
        b.iter(|| {
            let text = query();
            black_box(runtime.block_on(recall(
                &ours.memory,
                &ours.scope,
                &ours.options,
                black_box(text),
            )))
        })
    });
    if let Some(sqlite) = &sqlite {
        group.bench_function("agent_memory_sqlite", |b| {
            b.iter(|| {
                let text = query();
                black_box(runtime.block_on(recall(
                    &sqlite.memory,
                    &ours.scope,
                    &ours.options,
                    black_box(text),
                )))
            })
        });
        // The recall statistics still held are written now, not during the next function
        // (on the same connection, they would slow it).
        let _ = runtime.block_on(sqlite.memory.flush());
        group.bench_function("agent_memory_sqlite_store", |b| {
            b.iter(|| {
                let text = query();
                let hits = runtime.block_on(sqlite.store.search(&SearchQuery::new(
                    ours.scope.clone(),
                    black_box(text),
                    TOP_K,
                )));
                black_box(hits.map(|hits| hits.len()).unwrap_or(0))
            })
        });
    }
    group.bench_function("tantivy", |b| {
        b.iter(|| black_box(tantivy.search(black_box(query()))))
    });
    group.bench_function("sqlite_fts5", |b| {
        b.iter(|| black_box(fts5.search_ids(black_box(query())).len()))
    });
    group.finish();
    // Let the recall feedback in flight finish before the engines are dropped.
    runtime.block_on(async {
        let _ = ours.memory.flush().await;
        if let Some(sqlite) = &sqlite {
            let _ = sqlite.memory.flush().await;
        }
    });
}

fn recall_benches(c: &mut Criterion) {
    let runtime = runtime();
    let (_, queries) = corpus(0, QUERIES, SEED);
    for n in SIZES {
        search_size(c, &runtime, n, &queries);
    }
    search_corpus(
        c,
        &runtime,
        &format!("haystack_{HAYSTACK}"),
        haystack(HAYSTACK),
        &queries,
    );
    let (docs, frequent_queries) = frequent_words(FREQUENT);
    search_corpus(
        c,
        &runtime,
        &format!("frequent_{FREQUENT}"),
        docs,
        &frequent_queries,
    );
    if std::env::var("AGENT_MEMORY_BENCH_1M").is_ok_and(|value| value == "1") {
        search_size(c, &runtime, MILLION, &queries);
    } else {
        eprintln!("search_{MILLION}: skipped; set AGENT_MEMORY_BENCH_1M=1 to run it");
    }
}

/// The criterion group, in a private module: the `pub fn` that `criterion_group!` generates
/// is then not exported and needs no doc.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::recall_benches);
}

criterion_main!(group::benches);
