//! Stale memories in a recall: those no longer current at the recall's time (visible only
//! when the recall asks for every memory), those a newer memory contradicts, and facts a
//! newer fact answers the same question for (see [`newer_answers`]). Each is scored
//! [`STALE_FACTOR`] times its score, below the newer memory of its pair when both are
//! returned, and marked [`Signal::Stale`](memory_core::Signal::Stale).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use memory_core::text::{Analyzer, MAX_QUERY_TERMS};
use memory_core::{MemoryItem, MemoryKind, Namespace, Result, RetrievalSource};

use super::RecallView;
use super::candidate::Candidate;
use super::request::Request;

/// The factor a stale memory's score is multiplied by.
pub const STALE_FACTOR: f32 = 0.5;

/// The stale memories of one recall: `(namespace, id)` to the ids of the newer memories
/// that contradict it (empty when it is stale only because it ended).
#[derive(Debug, Default)]
pub(super) struct StaleMarks {
    marks: HashMap<(Namespace, String), Vec<String>>,
}

impl StaleMarks {
    pub(super) fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// Marks `item` stale, with `newer` among its newer rivals when given.
    fn mark(&mut self, item: &MemoryItem, newer: Option<&str>) {
        let entry = self
            .marks
            .entry((item.namespace.clone(), item.id.clone()))
            .or_default();
        if let Some(newer) = newer
            && !entry.iter().any(|id| id == newer)
        {
            entry.push(newer.to_owned());
        }
    }

    /// [`mark`](Self::mark), for the tests of fusion.
    #[cfg(test)]
    pub(super) fn mark_for_test(&mut self, item: &MemoryItem, newer: Option<&str>) {
        self.mark(item, newer);
    }

    /// The newer rivals of a stale memory, `None` when it is not stale.
    pub(super) fn get(&self, namespace: &Namespace, id: &str) -> Option<&[String]> {
        self.marks
            .get(&(namespace.clone(), id.to_owned()))
            .map(Vec::as_slice)
    }
}

/// The order of two statements of one fact: when they start to hold, then when they were
/// recorded, then id.
fn start(item: &MemoryItem) -> (DateTime<Utc>, DateTime<Utc>, &str) {
    (
        item.valid_from.unwrap_or(item.created_at),
        item.created_at,
        &item.id,
    )
}

/// Whether `item` was still believed at `at`.
fn believed_at(item: &MemoryItem, at: DateTime<Utc>) -> bool {
    item.ended.as_ref().is_none_or(|ended| ended.at > at)
}

/// Finds the stale memories among `memories`. Costs nothing unless a candidate ended or
/// has conflicts, or two are facts ([`newer_answers`]); then one `get_many` per namespace
/// for rivals not among the candidates.
pub(super) async fn mark(memories: &[Candidate], request: &Request<'_>) -> Result<StaleMarks> {
    let at = match request.filter.view {
        RecallView::AsOf(at) => at,
        RecallView::Current | RecallView::All => request.now,
    };
    let items: Vec<&MemoryItem> = memories
        .iter()
        .filter_map(|candidate| match &candidate.record {
            RetrievalSource::Memory(item)
                if item.ended.is_some() || !item.conflicts_with.is_empty() =>
            {
                Some(&**item)
            }
            _ => None,
        })
        .collect();
    let mut marks = StaleMarks::default();
    if request.config.newer_facts_first {
        newer_answers(memories, request, at, &mut marks);
    }
    if items.is_empty() {
        return Ok(marks);
    }
    let known: HashMap<(&Namespace, &str), &MemoryItem> = memories
        .iter()
        .filter_map(|candidate| match &candidate.record {
            RetrievalSource::Memory(item) => Some(((&item.namespace, item.id.as_str()), &**item)),
            _ => None,
        })
        .collect();
    let mut missing: HashMap<&Namespace, Vec<String>> = HashMap::new();
    for item in &items {
        for rival in &item.conflicts_with {
            if !known.contains_key(&(&item.namespace, rival.as_str())) {
                missing
                    .entry(&item.namespace)
                    .or_default()
                    .push(rival.clone());
            }
        }
    }
    let mut fetched: HashMap<(Namespace, String), MemoryItem> = HashMap::new();
    for (namespace, mut ids) in missing {
        ids.sort();
        ids.dedup();
        for rival in request.memory.get_many(namespace, &ids).await? {
            fetched.insert((rival.namespace.clone(), rival.id.clone()), rival);
        }
    }
    let mut mark_newer = |item: &MemoryItem, newer: Option<&str>| marks.mark(item, newer);
    for item in items {
        if !believed_at(item, at) {
            // Ranked below its successor when both are shown.
            let by = item
                .ended
                .as_ref()
                .and_then(memory_core::Ended::superseded_by)
                .filter(|by| known.contains_key(&(&item.namespace, *by)));
            mark_newer(item, by);
        }
        // A conflict link is kept by the memory written later; either end may be the
        // older statement (a replay of old messages writes older statements later).
        for rival_id in &item.conflicts_with {
            let rival = known
                .get(&(&item.namespace, rival_id.as_str()))
                .copied()
                .or_else(|| fetched.get(&(item.namespace.clone(), rival_id.clone())));
            let Some(rival) = rival else { continue };
            // The older is ranked stale unless the newer's source is less credible (then
            // the newer was flagged rather than let supersede it).
            if start(item) > start(rival) {
                if believed_at(item, at)
                    && known.contains_key(&(&rival.namespace, rival.id.as_str()))
                    && !keyed_apart(rival, item)
                    && item.credibility >= rival.credibility
                {
                    mark_newer(rival, Some(&item.id));
                }
            } else if believed_at(rival, at)
                && !keyed_apart(item, rival)
                && rival.credibility >= item.credibility
            {
                mark_newer(item, Some(&rival.id));
            }
        }
    }
    Ok(marks)
}

