//! The memory channel: keyword search over memories, with the embedding channel beside it
//! when an embedder is set, and conversation context from the memories next to the hits.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use memory_core::{
    Channel, MemoryFilter, MemoryItem, Result, RetrievalSource, SearchHit, SearchQuery, Signal,
};

use super::MAX_CONTEXT_SOURCES;
use super::candidate::{Candidate, Found, Key, RecordType};
use super::request::Request;
use crate::scoring::{Signals, text_overlap};
use crate::who::Speakers;

mod own_words;
mod time_phrases;

/// The stores the submodules' tests ask, each with whether it tells term positions: the
/// in-memory one (the default memory's) answers from its index; SQLite tells none, and the
/// text is read.
#[cfg(test)]
fn test_stores() -> Vec<(Arc<dyn memory_core::MemoryStore>, bool)> {
    let sqlite = memory_sqlite::SqliteBackend::open_in_memory().expect("sqlite");
    vec![
        (crate::Memory::in_memory().store().clone(), true),
        (Arc::new(sqlite.memory_store().clone()), false),
    ]
}

use self::own_words::found_through_context;
pub(super) use self::time_phrases::{TimePhrases, search_terms};
use self::time_phrases::{phrase_holders, with_time_phrases};

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

/// The memories of `request` as candidates, and the microseconds the channel took.
pub(super) async fn gather(request: &Request<'_>) -> Result<(Vec<Candidate>, u64)> {
    let config = request.config;
    if !config.strategy.memory() {
        return Ok((Vec::new(), 0));
    }
    let started = super::request::Stopwatch::start();
    let memory = request.memory;
    let mut search = SearchQuery::new(request.scope.clone(), request.query, request.candidates)
        .with_filter(request.filter.memory_filter(request.scope, request.now))
        .with_terms(request.terms.clone());
    // Which hits were found through their context alone, told by the search itself.
    search.own_words = config.context_only_factor < 1.0;
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
    let (hits, whole, similar, timed) = match request.embedder {
        None => {
            let (hits, whole, timed) = tokio::join!(memory.search(&search), whole, timed);
            (hits?, whole?, None, timed?)
        }
        Some(embedder) => {
            // An embedding service that is down or does not answer in time leaves the
            // recall to the other channels, as a failing reranker leaves the fused order:
            // the vectors are an optional channel, and a recall that found the memory by
            // its words must not fail while the service is away. An embedder that answers
            // wrongly (a vector of another length, a malformed answer) is a setup to fix
            // and fails the recall, as the store's own errors do.
            let semantic = async {
                let vector = match crate::embedding::embed_query_checked(embedder, request.query)
                    .await
                {
                    Ok(vector) => vector,
                    Err(
                        error @ (memory_core::MemoryError::Unavailable { .. }
                        | memory_core::MemoryError::Timeout(_)),
                    ) => {
                        tracing::warn!(%error, "embedder failed; recalled without the embedding channel");
                        return Ok(None);
                    }
                    Err(error) => return Err(error),
                };
                let hits = memory
                    .search_similar(&search.filter, &vector, request.candidates)
                    .await?;
                Ok::<_, memory_core::MemoryError>(Some((vector, hits)))
            };
            let (hits, whole, semantic, timed) =
                tokio::join!(memory.search(&search), whole, semantic, timed);
            (hits?, whole?, semantic?, timed?)
        }
    };
    let (query_vector, similar) = match similar {
        Some((vector, hits)) => (Some(vector), Some(hits)),
        None => (None, None),
    };
    let query_vector = query_vector.as_deref();
    let (hits, weights) = weighed_hits(
        request,
        &search,
        hits,
        whole.as_deref(),
        timed.as_deref().unwrap_or_default(),
    )
    .await?;
    let best = hits
        .first()
        .map_or(1.0, |hit| hit.score)
        .max(f32::MIN_POSITIVE);
    let mut out: Vec<Candidate> = hits
        .into_iter()
        .enumerate()
        .map(|(rank, hit)| {
            let item = hit.item;
            let mut signals = Signals::of_memory_for(
                &item,
                request.now,
                config.recency_half_life_hours,
                &request.weights,
            );
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

/// `hits`, of the search without the time's words, with the memories whose own words hold
/// one of the query's time expressions as written scored as `whole`, the search with those
/// words, scored them: the best `limit` (see [`with_time_phrases`]). `hits` as they are when
/// the query names no such time.
async fn phrased(
    request: &Request<'_>,
    hits: Vec<SearchHit>,
    whole: Option<&[SearchHit]>,
    limit: usize,
) -> Vec<SearchHit> {
    match (whole, &request.time_phrases) {
        (Some(whole), Some(time)) => {
            let holds = phrase_holders(request.memory, &hits, whole, &time.phrases).await;
            with_time_phrases(hits, whole, &holds, limit)
        }
        _ => hits,
    }
}

/// Each hit's weight in keyword relevance, and its role's alone.
struct KeywordWeights {
    /// Each hit's weight, in order: its role's, times the factor when the query names other
    /// speakers, times [`context_only_factor`](super::RetrieverConfig::context_only_factor)
    /// when it was found through its context alone. Empty when every weight is 1.
    all: Vec<f32>,
    /// Each hit's role weight alone ([`role_weight`]). Empty when no role is weighed.
    roles: Vec<f32>,
}

/// The [`KeywordWeights`] of `hits`, in order (every hit's role and speaker read once).
fn keyword_weights<'a>(
    request: &Request<'_>,
    hits: impl Iterator<Item = &'a SearchHit> + Clone,
) -> KeywordWeights {
    let config = request.config;
    let (mut all, roles) = hit_weights(request, hits.clone());
    if config.context_only_factor < 1.0 && !request.terms.is_empty() {
        let hits: Vec<&SearchHit> = hits.collect();
        let through_context = found_through_context(&hits, &request.terms);
        all.resize(all.len().max(hits.len()), 1.0);
        for (weight, lowered) in all.iter_mut().zip(through_context) {
            if lowered {
                *weight *= config.context_only_factor;
            }
        }
    }
    KeywordWeights { all, roles }
}

/// Most memories a keyword search returns for the role weights to choose from (see
/// [`RetrieverConfig::role_search_depth`](super::RetrieverConfig::role_search_depth)),
/// unless the candidates asked for are more.
const MOST_WEIGHED_HITS: usize = 1000;

/// The keyword candidates, with the time's expressions read ([`phrased`]), and the weight
/// in keyword relevance of each, then of each of `timed`
/// ([`KeywordWeights::all`]). The candidates are `hits`, the best of `search`, unless a
/// role weighs one of them below the least relevance among them: a memory the search did
/// not return might then outrank it once weighed, so the search is asked for
/// [`role_search_depth`](super::RetrieverConfig::role_search_depth) times as many, and
/// the best by weighted relevance are kept, in the search's order.
async fn weighed_hits(
    request: &Request<'_>,
    search: &SearchQuery,
    hits: Vec<SearchHit>,
    whole: Option<&[SearchHit]>,
    timed: &[SearchHit],
) -> Result<(Vec<SearchHit>, Vec<f32>)> {
    let wanted = search.top_k;
    let hits = phrased(request, hits, whole, wanted).await;
    let weights = keyword_weights(request, hits.iter().chain(timed));
    let deeper = wanted
        .saturating_mul(request.config.role_search_depth)
        .min(wanted.max(MOST_WEIGHED_HITS));
    if deeper <= wanted || hits.len() < wanted || !lowered_below_floor(&hits, &weights.roles) {
        return Ok((hits, weights.all));
    }
    let mut wider = search.clone();
    wider.top_k = deeper;
    let found = request.memory.search(&wider).await?;
    let deep = phrased(request, found, whole, deeper).await;
    // Weighed once, with the speakers read from every hit searched.
    let weights = keyword_weights(request, deep.iter().chain(timed)).all;
    if deep.len() <= wanted {
        return Ok((deep, weights));
    }
    let mut keep = vec![false; deep.len()];
    {
        let weighed = |at: usize| deep[at].score * weights.get(at).copied().unwrap_or(1.0);
        let mut order: Vec<usize> = (0..deep.len()).collect();
        order.select_nth_unstable_by(wanted - 1, |&a, &b| {
            weighed(b).total_cmp(&weighed(a)).then(a.cmp(&b))
        });
        for &at in &order[..wanted] {
            keep[at] = true;
        }
    }
    // The kept hits' weights, then the timed hits' (past the end of `keep`).
    let weights = weights
        .into_iter()
        .enumerate()
        .filter_map(|(at, weight)| keep.get(at).copied().unwrap_or(true).then_some(weight))
        .collect();
    let kept = deep
        .into_iter()
        .zip(keep)
        .filter_map(|(hit, keep)| keep.then_some(hit))
        .collect();
    Ok((kept, weights))
}

/// Whether one of `hits` (best first) weighs below the least relevance among them by its
/// role weight (`roles`, in order; empty when no role is weighed).
fn lowered_below_floor(hits: &[SearchHit], roles: &[f32]) -> bool {
    let Some(floor) = hits.last().map(|hit| hit.score) else {
        return false;
    };
    hits.iter()
        .zip(roles)
        .any(|(hit, weight)| hit.score * weight < floor)
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
/// weighed as they are (`weights`: each timed hit's role and speaker weight, in order),
/// ranked in the channel after every hit of the whole search (which reciprocal rank fusion
/// reads).
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
    // Ranked after every keyword candidate, in the order of the search that found them:
    // their place in that narrower search is not a place among the candidates.
    let mut rank = out.len();
    for ((at, hit), _) in timed
        .into_iter()
        .enumerate()
        .zip(new)
        .filter(|(_, new)| *new)
    {
        rank += 1;
        let item = hit.item;
        let mut signals = Signals::of_memory_for(
            &item,
            request.now,
            config.recency_half_life_hours,
            &request.weights,
        );
        let weight = weights.get(at).copied().unwrap_or(1.0);
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
            channels: Found::new(Channel::Memory, rank),
            signals,
        });
    }
}

