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

/// Puts the first `depth` of `items` (best first) in order again by `(1 - weight) * score
/// + weight * ` [`TermReranker`]'s measure, times the [asking factor](asking_factor) of a
/// memory whose sentences ask, plus the number bonus ([`HeadOrder`]), ties in their order.
/// `known`, when given,
/// tells where the query's terms stand in the items' texts, in order (see
/// [`term_scores_of`]). Each takes the score of the
/// place it moves to, so the scores stay in order and the same, and the move is its
/// [`Signal::Rerank`] contribution (its measure the value).
///
/// Only memories indexed with a [context](memory_core::MemoryItem::context) move: the
/// reordering tells a text from the neighbours it was found through, and a memory searched
/// by its own text alone was already ranked by it. The others keep their places and the
/// movable ones are reordered among the remaining places. So does a memory marked stale
/// ([`Signal::Stale`]: ended, or the older of two conflicting or answering facts): the old
/// wording of a fact often holds the question's words better than the update ("lives in
/// Paris" against "moved to Berlin"), and must not climb back above it.
/// How [`reorder_head`] orders the head: the `depth` first results by `(1 - weight) *
/// score + weight * term measure`, times the [asking factor](asking_factor) of
/// `question_factor`, plus `number_bonus` for a result that [holds a
/// number](crate::quantity::holds_number) (0 unless the query asks for a quantity).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeadOrder {
    pub(crate) depth: usize,
    pub(crate) weight: f32,
    pub(crate) question_factor: f32,
    pub(crate) number_bonus: f32,
}

impl HeadOrder {
    /// By the term measure alone: no question factor, no number bonus.
    #[cfg(test)]
    pub(crate) fn by_terms(depth: usize, weight: f32) -> Self {
        Self {
            depth,
            weight,
            question_factor: 1.0,
            number_bonus: 0.0,
        }
    }
}

pub(crate) fn reorder_head(
    query_terms: &[String],
    items: &mut [ScoredItem],
    order_by: HeadOrder,
    known: &[Option<TermPositions>],
) {
    let HeadOrder {
        depth,
        weight,
        question_factor,
        number_bonus,
    } = order_by;
    /// The deepest head reordered: places are kept in fixed arrays, not allocated.
    const DEEPEST: usize = 128;
    const _: () = assert!(crate::retriever::MAX_HEAD_RERANK_DEPTH <= DEEPEST);
    let head_len = depth.min(items.len()).min(DEEPEST);
    if head_len < 2 {
        return;
    }
    let head = &mut items[..head_len];
    // The places whose results may move, best first.
    let mut movable = [0u8; DEEPEST];
    let mut moving = 0;
    for (at, item) in head.iter().enumerate() {
        if movable_in_head(item) {
            movable[moving] = at as u8;
            moving += 1;
        }
    }
    let movable = &movable[..moving];
    if movable.len() < 2 {
        return;
    }
    let measures = term_scores_of(query_terms, &documents(head), known);
    let mut scores = [0.0f32; DEEPEST];
    for (score, item) in scores.iter_mut().zip(head.iter()) {
        *score = item.score;
    }
    let mut asking = [1.0f32; DEEPEST];
    let mut bonus = [0.0f32; DEEPEST];
    if question_factor < 1.0 || number_bonus > 0.0 {
        for &at in movable {
            let at = usize::from(at);
            let text = document(&head[at].record);
            asking[at] = asking_factor(&text, question_factor);
            if number_bonus > 0.0 && crate::quantity::holds_number(&text) {
                bonus[at] = number_bonus;
            }
        }
    }
    let key = |at: u8| {
        let at = usize::from(at);
        ((1.0 - weight) * scores[at] + weight * measures[at]) * asking[at] + bonus[at]
    };
    let mut order = [0u8; DEEPEST];
    let order = &mut order[..moving];
    order.copy_from_slice(movable);
    order.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
    // `from[place]`: the place whose result takes `place`.
    let mut from = [0u8; DEEPEST];
    for (place, slot) in from.iter_mut().enumerate().take(head_len) {
        *slot = place as u8;
    }
    for (&place, &moved) in movable.iter().zip(order.iter()) {
        from[usize::from(place)] = moved;
    }
    // The permutation applied in place, one cycle at a time: each swap puts its final
    // result at `place`.
    let mut done = [false; DEEPEST];
    for start in 0..head_len {
        let mut place = start;
        while !done[place] {
            done[place] = true;
            let next = usize::from(from[place]);
            if next == start {
                break;
            }
            head.swap(place, next);
            place = next;
        }
    }
    for &place in movable {
        let place = usize::from(place);
        let item = &mut head[place];
        let score = scores[place];
        item.breakdown.signals.push(SignalScore {
            name: Signal::Rerank,
            value: measures[usize::from(from[place])],
            contribution: score - item.score,
        });
        item.score = score;
    }
}

