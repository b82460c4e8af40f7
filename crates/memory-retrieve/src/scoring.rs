//! Scoring: pure functions of (candidate, query, now) that turn signals into one score in
//! `[0, 1]` with an explainable breakdown.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use memory_core::text::Analyzer;
use memory_core::{MemoryError, MemoryItem, Result, Signal, SignalScore, SignalScores};
use serde::{Deserialize, Serialize};

/// Weights of the hybrid score. Each is finite and `>= 0`, at least one is positive; they
/// are normalised to sum to 1, so a score stays in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScoreWeights {
    /// The channel's own relevance (BM25/BM25F), normalised by the best hit of the channel.
    pub relevance: f32,
    /// Text overlap with the raw query (n-gram Dice; title above summary above content).
    pub overlap: f32,
    /// Graph distance: `1 / (1 + hops)` times the path's weights; 1 for a matched entity.
    pub graph: f32,
    /// Time decay of the last update: `1 / (1 + days)`.
    pub temporal: f32,
    /// Reference count (pages referencing a page, relations of an entity), `c / (c + 3)`.
    pub reference: f32,
    /// The item's importance.
    pub importance: f32,
    /// Access frequency: `1 - 1 / (1 + ln(1 + access_count))`.
    pub frequency: f32,
    /// Recency with a half-life: `0.5 ^ (age / half_life)`.
    pub recency: f32,
    /// Conversation context: the relevance of a memory next to this one in time (a question
    /// turn lends its score to the answer that follows it).
    pub context: f32,
    /// Embedding similarity to the query: the cosine, negative values counted as 0. Only
    /// with an embedding provider (feature `embeddings`); 0 in the default weights.
    pub embedding: f32,
}

/// The defaults were chosen on the LoCoMo development split (`benches/README.md` lists
/// every change tried): channel relevance carries the ranking; importance, access frequency and recency
/// break near-ties; graph and reference weights rank entities and pages against memories.
/// Text overlap is off by default: it did not change Recall@10 there (71.3 with it, 71.4
/// without) and costs a re-analysis of every candidate (about 15 times the query latency).
impl Default for ScoreWeights {
    fn default() -> Self {
        Self {
            relevance: 0.7,
            overlap: 0.0,
            graph: 0.1,
            temporal: 0.0,
            reference: 0.05,
            importance: 0.05,
            frequency: 0.05,
            recency: 0.05,
            context: 0.0,
            embedding: 0.0,
        }
    }
}

impl ScoreWeights {
    /// A four-signal hybrid without channel relevance: text overlap 0.5, graph 0.2, temporal
    /// 0.1, reference 0.2 (a ranking by the query's words as written, graph distance, age
    /// and references).
    pub fn overlap_hybrid() -> Self {
        Self {
            relevance: 0.0,
            overlap: 0.5,
            graph: 0.2,
            temporal: 0.1,
            reference: 0.2,
            importance: 0.0,
            frequency: 0.0,
            recency: 0.0,
            context: 0.0,
            embedding: 0.0,
        }
    }

    /// The default weights with embedding similarity beside keyword relevance: relevance
    /// 0.4, embedding 0.3, graph 0.1, and 0.05 each for reference, importance, frequency and
    /// recency (they sum to 1). [`Retriever::with_embedder`](crate::Retriever) switches the default
    /// scoring to these.
    pub fn with_embeddings() -> Self {
        Self {
            relevance: 0.4,
            embedding: 0.3,
            ..Self::default()
        }
    }

    /// The weight of `signal` (0 for [`Signal::Rrf`], which no weight applies to).
    pub fn get(&self, signal: Signal) -> f32 {
        match signal {
            Signal::Relevance => self.relevance,
            Signal::Overlap => self.overlap,
            Signal::Graph => self.graph,
            Signal::Temporal => self.temporal,
            Signal::Reference => self.reference,
            Signal::Importance => self.importance,
            Signal::Frequency => self.frequency,
            Signal::Recency => self.recency,
            Signal::Context => self.context,
            Signal::Embedding => self.embedding,
            Signal::Rrf | Signal::Stale | Signal::Rerank | Signal::Time => 0.0,
        }
    }

    fn pairs(&self) -> [(Signal, f32); SIGNALS] {
        Signal::WEIGHTED.map(|signal| (signal, self.get(signal)))
    }

