//! The reranking stage: a [`Reranker`] rescores the best fused candidates before the
//! `min_score` and `max_results` cut.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::text::Analyzer;
use memory_core::{
    MemoryError, Result, RetrievalSource, ScoredItem, Signal, SignalScore, TermPositions,
};
use serde::{Deserialize, Serialize};

mod head;

pub(crate) use self::head::{HeadOrder, movable_in_head, reorder_head};

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
#[serde(default, deny_unknown_fields)]
pub struct RerankConfig {
    /// How many of the best fused candidates are reranked (default 30).
    pub depth: usize,
    /// The reranker's share of the final score, in `[0, 1]` (default 0.3): a reranked
    /// candidate scores `(1 - weight) * fused + weight * reranker`. Candidates below the
    /// depth keep only the fused share, so they stay below the reranked ones they were below;
    /// at a weight of 1 that share is 0 and they are cut, so only the reranked `depth` can
    /// be returned.
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

/// The texts a reranker reads for `items` (see [`document`]).
fn documents(items: &[ScoredItem]) -> Vec<Cow<'_, str>> {
    items.iter().map(|item| document(&item.record)).collect()
}

/// The text a reranker reads for a record: a memory's content, a page's title and summary,
/// an entity's name and description.
fn document(record: &RetrievalSource) -> Cow<'_, str> {
    match record {
        RetrievalSource::Memory(item) => Cow::Borrowed(&item.content),
        RetrievalSource::KnowledgePage(page) => {
            Cow::Owned(format!("{}\n{}", page.title, page.summary))
        }
        RetrievalSource::GraphEntity(entity) => {
            Cow::Owned(format!("{}\n{}", entity.name, entity.description))
        }
    }
}

/// Reranks the head of `items` (best first) and re-sorts them; the caller cuts afterwards.
/// Each result's score becomes `(1 - weight) * fused + weight * measure` (the measure 0 past
/// the depth), explained by a [`Signal::Rerank`] contribution; a stale result is kept under
/// every result fused above it that is not stale. A failing reranker leaves the items as
/// they are.
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
    let documents = documents(&items[..depth]);
    let borrowed: Vec<&str> = documents.iter().map(|document| &**document).collect();
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
    // The least score so far of the results that are not stale, in the fused order: a stale
    // result (ended, or the older of a pair) is never lifted above one fused above it, as
    // fusion put it under the newer memory of its pair.
    let mut floor = f32::INFINITY;
    for (at, item) in items.iter_mut().enumerate() {
        let before = item.score;
        let (value, blended) = match scores.get(at) {
            Some(score) => {
                let value = if score.is_finite() {
                    score.clamp(0.0, 1.0)
                } else {
                    0.0
                };
                (value, (1.0 - weight) * before + weight * value)
            }
            // Past the depth: the fused score's share alone, and no measure.
            None => (0.0, (1.0 - weight) * before),
        };
        let after = if item.breakdown.value(Signal::Stale).is_some() {
            blended.min(floor * 0.99)
        } else {
            floor = floor.min(blended);
            blended
        };
        item.breakdown.signals.push(SignalScore {
            name: Signal::Rerank,
            value,
            contribution: after - before,
        });
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
    term_scores_of(&Analyzer::default().query_terms(query), documents, &[])
}

/// Query terms looked up by a scan of the list up to this many, by a hash map beyond.
const SCANNED_QUERY_TERMS: usize = 16;

/// The scores of [`TermReranker`] for a query already analysed into `query_terms`.
/// `known[d]`, when given, is where the query's terms stand in document `d`
/// ([`MemoryStore::term_positions`](memory_core::MemoryStore::term_positions)): that
/// document is not analysed.
fn term_scores_of(
    query_terms: &[String],
    documents: &[impl AsRef<str>],
    known: &[Option<TermPositions>],
) -> Vec<f32> {
    let analyzer = Analyzer::default();
    if query_terms.is_empty() {
        return vec![0.0; documents.len()];
    }
    let index: Option<HashMap<&str, usize>> =
        (query_terms.len() > SCANNED_QUERY_TERMS).then(|| {
            query_terms
                .iter()
                .enumerate()
                .map(|(at, term)| (term.as_str(), at))
                .collect()
        });
    let position_of = |term: &str| match &index {
        Some(index) => index.get(term).copied(),
        None => query_terms.iter().position(|known| known == term),
    };
    let starts = TermStarts::of(query_terms);
    let may_start = |first: u8, second: u8| starts.may_start(first, second);
    // Every document's query terms with their positions, one document after another:
    // document `d` holds `found[ends[d - 1]..ends[d]]` (from 0 for the first).
    let terms = query_terms.len();
    let mut found: Vec<(usize, usize)> = Vec::with_capacity(64);
    let mut ends: Vec<usize> = Vec::with_capacity(documents.len());
    for (at, document) in documents.iter().enumerate() {
        if let Some(Some(positions)) = known
            .get(at)
            .filter(|known| known.as_ref().is_some_and(|list| in_order(list)))
        {
            // A term out of range is none.
            found.extend(
                positions
                    .iter()
                    .map(|&(position, term)| (position as usize, term as usize))
                    .filter(|(_, term)| *term < terms),
            );
            ends.push(found.len());
            continue;
        }
        let position = std::cell::Cell::new(0usize);
        analyzer.for_each_term_where(
            document.as_ref(),
            &may_start,
            |term| {
                if let Some(at) = position_of(term) {
                    found.push((position.get(), at));
                }
                position.set(position.get() + 1);
            },
            || position.set(position.get() + 1),
        );
        ends.push(found.len());
    }
    let of = |document: usize| {
        let begin = document.checked_sub(1).map_or(0, |previous| ends[previous]);
        &found[begin..ends[document]]
    };
    // `seen[d * terms + t]`: document `d` holds query term `t`; `weights[t]` first counts
    // the documents holding `t`, then weighs `t` by its rarity among them.
    let mut seen = vec![false; documents.len() * terms];
    let mut weights = vec![0.0f32; terms];
    for (document, row) in seen.chunks_exact_mut(terms).enumerate() {
        for &(_, term) in of(document) {
            if !row[term] {
                row[term] = true;
                weights[term] += 1.0;
            }
        }
    }
    let count = documents.len() as f32;
    for weight in &mut weights {
        *weight = (1.0 + (count + 1.0) / (*weight + 0.5)).ln();
    }
    let total: f32 = weights.iter().sum();
    let mut counts = vec![0usize; terms];
    seen.chunks_exact(terms)
        .enumerate()
        .map(|(document, row)| {
            let covered: f32 = row
                .iter()
                .zip(&weights)
                .filter(|(seen, _)| **seen)
                .map(|(_, weight)| weight)
                .sum();
            let coverage = if total > 0.0 { covered / total } else { 0.0 };
            let distinct = row.iter().filter(|seen| **seen).count();
            let proximity = if distinct >= 2 {
                distinct as f32 / shortest_span(of(document), &mut counts, distinct) as f32
            } else {
                0.0
            };
            (0.8 * coverage + 0.2 * proximity.min(1.0)).clamp(0.0, 1.0)
        })
        .collect()
}