/// The weight in keyword relevance of each of `hits`, in order: its role's
/// ([`role_weight`], from
/// [`RetrieverConfig::role_weights_about_agent`](super::RetrieverConfig::role_weights_about_agent)
/// when the query asks about what the agent said), times
/// [`RetrieverConfig::other_speaker_factor`](super::RetrieverConfig::other_speaker_factor)
/// when the query names some of the hits' speakers and not its own; and each one's role
/// weight alone. Each is empty when every weight is 1 (no role weighs less, and no speaker
/// is read).
fn hit_weights<'a>(
    request: &Request<'_>,
    hits: impl Iterator<Item = &'a SearchHit>,
) -> (Vec<f32>, Vec<f32>) {
    let config = request.config;
    let factor = config.other_speaker_factor;
    let weights = if request.about_agent {
        &config.role_weights_about_agent
    } else {
        &config.role_weights
    };
    let roles = !weights.is_empty();
    if !roles && factor >= 1.0 {
        return (Vec::new(), Vec::new());
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
    let role_weights: Vec<f32> = if roles {
        read.iter()
            .map(|(role, _)| role_weight(weights, *role))
            .collect()
    } else {
        Vec::new()
    };
    let all = read
        .iter()
        .enumerate()
        .map(|(at, (_, speaker))| {
            let weight = role_weights.get(at).copied().unwrap_or(1.0);
            if named.is_other(*speaker) {
                weight * factor
            } else {
                weight
            }
        })
        .collect();
    (all, role_weights)
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
/// leave `window` past it. Both stay within the recall's own time range (`filter`'s
/// `since` and `until`): a neighbour outside it is no result, whatever lends it relevance.
fn neighbour_filters(filter: &MemoryFilter, item: &MemoryItem, window: usize) -> [MemoryFilter; 2] {
    let mut scoped = filter.clone();
    scoped.scope = item.namespace.exact();
    let (since, until) = (filter.since, filter.until);
    let up_to = item.created_at + chrono::Duration::microseconds(1);
    let earlier = scoped
        .clone()
        .with_time_range(since, Some(until.map_or(up_to, |until| until.min(up_to))))
        .newest_first()
        .with_limit(2 * window + 1);
    let from = since.map_or(item.created_at, |since| since.max(item.created_at));
    let later = scoped
        .with_time_range(Some(from), until)
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