/// `1 - (1 - factor) * asked / said`: how much a text counts in the order of the head when
/// `asked` of its `said` sentences are questions. A question tells less than a statement
/// (a user asking "are there any women on her team?" against the turn before, "half of
/// them are women"), and the turns around a statement often ask about it in its words.
///
/// A sentence is what ends at `.`, `!` or `?` (or the text's end) holding at least two
/// bytes that are not ASCII white space; one that ends at `?` asks. A text without `?` is
/// settled by one search for it; the others by one pass over their bytes.
pub(crate) fn asking_factor(text: &str, factor: f32) -> f32 {
    // Most texts ask nothing: a search for the byte (word at a time) settles them.
    if factor >= 1.0 || !text.contains('?') {
        return 1.0;
    }
    /// Each byte's class: 0 text, 1 white space, 2 a stop that tells, 3 a stop that asks.
    const CLASS: [u8; 256] = {
        let mut class = [0u8; 256];
        let mut byte = 0;
        while byte < 256 {
            class[byte] = match byte as u8 {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => 1,
                b'.' | b'!' => 2,
                b'?' => 3,
                _ => 0,
            };
            byte += 1;
        }
        class
    };
    let (mut said, mut asked) = (0u32, 0u32);
    let mut solid = 0u32;
    for &byte in text.as_bytes() {
        let class = CLASS[usize::from(byte)];
        solid = solid.saturating_add(u32::from(class != 1));
        if class >= 2 {
            if solid > 1 {
                said += 1;
                asked += u32::from(class == 3);
            }
            solid = 0;
        }
    }
    if solid > 1 {
        said += 1;
    }
    if asked == 0 {
        return 1.0;
    }
    1.0 - (1.0 - factor) * asked as f32 / said as f32
}

