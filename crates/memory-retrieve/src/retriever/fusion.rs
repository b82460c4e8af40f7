//! Fusion: the candidates of every channel scored (weighted signals, or reciprocal rank
//! fusion), thresholded, cut to `max_results` and explained.

use memory_core::{Channel, ScoreBreakdown, ScoredItem, Signal, SignalScore, SignalScores};

use std::collections::{HashMap, HashSet};

use memory_core::RetrievalSource;

use super::candidate::Candidate;
use super::staleness::{STALE_FACTOR, StaleMarks};
use super::{Fusion, RetrieverConfig};
use crate::scoring::reciprocal_rank;
use crate::when::TimeWindow;

/// The best candidates, best first, each with its breakdown, and how many were scored.
pub(super) fn rank(
    memories: Vec<Candidate>,
    pages: Vec<Candidate>,
    entities: Vec<Candidate>,
    config: &RetrieverConfig,
    stale: &StaleMarks,
    window: Option<TimeWindow>,
) -> (Vec<ScoredItem>, usize) {
    // Whether a candidate is a memory made outside the time the query names.
    let outside = |candidate: &Candidate| match (&candidate.record, window) {
        (RetrievalSource::Memory(item), Some(window)) => item.created_at < window.from,
        _ => false,
    };
    let factor = config.outside_time_factor;
    let found_by = |channel: Channel| {
        memories
            .iter()
            .any(|candidate| candidate.channels.contains(channel))
    };
    // How many channel lists took part: only reciprocal rank fusion needs it.
    let active = match config.fusion {
        Fusion::Weighted => 0,
        Fusion::ReciprocalRank { .. } => [
            found_by(Channel::Memory) || found_by(Channel::Context),
            found_by(Channel::Embedding),
            !pages.is_empty(),
            // The graph's list: its entities, and the memories its links reach.
            !entities.is_empty() || found_by(Channel::GraphTraversal),
        ]
        .iter()
        .filter(|active| **active)
        .count(),
    };
    // Collected in place over the memory channel's buffer (no allocation when the other
    // channels found nothing).
    let mut candidates: Vec<Option<Candidate>> = memories.into_iter().map(Some).collect();
    candidates.extend(pages.into_iter().map(Some));
    candidates.extend(entities.into_iter().map(Some));
    let total_found = candidates.len();
    let weights = config.scoring.weights().prepare();
    // Score every candidate cheaply and rank (score, index) pairs, so the candidates
    // themselves never move; build the breakdowns only for what is returned.
    let mut scored: Vec<(f32, usize)> = Vec::with_capacity(candidates.len());
    for (at, candidate) in candidates.iter().enumerate() {
        let Some(candidate) = candidate else { continue };
        let score = match config.fusion {
            Fusion::Weighted => weights.score(&candidate.signals),
            Fusion::ReciprocalRank { k } => {
                let mut ranks = [0usize; super::candidate::MAX_CHANNELS];
                let mut count = 0;
                for (_, rank) in candidate.channels.iter() {
                    ranks[count] = rank;
                    count += 1;
                }
                reciprocal_rank(&ranks[..count], k, active)
            }
        };
        let score = if stale.is_empty() {
            score
        } else {
            penalise(candidate, score, stale)
        };
        let score = if outside(candidate) {
            score * factor
        } else {
            score
        };
        if score < config.min_score || score <= 0.0 {
            continue;
        }
        scored.push((score, at));
    }
    // The stale candidates, for their breakdowns.
    let mut penalised: HashSet<usize> = HashSet::new();
    if !stale.is_empty() {
        below_newer_rivals(&mut scored, &candidates, stale, &mut penalised);
    }
    // A stale score lowered under its rivals may fall under the threshold it passed.
    if !penalised.is_empty() {
        scored.retain(|(score, _)| *score >= config.min_score && *score > 0.0);
    }
    let key_of = |at: usize| candidates[at].as_ref().map(Candidate::key);
    let order = |a: &(f32, usize), b: &(f32, usize)| {
        b.0.total_cmp(&a.0)
            .then_with(|| key_of(a.1).cmp(&key_of(b.1)))
    };
    if scored.len() > config.max_results {
        scored.select_nth_unstable_by(config.max_results - 1, order);
        scored.truncate(config.max_results);
    }
    scored.sort_unstable_by(order);
    let mut items: Vec<ScoredItem> = Vec::with_capacity(scored.len());
    // Each result is written into its place, and its breakdown filled there: a breakdown
    // returned and moved into the result was copied at every step.
    for (score, at) in scored {
        let Some(candidate) = candidates[at].take() else {
            continue;
        };
        let is_outside = outside(&candidate);
        let is_stale = penalised.contains(&at);
        let Candidate {
            record,
            channels: found,
            signals: values,
        } = candidate;
        items.push(ScoredItem {
            record,
            score,
            breakdown: ScoreBreakdown {
                channels: found.iter().map(|(channel, _)| channel).collect(),
                signals: SignalScores::new(),
            },
        });
        let Some(signals) = items.last_mut().map(|item| &mut item.breakdown.signals) else {
            continue;
        };
        // The contributions add up to the score: the signals' (or the fused rank's) to the
        // score before any penalty, then the time's, then staleness's, each what it took
        // away.
        weights.breakdown_into(&values, signals);
        let base = match config.fusion {
            // Read only when a penalty is to be explained.
            Fusion::Weighted if !(is_outside || is_stale) => score,
            Fusion::Weighted => signals.iter().map(|signal| signal.contribution).sum(),
            Fusion::ReciprocalRank { k } => {
                let ranks: Vec<usize> = found.iter().map(|(_, rank)| rank).collect();
                let base = reciprocal_rank(&ranks, k, active);
                for signal in signals.iter_mut() {
                    signal.contribution = 0.0;
                }
                signals.push(SignalScore {
                    name: Signal::Rrf,
                    value: base,
                    contribution: base,
                });
                base
            }
        };
        let timed = if is_outside {
            let timed = base * factor;
            signals.push(SignalScore {
                name: Signal::Time,
                value: factor,
                contribution: timed - base,
            });
            timed
        } else {
            base
        };
        if is_stale {
            // The factor it took: STALE_FACTOR, or less when it was put under a newer rival.
            let value = if timed > 0.0 {
                (score / timed).clamp(0.0, 1.0)
            } else {
                STALE_FACTOR
            };
            signals.push(SignalScore {
                name: Signal::Stale,
                value,
                contribution: score - timed,
            });
        }
    }
    (items, total_found)
}

