//! The memory channel: keyword search over memories, with the embedding channel beside it
//! when an embedder is set, and conversation context from the memories next to the hits.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use memory_core::{
    Channel, MemoryFilter, MemoryItem, Namespace, Result, RetrievalSource, Scope, SearchHit,
    SearchQuery, Signal,
};

use super::candidate::{Candidate, Found, Key, RecordType};
use super::request::Request;
use super::{MAX_CONTEXT_SOURCES, RecallFilter};
use crate::scoring::{Signals, text_overlap};
use crate::who::Speakers;

/// The indefinite pronouns a question uses for what it asks about ("what did I cook
/// *something* for", "did I tell *anyone*"): they stand for the answer, not for words a
/// memory of it holds, and they match every memory that happens to say them.
const PLACEHOLDER_WORDS: &str =
    "something anything someone anyone somebody anybody somewhere anywhere";

/// The search terms of a question ([`Analyzer::query_terms`](memory_core::text::Analyzer::query_terms))
/// without its [placeholders](PLACEHOLDER_WORDS), unless they are all it says.
pub(super) fn question_terms(query: &str) -> Vec<String> {
    static PLACEHOLDERS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let placeholders = PLACEHOLDERS
        .get_or_init(|| memory_core::text::Analyzer::default().query_terms(PLACEHOLDER_WORDS));
    let mut terms = memory_core::text::Analyzer::default().query_terms(query);
    if terms.iter().any(|term| !placeholders.contains(term)) {
        terms.retain(|term| !placeholders.contains(term));
    }
    terms
}

/// The most expressions of a relative time in one query checked for memories: each check
/// is a store call.
const MAX_RELATIVE_TIMES: usize = 4;

/// The words of the times a query names by their distance from now, which its search
/// leaves out, and what it searches a memory holding one of them as written with.
#[derive(Debug)]
pub(super) struct TimePhrases {
    /// Each expression's terms, in order ("two weeks ago": "two", "week", "ago").
    pub(super) phrases: Vec<Vec<String>>,
    /// The query's terms with the expressions' words.
    pub(super) terms: Arc<[String]>,
}