/// Whether [`reorder_head`] may move `item`: a memory indexed with a context, not marked
/// stale.
pub(crate) fn movable_in_head(item: &ScoredItem) -> bool {
    matches!(&item.record, RetrievalSource::Memory(memory) if !memory.context().is_empty())
        && item.breakdown.value(Signal::Stale).is_none()
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
    // The first two bytes of the query's terms: a word starting otherwise is not stemmed,
    // only counted. An English stem starts with its word's first two letters, but for a
    // second "y" that becomes "i" ("dying" -> "die"); a word of one letter is its own term.
    let mut single = [false; 256];
    let mut pairs: Vec<[u8; 2]> = Vec::with_capacity(query_terms.len());
    for term in query_terms {
        match term.as_bytes() {
            [only] => single[usize::from(*only)] = true,
            [first, second, ..] => pairs.push([*first, *second]),
            [] => {}
        }
    }
    let may_start = |first: u8, second: u8| match second {
        0 => single[usize::from(first)],
        _ => pairs.iter().any(|pair| {
            pair[0] == first && (pair[1] == second || (second == b'y' && pair[1] == b'i'))
        }),
    };
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
    use std::sync::Arc;

    use memory_core::{MemoryItem, Namespace, ScoreBreakdown};

    use super::*;

    fn scored(text: &str, score: f32, stale: bool) -> ScoredItem {
        let item = MemoryItem::new(Namespace::parse("t").unwrap(), text)
            .unwrap()
            .with_context("the turns around it");
        let mut breakdown = ScoreBreakdown::default();
        if stale {
            breakdown.signals.push(SignalScore {
                name: Signal::Stale,
                value: 0.5,
                contribution: -0.1,
            });
        }
        ScoredItem {
            record: RetrievalSource::Memory(Arc::new(item)),
            score,
            breakdown,
        }
    }

    fn texts(items: &[ScoredItem]) -> Vec<&str> {
        items
            .iter()
            .map(|item| match &item.record {
                RetrievalSource::Memory(item) => item.content.as_str(),
                _ => "",
            })
            .collect()
    }

    /// Each place's text and score.
    fn placed(items: &[ScoredItem]) -> Vec<(String, f32)> {
        texts(items)
            .into_iter()
            .zip(items.iter().map(|item| item.score))
            .map(|(text, score)| (text.to_owned(), score))
            .collect()
    }

    /// The reordering as its documentation states it: the movable results sorted by
    /// `(1 - weight) * score + weight * measure` (ties in their order) take the movable
    /// places in order, each with its place's score; the others stay.
    fn reordered_by_definition(
        terms: &[String],
        items: &[ScoredItem],
        depth: usize,
        weight: f32,
    ) -> Vec<(String, f32)> {
        let depth = depth.min(items.len());
        let measures = term_scores_of(terms, &documents(&items[..depth]), &[]);
        let movable: Vec<usize> = (0..depth)
            .filter(|&at| items[at].breakdown.value(Signal::Stale).is_none())
            .collect();
        let key = |at: usize| (1.0 - weight) * items[at].score + weight * measures[at];
        let mut order = movable.clone();
        order.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
        let mut out = placed(items);
        if movable.len() >= 2 {
            for (&place, &moved) in movable.iter().zip(&order) {
                out[place].0 = texts(items)[moved].to_owned();
            }
        }
        out
    }

    #[test]
    fn the_head_is_reordered_as_defined_for_any_depth_and_staleness() {
        let words = [
            "caroline", "adoption", "agency", "painted", "lake", "sunrise", "we", "hours",
        ];
        let terms = Analyzer::default().query_terms("Caroline adoption agency painted sunrise");
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        for _ in 0..500 {
            let count = 1 + next(12) as usize;
            let mut items: Vec<ScoredItem> = (0..count)
                .map(|at| {
                    let text: Vec<&str> = (0..1 + next(8))
                        .map(|_| words[next(words.len() as u64) as usize])
                        .collect();
                    scored(&text.join(" "), 1.0 - at as f32 * 0.05, next(5) == 0)
                })
                .collect();
            let depth = next(14) as usize;
            let weight = [0.0, 0.3, 0.5, 1.0][next(4) as usize];
            let expected = reordered_by_definition(&terms, &items, depth, weight);
            reorder_head(&terms, &mut items, HeadOrder::by_terms(depth, weight), &[]);
            assert_eq!(placed(&items), expected, "depth {depth}, weight {weight}");
        }
    }

    #[test]
    fn the_head_is_reordered_and_keeps_its_scores() {
        let query = "Caroline adoption agency";
        let mut items = vec![
            scored("we talked for hours", 0.9, false),
            scored("Caroline called the adoption agency", 0.85, false),
            scored("Caroline said hello", 0.8, false),
            scored("the adoption agency Caroline chose", 0.7, false),
        ];
        reorder_head(
            &Analyzer::default().query_terms(query),
            &mut items,
            HeadOrder::by_terms(3, 0.5),
            &[],
        );
        assert_eq!(
            texts(&items),
            [
                "Caroline called the adoption agency",
                "Caroline said hello",
                "we talked for hours",
                "the adoption agency Caroline chose",
            ],
            "the head of three reordered, the fourth left where it was"
        );
        let scores: Vec<f32> = items.iter().map(|item| item.score).collect();
        assert_eq!(scores, [0.9, 0.85, 0.8, 0.7]);
        let first = &items[0].breakdown;
        assert!((first.contribution(Signal::Rerank).unwrap() - 0.05).abs() < 1e-6);
        assert!(items[3].breakdown.value(Signal::Rerank).is_none());
    }

    /// The asking factor as defined: the text split after each `.`, `!` and `?`, the
    /// pieces of at least two bytes once trimmed of ASCII white space are sentences, those
    /// ending in `?` ask.
    fn asking_by_definition(text: &str, factor: f32) -> f32 {
        let pieces: Vec<&str> = text
            .split_inclusive(['.', '!', '?'])
            .map(|piece| piece.trim_matches(|c: char| c.is_ascii_whitespace()))
            .filter(|piece| piece.len() > 1)
            .collect();
        let asked = pieces.iter().filter(|piece| piece.ends_with('?')).count();
        if asked == 0 {
            return 1.0;
        }
        1.0 - (1.0 - factor) * asked as f32 / pieces.len() as f32
    }

    #[test]
    fn the_asking_factor_counts_the_sentences_that_ask() {
        let cases = [
            ("Half of them are women.", 1.0),
            ("Are there any women on her team?", 0.5),
            ("That's great! Are there any women on her team?", 0.75),
            ("[8 May 2023] Ann: Really?! Tell me more. Why? How?", 0.625),
            ("", 1.0),
            ("?", 1.0),
            ("... ? !", 1.0),
            ("Dr. Patel? Yes", 1.0 - 0.5 / 3.0),
            ("Ça va? Très bien, merci.", 0.75),
        ];
        for (text, expected) in cases {
            let factor = asking_factor(text, 0.5);
            assert!((factor - expected).abs() < 1e-6, "{text:?}: {factor}");
            assert_eq!(factor, asking_by_definition(text, 0.5), "{text:?}");
        }
        assert_eq!(asking_factor("Why not?", 1.0), 1.0, "1 turns it off");
        // Any text, bytes of every kind around the stops.
        let alphabet = [
            "a", "é", " ", "\n", ".", "?", "!", "漢", "b?", "...", "\t", "\u{a0}",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let text: String = (0..seed % 24)
                .map(|at| alphabet[((seed >> (at % 60)) % alphabet.len() as u64) as usize])
                .collect();
            assert_eq!(
                asking_factor(&text, 0.75),
                asking_by_definition(&text, 0.75),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_question_yields_the_head_to_the_statement_it_repeats() {
        let query = "women on her team";
        let terms = Analyzer::default().query_terms(query);
        let head = || {
            vec![
                scored("Are there any women on her team?", 0.9, false),
                scored("Half of her team are women.", 0.88, false),
            ]
        };
        let mut items = head();
        reorder_head(&terms, &mut items, HeadOrder::by_terms(3, 0.5), &[]);
        assert_eq!(
            texts(&items)[0],
            "Are there any women on her team?",
            "without the factor the question keeps the first place"
        );
        let mut items = head();
        let asking = HeadOrder {
            question_factor: 0.75,
            ..HeadOrder::by_terms(3, 0.5)
        };
        reorder_head(&terms, &mut items, asking, &[]);
        assert_eq!(texts(&items)[0], "Half of her team are women.");
        let scores: Vec<f32> = items.iter().map(|item| item.score).collect();
        assert_eq!(scores, [0.9, 0.88], "the scores stay with the places");
    }

    #[test]
    fn a_number_lifts_a_result_of_the_head_by_its_bonus() {
        let terms = Analyzer::default().query_terms("how many women are on her team");
        let head = || {
            vec![
                scored("[1 May 2023] Ann: I like the women on her team", 0.9, false),
                scored(
                    "[1 May 2023] Ann: her team has 10 people, half women",
                    0.89,
                    false,
                ),
            ]
        };
        let mut items = head();
        reorder_head(&terms, &mut items, HeadOrder::by_terms(3, 0.5), &[]);
        assert!(
            texts(&items)[0].contains("I like"),
            "no bonus: the order stands"
        );
        let mut items = head();
        let with_numbers = HeadOrder {
            number_bonus: 0.1,
            ..HeadOrder::by_terms(3, 0.5)
        };
        reorder_head(&terms, &mut items, with_numbers, &[]);
        assert!(
            texts(&items)[0].contains("10 people"),
            "{:?}",
            texts(&items)
        );
        let scores: Vec<f32> = items.iter().map(|item| item.score).collect();
        assert_eq!(scores, [0.9, 0.89]);
    }

    #[test]
    fn a_memory_without_context_keeps_its_place_in_the_head() {
        let query = "Caroline adoption agency";
        let plain = |text: &str, score: f32| {
            let item = MemoryItem::new(Namespace::parse("t").unwrap(), text).unwrap();
            ScoredItem {
                record: RetrievalSource::Memory(Arc::new(item)),
                score,
                breakdown: ScoreBreakdown::default(),
            }
        };
        let mut items = vec![
            plain("we talked for hours", 0.9),
            plain("Caroline called the adoption agency", 0.85),
        ];
        reorder_head(
            &Analyzer::default().query_terms(query),
            &mut items,
            HeadOrder::by_terms(3, 0.5),
            &[],
        );
        assert_eq!(
            texts(&items),
            ["we talked for hours", "Caroline called the adoption agency"]
        );
        assert!(items[0].breakdown.value(Signal::Rerank).is_none());
    }

    #[test]
    fn a_stale_result_keeps_its_place_in_the_head() {
        let query = "where does the user live";
        let mut items = vec![
            scored("the user moved to Berlin", 0.5, false),
            scored("the user lives in Paris", 0.49, true),
            scored("nothing here", 0.48, false),
            scored("the user loves to live well", 0.47, false),
        ];
        reorder_head(
            &Analyzer::default().query_terms(query),
            &mut items,
            HeadOrder::by_terms(4, 1.0),
            &[],
        );
        let order = texts(&items);
        assert_eq!(order[1], "the user lives in Paris");
        assert!(items[1].breakdown.value(Signal::Rerank).is_none());
        assert_eq!(order[0], "the user loves to live well");
        let mut moved = order.clone();
        moved.sort_unstable();
        assert_eq!(moved.len(), 4);
    }

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
