//! Knowledge-graph benchmarks on a deterministic graph of 100k entities and 1M relations in
//! one namespace: two-hop `get_related`, keyword lookup, multi-hop and shortest path.

use std::hint::black_box;
use std::time::Instant;

use agent_memory::graph::PetGraph;
use agent_memory::{GraphEntity, GraphRelation, KnowledgeGraph, Namespace, Scope};
use criterion::{Criterion, criterion_main};
use tokio::runtime::Runtime;

const ENTITIES: usize = 100_000;
const RELATIONS: usize = 1_000_000;
const RELATION_TYPES: [&str; 8] = [
    "related_to",
    "part_of",
    "uses",
    "works_on",
    "colleague_of",
    "depends_on",
    "mentions",
    "leads",
];
const ENTITY_TYPES: [&str; 10] = [
    "person",
    "project",
    "technology",
    "concept",
    "document",
    "team",
    "service",
    "library",
    "event",
    "place",
];
const NAME_WORDS: [&str; 16] = [
    "alpha", "beta", "gamma", "delta", "lang", "state", "graph", "chain", "react", "rust", "tokio",
    "vector", "memory", "agent", "prompt", "token",
];
const TAG_POOL: usize = 1_000;

/// xorshift64: a tiny deterministic generator, so every run builds the same graph.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn entity_id(i: usize) -> String {
    format!("e{i:06}")
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

/// Builds the graph: names `"<word> <word> <i>"`, one of ten types, three tags from a pool
/// of a thousand, and a million random relations (no self loops).
fn build(runtime: &Runtime) -> (PetGraph, Namespace) {
    let namespace = Namespace::parse("bench/graph").expect("a valid namespace");
    let graph = PetGraph::new();
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let started = Instant::now();
    runtime.block_on(async {
        for i in 0..ENTITIES {
            let name = format!(
                "{} {} {i}",
                NAME_WORDS[rng.below(NAME_WORDS.len())],
                NAME_WORDS[rng.below(NAME_WORDS.len())]
            );
            let kind = ENTITY_TYPES[rng.below(ENTITY_TYPES.len())];
            let tags = [0; 3].map(|_| format!("tag-{}", rng.below(TAG_POOL)));
            let entity = GraphEntity::new(namespace.clone(), entity_id(i), name, kind)
                .and_then(|entity| entity.with_tags(tags))
                .expect("a valid entity");
            graph.add_entity(entity).await.expect("add_entity");
        }
        let ids: Vec<String> = (0..ENTITIES).map(entity_id).collect();
        let mut added = 0;
        while added < RELATIONS {
            let source = rng.below(ENTITIES);
            let target = rng.below(ENTITIES);
            if source == target {
                continue;
            }
            let relation_type = RELATION_TYPES[rng.below(RELATION_TYPES.len())];
            let weight = (1 + rng.below(10)) as f32 / 10.0;
            let relation = GraphRelation::new(
                namespace.clone(),
                ids[source].as_str(),
                ids[target].as_str(),
                relation_type,
                weight,
            )
            .expect("a valid relation");
            graph.add_relation(relation).await.expect("add_relation");
            added += 1;
        }
    });
    eprintln!(
        "graph: built {} entities and {} relations in {:.2}s",
        graph.entity_count(&namespace),
        graph.relation_count(&namespace),
        started.elapsed().as_secs_f64()
    );
    (graph, namespace)
}

fn graph_benches(c: &mut Criterion) {
    let runtime = runtime();
    let (graph, namespace) = build(&runtime);
    let mut rng = XorShift(0x0123_4567_89AB_CDEF);
    let starts: Vec<String> = (0..256).map(|_| entity_id(rng.below(ENTITIES))).collect();

    let reached = runtime
        .block_on(graph.get_related(&namespace, &starts[0], 2))
        .map(|related| related.len())
        .unwrap_or(0);
    eprintln!(
        "graph: two hops from {} reach {reached} entities",
        starts[0]
    );

    let mut group = c.benchmark_group("graph_100k_1m");
    let mut next = 0usize;
    group.bench_function("get_related_depth_1", |b| {
        b.iter(|| {
            next = (next + 1) % starts.len();
            let related = runtime.block_on(graph.get_related(&namespace, &starts[next], 1));
            black_box(related.map(|r| r.len()).unwrap_or(0))
        })
    });
    group.bench_function("get_related_depth_2", |b| {
        b.iter(|| {
            next = (next + 1) % starts.len();
            let related = runtime.block_on(graph.get_related(&namespace, &starts[next], 2));
            black_box(related.map(|r| r.len()).unwrap_or(0))
        })
    });
    let chain = ["works_on".to_owned(), "uses".to_owned()];
    group.bench_function("multi_hop_2", |b| {
        b.iter(|| {
            next = (next + 1) % starts.len();
            let found = runtime.block_on(graph.multi_hop(&namespace, &starts[next], &chain));
            black_box(found.map(|f| f.results.len()).unwrap_or(0))
        })
    });
    group.bench_function("shortest_path", |b| {
        b.iter(|| {
            next = (next + 1) % starts.len();
            let to = &starts[(next + 1) % starts.len()];
            let path = runtime.block_on(graph.shortest_path(&namespace, &starts[next], to));
            black_box(path.map(|p| p.map_or(0, |p| p.len())).unwrap_or(0))
        })
    });

    let scope: Scope = namespace.exact();
    // A name prefix shared by about 1/256 of the entities, plus one tag (~300 entities).
    let selective = vec!["Rust Tok".to_owned(), "tag-42".to_owned()];
    let matched = runtime
        .block_on(graph.find_by_keywords(&scope, &selective))
        .map(|found| found.len())
        .unwrap_or(0);
    eprintln!("graph: find_by_keywords {selective:?} matches {matched} entities");
    group.bench_function("find_by_keywords_selective", |b| {
        b.iter(|| {
            let found = runtime.block_on(graph.find_by_keywords(&scope, black_box(&selective)));
            black_box(found.map(|f| f.len()).unwrap_or(0))
        })
    });
    // A name prefix with no match and an unknown tag: the index lookups alone.
    let missing = vec!["zzz".to_owned(), "no-such-tag".to_owned()];
    group.bench_function("find_by_keywords_miss", |b| {
        b.iter(|| {
            let found = runtime.block_on(graph.find_by_keywords(&scope, black_box(&missing)));
            black_box(found.map(|f| f.len()).unwrap_or(0))
        })
    });
    group.bench_function("find_tags_prefix", |b| {
        b.iter(|| {
            let tags = runtime.block_on(graph.find_tags(&scope, black_box("tag-99")));
            black_box(tags.map(|t| t.len()).unwrap_or(0))
        })
    });
    group.finish();
}

/// The criterion group, in a private module: the `pub fn` that `criterion_group!` generates
/// is then not exported and needs no doc.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::graph_benches);
}

criterion_main!(group::benches);
