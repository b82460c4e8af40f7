//! [`SignalScores`]: the signals of a result's score, kept inline.
//!
//! A recall returns tens of results, each with its breakdown. The signals were a vector
//! each: one heap allocation per result (a third of a recall's allocations) and one free
//! when the result is dropped. The usual ten fit inline, so a breakdown is allocated only
//! when a caller weighs more signals or adds reranking stages. The list reads as a slice (`Deref`)
//! and serialises as the list it replaces.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;

use super::SignalScore;

/// How many signals fit inline: the default weights' six, and room for what a result may
/// add after them (the time's and staleness's penalties, the reranking's share). More
/// spill to the heap; a larger list made every result's moves dearer for nothing.
const INLINE: usize = 10;

/// The signals of a result's score, in the order they were added: each weighted signal's
/// value and contribution, then the penalties and reranking shares after it.
#[derive(Clone, Default, PartialEq)]
pub struct SignalScores(SmallVec<[SignalScore; INLINE]>);

impl SignalScores {
    /// How many signals the list holds without allocating.
    pub const INLINE: usize = INLINE;

    /// An empty list.
    pub fn new() -> Self {
        Self(SmallVec::new())
    }

    /// Adds `score` at the end.
    pub fn push(&mut self, score: SignalScore) {
        self.0.push(score);
    }

    /// The signals, in the order they were added.
    pub fn as_slice(&self) -> &[SignalScore] {
        &self.0
    }

    /// The signals, to change in place.
    pub fn as_mut_slice(&mut self) -> &mut [SignalScore] {
        &mut self.0
    }
}

impl std::ops::Deref for SignalScores {
    type Target = [SignalScore];
    fn deref(&self) -> &[SignalScore] {
        self.as_slice()
    }
}

impl std::ops::DerefMut for SignalScores {
    fn deref_mut(&mut self) -> &mut [SignalScore] {
        self.as_mut_slice()
    }
}

impl fmt::Debug for SignalScores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq<[SignalScore]> for SignalScores {
    fn eq(&self, other: &[SignalScore]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<SignalScore>> for SignalScores {
    fn eq(&self, other: &Vec<SignalScore>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl FromIterator<SignalScore> for SignalScores {
    fn from_iter<I: IntoIterator<Item = SignalScore>>(scores: I) -> Self {
        Self(scores.into_iter().collect())
    }
}

impl Extend<SignalScore> for SignalScores {
    fn extend<I: IntoIterator<Item = SignalScore>>(&mut self, scores: I) {
        self.0.extend(scores);
    }
}

impl<'a> IntoIterator for &'a SignalScores {
    type Item = &'a SignalScore;
    type IntoIter = std::slice::Iter<'a, SignalScore>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<'a> IntoIterator for &'a mut SignalScores {
    type Item = &'a mut SignalScore;
    type IntoIter = std::slice::IterMut<'a, SignalScore>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_mut_slice().iter_mut()
    }
}

impl From<Vec<SignalScore>> for SignalScores {
    fn from(scores: Vec<SignalScore>) -> Self {
        Self(SmallVec::from_vec(scores))
    }
}

impl From<SignalScores> for Vec<SignalScore> {
    fn from(scores: SignalScores) -> Self {
        scores.0.into_vec()
    }
}

impl Serialize for SignalScores {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for SignalScores {
    /// A list of signal scores, as serialised.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<SignalScore>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Signal;

    fn score(name: Signal, value: f32) -> SignalScore {
        SignalScore {
            name,
            value,
            contribution: value / 2.0,
        }
    }

    #[test]
    fn signals_keep_their_order_and_read_as_a_slice() {
        let mut scores = SignalScores::new();
        scores.push(score(Signal::Relevance, 0.8));
        scores.push(score(Signal::Time, 0.5));
        assert_eq!(scores.len(), 2);
        assert_eq!(scores[1].name, Signal::Time);
        for signal in &mut scores {
            signal.contribution = 0.0;
        }
        assert_eq!(
            Vec::from(scores.clone()),
            vec![
                SignalScore {
                    contribution: 0.0,
                    ..score(Signal::Relevance, 0.8)
                },
                SignalScore {
                    contribution: 0.0,
                    ..score(Signal::Time, 0.5)
                },
            ]
        );
        assert_eq!(
            format!("{scores:?}"),
            format!("{:?}", scores.as_slice()),
            "debugs as the list"
        );
    }

    #[test]
    fn more_signals_than_fit_inline_are_all_kept() {
        let many: SignalScores = (0..SignalScores::INLINE * 2)
            .map(|at| score(Signal::Rerank, at as f32 / 100.0))
            .collect();
        assert_eq!(many.len(), SignalScores::INLINE * 2);
        assert!(
            many.iter()
                .enumerate()
                .all(|(at, s)| s.value == at as f32 / 100.0)
        );
    }

    #[test]
    fn signals_serialise_as_the_list_they_replace() {
        let scores: SignalScores = [score(Signal::Relevance, 0.5), score(Signal::Stale, 0.25)]
            .into_iter()
            .collect();
        let json = serde_json::to_string(&scores).unwrap();
        let list: Vec<SignalScore> = scores.clone().into();
        assert_eq!(json, serde_json::to_string(&list).unwrap());
        assert_eq!(
            json,
            r#"[{"name":"relevance","value":0.5,"contribution":0.25},{"name":"stale","value":0.25,"contribution":0.125}]"#
        );
        let back: SignalScores = serde_json::from_str(&json).unwrap();
        assert_eq!(back, scores);
        assert!(serde_json::from_str::<SignalScores>(r#"[{"name":"nope"}]"#).is_err());
    }
}
