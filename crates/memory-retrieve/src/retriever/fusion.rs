//! Fusion: the candidates of every channel scored (weighted signals, or reciprocal rank
//! fusion), thresholded, cut to `max_results` and explained.

use memory_core::{Channel, ScoreBreakdown, ScoredItem, Signal, SignalScore};

use super::candidate::Candidate;
use super::{Fusion, RetrieverConfig};
use crate::scoring::reciprocal_rank;

/// The best candidates, best first, each with its breakdown, and how many were scored.
pub(super) fn rank(
    memories: Vec<Candidate>,
    pages: Vec<Candidate>,
    entities: Vec<Candidate>,
    config: &RetrieverConfig,
) -> (Vec<ScoredItem>, usize) {
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
            !entities.is_empty(),
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
                let mut ranks = [0usize; 2];
                let mut count = 0;
                for (_, rank) in candidate.channels.iter() {
                    ranks[count] = rank;
                    count += 1;
                }
                reciprocal_rank(&ranks[..count], k, active)
            }
        };
        if score < config.min_score || score <= 0.0 {
            continue;
        }
        scored.push((score, at));
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
    items.extend(
        scored
            .into_iter()
            .filter_map(|(score, at)| Some((score, candidates[at].take()?)))
            .map(|(score, candidate)| {
                let mut signals = weights.breakdown(&candidate.signals);
                if let Fusion::ReciprocalRank { .. } = config.fusion {
                    for signal in &mut signals {
                        signal.contribution = 0.0;
                    }
                    signals.push(SignalScore {
                        name: Signal::Rrf,
                        value: score,
                        contribution: score,
                    });
                }
                let breakdown = ScoreBreakdown {
                    channels: candidate
                        .channels
                        .iter()
                        .map(|(channel, _)| channel)
                        .collect(),
                    signals,
                };
                ScoredItem {
                    record: candidate.record,
                    score,
                    breakdown,
                }
            }),
    );
    (items, total_found)
}