/// The search terms of `query` when
/// [`RetrieverConfig::drop_time_words`](super::RetrieverConfig::drop_time_words) or
/// [`time_words_as_phrase`](super::RetrieverConfig::time_words_as_phrase) is on, and the
/// expressions left out. When it names a time by its distance from now ("last Saturday",
/// "two weeks ago") and memories in scope were made in that time, the expression's words
/// are left out: the time is searched as a time (the window), and those words in a memory
/// speak of another day ("last Saturday", said a month ago). When no memory was made then,
/// the words are kept: the query may quote what a memory says. An expression anchored by a
/// day ("last weekend before April 10") is not listed as relative
/// ([`TimeRead`](crate::when::TimeRead)), so its words are kept too.
pub(super) async fn search_terms(
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
async fn phrase_holders(
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
    let mut told: Vec<Option<memory_core::TermPositions>> =
        match memory.term_positions(&keys, &terms).await {
            Ok(answers) if answers.len() == keys.len() => answers,
            Ok(answers) => {
                tracing::warn!(
                    expected = keys.len(),
                    got = answers.len(),
                    "store told term positions for a different number of memories; texts read"
                );
                Vec::new()
            }
            Err(error) => {
                tracing::warn!(%error, "store failed to tell term positions; texts read");
                Vec::new()
            }
        };
    told.resize(keys.len(), None);
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
fn with_time_phrases(
    mut hits: Vec<SearchHit>,
    whole: Vec<SearchHit>,
    holds: &[bool],
    limit: usize,
) -> Vec<SearchHit> {
    let at: HashMap<(Namespace, String), usize> = hits
        .iter()
        .enumerate()
        .map(|(at, hit)| ((hit.item.namespace.clone(), hit.item.id.clone()), at))
        .collect();
    let mut added = Vec::new();
    for (hit, holds) in whole.into_iter().zip(holds) {
        let known = at
            .get(&(hit.item.namespace.clone(), hit.item.id.clone()))
            .copied();
        // A memory that scores no better with the time's words holds none of them.
        if known.is_some_and(|known| hits[known].score >= hit.score) || !holds {
            continue;
        }
        match known {
            Some(known) => hits[known].score = hit.score,
            None => added.push(hit),
        }
    }
    hits.extend(added);
    // Stable: equal scores keep the search's order.
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    hits
}

/// The memories of `request` as candidates, and the microseconds the channel took.
pub(super) async fn gather(request: &Request<'_>) -> Result<(Vec<Candidate>, u64)> {
    let config = request.config;
    if !config.strategy.memory() {
        return Ok((Vec::new(), 0));
    }
    let started = super::request::Stopwatch::start();
    let memory = request.memory;
    let phrased = |hits: Vec<SearchHit>, whole: Option<Vec<SearchHit>>| async {
        match (whole, &request.time_phrases) {
            (Some(whole), Some(time)) => {
                let holds = phrase_holders(memory, &hits, &whole, &time.phrases).await;
                with_time_phrases(hits, whole, &holds, request.candidates)
            }
            _ => hits,
        }
    };
    let search = SearchQuery::new(request.scope.clone(), request.query, request.candidates)
        .with_filter(request.filter.memory_filter(request.scope, request.now))
        .with_terms(request.terms.clone());
    // The memories made in the time the query names, searched beside the rest: the
    // query's words may be rare there and common elsewhere.
    let within = request.window.and_then(|window| {
        within_window(&search, window, request.now + chrono::Duration::seconds(1))
    });
    let timed = async {
        match &within {
            Some(search) => memory.search(search).await.map(Some),
            None => Ok(None),
        }
    };
    // With the time's words, for the memories that hold them as written.
    let whole_search = request
        .time_phrases
        .as_ref()
        .map(|time| search.clone().with_terms(time.terms.clone()));
    let whole = async {
        match &whole_search {
            Some(search) => memory.search(search).await.map(Some),
            None => Ok(None),
        }
    };
    // Keyword search, and with an embedder the similarity search beside it.
    let (hits, similar, timed) = match request.embedder {
        None => {
            let (hits, whole, timed) = tokio::join!(memory.search(&search), whole, timed);
            (phrased(hits?, whole?).await, None, timed?)
        }
        Some(embedder) => {
            let semantic = async {
                let vector = crate::embedding::embed_query_checked(embedder, request.query).await?;
                let hits = memory
                    .search_similar(&search.filter, &vector, request.candidates)
                    .await?;
                Ok::<_, memory_core::MemoryError>((vector, hits))
            };
            let (hits, whole, semantic, timed) =
                tokio::join!(memory.search(&search), whole, semantic, timed);
            (phrased(hits?, whole?).await, Some(semantic?), timed?)
        }
    };
    let (query_vector, similar) = match similar {
        Some((vector, hits)) => (Some(vector), Some(hits)),
        None => (None, None),
    };
    let query_vector = query_vector.as_deref();
    // Each hit's weight in keyword relevance: its role's, times the factor when the query
    // names other speakers (every hit's speaker read once).
    let weights = hit_weights(request, hits.iter().chain(timed.iter().flatten()));
    let best = hits
        .first()
        .map_or(1.0, |hit| hit.score)
        .max(f32::MIN_POSITIVE);
    let mut out: Vec<Candidate> = hits
        .into_iter()
        .enumerate()
        .map(|(rank, hit)| {
            let item = hit.item;
            let mut signals =
                Signals::of_memory(&item, request.now, config.recency_half_life_hours);
            let weight = weights.get(rank).copied().unwrap_or(1.0);
            signals[Signal::Relevance] = hit.score / best * weight;
            if request.wants_overlap() {
                signals[Signal::Overlap] = text_overlap(&request.grams, &[(&item.content, 1.0)]);
            }
            if let Some(vector) = query_vector {
                signals[Signal::Embedding] =
                    crate::embedding::similarity(vector, &item, request.config.min_similarity);
            }
            Candidate {
                record: RetrievalSource::Memory(item),
                channels: Found::new(Channel::Memory, rank + 1),
                signals,
            }
        })
        .collect();
    if let Some(timed) = timed {
        let weights = weights.get(out.len()..).unwrap_or_default();
        merge_timed(&mut out, timed, best, request, query_vector, weights);
    }
    if let Some(similar) = similar {
        merge_similar(&mut out, similar, request);
    }
    if request.weights.context > 0.0 && config.context_window > 0 {
        add_context(&mut out, request, query_vector).await?;
    }
    Ok((out, started.micros()))
}

/// `search` narrowed to the memories made from the start of `window` until `end` (the
/// recall's time): what was said then or told of later. `None` when the search's own time
/// range leaves nothing there.
fn within_window(
    search: &SearchQuery,
    window: crate::when::TimeWindow,
    end: DateTime<Utc>,
) -> Option<SearchQuery> {
    let filter = &search.filter;
    let since = filter
        .since
        .map_or(window.from, |since| since.max(window.from));
    let until = filter.until.map_or(end, |until| until.min(end));
    (since < until).then(|| {
        let mut narrowed = search.clone();
        narrowed.filter = filter.clone().with_time_range(Some(since), Some(until));
        narrowed
    })
}

/// Adds the hits of the search within the query's time that the whole search did not
/// return, their relevance on the same scale as its hits (`best`, its best score) and
/// weighed as they are (`weights`: each timed hit's role and speaker weight, in order).
fn merge_timed(
    out: &mut Vec<Candidate>,
    timed: Vec<SearchHit>,
    best: f32,
    request: &Request<'_>,
    query_vector: Option<&[f32]>,
    weights: &[f32],
) {
    let config = request.config;
    // Which timed hits are new, by borrowed keys (no string copied); then they are added.
    let new: Vec<bool> = {
        let known: std::collections::HashSet<_, foldhash::fast::RandomState> =
            out.iter().map(Candidate::key).collect();
        timed
            .iter()
            .map(|hit| !known.contains(&(RecordType::Memory, &hit.item.namespace, &*hit.item.id)))
            .collect()
    };
    for ((rank, hit), _) in timed
        .into_iter()
        .enumerate()
        .zip(new)
        .filter(|(_, new)| *new)
    {
        let item = hit.item;
        let mut signals = Signals::of_memory(&item, request.now, config.recency_half_life_hours);
        let weight = weights.get(rank).copied().unwrap_or(1.0);
        signals[Signal::Relevance] = (hit.score / best).min(1.0) * weight;
        if request.wants_overlap() {
            signals[Signal::Overlap] = text_overlap(&request.grams, &[(&item.content, 1.0)]);
        }
        if let Some(vector) = query_vector {
            signals[Signal::Embedding] =
                crate::embedding::similarity(vector, &item, request.config.min_similarity);
        }
        out.push(Candidate {
            record: RetrievalSource::Memory(item),
            channels: Found::new(Channel::Memory, rank + 1),
            signals,
        });
    }
}

/// The weight in keyword relevance of each of `hits`, in order: its role's
/// ([`role_weight`], from
/// [`RetrieverConfig::role_weights_about_agent`](super::RetrieverConfig::role_weights_about_agent)
/// when the query asks about what the agent said), times
/// [`RetrieverConfig::other_speaker_factor`](super::RetrieverConfig::other_speaker_factor)
/// when the query names some of the hits' speakers and not its own. Empty when every weight
/// is 1 (no role weighs less and no speaker is read).
fn hit_weights<'a>(request: &Request<'_>, hits: impl Iterator<Item = &'a SearchHit>) -> Vec<f32> {
    let config = request.config;
    let factor = config.other_speaker_factor;
    let weights = if request.about_agent {
        &config.role_weights_about_agent
    } else {
        &config.role_weights
    };
    let roles = !weights.is_empty();
    if !roles && factor >= 1.0 {
        return Vec::new();
    }
    let read: Vec<(Option<&str>, Option<&str>)> =
        hits.map(|hit| role_and_speaker(&hit.item)).collect();
    let named = if factor < 1.0 {
        Speakers::named_in(
            request.query,
            read.iter().filter_map(|(_, speaker)| *speaker),
        )
    } else {
        Speakers::default()
    };
    read.iter()
        .map(|(role, speaker)| {
            let weight = if roles {
                role_weight(weights, *role)
            } else {
                1.0
            };
            if named.is_other(*speaker) {
                weight * factor
            } else {
                weight
            }
        })
        .collect()
}

/// The role and the speaker of `item` (the dialogue API's metadata): one walk over a small
/// metadata object, two lookups in a large one.
fn role_and_speaker(item: &MemoryItem) -> (Option<&str>, Option<&str>) {
    let Some(map) = item.metadata.as_object() else {
        return (None, None);
    };
    if map.len() > 8 {
        return (
            map.get(crate::ROLE_METADATA_KEY)
                .and_then(serde_json::Value::as_str),
            map.get(crate::SPEAKER_METADATA_KEY)
                .and_then(serde_json::Value::as_str),
        );
    }
    let (mut role, mut speaker) = (None, None);
    for (key, value) in map {
        if key == crate::ROLE_METADATA_KEY {
            role = value.as_str();
        } else if key == crate::SPEAKER_METADATA_KEY {
            speaker = value.as_str();
        }
    }
    (role, speaker)
}

/// The weight of a memory's `role` in keyword relevance by `weights`
/// ([`RetrieverConfig::role_weights`](super::RetrieverConfig::role_weights), or
/// [`RetrieverConfig::role_weights_about_agent`](super::RetrieverConfig::role_weights_about_agent)
/// when the query asks about what the agent said): 1 for a role not there.
fn role_weight(weights: &std::collections::BTreeMap<String, f32>, role: Option<&str>) -> f32 {
    role.and_then(|role| weights.get(role))
        .copied()
        .unwrap_or(1.0)
}

/// Merges the embedding channel's hits (those with a cosine above
/// [`min_similarity`](super::RetrieverConfig::min_similarity), itself at least 0) into the keyword hits:
/// a memory found by both gains the `Embedding` channel; one found only by similarity becomes
/// a candidate of that channel, with no keyword relevance.
fn merge_similar(out: &mut Vec<Candidate>, similar: Vec<SearchHit>, request: &Request<'_>) {
    let mut position: HashMap<Key, usize> = out
        .iter()
        .enumerate()
        .map(|(at, candidate)| (candidate.owned_key(), at))
        .collect();
    // Only a positive cosine relates a memory to the query: the rest would be candidates
    // found by nothing, as keyword search never returns a document without a query word.
    // A caller may ask for more (`min_similarity`).
    let least = request.config.min_similarity.max(0.0);
    let related = similar.into_iter().filter(|hit| hit.score > least);
    for (rank, hit) in related.enumerate() {
        let similarity = hit.score;
        let key = (
            RecordType::Memory,
            hit.item.namespace.clone(),
            hit.item.id.clone(),
        );
        match position.get(&key) {
            Some(at) => {
                let candidate = &mut out[*at];
                candidate.channels.add(Channel::Embedding, rank + 1);
                candidate.signals[Signal::Embedding] = similarity;
            }
            None => {
                let item = hit.item;
                let mut signals =
                    Signals::of_memory(&item, request.now, request.config.recency_half_life_hours);
                signals[Signal::Embedding] = similarity;
                position.insert(key, out.len());
                out.push(Candidate {
                    record: RetrievalSource::Memory(item),
                    channels: Found::new(Channel::Embedding, rank + 1),
                    signals,
                });
            }
        }
    }
}

/// The two listings that find the memories within `window` of `item` in `(created_at, id)`
/// order: those made up to its time, newest first, and those made from its time on; each
/// holds `item` itself and up to `2 * window` more, so ties of time on either side still
/// leave `window` past it.
fn neighbour_filters(filter: &MemoryFilter, item: &MemoryItem, window: usize) -> [MemoryFilter; 2] {
    let mut scoped = filter.clone();
    scoped.scope = item.namespace.exact();
    let earlier = scoped
        .clone()
        .with_time_range(
            None,
            Some(item.created_at + chrono::Duration::microseconds(1)),
        )
        .newest_first()
        .with_limit(2 * window + 1);
    let later = scoped
        .with_time_range(Some(item.created_at), None)
        .with_limit(2 * window + 1);
    [earlier, later]
}

/// The memories within `window` of `item`, from the two listings of [`neighbour_filters`],
/// each with its steps of halving: the memory right after gets the hit's full relevance (an
/// answer follows its question), the one right before half, halved again per further step.
fn neighbours_in(
    item: &MemoryItem,
    before: Vec<Arc<MemoryItem>>,
    after: Vec<Arc<MemoryItem>>,
    window: usize,
) -> Vec<(Arc<MemoryItem>, i32)> {
    let mut neighbours = Vec::new();
    for (list, offset) in [(before, 1), (after, 0)] {
        if let Some(at) = list.iter().position(|other| other.id == item.id) {
            neighbours.extend(
                list.into_iter()
                    .skip(at + 1)
                    .take(window)
                    .enumerate()
                    .map(|(step, other)| (other, step as i32 + offset)),
            );
        }
    }
    neighbours
}

/// Gives the memories next to the best hits (within `context_window` on each side) the
/// hit's relevance as the `context` signal (see [`neighbours_in`]). Neighbours that were not
/// hits become candidates of the `Context` channel. Every hit's neighbourhood is read in one
/// [`MemoryStore::list_many`](memory_core::MemoryStore::list_many) call.
async fn add_context(
    out: &mut Vec<Candidate>,
    request: &Request<'_>,
    query_vector: Option<&[f32]>,
) -> Result<()> {
    let config = request.config;
    let window = config.context_window;
    let filter = request.filter.memory_filter(request.scope, request.now);
    // Keyword hits lend context; a memory found by similarity alone has no relevance to
    // lend.
    let sources: Vec<(Arc<MemoryItem>, f32)> = out
        .iter()
        .filter(|candidate| candidate.channels.contains(Channel::Memory))
        .take(MAX_CONTEXT_SOURCES)
        .filter_map(|candidate| match &candidate.record {
            RetrievalSource::Memory(item) => {
                Some((item.clone(), candidate.signals[Signal::Relevance]))
            }
            _ => None,
        })
        .collect();
    // Every source's two listings in one call: one trip to the store, items shared.
    let filters: Vec<MemoryFilter> = sources
        .iter()
        .flat_map(|(item, _)| neighbour_filters(&filter, item, window))
        .collect();
    let mut listed = request.memory.list_many(&filters).await?.into_iter();
    let neighbourhoods = sources.iter().map(|(item, _)| {
        let before = listed.next().unwrap_or_default();
        let after = listed.next().unwrap_or_default();
        neighbours_in(item, before, after, window)
    });
    let mut position: HashMap<Key, usize> = out
        .iter()
        .enumerate()
        .map(|(at, candidate)| (candidate.owned_key(), at))
        .collect();
    for ((_, relevance), neighbours) in sources.iter().zip(neighbourhoods) {
        for (neighbour, halvings) in neighbours {
            let lent = relevance * 0.5f32.powi(halvings);
            let key = (
                RecordType::Memory,
                neighbour.namespace.clone(),
                neighbour.id.clone(),
            );
            match position.get(&key) {
                Some(at) => {
                    let signals = &mut out[*at].signals;
                    signals[Signal::Context] = signals[Signal::Context].max(lent);
                }
                None => {
                    let mut signals =
                        Signals::of_memory(&neighbour, request.now, config.recency_half_life_hours);
                    signals[Signal::Context] = lent;
                    if let Some(vector) = query_vector {
                        signals[Signal::Embedding] = crate::embedding::similarity(
                            vector,
                            &neighbour,
                            request.config.min_similarity,
                        );
                    }
                    position.insert(key, out.len());
                    let rank = out.len() + 1;
                    out.push(Candidate {
                        record: RetrievalSource::Memory(neighbour),
                        channels: Found::new(Channel::Context, rank),
                        signals,
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
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
        SearchHit {
            item: Arc::new(item),
            score,
        }
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
            ids(&with_time_phrases(hits.clone(), whole.clone(), &holds, 10)),
            [("b", 3.0), ("c", 2.5), ("a", 2.0), ("e", 0.5)]
        );
        assert_eq!(
            ids(&with_time_phrases(hits, whole, &holds, 2)),
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
        use memory_core::MemoryStore;
        let phrases = [phrase("two weeks ago")];
        let sqlite = memory_sqlite::SqliteBackend::open_in_memory().expect("sqlite");
        // The default memory's store is the in-memory one.
        let stores: Vec<Arc<dyn MemoryStore>> = vec![
            crate::Memory::in_memory().store().clone(),
            Arc::new(sqlite.memory_store().clone()),
        ];
        for (store, tells) in stores.into_iter().zip([true, false]) {
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
