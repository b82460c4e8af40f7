//! Scoring: pure functions of (candidate, query, now) that turn signals into one score in
//! `[0, 1]` with an explainable breakdown.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use memory_core::text::Analyzer;
use memory_core::{MemoryError, Result, SignalScore};
use serde::{Deserialize, Serialize};

/// Weights of the hybrid score. Each is finite and `>= 0`, at least one is positive; they
/// are normalised to sum to 1, so a score stays in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
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

/// The defaults were chosen on the LoCoMo development split (see the README's evaluation
/// section): channel relevance carries the ranking; importance, access frequency and recency
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
    /// The seed's four-weight hybrid (overlap 0.5, graph 0.2, temporal 0.1, reference 0.2).
    pub fn seed() -> Self {
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

    fn pairs(&self) -> [(&'static str, f32); SIGNALS] {
        [
            ("relevance", self.relevance),
            ("overlap", self.overlap),
            ("graph", self.graph),
            ("temporal", self.temporal),
            ("reference", self.reference),
            ("importance", self.importance),
            ("frequency", self.frequency),
            ("recency", self.recency),
            ("context", self.context),
            ("embedding", self.embedding),
        ]
    }

    /// Checks every weight.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the weight that is NaN, infinite or negative, or
    /// `weights` when all are zero.
    pub fn validate(&self) -> Result<()> {
        for (name, weight) in self.pairs() {
            if !weight.is_finite() || weight < 0.0 {
                return Err(MemoryError::invalid(
                    &format!("weights.{name}"),
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
        Ok(())
    }
}

/// How a candidate's score is computed (the seed's strategies plus channel relevance).
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

/// The signals of one candidate, each in `[0, 1]` (0 when it does not apply).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    /// See [`ScoreWeights::relevance`].
    pub relevance: f32,
    /// See [`ScoreWeights::overlap`].
    pub overlap: f32,
    /// See [`ScoreWeights::graph`].
    pub graph: f32,
    /// See [`ScoreWeights::temporal`].
    pub temporal: f32,
    /// See [`ScoreWeights::reference`].
    pub reference: f32,
    /// See [`ScoreWeights::importance`].
    pub importance: f32,
    /// See [`ScoreWeights::frequency`].
    pub frequency: f32,
    /// See [`ScoreWeights::recency`].
    pub recency: f32,
    /// See [`ScoreWeights::context`].
    pub context: f32,
    /// See [`ScoreWeights::embedding`].
    pub embedding: f32,
}

impl Signals {
    fn values(&self) -> [f32; SIGNALS] {
        [
            self.relevance,
            self.overlap,
            self.graph,
            self.temporal,
            self.reference,
            self.importance,
            self.frequency,
            self.recency,
            self.context,
            self.embedding,
        ]
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
    /// `(signal index, name, weight)` of the signals with a positive weight, in signal order.
    active: [(usize, &'static str, f32); SIGNALS],
    len: usize,
    total: f32,
}

/// How many signals there are.
const SIGNALS: usize = 10;

impl ScoreWeights {
    /// These weights prepared for [`PreparedWeights::score`] and
    /// [`PreparedWeights::breakdown`].
    pub fn prepare(&self) -> PreparedWeights {
        let pairs = self.pairs();
        let total: f32 = pairs.iter().map(|(_, w)| w.max(0.0)).sum();
        let mut active = [(0, "", 0.0); SIGNALS];
        let mut len = 0;
        if total.is_finite() && total > 0.0 {
            for (index, (name, weight)) in pairs.into_iter().enumerate() {
                if weight > 0.0 {
                    active[len] = (index, name, weight);
                    len += 1;
                }
            }
        }
        PreparedWeights { active, len, total }
    }
}

impl PreparedWeights {
    fn active(&self) -> &[(usize, &'static str, f32)] {
        &self.active[..self.len]
    }

    /// The weighted mean of the signals (each clamped to `[0, 1]`), in `[0, 1]`; 0 when no
    /// weight is positive.
    pub fn score(&self, signals: &Signals) -> f32 {
        if self.len == 0 {
            return 0.0;
        }
        let values = signals.values();
        let score: f32 = self
            .active()
            .iter()
            .map(|(index, _, weight)| unit(values[*index]) * weight)
            .sum();
        unit(score / self.total)
    }

    /// Each positively weighted signal's value and its contribution (value times normalised
    /// weight), in signal order.
    pub fn breakdown(&self, signals: &Signals) -> Vec<SignalScore> {
        let values = signals.values();
        self.active()
            .iter()
            .map(|(index, name, weight)| {
                let value = unit(values[*index]);
                SignalScore {
                    name: (*name).into(),
                    value,
                    contribution: value * weight / self.total,
                }
            })
            .collect()
    }
}

/// The weighted mean of `signals` (each clamped to `[0, 1]`) under `weights`, in `[0, 1]`;
/// 0 when no weight is positive. To score many candidates, [`ScoreWeights::prepare`] once.
pub fn weighted_score(weights: &ScoreWeights, signals: &Signals) -> f32 {
    weights.prepare().score(signals)
}

/// The weighted score of `signals` and each signal's value and contribution. Signals with
/// zero weight are left out of the breakdown. The score is in `[0, 1]`.
pub fn combine(weights: &ScoreWeights, signals: &Signals) -> (f32, Vec<SignalScore>) {
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

/// The seed's temporal weight: `1 / (1 + days since at)`; future times count as now.
pub fn temporal_weight(at: DateTime<Utc>, now: DateTime<Utc>) -> f32 {
    temporal_weight_of_age(now.timestamp() - at.timestamp())
}

/// [`temporal_weight`] of a record `age_secs` seconds old (negative ages count as 0).
pub fn temporal_weight_of_age(age_secs: i64) -> f32 {
    let days = age_secs.max(0) as f64 / 86_400.0;
    (1.0 / (1.0 + days)) as f32
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
    let hours = age_secs.max(0) as f64 / 3600.0;
    unit((-hours / half_life_hours).exp2() as f32)
}

/// Access frequency: `1 - 1 / (1 + ln(1 + count))`: 0 for never, 0.5 near 2, 0.82 at 100.
pub fn frequency(access_count: u64) -> f32 {
    let log = (access_count as f64).ln_1p();
    (1.0 - 1.0 / (1.0 + log)) as f32
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
        let weights = ScoreWeights::seed();
        let signals = Signals {
            overlap: 1.0,
            graph: 0.5,
            temporal: 0.0,
            reference: 1.0,
            relevance: 0.9,
            ..Signals::default()
        };
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
                ..ScoreWeights::seed()
            },
            &Signals {
                overlap: f32::NAN,
                ..Signals::default()
            },
        );
        assert_eq!(score, 0.0, "NaN signals count as 0");
        let (score, _) = combine(
            &ScoringStrategy::GraphDistance.weights(),
            &Signals {
                graph: 7.0,
                ..Signals::default()
            },
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
                matches!(error, MemoryError::InvalidInput(ref m) if m.contains("weights.overlap")),
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
    }
}
