//! Reading a large namespace a page at a time: the page 40 000 memories deep into a
//! namespace of 50 000 (5 000 deep of 10 000 in a quick run), 100 memories a page. Group
//! `list_page_50000`, one page per iteration:
//! - `inmem_after`, `sqlite_after`, `postgres_after`: the page after the last memory of the
//!   page before (`MemoryFilter::after`), as `GET /v1/memories` and `Memory::reembed` read.
//! - `inmem_subtree_after`, ...: the same page over the namespace's subtree (what the HTTP
//!   server lists by default), which holds no other namespace.
//! - `inmem_offset`, `sqlite_offset`, `postgres_offset`: the peer, an offset: the listing
//!   up to the page's end, the memories before it skipped (how the server's cursor worked
//!   before positions).
//!
//! Group `graph_page_20000` does the same for the graph's entities: the page 16 000 deep of
//! 20 000 (4 000 of 5 000 in a quick run), `*_after` by `list_entities_after`, `*_offset`
//! the whole listing with the entities before the page skipped (how the server's and the
//! MCP `read_graph`'s cursors worked before positions).
//!
//! PostgreSQL's rows run when `AGENT_MEMORY_POSTGRES_URL` or
//! `AGENT_MEMORY_TEST_POSTGRES_URL` names a server (schema `am_bench_listing`, emptied
//! first). The memories are texts of 150 to 450 words, a hundred to each second of creation
//! time, so pages start inside runs of equal times.

use std::hint::black_box;

use agent_memory::graph::PetGraph;
use agent_memory::inmem::InMemoryStore;
use agent_memory::sqlite::SqliteBackend;
use agent_memory::{
    EntityPosition, GraphEntity, KnowledgeGraph, ListPosition, MemoryFilter, MemoryItem,
    MemoryStore, Namespace, Scope,
};
use chrono::{TimeZone, Utc};
use criterion::{Criterion, Throughput, criterion_main};
use memory_benches::corpus::corpus;
use memory_benches::stores::{postgres, sqlite_path};
use tokio::runtime::Runtime;

const SEED: u64 = 0x5EED_2026;
const PAGE: usize = 100;

