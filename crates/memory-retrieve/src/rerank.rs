//! The reranking stage: a [`Reranker`] rescores the best fused candidates before the
//! `min_score` and `max_results` cut.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::text::Analyzer;
use memory_core::{MemoryError, Result, RetrievalSource, ScoredItem, Signal, SignalScore};
use serde::{Deserialize, Serialize};

/// Rescores candidates against the query: a cross-encoder, or the deterministic
/// [`TermReranker`].
#[async_trait]
pub trait Reranker: Send + Sync + Debug + 'static {
    /// A relevance score in `[0, 1]` for each of `documents` against `query`, in the order
    /// of `documents`.
    ///
    /// # Errors
    /// Any error: the recall then keeps the fused order (the failure is logged), so a
    /// reranker that is down never fails a recall.
    async fn rerank(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>>;
}

#[async_trait]
impl<T: Reranker + ?Sized> Reranker for Arc<T> {
    async fn rerank(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        (**self).rerank(query, documents).await
    }
}

/// How the reranking stage applies.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RerankConfig {
    /// How many of the best fused candidates are reranked (default 30).
    pub depth: usize,
    /// The reranker's share of the final score, in `[0, 1]` (default 0.3): a reranked
    /// candidate scores `(1 - weight) * fused + weight * reranker`. Candidates below the
    /// depth keep only the fused share, so they stay below the reranked ones they were below.
    pub weight: f32,
}

impl Default for RerankConfig {
    fn default() -> Self {
        Self {
            depth: 30,
            weight: 0.3,
        }
    }
}

impl RerankConfig {
    /// Checks the settings.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `depth` (0 or over 1,000) or `weight` (outside
    /// `[0, 1]`).
    pub fn validate(&self) -> Result<()> {
        if self.depth == 0 || self.depth > 1000 {
            return Err(MemoryError::invalid("depth", "must be between 1 and 1000"));
        }
        memory_core::backend::validate_unit("weight", self.weight)
    }
}

/// The text a reranker reads for a record: a memory's content, a page's title and summary,
/// an entity's name and description.
fn document(record: &RetrievalSource) -> String {
    match record {
        RetrievalSource::Memory(item) => item.content.clone(),
        RetrievalSource::KnowledgePage(page) => format!("{}\n{}", page.title, page.summary),
        RetrievalSource::GraphEntity(entity) => {
            format!("{}\n{}", entity.name, entity.description)
        }
    }
}

/// Reranks the head of `items` (best first) and re-sorts them; the caller cuts afterwards.
/// A failing reranker leaves the items as they are.
pub(crate) async fn apply(
    reranker: &dyn Reranker,
    config: &RerankConfig,
    query: &str,
    mut items: Vec<ScoredItem>,
) -> Vec<ScoredItem> {
    let depth = config.depth.min(items.len());
    if depth == 0 {
        return items;
    }
    let documents: Vec<String> = items[..depth]
        .iter()
        .map(|item| document(&item.record))
        .collect();
    let borrowed: Vec<&str> = documents.iter().map(String::as_str).collect();
    let scores = match reranker.rerank(query, &borrowed).await {
        Ok(scores) if scores.len() == depth => scores,
        Ok(scores) => {
            tracing::warn!(
                expected = depth,
                got = scores.len(),
                "reranker answered for a different number of documents; fused order kept"
            );
            return items;
        }
        Err(error) => {
            tracing::warn!(%error, "reranker failed; fused order kept");
            return items;
        }
    };
    let weight = config.weight;
    for (at, item) in items.iter_mut().enumerate() {
        let before = item.score;
        let after = match scores.get(at) {
            Some(score) => {
                let value = if score.is_finite() {
                    score.clamp(0.0, 1.0)
                } else {
                    0.0
                };
                let after = (1.0 - weight) * before + weight * value;
                item.breakdown.signals.push(SignalScore {
                    name: Signal::Rerank,
                    value,
                    contribution: after - before,
                });
                after
            }
            None => (1.0 - weight) * before,
        };
        item.score = after;
    }
    // Stable: equal scores keep the fused order.
    items.sort_by(|a, b| b.score.total_cmp(&a.score));
    items
}

