//! The times a query names by their distance from now ("two weeks ago"): the search terms
//! without their words, and which memories hold such an expression as written, so that the
//! search with its words scores them alone.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use memory_core::{Namespace, Result, Scope, SearchHit};

use super::question_terms;
use crate::retriever::RecallFilter;

/// The most expressions of a relative time in one query checked for memories: each check
/// is a store call.
const MAX_RELATIVE_TIMES: usize = 4;

/// The words of the times a query names by their distance from now, which its search
/// leaves out, and what it searches a memory holding one of them as written with.
#[derive(Debug)]
pub(in crate::retriever) struct TimePhrases {
    /// Each expression's terms, in order ("two weeks ago": "two", "week", "ago").
    pub(in crate::retriever) phrases: Vec<Vec<String>>,
    /// The query's terms with the expressions' words.
    pub(in crate::retriever) terms: Arc<[String]>,
}

/// The search terms of `query` when
/// [`RetrieverConfig::drop_time_words`](crate::RetrieverConfig::drop_time_words) or
/// [`time_words_as_phrase`](crate::RetrieverConfig::time_words_as_phrase) is on, and the
/// expressions left out. When it names a time by its distance from now ("last Saturday",
/// "two weeks ago") and memories in scope were made in that time, the expression's words
/// are left out: the time is searched as a time (the window), and those words in a memory
/// speak of another day ("last Saturday", said a month ago). When no memory was made then,
/// the words are kept: the query may quote what a memory says. An expression anchored by a
/// day ("last weekend before April 10") is not listed as relative
/// ([`TimeRead`](crate::when::TimeRead)), so its words are kept too.
pub(in crate::retriever) async fn search_terms(
    memory: &dyn memory_core::MemoryStore,
    scope: &Scope,
    filter: &RecallFilter,
    now: DateTime<Utc>,
    query: &str,
    time: Option<&crate::when::TimeRead>,
) -> Result<(Vec<String>, Option<TimePhrases>)> {
    let Some(time) = time.filter(|time| !time.relative.is_empty()) else {
        return Ok((question_terms(query), None));
    };
    let base = filter.memory_filter(scope, now);
    let mut held = Vec::new();
    for (window, words) in time.relative.iter().take(MAX_RELATIVE_TIMES) {
        let since = base
            .since
            .map_or(window.from, |since| since.max(window.from));
        let end = window.until + chrono::Duration::seconds(1);
        let until = base.until.map_or(end, |until| until.min(end));
        if since >= until {
            continue;
        }
        let probe = base
            .clone()
            .with_time_range(Some(since), Some(until))
            .with_limit(1);
        if !memory.list(&probe).await?.is_empty() {
            held.push(words);
        }
    }
    let all = question_terms(query);
    if held.is_empty() {
        return Ok((all, None));
    }
    let terms = question_terms(&crate::when::TimeRead::blanked(query, held.iter().copied()));
    // A query of nothing but times searches their words.
    if terms.is_empty() || terms.len() == all.len() {
        return Ok((all, None));
    }
    let analyzer = memory_core::text::Analyzer::default();
    let phrases: Vec<Vec<String>> = held
        .iter()
        .filter_map(|words| query.get((*words).clone()))
        .map(|words| analyzer.terms(words))
        .filter(|phrase| !phrase.is_empty())
        .collect();
    Ok((
        terms,
        Some(TimePhrases {
            phrases,
            terms: all.into(),
        }),
    ))
}