/// How many memories, and how deep the page measured starts.
fn sizes() -> (usize, usize) {
    if memory_benches::quick_run() {
        (10_000, 5_000)
    } else {
        (50_000, 40_000)
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn items(namespace: &Namespace, count: usize) -> Vec<MemoryItem> {
    let (contents, _) = corpus(count, 0, SEED);
    let start = Utc
        .timestamp_opt(1_700_000_000, 0)
        .single()
        .expect("a time");
    contents
        .into_iter()
        .enumerate()
        .map(|(i, content)| {
            MemoryItem::new(namespace.clone(), content)
                .and_then(|item| item.with_id(format!("m{i:06}")))
                .map(|item| item.with_created_at(start + chrono::Duration::seconds(i as i64 / 100)))
                .expect("a valid memory")
        })
        .collect()
}

fn listing_benches(c: &mut Criterion) {
    let (count, deep) = sizes();
    let runtime = runtime();
    let namespace = Namespace::parse("bench/listing").expect("a valid namespace");
    let memories = items(&namespace, count);
    let inmem = InMemoryStore::new();
    let sqlite = SqliteBackend::open(sqlite_path("listing")).expect("a SQLite file");
    let postgres = postgres(&runtime, "am_bench_listing");
    if postgres.is_none() {
        eprintln!("list_page_{count}: no PostgreSQL server named; its rows are left out");
    }
    let mut stores: Vec<(&str, &dyn MemoryStore)> = vec![
        ("inmem", &inmem as &dyn MemoryStore),
        ("sqlite", sqlite.memory_store() as &dyn MemoryStore),
    ];
    if let Some(backend) = &postgres {
        stores.push(("postgres", backend.memory_store() as &dyn MemoryStore));
    }
    for &(_, store) in &stores {
        runtime
            .block_on(store.save_many(memories.clone()))
            .expect("save_many");
    }
    let filter = MemoryFilter::new(namespace.exact());
    // The last memory of the page before the one measured.
    let before = ListPosition::of(&memories[deep - 1]);
    let by_position = filter.clone().after(before).with_limit(PAGE);
    let by_offset = filter.clone().with_limit(deep + PAGE);
    let mut in_subtree = by_position.clone();
    in_subtree.scope = namespace.subtree();
    let page_ids = |items: &[MemoryItem]| -> Vec<String> {
        items.iter().map(|item| item.id.clone()).collect()
    };
    let expected = page_ids(&memories[deep..deep + PAGE]);
    for &(name, store) in &stores {
        let after = runtime.block_on(store.list(&by_position)).expect("list");
        assert_eq!(
            page_ids(&after),
            expected,
            "{name}: the page after a position"
        );
        let subtree = runtime.block_on(store.list(&in_subtree)).expect("list");
        assert_eq!(
            page_ids(&subtree),
            expected,
            "{name}: the page of the subtree"
        );
        let offset = runtime.block_on(store.list(&by_offset)).expect("list");
        assert_eq!(
            page_ids(&offset[deep..]),
            expected,
            "{name}: the page at an offset"
        );
    }

    let mut group = c.benchmark_group(format!("list_page_{count}"));
    group.throughput(Throughput::Elements(PAGE as u64));
    for &(name, store) in &stores {
        group.bench_function(format!("{name}_after"), |b| {
            b.iter(|| {
                let page = runtime.block_on(store.list(black_box(&by_position)));
                black_box(page.map(|page| page.len()).unwrap_or(0))
            })
        });
        group.bench_function(format!("{name}_subtree_after"), |b| {
            b.iter(|| {
                let page = runtime.block_on(store.list(black_box(&in_subtree)));
                black_box(page.map(|page| page.len()).unwrap_or(0))
            })
        });
        group.bench_function(format!("{name}_offset"), |b| {
            b.iter(|| {
                let listed = runtime.block_on(store.list(black_box(&by_offset)));
                black_box(
                    listed
                        .map(|listed| listed.into_iter().skip(deep).count())
                        .unwrap_or(0),
                )
            })
        });
    }
    group.finish();
}

fn graph_benches(c: &mut Criterion) {
    let (count, deep) = if memory_benches::quick_run() {
        (5_000, 4_000)
    } else {
        (20_000, 16_000)
    };
    let runtime = runtime();
    let namespace = Namespace::parse("bench/graph-listing").expect("a valid namespace");
    let entities: Vec<GraphEntity> = (0..count)
        .map(|i| {
            GraphEntity::new(
                namespace.clone(),
                format!("e{i:06}"),
                format!("entity {i}"),
                "thing",
            )
            .expect("a valid entity")
        })
        .collect();
    let inmem = PetGraph::new();
    let sqlite = SqliteBackend::open(sqlite_path("listing")).expect("a SQLite file");
    let postgres = postgres(&runtime, "am_bench_listing");
    let mut graphs: Vec<(&str, &dyn KnowledgeGraph)> = vec![
        ("inmem", &inmem as &dyn KnowledgeGraph),
        ("sqlite", sqlite.graph() as &dyn KnowledgeGraph),
    ];
    if let Some(backend) = &postgres {
        runtime
            .block_on(backend.graph().clear(&Scope::all()))
            .expect("emptying am_bench_listing");
        graphs.push(("postgres", backend.graph() as &dyn KnowledgeGraph));
    }
    for &(_, graph) in &graphs {
        runtime.block_on(async {
            for entity in &entities {
                graph.add_entity(entity.clone()).await.expect("add_entity");
            }
        });
    }
    let scope = namespace.exact();
    let before = EntityPosition::of(&entities[deep - 1]);
    let expected: Vec<&str> = entities[deep..deep + PAGE]
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    for &(name, graph) in &graphs {
        let page = runtime
            .block_on(graph.list_entities_after(&scope, Some(&before), PAGE))
            .expect("a page");
        let ids: Vec<&str> = page.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, expected, "{name}: the page after a position");
    }

    let mut group = c.benchmark_group(format!("graph_page_{count}"));
    group.throughput(Throughput::Elements(PAGE as u64));
    for &(name, graph) in &graphs {
        group.bench_function(format!("{name}_after"), |b| {
            b.iter(|| {
                let page = runtime.block_on(graph.list_entities_after(
                    black_box(&scope),
                    Some(black_box(&before)),
                    PAGE,
                ));
                black_box(page.map(|page| page.len()).unwrap_or(0))
            })
        });
        group.bench_function(format!("{name}_offset"), |b| {
            b.iter(|| {
                let listed = runtime.block_on(graph.list_entities(black_box(&scope)));
                black_box(
                    listed
                        .map(|listed| listed.into_iter().skip(deep).take(PAGE).count())
                        .unwrap_or(0),
                )
            })
        });
    }
    group.finish();
}

/// The criterion group, in a private module: the `pub fn` that `criterion_group!` generates
/// is then not exported and needs no doc.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::listing_benches, super::graph_benches);
}

criterion_main!(group::benches);