/// The first two bytes of some terms, for
/// [`Analyzer::for_each_term_where`](memory_core::text::Analyzer::for_each_term_where): a
/// word starting otherwise is not stemmed, only counted. An English stem starts with its
/// word's first two letters, but for a second "y" that becomes "i" ("dying" -> "die"); a
/// word of one letter is its own term.
pub(crate) struct TermStarts {
    single: [bool; 256],
    pairs: Vec<[u8; 2]>,
}

impl TermStarts {
    /// The starts of `terms`.
    pub(crate) fn of(terms: &[String]) -> Self {
        let mut single = [false; 256];
        let mut pairs: Vec<[u8; 2]> = Vec::with_capacity(terms.len());
        for term in terms {
            match term.as_bytes() {
                [only] => single[usize::from(*only)] = true,
                [first, second, ..] => pairs.push([*first, *second]),
                [] => {}
            }
        }
        Self { single, pairs }
    }

    /// Whether a word whose first two bytes are `first` and `second` (0 for a word of one
    /// byte) may stem to one of the terms.
    pub(crate) fn may_start(&self, first: u8, second: u8) -> bool {
        match second {
            0 => self.single[usize::from(first)],
            _ => self.pairs.iter().any(|pair| {
                pair[0] == first && (pair[1] == second || (second == b'y' && pair[1] == b'i'))
            }),
        }
    }
}

/// Whether `positions` go by position, as a store must give them.
fn in_order(positions: &[(u32, u32)]) -> bool {
    positions.windows(2).all(|pair| pair[0].0 <= pair[1].0)
}

/// The length (in terms) of the shortest stretch of `found` (position, query term) that
/// holds `distinct` different query terms. `counts` has a slot per query term.
fn shortest_span(found: &[(usize, usize)], counts: &mut [usize], distinct: usize) -> usize {
    counts.fill(0);
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
        // Words the filter passes on to the stemmer: a second "y" that stems to "i", and a
        // term of one letter.
        let lying = term_scores("who lied", &["she was lying down", "nothing"]);
        assert!(lying[0] > 0.0 && lying[1] == 0.0, "{lying:?}");
        let single = term_scores("plan b", &["b is the plan", "plan c"]);
        assert!(single[0] > single[1], "{single:?}");
    }

    /// Positions a store tells give the measure the text gives; positions out of order are
    /// not trusted (the text is read) and a term out of range is none, never a panic.
    #[test]
    fn positions_told_measure_as_the_text_does() {
        let terms = Analyzer::default().query_terms("cat owner running café");
        let documents = [
            "The cat's owner was running after the café cat",
            "a dog and its owner",
            "running late, the cat sat",
            "nothing here",
        ];
        let analysed = term_scores_of(&terms, &documents, &[]);
        let told: Vec<Option<TermPositions>> = documents
            .iter()
            .map(|text| Some(Analyzer::default().term_positions(text, &terms)))
            .collect();
        assert_eq!(term_scores_of(&terms, &documents, &told), analysed);
        // Some told, some not, and fewer answers than documents.
        let partly = [None, told[1].clone()];
        assert_eq!(term_scores_of(&terms, &documents, &partly), analysed);
        // Out of order: read from the text instead.
        let mut shuffled = told.clone();
        if let Some(Some(first)) = shuffled.first_mut() {
            first.reverse();
        }
        assert_eq!(term_scores_of(&terms, &documents, &shuffled), analysed);
        // A term the query does not have: left out.
        let mut stray = told;
        stray[3] = Some(vec![(0, 99), (1, u32::MAX)]);
        assert_eq!(term_scores_of(&terms, &documents, &stray), analysed);
    }
}
