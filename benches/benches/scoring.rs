//! Scoring throughput: candidates scored per second by each `ScoringStrategy` and by the
//! default hybrid, over 1 000 prepared candidates from the Zipf corpus.
//!
//! Each case computes, per candidate, the signals its strategy weighs from the candidate's
//! raw fields (BM25 score, timestamps, counts, text), exactly as the retriever does, and
//! then the weighted score. Text overlap therefore includes analysing the candidate's text,
//! which is its real cost. `hybrid_breakdown` also builds the explainable breakdown, which the
//! retriever does only for the results it returns.

use std::hint::black_box;

use agent_memory::Signal;
use agent_memory::retrieve::scoring::{
    NGrams, frequency, recency, reference, temporal_weight, text_overlap,
};
use agent_memory::retrieve::{ScoreWeights, ScoringStrategy, Signals};
use chrono::{DateTime, Duration, Utc};
use criterion::{Criterion, Throughput, criterion_main};
use memory_benches::corpus::{Rng, corpus};

const CANDIDATES: usize = 1_000;
const QUERIES: usize = 64;
const SEED: u64 = 0x5C0_41E6;
/// The retriever's default recency half-life, one week.
const HALF_LIFE_HOURS: f64 = 24.0 * 7.0;

/// One candidate as a channel returns it, before scoring.
struct Candidate {
    text: String,
    /// The channel's raw BM25 score.
    bm25: f32,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    importance: f32,
    access_count: u64,
    /// Pages referencing it, or relations of an entity.
    references: usize,
    /// Hops from a matched entity and the product of the path's weights.
    hops: usize,
    path_weight: f32,
}

fn candidates(now: DateTime<Utc>) -> (Vec<Candidate>, Vec<String>) {
    let (texts, queries) = corpus(CANDIDATES, QUERIES, SEED);
    let mut rng = Rng::new(SEED ^ 0xC0FFEE);
    let mut candidates: Vec<Candidate> = texts
        .into_iter()
        .map(|text| {
            let created_at = now - Duration::minutes(rng.below(60 * 24 * 90) as i64);
            let updated_at = created_at + Duration::minutes(rng.below(60 * 24) as i64);
            Candidate {
                text,
                bm25: 1.0 + 20.0 * rng.next_f64() as f32,
                created_at,
                updated_at,
                importance: rng.next_f64() as f32,
                access_count: rng.below(50) as u64,
                references: rng.below(12),
                hops: rng.below(4),
                path_weight: 0.1 + 0.9 * rng.next_f64() as f32,
            }
        })
        .collect();
    // A channel returns its hits best first; relevance is normalised by the best one.
    candidates.sort_by(|a, b| b.bm25.total_cmp(&a.bm25));
    (candidates, queries)
}

/// The signals the default hybrid uses for a memory candidate, as the retriever computes them.
fn hybrid_signals(candidate: &Candidate, best: f32, now: DateTime<Utc>) -> Signals {
    let mut signals = Signals::default();
    signals[Signal::Relevance] = candidate.bm25 / best;
    signals[Signal::Temporal] = temporal_weight(candidate.updated_at, now);
    signals[Signal::Reference] = reference(candidate.references);
    signals[Signal::Importance] = candidate.importance;
    signals[Signal::Frequency] = frequency(candidate.access_count);
    signals[Signal::Recency] = recency(candidate.created_at, now, HALF_LIFE_HOURS);
    signals
}

/// Scores every candidate with `signals` and `weights`; returns the sum so nothing is elided.
fn score_all(
    candidates: &[Candidate],
    weights: &ScoreWeights,
    mut signals: impl FnMut(&Candidate) -> Signals,
) -> f32 {
    // As the retriever does: the weights are prepared once per query.
    let prepared = weights.prepare();
    candidates
        .iter()
        .map(|candidate| prepared.score(&signals(candidate)))
        .sum()
}

fn scoring_benches(c: &mut Criterion) {
    let now: DateTime<Utc> = "2025-06-01T12:00:00Z".parse().expect("a valid timestamp");
    let (candidates, queries) = candidates(now);
    let best = candidates
        .first()
        .map_or(1.0, |candidate| candidate.bm25)
        .max(f32::MIN_POSITIVE);

    let mut group = c.benchmark_group(format!("scoring_{CANDIDATES}"));
    group.throughput(Throughput::Elements(CANDIDATES as u64));

    let weights = ScoringStrategy::TextOverlap.weights();
    let mut next = 0usize;
    group.bench_function("text_overlap", |b| {
        b.iter(|| {
            next = (next + 1) % queries.len();
            // The query's n-grams are built once per recall, each candidate's per candidate.
            let grams = NGrams::of(black_box(&queries[next]));
            black_box(score_all(&candidates, &weights, |candidate| {
                Signals::only(
                    Signal::Overlap,
                    text_overlap(&grams, &[(&candidate.text, 1.0)]),
                )
            }))
        })
    });

    let weights = ScoringStrategy::Relevance.weights();
    group.bench_function("relevance", |b| {
        b.iter(|| {
            black_box(score_all(black_box(&candidates), &weights, |candidate| {
                Signals::only(Signal::Relevance, candidate.bm25 / best)
            }))
        })
    });

    let weights = ScoringStrategy::GraphDistance.weights();
    group.bench_function("graph_distance", |b| {
        b.iter(|| {
            black_box(score_all(black_box(&candidates), &weights, |candidate| {
                Signals::only(
                    Signal::Graph,
                    candidate.path_weight / (1 + candidate.hops) as f32,
                )
            }))
        })
    });

    let weights = ScoringStrategy::TemporalWeight.weights();
    group.bench_function("temporal_weight", |b| {
        b.iter(|| {
            black_box(score_all(black_box(&candidates), &weights, |candidate| {
                Signals::only(Signal::Temporal, temporal_weight(candidate.updated_at, now))
            }))
        })
    });

    let weights = ScoringStrategy::ReferenceCount.weights();
    group.bench_function("reference_count", |b| {
        b.iter(|| {
            black_box(score_all(black_box(&candidates), &weights, |candidate| {
                Signals::only(Signal::Reference, reference(candidate.references))
            }))
        })
    });

    let weights = ScoringStrategy::default().weights();
    group.bench_function("hybrid", |b| {
        b.iter(|| {
            black_box(score_all(black_box(&candidates), &weights, |candidate| {
                hybrid_signals(candidate, best, now)
            }))
        })
    });

    group.bench_function("hybrid_breakdown", |b| {
        b.iter(|| {
            let mut total = 0.0;
            let prepared = weights.prepare();
            for candidate in black_box(&candidates) {
                let signals = hybrid_signals(candidate, best, now);
                let breakdown = prepared.breakdown(&signals);
                total += prepared.score(&signals) + breakdown.len() as f32;
            }
            black_box(total)
        })
    });
    group.finish();
}

/// The criterion group, in a private module: the `pub fn` that `criterion_group!` generates
/// is then not exported and needs no doc.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::scoring_benches);
}

criterion_main!(group::benches);