/// The deterministic reranker: how much of the query a candidate covers, and how close
/// together the covered terms stand.
///
/// Query terms are weighted by their rarity among the candidates being reranked (a term
/// every candidate has counts little). A candidate scores `0.8 * coverage + 0.2 *
/// proximity`: coverage is the weighted share of the query's terms in its text, proximity
/// the number of distinct query terms in the shortest stretch of text holding all of them
/// found, over the stretch's length (1 when they stand together). Terms are analysed like
/// the search (stemmed, stop words out), so "running" covers "run".
#[derive(Clone, Copy, Debug, Default)]
pub struct TermReranker;

#[async_trait]
impl Reranker for TermReranker {
    async fn rerank(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        Ok(term_scores(query, documents))
    }
}

/// The scores of [`TermReranker`].
fn term_scores(query: &str, documents: &[&str]) -> Vec<f32> {
    let analyzer = Analyzer::default();
    let query_terms = analyzer.query_terms(query);
    if query_terms.is_empty() {
        return vec![0.0; documents.len()];
    }
    let index: HashMap<&str, usize> = query_terms
        .iter()
        .enumerate()
        .map(|(at, term)| (term.as_str(), at))
        .collect();
    // Each document as the positions of query terms in it.
    let hits: Vec<Vec<(usize, usize)>> = documents
        .iter()
        .map(|document| {
            let mut found = Vec::new();
            let mut position = 0;
            analyzer.for_each_term(document, |term| {
                if let Some(&at) = index.get(term) {
                    found.push((position, at));
                }
                position += 1;
            });
            found
        })
        .collect();
    let mut frequency = vec![0usize; query_terms.len()];
    for found in &hits {
        let mut seen = vec![false; query_terms.len()];
        for &(_, term) in found {
            if !seen[term] {
                seen[term] = true;
                frequency[term] += 1;
            }
        }
    }
    let count = documents.len() as f32;
    let weights: Vec<f32> = frequency
        .iter()
        .map(|&df| (1.0 + (count + 1.0) / (df as f32 + 0.5)).ln())
        .collect();
    let total: f32 = weights.iter().sum();
    hits.iter()
        .map(|found| {
            let mut seen = vec![false; query_terms.len()];
            for &(_, term) in found {
                seen[term] = true;
            }
            let covered: f32 = seen
                .iter()
                .zip(&weights)
                .filter(|(seen, _)| **seen)
                .map(|(_, weight)| weight)
                .sum();
            let coverage = if total > 0.0 { covered / total } else { 0.0 };
            let distinct = seen.iter().filter(|seen| **seen).count();
            let proximity = if distinct >= 2 {
                distinct as f32 / shortest_span(found, query_terms.len(), distinct) as f32
            } else {
                0.0
            };
            (0.8 * coverage + 0.2 * proximity.min(1.0)).clamp(0.0, 1.0)
        })
        .collect()
}

/// The length (in terms) of the shortest stretch of `found` (position, query term) that
/// holds `distinct` different query terms.
fn shortest_span(found: &[(usize, usize)], terms: usize, distinct: usize) -> usize {
    let mut counts = vec![0usize; terms];
    let mut have = 0;
    let mut best = usize::MAX;
    let mut start = 0;
    for end in 0..found.len() {
        let term = found[end].1;
        counts[term] += 1;
        if counts[term] == 1 {
            have += 1;
        }
        while have == distinct {
            best = best.min(found[end].0 - found[start].0 + 1);
            let first = found[start].1;
            counts[first] -= 1;
            if counts[first] == 0 {
                have -= 1;
            }
            start += 1;
        }
    }
    best.max(distinct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_and_proximity_order() {
        let scores = term_scores(
            "Caroline adoption agency",
            &[
                "Caroline went hiking",
                "Caroline called the adoption agency today",
                "the agency for adoption, and much later that week Caroline",
                "nothing relevant here",
            ],
        );
        assert!(scores[1] > scores[2], "{scores:?}");
        assert!(scores[2] > scores[0], "{scores:?}");
        assert_eq!(scores[3], 0.0);
        assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)));
        assert_eq!(term_scores("the of", &["a"]), vec![0.0]);
    }
}
