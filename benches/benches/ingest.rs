//! Ingest throughput: 10 000 memories per iteration into an empty store, ours and the peers
//! in the same run, on the same corpus.
//!
//! Group `ingest_10000` (throughput in documents per second); each iteration starts from an
//! empty store created in the untimed setup (`iter_batched`), and the filled store is
//! dropped outside the timing:
//! - `agent_memory_remember`: `Memory::remember_with` one memory at a time (in-memory
//!   backends): validation, a fresh id, analysis and the BM25 index update.
//! - `agent_memory_remember_no_facts`: the same with `FactsConfig::off()`: no search for
//!   duplicates and conflicts per write, so the difference is what reconciliation costs.
//! - `agent_memory_sqlite`: the same calls on our SQLite backend in a temporary file: each
//!   memory is its own durable transaction (WAL, `synchronous = FULL`), as an agent's writes are.
//! - `agent_memory_sqlite_concurrent`: the same calls from [`WRITERS`] concurrent callers
//!   (document `i` by caller `i % WRITERS`), each still its own durable write: writes that
//!   wait for the connection together are committed together (group commit), one sync for
//!   the group.
//! - `agent_memory_sqlite_normal`: the same with `Synchronous::Normal` (the WAL is synced at
//!   checkpoints only: a power loss may drop the last commits, never corrupts the file).
//! - `agent_memory_sqlite_batch`: `Memory::remember_many` with every memory in one call on
//!   SQLite: each is reconciled (a search of the store for duplicates and conflicts), then
//!   all are written in one transaction with one sync.
//! - `agent_memory_sqlite_batch_no_facts`: the same with `FactsConfig::off()`: validation,
//!   analysis and the one transaction, the peer of FTS5's inserts in one transaction.
//! - `tantivy`: `add_document` for each, then `commit`, in an in-RAM index with one indexing
//!   thread (as ours) and the default tokenizer.
//! - `sqlite_fts5`: `INSERT` into `fts5(body)` in one transaction, in an in-memory database.
//! - `sqlite_fts5_file`: the same inserts into a temporary file with the durability of our
//!   SQLite backend (WAL, `synchronous = FULL`): the like-for-like peer of
//!   `agent_memory_sqlite_batch_no_facts`, which also writes a file and syncs its commit.
//!
//! Group `ingest_into_100000`: the cost of remembering when the namespace already holds
//! 100 000 memories, ours only (the SQLite backend against the in-memory one, each with and
//! without reconciliation). Each iteration remembers 1 000 new memories; the untimed setup
//! forgets the previous iteration's, so the store stays at 100 000 however long criterion
//! measures.
//!
//! A quick run (`cargo xtask bench --quick`) remembers 1 000 memories per iteration in
//! `ingest_1000` and 200 in `ingest_into_100000`, and leaves out
//! `agent_memory_sqlite_normal` and the SQLite row without reconciliation into 100 000:
//! each restates a neighbouring row at the cost of tens of seconds of durable writes.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_memory::inmem::InMemoryStore;
use agent_memory::retrieve::{FactsConfig, Memory, Remember};
use agent_memory::sqlite::{SqliteBackend, SqliteOptions, Synchronous};
use agent_memory::{MemoryItem, MemoryKind, MemoryStore, Namespace};
use chrono::{DateTime, Duration, Utc};
use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_main};
use memory_benches::corpus::corpus;
use memory_benches::quick_run;
use rusqlite::Connection;
use tantivy::schema::{Field, Schema, TEXT};
use tantivy::{Index, IndexWriter, doc};
use tokio::runtime::Runtime;

const SEED: u64 = 0x5EED_2025;
/// Memories per iteration in `ingest_{n}`: 10,000, or 1,000 in a quick run
/// ([`quick_run`], set by `cargo xtask bench --quick`), where one iteration of our SQLite
/// backend's durable writes takes over a second and criterion runs at least eleven.
fn docs() -> usize {
    if quick_run() { 1_000 } else { 10_000 }
}
/// Memories already in the namespace in `ingest_into_100000`.
const PREFILLED: usize = 100_000;
/// Memories remembered per iteration in `ingest_into_100000`: 1,000, or 200 in a quick run
/// (an iteration of our SQLite backend's durable writes, and the setup that forgets them
/// again, take over a second each at 1,000).
fn batch_size() -> usize {
    if quick_run() { 200 } else { 1_000 }
}
/// tantivy's indexing memory, one thread (as our single-threaded ingest).
const TANTIVY_BUDGET: usize = 512 * 1024 * 1024;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn namespace() -> Namespace {
    Namespace::parse("bench/ingest").expect("a valid namespace")
}