/// `score` times [`STALE_FACTOR`] when `candidate` is a stale memory.
fn penalise(candidate: &Candidate, score: f32, stale: &StaleMarks) -> f32 {
    match &candidate.record {
        RetrievalSource::Memory(item) if stale.get(&item.namespace, &item.id).is_some() => {
            score * STALE_FACTOR
        }
        _ => score,
    }
}

/// Records every stale candidate in `penalised`, and puts each
/// stale memory below its newer rivals that are scored too (just under the lowest of them).
fn below_newer_rivals(
    scored: &mut [(f32, usize)],
    candidates: &[Option<Candidate>],
    stale: &StaleMarks,
    penalised: &mut HashSet<usize>,
) {
    let memory = |at: usize| match candidates[at].as_ref().map(|c| &c.record) {
        Some(RetrievalSource::Memory(item)) => Some(&**item),
        _ => None,
    };
    let mut scores: HashMap<(&memory_core::Namespace, &str), f32> = scored
        .iter()
        .filter_map(|&(score, at)| {
            memory(at).map(|item| ((&item.namespace, item.id.as_str()), score))
        })
        .collect();
    let stale_at: Vec<usize> = (0..scored.len())
        .filter(|&position| {
            memory(scored[position].1)
                .is_some_and(|item| stale.get(&item.namespace, &item.id).is_some())
        })
        .collect();
    for &position in &stale_at {
        penalised.insert(scored[position].1);
    }
    // Against the rivals' scores as lowered so far, until nothing moves: in a chain of
    // statements (A replaced by B, B by C) B goes under C first or after, and A under B as
    // it ends up. A pass per stale memory at most, so rivals that name each other end.
    for _ in 0..=stale_at.len() {
        let mut moved = false;
        for &position in &stale_at {
            let (score, at) = &mut scored[position];
            let Some(item) = memory(*at) else { continue };
            let Some(rivals) = stale.get(&item.namespace, &item.id) else {
                continue;
            };
            let lowest_rival = rivals
                .iter()
                .filter_map(|rival| scores.get(&(&item.namespace, rival.as_str())))
                .copied()
                .reduce(f32::min);
            if let Some(rival) = lowest_rival
                && *score >= rival
            {
                *score = rival * 0.99;
                scores.insert((&item.namespace, item.id.as_str()), *score);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use memory_core::{Channel, MemoryItem, Namespace, RetrievalSource, Signal};

    use super::super::candidate::{Candidate, Found};
    use super::super::staleness::StaleMarks;
    use super::super::{Fusion, RetrieverConfig};
    use super::rank;
    use crate::scoring::{ScoringStrategy, Signals};

    fn memory(id: &str, channel: Channel, signal: Signal, value: f32, at: usize) -> Candidate {
        let namespace = Namespace::parse("u").unwrap();
        let item = MemoryItem::new(namespace, format!("memory {id}"))
            .unwrap()
            .with_id(id)
            .unwrap();
        Candidate {
            record: RetrievalSource::Memory(Arc::new(item)),
            channels: Found::new(channel, at),
            signals: Signals::only(signal, value),
        }
    }

    fn ids(items: &[memory_core::ScoredItem]) -> Vec<&str> {
        items.iter().map(|item| item.record.id()).collect()
    }

    #[test]
    fn reciprocal_rank_counts_the_graphs_linked_memories_as_a_list() {
        let config = RetrieverConfig {
            fusion: Fusion::ReciprocalRank { k: 60.0 },
            min_score: 0.0,
            ..RetrieverConfig::default()
        };
        let linked = vec![
            memory("a", Channel::GraphTraversal, Signal::Graph, 0.9, 1),
            memory("b", Channel::GraphTraversal, Signal::Graph, 0.5, 2),
        ];
        let (items, found) = rank(
            linked,
            Vec::new(),
            Vec::new(),
            &config,
            &StaleMarks::default(),
            None,
        );
        assert_eq!(found, 2);
        assert_eq!(
            ids(&items),
            ["a", "b"],
            "found by the graph alone, not dropped"
        );
    }

    #[test]
    fn a_chain_of_stale_memories_ranks_each_under_its_newer_rival() {
        let config = RetrieverConfig {
            scoring: ScoringStrategy::Relevance,
            min_score: 0.0,
            ..RetrieverConfig::default()
        };
        let candidates = vec![
            memory("a", Channel::Memory, Signal::Relevance, 0.9, 1),
            memory("b", Channel::Memory, Signal::Relevance, 0.8, 2),
            memory("c", Channel::Memory, Signal::Relevance, 0.2, 3),
        ];
        // A replaced by B, B by C.
        let mut stale = StaleMarks::default();
        let item = |id: &str| match &candidates
            .iter()
            .find(|c| c.record.id() == id)
            .unwrap()
            .record
        {
            RetrievalSource::Memory(item) => Arc::clone(item),
            _ => unreachable!(),
        };
        stale.mark_for_test(&item("a"), Some("b"));
        stale.mark_for_test(&item("b"), Some("c"));
        let (items, _) = rank(candidates, Vec::new(), Vec::new(), &config, &stale, None);
        assert_eq!(ids(&items), ["c", "b", "a"]);
    }
}