    /// Checks every weight.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the weight that is NaN, infinite or negative, or
    /// `weights` when all are zero or their sum is not finite.
    pub fn validate(&self) -> Result<()> {
        for (name, weight) in self.pairs() {
            if !weight.is_finite() || weight < 0.0 {
                return Err(MemoryError::invalid(
                    &format!("weights.{}", name.as_str()),
                    format!("{weight} is not a finite number >= 0"),
                ));
            }
        }
        if self.pairs().iter().all(|(_, weight)| *weight == 0.0) {
            return Err(MemoryError::invalid(
                "weights",
                "at least one weight must be positive",
            ));
        }
        // Each finite, and their sum too: the shares are each weight over the sum, and an
        // infinite sum would turn every weight off (every score 0, every result dropped).
        let total: f32 = self.pairs().iter().map(|(_, weight)| weight).sum();
        if !total.is_finite() {
            return Err(MemoryError::invalid(
                "weights",
                format!("they add up to {total}: scale them down"),
            ));
        }
        Ok(())
    }
}

/// How a candidate's score is computed (one signal alone, or a weighted hybrid).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "snake_case")]
pub enum ScoringStrategy {
    /// Text overlap with the raw query only.
    TextOverlap,
    /// The channel's BM25 relevance only.
    Relevance,
    /// Graph distance only.
    GraphDistance,
    /// Time decay only.
    TemporalWeight,
    /// Reference count only.
    ReferenceCount,
    /// A weighted sum of every signal.
    Hybrid(ScoreWeights),
}

impl Default for ScoringStrategy {
    fn default() -> Self {
        ScoringStrategy::Hybrid(ScoreWeights::default())
    }
}

impl ScoringStrategy {
    /// The weights this strategy puts on each signal.
    pub fn weights(&self) -> ScoreWeights {
        let only = |pick: fn(&mut ScoreWeights)| {
            let mut weights = ScoreWeights {
                relevance: 0.0,
                overlap: 0.0,
                graph: 0.0,
                temporal: 0.0,
                reference: 0.0,
                importance: 0.0,
                frequency: 0.0,
                recency: 0.0,
                context: 0.0,
                embedding: 0.0,
            };
            pick(&mut weights);
            weights
        };
        match self {
            ScoringStrategy::TextOverlap => only(|w| w.overlap = 1.0),
            ScoringStrategy::Relevance => only(|w| w.relevance = 1.0),
            ScoringStrategy::GraphDistance => only(|w| w.graph = 1.0),
            ScoringStrategy::TemporalWeight => only(|w| w.temporal = 1.0),
            ScoringStrategy::ReferenceCount => only(|w| w.reference = 1.0),
            ScoringStrategy::Hybrid(weights) => *weights,
        }
    }

    /// Checks the weights.
    ///
    /// # Errors
    /// As [`ScoreWeights::validate`].
    pub fn validate(&self) -> Result<()> {
        self.weights().validate()
    }
}

/// The signals of one candidate, each in `[0, 1]` (0 when it does not apply), indexed by
/// [`Signal`] (see [`ScoreWeights`] for what each measures; [`Signal::Rrf`] is computed by
/// fusion, not carried by a candidate, and reads as 0 here unless set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals([f32; SIGNALS + 1]);

impl Signals {
    /// The signals every memory carries whatever found it: temporal weight (of its last
    /// update), importance, access frequency and recency (of its creation, with
    /// `half_life_hours`).
    pub fn of_memory(item: &MemoryItem, now: DateTime<Utc>, half_life_hours: f64) -> Self {
        let now_secs = now.timestamp();
        let mut signals = Self::default();
        signals[Signal::Temporal] = temporal_weight_of_age(now_secs - item.updated_at.timestamp());
        signals[Signal::Importance] = item.importance;
        signals[Signal::Frequency] = frequency(item.access_count);
        signals[Signal::Recency] =
            recency_of_age(now_secs - item.created_at.timestamp(), half_life_hours);
        signals
    }

    /// [`of_memory`](Self::of_memory) for scoring under `weights`: a signal they weigh 0
    /// is left at 0, not computed (it takes no part in a score or a breakdown; a recall
    /// reads these for every keyword hit).
    pub(crate) fn of_memory_for(
        item: &MemoryItem,
        now: DateTime<Utc>,
        half_life_hours: f64,
        weights: &ScoreWeights,
    ) -> Self {
        let now_secs = now.timestamp();
        let mut signals = Self::default();
        if weights.temporal > 0.0 {
            signals[Signal::Temporal] =
                temporal_weight_of_age(now_secs - item.updated_at.timestamp());
        }
        if weights.importance > 0.0 {
            signals[Signal::Importance] = item.importance;
        }
        if weights.frequency > 0.0 {
            signals[Signal::Frequency] = frequency(item.access_count);
        }
        if weights.recency > 0.0 {
            signals[Signal::Recency] =
                recency_of_age(now_secs - item.created_at.timestamp(), half_life_hours);
        }
        signals
    }