/// Remembers every document, one call each, with creation times a minute apart. Returns the
/// ids.
async fn remember_all(memory: &Memory, namespace: &Namespace, docs: &[String]) -> Vec<String> {
    let start: DateTime<Utc> = Utc::now() - Duration::minutes(docs.len() as i64);
    let mut ids = Vec::with_capacity(docs.len());
    for (i, text) in docs.iter().enumerate() {
        let id = memory
            .remember_with(
                Remember::new(namespace.clone(), text.as_str())
                    .created_at(start + Duration::minutes(i as i64)),
            )
            .await
            .expect("remember")
            .id;
        ids.push(id);
    }
    ids
}

/// Concurrent callers in `agent_memory_sqlite_concurrent`.
const WRITERS: usize = 8;

/// Remembers every document from [`WRITERS`] concurrent callers, one call each (document `i`
/// by caller `i % WRITERS`), with creation times a minute apart. Returns how many were
/// remembered.
async fn remember_concurrently(memory: &Memory, namespace: &Namespace, docs: &[String]) -> usize {
    let start: DateTime<Utc> = Utc::now() - Duration::minutes(docs.len() as i64);
    let callers = (0..WRITERS).map(|caller| async move {
        let mut remembered = 0;
        for (i, text) in docs.iter().enumerate().skip(caller).step_by(WRITERS) {
            memory
                .remember_with(
                    Remember::new(namespace.clone(), text.as_str())
                        .created_at(start + Duration::minutes(i as i64)),
                )
                .await
                .expect("remember");
            remembered += 1;
        }
        remembered
    });
    futures::future::join_all(callers).await.into_iter().sum()
}

/// Remembers every document in one [`Memory::remember_many`] call, with creation times a
/// minute apart. Returns how many were remembered.
async fn remember_batch(memory: &Memory, namespace: &Namespace, docs: &[String]) -> usize {
    let start: DateTime<Utc> = Utc::now() - Duration::minutes(docs.len() as i64);
    let requests = docs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            Remember::new(namespace.clone(), text.as_str())
                .created_at(start + Duration::minutes(i as i64))
        })
        .collect();
    memory
        .remember_many(requests)
        .await
        .expect("remember_many")
        .len()
}

/// Fills `store` with `docs` in bulk (`save_many`, chunks of 10 000): the fill is not measured.
async fn prefill(store: &dyn MemoryStore, namespace: &Namespace, docs: &[String]) {
    let start: DateTime<Utc> = Utc::now() - Duration::days(365);
    for (chunk_at, chunk) in docs.chunks(10_000).enumerate() {
        let items = chunk
            .iter()
            .enumerate()
            .map(|(offset, text)| {
                let i = chunk_at * 10_000 + offset;
                MemoryItem::new(namespace.clone(), text.as_str())
                    .map(|item| {
                        item.with_kind(MemoryKind::Episodic)
                            .with_created_at(start + Duration::minutes(i as i64))
                    })
                    .expect("a valid item")
            })
            .collect();
        store.save_many(items).await.expect("save_many");
    }
}

/// A temporary database file, removed (with its WAL files) on drop.
struct TempDatabase(PathBuf);

static NEXT_DATABASE: AtomicUsize = AtomicUsize::new(0);