/// Whether `text` holds one of `phrases` as written: its terms one after another (stop
/// words between them do not count, as they make no term: "a couple of days ago"). One
/// filtered scan of `text` for every phrase at once: only the words that start as a
/// phrase's term does are stemmed (the scan the head's term measure uses).
fn holds_a_phrase(text: &str, phrases: &[Vec<String>]) -> bool {
    let sought: Vec<String> = phrases.iter().flatten().cloned().collect();
    let starts = crate::rerank::TermStarts::of(&sought);
    let longest = phrases.iter().map(Vec::len).max().unwrap_or(0);
    // The terms at the last `longest` positions read; `None` for a word no phrase holds.
    let mut recent: std::collections::VecDeque<Option<String>> =
        std::collections::VecDeque::with_capacity(longest + 1);
    let mut holds = false;
    let mut read = |term: Option<&str>| {
        recent.push_back(term.map(str::to_owned));
        if recent.len() > longest {
            recent.pop_front();
        }
        holds |= phrases.iter().any(|phrase| {
            !phrase.is_empty()
                && phrase.len() <= recent.len()
                && recent
                    .iter()
                    .skip(recent.len() - phrase.len())
                    .zip(phrase)
                    .all(|(at, word)| at.as_deref() == Some(word.as_str()))
        });
    };
    let read = std::cell::RefCell::new(&mut read);
    memory_core::text::Analyzer::default().for_each_term_where(
        text,
        |first, second| starts.may_start(first, second),
        |term| (read.borrow_mut())(Some(term)),
        || (read.borrow_mut())(None),
    );
    holds
}

/// Whether `terms`, where they stand in a text (`positions`, as
/// [`Analyzer::term_positions`](memory_core::text::Analyzer::term_positions) tells them:
/// positions counting the text's terms, stop words not counted), hold one of `phrases`: its
/// terms at positions one after another. What [`holds_a_phrase`] reads from the text itself.
fn positions_hold_a_phrase(
    positions: &[(u32, u32)],
    terms: &[String],
    phrases: &[Vec<String>],
) -> bool {
    let term_at = |index: usize| {
        positions
            .get(index)
            .and_then(|(position, term)| Some((*position, terms.get(*term as usize)?)))
    };
    (0..positions.len()).any(|start| {
        let Some((first, _)) = term_at(start) else {
            return false;
        };
        phrases.iter().any(|phrase| {
            !phrase.is_empty()
                && phrase.iter().enumerate().all(|(offset, word)| {
                    term_at(start + offset).is_some_and(|(position, term)| {
                        u64::from(position) == u64::from(first) + offset as u64 && term == word
                    })
                })
        })
    })
}

/// The hits of `whole` (the search with the time's words) that [`with_time_phrases`] may
/// score as it scored them: those not among `hits` and those it scored better than `hits`
/// did. A memory that scores no better with the time's words holds none of them.
fn phrase_checks(hits: &[SearchHit], whole: &[SearchHit]) -> Vec<bool> {
    let scored: HashMap<(&Namespace, &str), f32> = hits
        .iter()
        .map(|hit| ((&hit.item.namespace, hit.item.id.as_str()), hit.score))
        .collect();
    whole
        .iter()
        .map(|hit| {
            scored
                .get(&(&hit.item.namespace, hit.item.id.as_str()))
                .is_none_or(|score| *score < hit.score)
        })
        .collect()
}

/// For each hit of `whole`, whether its memory holds one of `phrases` as written, asked only
/// of those [`phrase_checks`] lets through (the others are `false`). Where the phrases'
/// terms stand comes from the store when it can tell
/// ([`MemoryStore::term_positions`](memory_core::MemoryStore::term_positions): the
/// in-memory store keeps each memory's terms in order); a memory it cannot tell of, or a
/// store that fails, has its text read ([`holds_a_phrase`]). Reading a long memory's text
/// costs far more than its positions: most of a recall naming a time, before.
pub(super) async fn phrase_holders(
    memory: &dyn memory_core::MemoryStore,
    hits: &[SearchHit],
    whole: &[SearchHit],
    phrases: &[Vec<String>],
) -> Vec<bool> {
    let checks = phrase_checks(hits, whole);
    let (places, keys): (Vec<usize>, Vec<(&Namespace, &str)>) = whole
        .iter()
        .zip(&checks)
        .enumerate()
        .filter(|(_, (_, check))| **check)
        .map(|(at, (hit, _))| (at, (&hit.item.namespace, hit.item.id.as_str())))
        .unzip();
    let mut holds = vec![false; whole.len()];
    if keys.is_empty() {
        return holds;
    }
    let terms: Vec<String> = phrases.iter().flatten().cloned().collect();
    let told = crate::retriever::told_by_store(
        memory.term_positions(&keys, &terms).await,
        keys.len(),
        "term positions",
    );
    for (at, positions) in places.into_iter().zip(told) {
        holds[at] = match positions {
            Some(positions) => positions_hold_a_phrase(&positions, &terms, phrases),
            None => holds_a_phrase(&whole[at].item.content, phrases),
        };
    }
    holds
}

