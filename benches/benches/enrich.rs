//! Enrichment's cost, on the write path and off it.
//!
//! Group `remember_latency`: one `Memory::remember` as its caller waits for it, in a
//! namespace of 2,000 memories, without an enricher and with the rule-based enricher
//! (`RuleEnricher`, queued for the worker). Only the `remember` calls are timed
//! (`iter_custom`); the enrichment worker runs meanwhile on the runtime's other thread, and
//! the queue is flushed between samples outside the timing. The target: with an enricher,
//! within 1.2 times the latency without.
//!
//! Group `enrichment_worker`: 1,000 memories remembered and then flushed, so the time is
//! the write path plus all of the worker's work (entities, tags, mention links in the
//! in-memory graph); against the same writes without an enricher, the difference is what
//! enrichment costs in all.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_memory::Namespace;
use agent_memory::retrieve::{Memory, RuleEnricher};
use criterion::{Criterion, Throughput, criterion_main};
use memory_benches::corpus::Rng;
use tokio::runtime::Runtime;

const SPEAKERS: [&str; 4] = ["Caroline", "Melanie", "Jon", "Gina"];
const NAMES: [&str; 8] = [
    "Anna",
    "Oscar",
    "Lisbon",
    "New York",
    "Pixel",
    "Rust Foundation",
    "Boston",
    "Maria",
];
const WORDS: [&str; 16] = [
    "went",
    "hiking",
    "with",
    "painting",
    "the",
    "adoption",
    "agency",
    "yesterday",
    "about",
    "a",
    "new",
    "project",
    "called",
    "StateGraph",
    "weekend",
    "state-machine",
];

/// A transcript-like line: a date note, a speaker, words and one or two names.
fn line(rng: &mut Rng, n: usize) -> String {
    let mut text = format!("[8 May, 2023] {}: ", SPEAKERS[rng.below(SPEAKERS.len())]);
    for i in 0..12 {
        if i == 4 || i == 9 {
            text.push_str(NAMES[rng.below(NAMES.len())]);
        } else {
            text.push_str(WORDS[rng.below(WORDS.len())]);
        }
        text.push(' ');
    }
    text.push_str(&format!("note {n}"));
    text
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn memory(enrich: bool) -> Memory {
    let builder = Memory::builder();
    let builder = if enrich {
        builder.enricher(Arc::new(RuleEnricher))
    } else {
        builder
    };
    builder.build().expect("valid settings")
}

fn remember_latency(c: &mut Criterion) {
    let runtime = runtime();
    let namespace = Namespace::parse("bench/enrich").expect("a valid namespace");
    let mut group = c.benchmark_group("remember_latency");
    // Single writes of tens of microseconds vary with the worker's activity: five seconds
    // of them, except in a quick run (`memory_benches::quick_run`).
    if !memory_benches::quick_run() {
        group.measurement_time(Duration::from_secs(5));
    }
    for (name, enrich) in [("no_enricher", false), ("rule_enricher", true)] {
        let memory = memory(enrich);
        let mut rng = Rng::new(7);
        runtime.block_on(async {
            for n in 0..2_000 {
                memory
                    .remember(&namespace, &line(&mut rng, n))
                    .await
                    .expect("remember");
            }
            memory.flush().await.expect("flush");
        });
        let mut n = 2_000;
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let texts: Vec<String> = (0..iterations)
                    .map(|_| {
                        n += 1;
                        line(&mut rng, n)
                    })
                    .collect();
                runtime.block_on(async {
                    let mut spent = Duration::ZERO;
                    for text in &texts {
                        let started = Instant::now();
                        black_box(memory.remember(&namespace, text).await.expect("remember"));
                        spent += started.elapsed();
                    }
                    memory.flush().await.expect("flush");
                    spent
                })
            });
        });
    }
    group.finish();
}

fn enrichment_worker(c: &mut Criterion) {
    let runtime = runtime();
    let namespace = Namespace::parse("bench/enrich").expect("a valid namespace");
    let mut rng = Rng::new(11);
    let texts: Vec<String> = (0..1_000).map(|n| line(&mut rng, n)).collect();
    let mut group = c.benchmark_group("enrichment_worker");
    group.sample_size(10);
    group.throughput(Throughput::Elements(texts.len() as u64));
    for (name, enrich) in [("remember_only", false), ("remember_and_enrich", true)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || memory(enrich),
                |memory| {
                    runtime.block_on(async {
                        for text in &texts {
                            memory.remember(&namespace, text).await.expect("remember");
                        }
                        memory.flush().await.expect("flush");
                    });
                    memory
                },
                criterion::BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::remember_latency, super::enrichment_worker);
}

criterion_main!(group::benches);