impl TempDatabase {
    fn new() -> Self {
        let path = std::env::temp_dir().join(format!(
            "agent-memory-bench-ingest-{}-{}.db",
            std::process::id(),
            NEXT_DATABASE.fetch_add(1, Ordering::Relaxed)
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

/// [`Memory`] on our SQLite backend; fields drop in order, the file last.
struct OursSqlite {
    memory: Memory,
    _file: TempDatabase,
}

impl OursSqlite {
    fn open() -> Self {
        Self::open_with(Synchronous::Full, FactsConfig::default())
    }

    fn open_with(synchronous: Synchronous, facts: FactsConfig) -> Self {
        let file = TempDatabase::new();
        let backend = SqliteBackend::open_with(
            &file.0,
            SqliteOptions::default().with_synchronous(synchronous),
        )
        .expect("open the SQLite backend");
        let memory = Memory::builder()
            .store(Arc::new(backend.memory_store().clone()))
            .knowledge(Arc::new(backend.knowledge_store().clone()))
            .graph(Arc::new(backend.graph().clone()))
            .facts(facts)
            .build()
            .expect("the settings are valid");
        Self {
            memory,
            _file: file,
        }
    }
}

fn tantivy_index() -> (Index, IndexWriter, Field) {
    let mut schema = Schema::builder();
    let body = schema.add_text_field("body", TEXT);
    let index = Index::create_in_ram(schema.build());
    let writer = index
        .writer_with_num_threads(1, TANTIVY_BUDGET)
        .expect("a tantivy writer");
    (index, writer, body)
}

fn fts5_database() -> Connection {
    let connection = Connection::open_in_memory().expect("an in-memory database");
    connection
        .execute("CREATE VIRTUAL TABLE docs USING fts5(body)", [])
        .expect("create the fts5 table");
    connection
}

/// FTS5 in a temporary file, with the journal and sync settings of our SQLite backend's
/// defaults; the file drops after the connection.
fn fts5_file_database() -> (Connection, TempDatabase) {
    let file = TempDatabase::new();
    let connection = Connection::open(&file.0).expect("a database file");
    connection
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
             CREATE VIRTUAL TABLE docs USING fts5(body);",
        )
        .expect("create the fts5 table");
    (connection, file)
}

/// Inserts every document into `connection`'s `docs` table in one transaction.
fn fts5_insert_all(connection: &mut Connection, docs: &[String]) {
    let transaction = connection.transaction().expect("a transaction");
    {
        let mut insert = transaction
            .prepare("INSERT INTO docs(body) VALUES (?1)")
            .expect("prepare the insert");
        for text in docs {
            black_box(insert.execute([text]).expect("insert"));
        }
    }
    transaction.commit().expect("commit");
}

fn ingest_benches(c: &mut Criterion) {
    let runtime = runtime();
    let count = docs();
    let (docs, _) = corpus(count, 0, SEED);
    let namespace = namespace();

    let mut group = c.benchmark_group(format!("ingest_{count}"));
    group.throughput(Throughput::Elements(count as u64));
    group.sample_size(10);
    // Iterations of tens of milliseconds or more: the same count in every sample.
    group.sampling_mode(SamplingMode::Flat);

    group.bench_function("agent_memory_remember", |b| {
        b.iter_batched(
            || {
                Memory::builder()
                    .store(Arc::new(InMemoryStore::new()))
                    .build()
                    .expect("the default settings are valid")
            },
            |memory| {
                black_box(runtime.block_on(remember_all(&memory, &namespace, &docs)));
                memory
            },
            BatchSize::PerIteration,
        )
    });

    // The same without reconciliation (no duplicate or conflict search per write): what
    // facts that change cost `remember`.
    group.bench_function("agent_memory_remember_no_facts", |b| {
        b.iter_batched(
            || {
                Memory::builder()
                    .store(Arc::new(InMemoryStore::new()))
                    .facts(FactsConfig::off())
                    .build()
                    .expect("the settings are valid")
            },
            |memory| {
                black_box(runtime.block_on(remember_all(&memory, &namespace, &docs)));
                memory
            },
            BatchSize::PerIteration,
        )
    });

    group.bench_function("agent_memory_sqlite", |b| {
        b.iter_batched(
            OursSqlite::open,
            |sqlite| {
                black_box(runtime.block_on(remember_all(&sqlite.memory, &namespace, &docs)));
                sqlite
            },
            BatchSize::PerIteration,
        )
    });

    group.bench_function("agent_memory_sqlite_concurrent", |b| {
        b.iter_batched(
            OursSqlite::open,
            |sqlite| {
                black_box(runtime.block_on(remember_concurrently(
                    &sqlite.memory,
                    &namespace,
                    &docs,
                )));
                sqlite
            },
            BatchSize::PerIteration,
        )
    });

    // Left out of a quick run: it restates the row above with another durability setting,
    // at the cost of the slowest row.
    if !quick_run() {
        group.bench_function("agent_memory_sqlite_normal", |b| {
            b.iter_batched(
                || OursSqlite::open_with(Synchronous::Normal, FactsConfig::default()),
                |sqlite| {
                    black_box(runtime.block_on(remember_all(&sqlite.memory, &namespace, &docs)));
                    sqlite
                },
                BatchSize::PerIteration,
            )
        });
    }

    group.bench_function("agent_memory_sqlite_batch", |b| {
        b.iter_batched(
            OursSqlite::open,
            |sqlite| {
                black_box(runtime.block_on(remember_batch(&sqlite.memory, &namespace, &docs)));
                sqlite
            },
            BatchSize::PerIteration,
        )
    });

    group.bench_function("agent_memory_sqlite_batch_no_facts", |b| {
        b.iter_batched(
            || OursSqlite::open_with(Synchronous::Full, FactsConfig::off()),
            |sqlite| {
                black_box(runtime.block_on(remember_batch(&sqlite.memory, &namespace, &docs)));
                sqlite
            },
            BatchSize::PerIteration,
        )
    });

    group.bench_function("tantivy", |b| {
        b.iter_batched(
            tantivy_index,
            |(index, mut writer, body)| {
                for text in &docs {
                    writer
                        .add_document(doc!(body => text.as_str()))
                        .expect("add_document");
                }
                black_box(writer.commit().expect("commit"));
                (index, writer)
            },
            BatchSize::PerIteration,
        )
    });

    group.bench_function("sqlite_fts5", |b| {
        b.iter_batched(
            fts5_database,
            |mut connection| {
                fts5_insert_all(&mut connection, &docs);
                connection
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("sqlite_fts5_file", |b| {
        b.iter_batched(
            fts5_file_database,
            |(mut connection, file)| {
                fts5_insert_all(&mut connection, &docs);
                (connection, file)
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
    ingest_into_full(c, &runtime, &namespace);
}

/// `ingest_into_100000`: [`batch_size`] memories remembered into a namespace of
/// [`PREFILLED`].
fn ingest_into_full(c: &mut Criterion, runtime: &Runtime, namespace: &Namespace) {
    let batch_size = batch_size();
    let (docs, _) = corpus(PREFILLED + batch_size, 0, SEED ^ 0x100_000);
    let (prefilled, batch) = docs.split_at(PREFILLED);
    let in_memory = Memory::builder()
        .store(Arc::new(InMemoryStore::new()))
        .build()
        .expect("the default settings are valid");
    let sqlite = OursSqlite::open();
    for memory in [&in_memory, &sqlite.memory] {
        let started = std::time::Instant::now();
        runtime.block_on(prefill(memory.store().as_ref(), namespace, prefilled));
        eprintln!(
            "ingest_into_{PREFILLED}: prefilled {PREFILLED} memories in {:.2}s",
            started.elapsed().as_secs_f64()
        );
    }

    let mut group = c.benchmark_group(format!("ingest_into_{PREFILLED}"));
    group.throughput(Throughput::Elements(batch_size as u64));
    group.sample_size(10);
    // Iterations of tens of milliseconds or more: the same count in every sample.
    group.sampling_mode(SamplingMode::Flat);
    // The same stores without reconciliation: what facts that change cost `remember`.
    let unreconciled = |memory: &Memory| {
        Memory::builder()
            .stores(agent_memory::Stores {
                memories: Arc::clone(memory.store()),
                knowledge: Arc::clone(memory.knowledge()),
                graph: Arc::clone(memory.graph()),
            })
            .facts(FactsConfig::off())
            .build()
            .expect("the settings are valid")
    };
    let in_memory_plain = unreconciled(&in_memory);
    let sqlite_plain = unreconciled(&sqlite.memory);
    for (name, memory) in [
        ("agent_memory_remember", &in_memory),
        ("agent_memory_remember_no_facts", &in_memory_plain),
        ("agent_memory_sqlite", &sqlite.memory),
        ("agent_memory_sqlite_no_facts", &sqlite_plain),
    ] {
        // A quick run leaves the SQLite row without reconciliation to the full run: each of
        // its iterations makes hundreds of durable writes, and as many to forget them again.
        if quick_run() && name == "agent_memory_sqlite_no_facts" {
            continue;
        }
        // The ids remembered by the last iteration, forgotten by the next setup.
        let remembered = std::cell::RefCell::new(Vec::<String>::new());
        let forget = || {
            let ids = std::mem::take(&mut *remembered.borrow_mut());
            runtime.block_on(async {
                for id in ids {
                    memory.forget(namespace, &id).await.expect("forget");
                }
            });
        };
        group.bench_function(name, |b| {
            b.iter_batched(
                &forget,
                |()| {
                    let ids = runtime.block_on(remember_all(memory, namespace, batch));
                    *remembered.borrow_mut() = black_box(ids);
                },
                BatchSize::PerIteration,
            )
        });
        forget();
    }
    group.finish();
}

/// The criterion group, in a private module: the `pub fn` that `criterion_group!` generates
/// is then not exported and needs no doc.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::ingest_benches);
}

criterion_main!(group::benches);