    /// Only `signal`, at `value`.
    pub fn only(signal: Signal, value: f32) -> Self {
        let mut signals = Self::default();
        signals[signal] = value;
        signals
    }
}

impl std::ops::Index<Signal> for Signals {
    type Output = f32;

    fn index(&self, signal: Signal) -> &f32 {
        &self.0[signal.index()]
    }
}

impl std::ops::IndexMut<Signal> for Signals {
    fn index_mut(&mut self, signal: Signal) -> &mut f32 {
        &mut self.0[signal.index()]
    }
}

fn unit(value: f32) -> f32 {
    if value.is_nan() {
        0.0
    } else {
        value.clamp(0.0, 1.0)
    }
}

/// Weights prepared for scoring many candidates: the signals with a positive weight, and the
/// weight total, worked out once instead of per candidate.
#[derive(Clone, Copy, Debug)]
pub struct PreparedWeights {
    /// `(signal, weight)` of the signals with a positive weight, in signal order.
    active: [(Signal, f32); SIGNALS],
    /// Each active weight over the total: a contribution is a product, not a division (a
    /// recall breaks down every signal of tens of results).
    shares: [f32; SIGNALS],
    len: usize,
    total: f32,
}

/// How many weighted signals there are.
const SIGNALS: usize = Signal::WEIGHTED.len();

impl ScoreWeights {
    /// These weights prepared for [`PreparedWeights::score`] and
    /// [`PreparedWeights::breakdown`].
    pub fn prepare(&self) -> PreparedWeights {
        let pairs = self.pairs();
        let total: f32 = pairs.iter().map(|(_, w)| w.max(0.0)).sum();
        let mut active = [(Signal::Relevance, 0.0); SIGNALS];
        let mut shares = [0.0; SIGNALS];
        let mut len = 0;
        if total.is_finite() && total > 0.0 {
            for (signal, weight) in pairs {
                if weight > 0.0 {
                    active[len] = (signal, weight);
                    shares[len] = weight / total;
                    len += 1;
                }
            }
        }
        PreparedWeights {
            active,
            shares,
            len,
            total,
        }
    }
}

impl PreparedWeights {
    fn active(&self) -> &[(Signal, f32)] {
        &self.active[..self.len]
    }

    /// The weighted mean of the signals (each clamped to `[0, 1]`), in `[0, 1]`; 0 when no
    /// weight is positive.
    pub fn score(&self, signals: &Signals) -> f32 {
        if self.len == 0 {
            return 0.0;
        }
        let score: f32 = self
            .active()
            .iter()
            .map(|(signal, weight)| unit(signals[*signal]) * weight)
            .sum();
        unit(score / self.total)
    }

    /// Each positively weighted signal's value and its contribution (value times normalised
    /// weight), in signal order. Kept inline: building it allocates nothing.
    pub fn breakdown(&self, signals: &Signals) -> SignalScores {
        let mut scores = SignalScores::new();
        self.breakdown_into(signals, &mut scores);
        scores
    }

    /// [`breakdown`](Self::breakdown), added to `scores` where they lie (a result's own
    /// list, filled in place rather than moved into it).
    pub fn breakdown_into(&self, signals: &Signals, scores: &mut SignalScores) {
        scores.extend(
            self.active()
                .iter()
                .zip(&self.shares)
                .map(|((signal, _), share)| {
                    let value = unit(signals[*signal]);
                    SignalScore {
                        name: *signal,
                        value,
                        contribution: value * share,
                    }
                }),
        );
    }
}

/// The weighted score of `signals` and each signal's value and contribution. Signals with
/// zero weight are left out of the breakdown. The score is in `[0, 1]`.
pub fn combine(weights: &ScoreWeights, signals: &Signals) -> (f32, SignalScores) {
    let breakdown = weights.prepare().breakdown(signals);
    let score: f32 = breakdown.iter().map(|signal| signal.contribution).sum();
    (unit(score), breakdown)
}

/// The n-gram set (terms and adjacent-term pairs) of a text, under the shared analyzer.
#[derive(Clone, Debug, Default)]
pub struct NGrams(HashSet<String>);