/// `hits`, of the search without the time's words, with each memory whose own words hold
/// one of the expressions as written (`holds`, for each of `whole`: see [`phrase_holders`])
/// scored as `whole`, the search with those words, scored it (added when it was not among
/// `hits`): the best `limit` of them. "Two weeks ago" in a memory matches a question asking
/// about "two weeks ago"; "three weeks ago" does not.
pub(super) fn with_time_phrases(
    mut hits: Vec<SearchHit>,
    whole: &[SearchHit],
    holds: &[bool],
    limit: usize,
) -> Vec<SearchHit> {
    let at: HashMap<(Namespace, String), usize> = hits
        .iter()
        .enumerate()
        .map(|(at, hit)| ((hit.item.namespace.clone(), hit.item.id.clone()), at))
        .collect();
    let mut added = Vec::new();
    for (hit, holds) in whole.iter().zip(holds) {
        let known = at
            .get(&(hit.item.namespace.clone(), hit.item.id.clone()))
            .copied();
        // A memory that scores no better with the time's words holds none of them.
        if known.is_some_and(|known| hits[known].score >= hit.score) || !holds {
            continue;
        }
        match known {
            Some(known) => hits[known].score = hit.score,
            None => {
                // Its search counted the time's words as terms: a memory holding one in its
                // own words may hold none of the rest, so only a "no" is still true.
                let mut hit = hit.clone();
                hit.in_own_words = hit.in_own_words.filter(|own| !own);
                added.push(hit);
            }
        }
    }
    hits.extend(added);
    // Stable: equal scores keep the search's order.
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    use memory_core::MemoryItem;

    use super::*;

    fn phrase(words: &str) -> Vec<String> {
        memory_core::text::Analyzer::default().terms(words)
    }

    #[test]
    fn a_phrase_is_held_as_written() {
        let couple = [phrase("a couple of days ago")];
        assert!(holds_a_phrase("I made it a couple of days ago.", &couple));
        assert!(holds_a_phrase("A COUPLE OF DAYS AGO, I made it", &couple));
        for text in [
            "a couple of weeks ago",
            "two days ago",
            "days ago, a couple of them",
            "a couple of old days, long ago",
            "",
        ] {
            assert!(!holds_a_phrase(text, &couple), "{text}");
        }
        // Any of several; one word is its own phrase; no phrase holds nothing.
        let either = [phrase("two weeks ago"), phrase("yesterday")];
        assert!(holds_a_phrase("We met yesterday", &either));
        assert!(holds_a_phrase("two weeks ago today", &either));
        assert!(!holds_a_phrase("three weeks ago", &either));
        assert!(!holds_a_phrase("anything", &[]));
        // A phrase repeating a word.
        let again = [phrase("day after day")];
        assert!(holds_a_phrase("it rained day after day", &again));
        assert!(!holds_a_phrase("it rained day after night", &again));
    }

    fn hit(id: &str, text: &str, score: f32) -> SearchHit {
        let item = MemoryItem::new(Namespace::parse("n").unwrap(), text)
            .unwrap()
            .with_id(id)
            .unwrap();
        SearchHit::new(Arc::new(item), score)
    }

    fn ids(hits: &[SearchHit]) -> Vec<(&str, f32)> {
        hits.iter()
            .map(|hit| (hit.item.id.as_str(), hit.score))
            .collect()
    }

    #[test]
    fn a_memory_holding_the_phrase_is_scored_with_its_words() {
        let phrases = [phrase("two weeks ago")];
        let hits = vec![
            hit("a", "the match two weeks ago", 2.0),
            hit("b", "the match, two weeks ago", 1.0),
            hit("e", "the match three weeks ago", 0.5),
        ];
        let whole = vec![
            hit("d", "weeks and weeks ago, two of them", 4.0),
            hit("b", "the match, two weeks ago", 3.0),
            hit("c", "two weeks ago", 2.5),
            hit("e", "the match three weeks ago", 2.4),
            hit("a", "the match two weeks ago", 2.0),
        ];
        let holds: Vec<bool> = whole
            .iter()
            .map(|hit| holds_a_phrase(&hit.item.content, &phrases))
            .collect();
        // "d" and "e" hold the words but not the phrase; "c" is added.
        assert_eq!(
            ids(&with_time_phrases(hits.clone(), &whole, &holds, 10)),
            [("b", 3.0), ("c", 2.5), ("a", 2.0), ("e", 0.5)]
        );
        assert_eq!(
            ids(&with_time_phrases(hits, &whole, &holds, 2)),
            [("b", 3.0), ("c", 2.5)]
        );
    }

    #[test]
    fn where_the_terms_stand_tells_what_the_text_tells() {
        let analyzer = memory_core::text::Analyzer::default();
        let cases = [
            (
                vec![phrase("a couple of days ago")],
                vec![
                    "I made it a couple of days ago.",
                    "A COUPLE OF DAYS AGO, I made it",
                    "a couple of weeks ago",
                    "days ago, a couple of them",
                    "a couple of old days, long ago",
                    "",
                ],
            ),
            (
                vec![phrase("two weeks ago"), phrase("yesterday")],
                vec![
                    "We met yesterday",
                    "two weeks ago today",
                    "three weeks ago",
                    "two weeks, ago",
                    "ago weeks two",
                ],
            ),
            (
                vec![phrase("day after day"), phrase("two days ago")],
                vec![
                    "it rained day after day",
                    "it rained day after night",
                    "two days and two days ago",
                    "day day day after",
                ],
            ),
        ];
        for (phrases, texts) in cases {
            let terms: Vec<String> = phrases.iter().flatten().cloned().collect();
            for text in texts {
                let positions = analyzer.term_positions(text, &terms);
                assert_eq!(
                    positions_hold_a_phrase(&positions, &terms, &phrases),
                    holds_a_phrase(text, &phrases),
                    "{text}"
                );
            }
        }
        assert!(!positions_hold_a_phrase(&[], &[], &[]));
    }

    #[tokio::test]
    async fn a_store_that_tells_where_terms_stand_spares_reading_the_text() {
        let phrases = [phrase("two weeks ago")];
        for (store, tells) in super::super::test_stores() {
            let stored = [
                hit("a", "the match two weeks ago", 2.0),
                hit("b", "weeks and weeks ago, two of them", 3.0),
                hit("c", "two weeks ago, the final", 2.5),
                hit("d", "two weeks ago as well", 1.0),
            ];
            for hit in &stored {
                store.save((*hit.item).clone()).await.expect("save");
            }
            // "d" scored better without the time's words: it is not asked about.
            let hits = vec![hit("d", "two weeks ago as well", 5.0)];
            let holds = phrase_holders(store.as_ref(), &hits, &stored, &phrases).await;
            assert_eq!(holds, [true, false, true, false]);
            // A memory the store does not hold is read from its text.
            let gone = [hit("e", "lost two weeks ago", 1.0)];
            assert_eq!(
                phrase_holders(store.as_ref(), &[], &gone, &phrases).await,
                [true]
            );
            // The store's answer is the one read when it tells (the in-memory store keeps
            // each memory's terms in order): a hit whose text was changed since it was
            // stored is judged by what is stored; SQLite does not tell, and the text is read.
            let changed = [hit("a", "nothing of the sort", 2.0)];
            assert_eq!(
                phrase_holders(store.as_ref(), &[], &changed, &phrases).await,
                [tells]
            );
        }
    }
}
