//! The head of a fused ranking put in order again without a model ([`reorder_head`]): by
//! [`TermReranker`](super::TermReranker)'s measure of each result's own text, a question
//! counting less than a statement and, for a question asking for a quantity or a time, a
//! result that states one counting more.

use memory_core::{MemoryItem, RetrievalSource, ScoredItem, Signal, SignalScore, TermPositions};

use super::{document, documents, term_scores_of};
use crate::answer::Asks;

/// How [`reorder_head`] orders the head: the `depth` first results by `(1 - weight) *
/// score + weight * term measure`, times the [asking factor](asking_factor) of
/// `question_factor`, plus `answer_bonus` for a result that states what the query
/// [`asks`](crate::answer::Asks) for (a number for "how many", a time for "when"), plus
/// `reply_bonus` for a turn that replies to a question asked in the query's words
/// ([`replies_to_query`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeadOrder {
    pub(crate) depth: usize,
    pub(crate) weight: f32,
    pub(crate) question_factor: f32,
    pub(crate) asks: Asks,
    pub(crate) answer_bonus: f32,
    pub(crate) reply_bonus: f32,
}

impl HeadOrder {
    /// By the term measure alone: no question factor, no answer bonus.
    #[cfg(test)]
    pub(crate) fn by_terms(depth: usize, weight: f32) -> Self {
        Self {
            depth,
            weight,
            question_factor: 1.0,
            asks: Asks::Nothing,
            answer_bonus: 0.0,
            reply_bonus: 0.0,
        }
    }
}

/// Puts the first `depth` of `items` (best first) in order again by `(1 - weight) *
/// score + weight * ` [`TermReranker`](super::TermReranker)'s measure, times the [asking
/// factor](asking_factor) of a memory whose sentences ask, plus the answer bonus
/// ([`HeadOrder`]), ties in their order. `known`, when given, tells where the query's
/// terms stand in the items' texts, in order (see [`term_scores_of`]). Each takes the score
/// of the place it moves to, so the scores stay in order and the same, and the move is its
/// [`Signal::Rerank`] contribution (its measure the value).
///
/// Only memories indexed with a [context](memory_core::MemoryItem::context) move: the
/// reordering tells a text from the neighbours it was found through, and a memory searched
/// by its own text alone was already ranked by it. The others keep their places and the
/// movable ones are reordered among the remaining places. So does a memory marked stale
/// ([`Signal::Stale`]: ended, or the older of two conflicting or answering facts): the old
/// wording of a fact often holds the question's words better than the update ("lives in
/// Paris" against "moved to Berlin"), and must not climb back above it.
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
        asks,
        answer_bonus,
        reply_bonus,
    } = order_by;
    let answer_bonus = if asks == Asks::Nothing {
        0.0
    } else {
        answer_bonus
    };
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
    if question_factor < 1.0 || reply_bonus > 0.0 {
        let starts = (reply_bonus > 0.0).then(|| super::TermStarts::of(query_terms));
        for &at in movable {
            let at = usize::from(at);
            asking[at] = asking_factor(&document(&head[at].record), question_factor);
            if let Some(starts) = &starts
                && let RetrievalSource::Memory(memory) = &head[at].record
                && replies_to_query(memory, query_terms, starts)
            {
                bonus[at] += reply_bonus;
            }
        }
    }
    let key = |at: usize, bonus: &[f32; DEEPEST]| {
        ((1.0 - weight) * scores[at] + weight * measures[at]) * asking[at] + bonus[at]
    };
    if answer_bonus > 0.0 {
        // Whether a result states the answer is read only where the bonus could move it: a
        // result further than the bonus from every other keeps its place either way (a
        // time takes reading a whole text).
        let mut keys = [0.0f32; DEEPEST];
        for &at in movable {
            let at = usize::from(at);
            keys[at] = key(at, &bonus);
        }
        let reach = answer_bonus * (1.0 + 1e-4) + 1e-6;
        for &at in movable {
            let at = usize::from(at);
            let near = movable.iter().any(|&other| {
                usize::from(other) != at && (keys[usize::from(other)] - keys[at]).abs() <= reach
            });
            if near
                && let RetrievalSource::Memory(memory) = &head[at].record
                && asks.answered_by(&memory.content, memory.created_at)
            {
                bonus[at] += answer_bonus;
            }
        }
    }
    let key = |at: u8| key(usize::from(at), &bonus);
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

/// Whether `memory` is a dialogue turn whose turn before it (the start of its context, as
/// long as [`CONTEXT_BEFORE_METADATA_KEY`](crate::CONTEXT_BEFORE_METADATA_KEY) tells) asked a
/// question holding one of `query_terms`: it replies to what the query asks ("What's your
/// favourite style of dance?" before "Contemporary is my top pick"). `starts` are those of
/// `query_terms`.
pub(crate) fn replies_to_query(
    memory: &MemoryItem,
    query_terms: &[String],
    starts: &super::TermStarts,
) -> bool {
    let Some(length) = memory
        .metadata
        .get(crate::CONTEXT_BEFORE_METADATA_KEY)
        .and_then(serde_json::Value::as_u64)
        .and_then(|length| usize::try_from(length).ok())
    else {
        return false;
    };
    let Some(before) = memory.context().get(..length) else {
        return false;
    };
    // The question a reply answers is the last one asked before it: the sentence that ends
    // at the last question mark, read for the query's terms; only the words that start as
    // one of them does are stemmed.
    let Some(end) = before.rfind('?') else {
        return false;
    };
    let start = before[..end]
        .rfind(['.', '!', '?', '\n'])
        .map_or(0, |stop| stop + 1);
    let mut holds = false;
    memory_core::text::Analyzer::default().for_each_term_where(
        &before[start..end],
        |first, second| starts.may_start(first, second),
        |term| holds |= query_terms.iter().any(|sought| sought == term),
        || {},
    );
    holds
}

/// Whether [`reorder_head`] may move `item`: a memory indexed with a context, not marked
/// stale.
pub(crate) fn movable_in_head(item: &ScoredItem) -> bool {
    matches!(&item.record, RetrievalSource::Memory(memory) if !memory.context().is_empty())
        && item.breakdown.value(Signal::Stale).is_none()
}

#[cfg(test)]
mod tests;