/// Whether `older` carries a fact key that `newer` does not: then a detected conflict does
/// not rank `older` stale. A memory with a fact key is replaced by a memory with the same
/// key (or an explicit supersede or retract); a conflict the detector flagged between it
/// and a memory without that key stays listed ([`Memory::maintain`](crate::Memory::maintain)
/// reports it) but does not outrank it, as a detected conflict between memories of lower
/// and higher credibility does not supersede the higher one.
fn keyed_apart(older: &MemoryItem, newer: &MemoryItem) -> bool {
    older.fact_key.is_some() && older.fact_key != newer.fact_key
}

/// Most fact candidates [`newer_answers`] compares (their pairs are compared: a bound on
/// the work of one recall).
const MAX_FACTS_COMPARED: usize = 32;

/// Longest fact [`newer_answers`] compares, in bytes: a statement, not a passage.
const MAX_FACT_BYTES: usize = 400;

/// A fact among the candidates: which of the query's terms it holds, as bits.
struct Fact<'a> {
    item: &'a MemoryItem,
    matched: u128,
}

/// Marks facts that a newer fact answers the same question for: of two
/// [semantic](MemoryKind::Semantic) memories among the candidates (short statements, both
/// still believed at `at`), the older is marked stale with the newer as its rival when
///
/// - the query names someone or something (capitalised words after its first): both hold
///   the same of those names, at least one, and each holds another word of the query
///   ("Where does Ava Novak live?": "Ava Novak lives in Berlin", then "Ava Novak moved to
///   the city of Lisbon"; not "Ava Lee lives in Oslo");
/// - it names nothing: they share a word of the query and each holds two ("where does the
///   user live": "the user lives in Paris", then "the user now lives in Berlin").
///
/// A memory with a [fact key](MemoryItem::fact_key) is never the older of such a pair: its
/// key says what replaces it (a newer memory with the same key supersedes it when written),
/// and a newer statement without that key is not known to be about the same fact ("Ava
/// Novak's sister lives in Oslo" after the keyed "Ava Novak lives in Berlin"). It can be the
/// newer: an older statement without a key may be an earlier value of its fact.
///
/// A fact holds until a newer one replaces it, and a question about it wants the newer:
/// without a fact key or a detected conflict, the words of two statements of one fact need
/// not resemble each other (a paraphrase), but both answer the question. Episodes
/// (episodic memories: what was said or done, such as dialogue turns) do not replace one
/// another and are never compared. Costs nothing unless two candidates are facts; then one
/// analysis of each (at most [`MAX_FACTS_COMPARED`]) and a comparison of each pair.
fn newer_answers(
    memories: &[Candidate],
    request: &Request<'_>,
    at: DateTime<Utc>,
    marks: &mut StaleMarks,
) {
    let is_fact = |item: &MemoryItem| {
        item.kind == MemoryKind::Semantic
            && item.content.len() <= MAX_FACT_BYTES
            && believed_at(item, at)
    };
    let items: Vec<&MemoryItem> = memories
        .iter()
        .filter_map(|candidate| match &candidate.record {
            RetrievalSource::Memory(item) if is_fact(item) => Some(&**item),
            _ => None,
        })
        .take(MAX_FACTS_COMPARED)
        .collect();
    if items.len() < 2 {
        return;
    }
    let terms = &request.terms[..request.terms.len().min(MAX_QUERY_TERMS)];
    let bit = |term: &str| {
        terms
            .iter()
            .position(|t| t == term)
            .map_or(0, |at| 1u128 << at)
    };
    let analyzer = Analyzer::default();
    let names = query_names(request.query, &analyzer, &bit);
    let facts: Vec<Fact<'_>> = items
        .into_iter()
        .map(|item| {
            let mut matched = 0u128;
            analyzer.for_each_term(&item.content, |term| matched |= bit(term));
            Fact { item, matched }
        })
        .collect();
    let same_question = |a: &Fact<'_>, b: &Fact<'_>| {
        if names != 0 {
            let named = a.matched & names;
            named != 0
                && named == b.matched & names
                && a.matched & !names != 0
                && b.matched & !names != 0
        } else {
            a.matched & b.matched != 0 && a.matched.count_ones() >= 2 && b.matched.count_ones() >= 2
        }
    };
    for older in &facts {
        for newer in &facts {
            if older.item.fact_key.is_none()
                && older.item.namespace == newer.item.namespace
                && start(older.item) < start(newer.item)
                && same_question(older, newer)
            {
                marks.mark(older.item, Some(&newer.item.id));
            }
        }
    }
}

/// The query's names as bits of its terms: the terms of its capitalised words after the
/// first (a question's first word is capitalised whatever it is), "I" excepted.
fn query_names(query: &str, analyzer: &Analyzer, bit: &impl Fn(&str) -> u128) -> u128 {
    let mut names = 0u128;
    for word in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .skip(1)
        .take(MAX_QUERY_TERMS)
    {
        if word != "I" && word.chars().next().is_some_and(char::is_uppercase) {
            analyzer.for_each_term(word, |term| names |= bit(term));
        }
    }
    names
}