impl NGrams {
    /// The unigrams and bigrams of `text`'s analyzed terms.
    pub fn of(text: &str) -> Self {
        let terms = Analyzer::default().terms(text);
        let mut set: HashSet<String> = HashSet::with_capacity(terms.len() * 2);
        for pair in terms.windows(2) {
            set.insert(format!("{} {}", pair[0], pair[1]));
        }
        set.extend(terms);
        Self(set)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The Dice coefficient `2 |A ∩ B| / (|A| + |B|)`, in `[0, 1]`.
    pub fn dice(&self, other: &NGrams) -> f32 {
        let total = self.0.len() + other.0.len();
        if total == 0 {
            return 0.0;
        }
        let (small, large) = if self.0.len() <= other.0.len() {
            (self, other)
        } else {
            (other, self)
        };
        let shared = small
            .0
            .iter()
            .filter(|gram| large.0.contains(*gram))
            .count();
        2.0 * shared as f32 / total as f32
    }
}

/// Text overlap of `query` with weighted fields (title 3, summary 2, content 1 by
/// convention): the weighted mean of each non-empty field's Dice coefficient.
pub fn text_overlap(query: &NGrams, fields: &[(&str, f32)]) -> f32 {
    if query.is_empty() {
        return 0.0;
    }
    let mut sum = 0.0;
    let mut weight_sum = 0.0;
    for (text, weight) in fields {
        if text.trim().is_empty() {
            continue;
        }
        sum += weight * query.dice(&NGrams::of(text));
        weight_sum += weight;
    }
    if weight_sum > 0.0 {
        unit(sum / weight_sum)
    } else {
        0.0
    }
}

/// The temporal weight: `1 / (1 + days since at)`; future times count as now.
pub fn temporal_weight(at: DateTime<Utc>, now: DateTime<Utc>) -> f32 {
    temporal_weight_of_age(now.timestamp() - at.timestamp())
}

/// [`temporal_weight`] of a record `age_secs` seconds old (negative ages count as 0).
pub fn temporal_weight_of_age(age_secs: i64) -> f32 {
    // `1 / (1 + s / 86400)` with one division (in `f64`, so the `f32` is the same).
    (86_400.0 / (86_400.0 + age_secs.max(0) as f64)) as f32
}

/// Recency with a half-life: `0.5 ^ (age_hours / half_life_hours)`.
pub fn recency(at: DateTime<Utc>, now: DateTime<Utc>, half_life_hours: f64) -> f32 {
    recency_of_age(now.timestamp() - at.timestamp(), half_life_hours)
}

/// [`recency`] of a record `age_secs` seconds old (negative ages count as 0).
pub fn recency_of_age(age_secs: i64, half_life_hours: f64) -> f32 {
    if half_life_hours.is_nan() || half_life_hours <= 0.0 {
        return 0.0;
    }
    // `-(s / 3600) / half_life` with one division (in `f64`, so the `f32` is the same).
    let halvings = age_secs.max(0) as f64 / (3600.0 * half_life_hours);
    unit((-halvings).exp2() as f32)
}

/// Access frequency: `1 - 1 / (1 + ln(1 + count))`: 0 for never, 0.5 near 2, 0.82 at 100.
pub fn frequency(access_count: u64) -> f32 {
    if access_count == 0 {
        return 0.0;
    }
    // `1 - 1 / (1 + l)` is `l / (1 + l)`.
    let log = (access_count as f64).ln_1p();
    (log / (1.0 + log)) as f32
}

/// Reference count normalised: `c / (c + 3)`.
pub fn reference(count: usize) -> f32 {
    count as f32 / (count as f32 + 3.0)
}

/// Reciprocal rank fusion of one candidate's ranks (1-based) in the channels that found it,
/// normalised by the best possible value over `channels` channels, so it lies in `[0, 1]`.
pub fn reciprocal_rank(ranks: &[usize], k: f32, channels: usize) -> f32 {
    if channels == 0 {
        return 0.0;
    }
    let sum: f32 = ranks.iter().map(|rank| 1.0 / (k + *rank as f32)).sum();
    unit(sum / (channels as f32 / (k + 1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn dice_by_hand() {
        // terms: [rust, async] -> {rust, async, "rust async"}; [rust, trait] -> {rust, trait, "rust trait"}
        let a = NGrams::of("rust async");
        let b = NGrams::of("rust traits");
        assert!(close(a.dice(&b), 2.0 * 1.0 / 6.0));
        assert!(close(a.dice(&a), 1.0));
        assert_eq!(a.dice(&NGrams::of("")), 0.0);
        assert_eq!(NGrams::of("").dice(&NGrams::of("")), 0.0);
    }

    #[test]
    fn overlap_weighs_title_above_content() {
        let query = NGrams::of("rust async");
        let in_title = text_overlap(
            &query,
            &[("rust async", 3.0), ("", 2.0), ("something else", 1.0)],
        );
        let in_content = text_overlap(
            &query,
            &[("something else", 3.0), ("", 2.0), ("rust async", 1.0)],
        );
        assert!(close(in_title, 0.75), "{in_title}");
        assert!(close(in_content, 0.25), "{in_content}");
        assert_eq!(text_overlap(&NGrams::of("the"), &[("rust", 1.0)]), 0.0);
    }

    #[test]
    fn time_signals_by_hand() {
        let now: DateTime<Utc> = "2024-01-10T00:00:00Z".parse().unwrap();
        assert!(close(temporal_weight(now - Duration::days(1), now), 0.5));
        assert!(close(temporal_weight(now - Duration::days(3), now), 0.25));
        assert!(close(temporal_weight(now + Duration::days(3), now), 1.0));
        assert!(close(recency(now - Duration::hours(24), now, 24.0), 0.5));
        assert!(close(recency(now - Duration::hours(48), now, 24.0), 0.25));
        assert_eq!(recency(now, now, 0.0), 0.0);
        assert_eq!(recency(now, now, f64::NAN), 0.0);
    }

    #[test]
    fn counts_by_hand() {
        assert_eq!(frequency(0), 0.0);
        assert!(close(frequency(100), 1.0 - 1.0 / (1.0 + 101f32.ln())));
        assert_eq!(reference(0), 0.0);
        assert!(close(reference(3), 0.5));
        assert!(close(reciprocal_rank(&[1, 1], 60.0, 2), 1.0));
        assert!(close(reciprocal_rank(&[1], 60.0, 2), 0.5));
        assert!(close(reciprocal_rank(&[2], 60.0, 1), 61.0 / 62.0));
        assert_eq!(reciprocal_rank(&[], 60.0, 0), 0.0);
    }

    #[test]
    fn combine_normalises_and_explains() {
        let weights = ScoreWeights::overlap_hybrid();
        let mut signals = Signals::default();
        signals[Signal::Overlap] = 1.0;
        signals[Signal::Graph] = 0.5;
        signals[Signal::Reference] = 1.0;
        signals[Signal::Relevance] = 0.9;
        let (score, breakdown) = combine(&weights, &signals);
        assert!(close(score, 0.5 + 0.1 + 0.2), "{score}");
        assert_eq!(breakdown.len(), 4, "zero-weight signals are left out");
        assert!(close(
            breakdown.iter().map(|s| s.contribution).sum::<f32>(),
            score
        ));
        let (score, _) = combine(
            &ScoreWeights {
                overlap: 2.0,
                ..ScoreWeights::overlap_hybrid()
            },
            &Signals::only(Signal::Overlap, f32::NAN),
        );
        assert_eq!(score, 0.0, "NaN signals count as 0");
        let (score, _) = combine(
            &ScoringStrategy::GraphDistance.weights(),
            &Signals::only(Signal::Graph, 7.0),
        );
        assert_eq!(score, 1.0, "signals are clamped to [0, 1]");
    }

    #[test]
    fn weights_validate() {
        for bad in [f32::NAN, f32::INFINITY, -0.1] {
            let weights = ScoreWeights {
                overlap: bad,
                ..ScoreWeights::default()
            };
            let error = weights.validate().unwrap_err();
            assert!(
                matches!(error, MemoryError::InvalidInput { field: ref m, .. } if m.contains("weights.overlap")),
                "{error}"
            );
        }
        let zero = ScoringStrategy::Relevance.weights();
        assert!(zero.validate().is_ok());
        let none = ScoreWeights {
            relevance: 0.0,
            ..ScoringStrategy::GraphDistance.weights()
        };
        assert!(ScoreWeights { graph: 0.0, ..none }.validate().is_err());
        // Each finite, the sum not: refused, or every score would be 0.
        let huge = ScoreWeights {
            relevance: f32::MAX,
            recency: f32::MAX,
            ..ScoreWeights::default()
        };
        let error = huge.validate().unwrap_err();
        assert!(error.to_string().contains("weights"), "{error}");
    }

    /// A misspelt weight is refused by name, not read as a weight of 0.
    #[test]
    fn an_unknown_weight_is_refused() {
        let typo = r#"{"strategy": "hybrid", "relevance": 1, "contxt": 0.5}"#;
        let error = serde_json::from_str::<ScoringStrategy>(typo).unwrap_err();
        assert!(error.to_string().contains("contxt"), "{error}");
        let good = r#"{"strategy": "hybrid", "relevance": 1, "context": 0.5}"#;
        let read: ScoringStrategy = serde_json::from_str(good).unwrap();
        assert_eq!(read.weights().context, 0.5);
    }
}
