//! The graph channel: entities matched by the query's keywords, the entities reached
//! from them by traversal, and the memories linked to those entities by enrichment (see
//! [`crate::enrich`]).

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::try_join_all;
use memory_core::backend::entity_matches_keyword;
use memory_core::{
    Channel, GraphEntity, KnowledgeGraphExt, Namespace, Result, RetrievalSource, Signal,
};

use super::MAX_EXPANDED_ENTITIES;
use super::candidate::{Candidate, Found, Key, RecordType};
use super::request::Request;
use crate::enrich::{is_link_node, memory_of_node};
use crate::scoring::{Signals, reference, text_overlap};

/// What the graph channel found.
#[derive(Debug, Default)]
pub(super) struct GraphFound {
    /// The entities, as candidates.
    pub(super) entities: Vec<Candidate>,
    /// Every memory linked to a matched or reached entity, with its graph score (the sum of
    /// the traversal scores of its nodes, at most 1).
    pub(super) linked: HashMap<(Namespace, String), f32>,
    /// The best linked memories as candidates (read from the store), for those the memory
    /// channel did not find.
    pub(super) memories: Vec<Candidate>,
    /// Microseconds the channel took.
    pub(super) micros: u64,
}

impl GraphFound {
    fn empty(micros: u64) -> Self {
        Self {
            micros,
            ..Self::default()
        }
    }
}

/// The entities (and linked memories) of `request`.
pub(super) async fn gather(request: &Request<'_>) -> Result<GraphFound> {
    let Some(graph) = request.graph else {
        return Ok(GraphFound::empty(0));
    };
    let (config, filter, scope) = (request.config, request.filter, request.scope);
    if !config.strategy.graph() {
        return Ok(GraphFound::empty(0));
    }
    // Entities are semantic records with no metadata and no time a range could filter by:
    // under a kind filter without semantic records, a metadata condition or a time range
    // the graph is still walked, for the memories it links to (filtered as every memory
    // is), but no entity is a result.
    let entities_admitted =
        filter.admits_pages_and_entities() && filter.since.is_none() && filter.until.is_none();
    let started = super::request::Stopwatch::start();
    if !graph.may_have_entities(scope).await? {
        return Ok(GraphFound::empty(started.micros()));
    }
    let keywords = request.keywords();
    if keywords.is_empty() {
        return Ok(GraphFound::empty(0));
    }
    let mut matched = graph.find_by_keywords(scope, keywords).await?;
    // Memory nodes are reached through entities only.
    matched.retain(|entity| !is_link_node(entity));
    // Each entity's share of the keywords it matches, computed once.
    let mut matched: Vec<(f32, Arc<GraphEntity>)> = matched
        .into_iter()
        .map(|entity| {
            let share = keywords
                .iter()
                .filter(|keyword| entity_matches_keyword(&entity, keyword))
                .count() as f32
                / keywords.len() as f32;
            (share, entity)
        })
        .collect();
    matched.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    // Whether an entity may be a result: the recall's tags are asked of the entities kept,
    // so the cuts below count those that pass (a tag filter applied after a cut had left
    // none of the best 30 untagged matches' tagged peers).
    let passes = |entity: &GraphEntity| {
        entities_admitted && filter.tags.iter().all(|tag| entity.tags.contains(tag))
    };
    // The best matches that may be results, and the best few as the traversal's seeds
    // whatever their tags (they lead to others, and to linked memories).
    let seeds: Vec<Arc<GraphEntity>> = matched
        .iter()
        .take(MAX_EXPANDED_ENTITIES)
        .map(|(_, entity)| Arc::clone(entity))
        .collect();
    matched.retain(|(_, entity)| passes(entity));
    matched.truncate(request.candidates);
    let mut found: HashMap<Key, Candidate> = HashMap::new();
    let mut linked: HashMap<(Namespace, String), f32> = HashMap::new();
    let mut rank = 0;
    for (share, entity) in &matched {
        rank += 1;
        let key = (
            RecordType::Entity,
            entity.namespace.clone(),
            entity.id.clone(),
        );
        let mut signals = Signals::only(Signal::Graph, 1.0);
        signals[Signal::Relevance] = *share;
        found.insert(
            key,
            Candidate {
                signals,
                channels: Found::new(Channel::GraphMatch, rank),
                record: RetrievalSource::GraphEntity(Box::new(GraphEntity::clone(entity))),
            },
        );
    }
    if config.graph_depth > 0 {
        // The traversals run together; their results merge in the matched order. A recall
        // as of a time walks the graph as it was then.
        let expanded = seeds.iter().map(|entity| async move {
            match filter.view {
                super::RecallView::AsOf(at) => {
                    graph
                        .related_as_of(
                            &entity.namespace,
                            &entity.id,
                            config.graph_depth.min(memory_core::MAX_TRAVERSAL_DEPTH),
                            at,
                        )
                        .await
                }
                _ => {
                    graph
                        .get_related(&entity.namespace, &entity.id, config.graph_depth)
                        .await
                }
            }
        });
        // Memories are linked through entities that name a query keyword as a whole word (or
        // as a tag), not through those that only start with one ("car" is no "Caroline").
        let naming: Vec<bool> = seeds
            .iter()
            .map(|entity| names_keyword(entity, keywords))
            .collect();
        for (related, naming) in try_join_all(expanded).await?.into_iter().zip(naming) {
            for reached in related {
                if is_link_node(&reached.entity) {
                    if naming && let Some(memory) = memory_of_node(&reached.entity.id) {
                        let score = linked
                            .entry((reached.entity.namespace.clone(), memory.to_owned()))
                            .or_default();
                        *score = (*score + reached.score).min(1.0);
                    }
                    continue;
                }
                let key = (
                    RecordType::Entity,
                    reached.entity.namespace.clone(),
                    reached.entity.id.clone(),
                );
                match found.get_mut(&key) {
                    Some(existing) => {
                        let graph_signal = &mut existing.signals[Signal::Graph];
                        *graph_signal = graph_signal.max(reached.score);
                        if !existing.channels.contains(Channel::GraphTraversal) {
                            rank += 1;
                            existing.channels.add(Channel::GraphTraversal, rank);
                        }
                    }
                    None if passes(&reached.entity) => {
                        rank += 1;
                        found.insert(
                            key,
                            Candidate {
                                signals: Signals::only(Signal::Graph, reached.score),
                                channels: Found::new(Channel::GraphTraversal, rank),
                                record: RetrievalSource::GraphEntity(Box::new(
                                    Arc::unwrap_or_clone(reached.entity),
                                )),
                            },
                        );
                    }
                    // Not a result (its tags, or no entity is one): it led here, and on.
                    None => {}
                }
                if found.len() >= request.candidates * 2 {
                    break;
                }
            }
        }
    }
    let kept: Vec<Candidate> = found
        .into_values()
        .filter(|candidate| match &candidate.record {
            RetrievalSource::GraphEntity(entity) => passes(entity),
            _ => false,
        })
        .collect();
    // Degrees are read together: on the SQL backends each is a query.
    let degrees = try_join_all(kept.iter().map(|candidate| {
        let (namespace, id) = (candidate.record.namespace(), candidate.record.id());
        graph.degree(namespace, id)
    }))
    .await?;
    let mut out = Vec::with_capacity(kept.len());
    for (mut candidate, degree) in kept.into_iter().zip(degrees) {
        if let (true, RetrievalSource::GraphEntity(entity)) =
            (request.wants_overlap(), &candidate.record)
        {
            candidate.signals[Signal::Overlap] = text_overlap(
                &request.grams,
                &[(&entity.name, 3.0), (&entity.description, 1.0)],
            );
        }
        candidate.signals[Signal::Reference] = reference(degree);
        candidate.signals[Signal::Importance] = 0.5;
        out.push(candidate);
    }
    let memories = linked_memories(request, &linked).await?;
    Ok(GraphFound {
        entities: out,
        linked,
        memories,
        micros: started.micros(),
    })
}

/// Whether one of `keywords` is a whole word of `entity`'s name, or one of its tags.
fn names_keyword(entity: &GraphEntity, keywords: &[String]) -> bool {
    let name = entity.name.to_lowercase();
    let words: Vec<&str> = name
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    keywords.iter().any(|keyword| {
        words.contains(&keyword.as_str()) || entity.tags.iter().any(|tag| tag.as_str() == keyword)
    })
}

/// The best [`Request::candidates`] memories of `linked` (graph score, then namespace and
/// id) that pass the recall's filter, read from the store, as candidates.
async fn linked_memories(
    request: &Request<'_>,
    linked: &HashMap<(Namespace, String), f32>,
) -> Result<Vec<Candidate>> {
    if linked.is_empty() {
        return Ok(Vec::new());
    }
    let mut best: Vec<(&(Namespace, String), f32)> =
        linked.iter().map(|(key, score)| (key, *score)).collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let memory_filter = request.filter.memory_filter(request.scope, request.now);
    // Read a batch of the best at a time, until the candidates asked for pass the filter
    // (a filter applied after one cut had left the best that pass unread).
    let mut passing = Vec::new();
    for batch in best.chunks(request.candidates.max(1)) {
        let mut by_namespace: HashMap<&Namespace, Vec<String>> = HashMap::new();
        for ((namespace, id), _) in batch {
            by_namespace.entry(namespace).or_default().push(id.clone());
        }
        let reads = by_namespace
            .iter()
            .map(|(namespace, ids)| request.memory.get_many(namespace, ids));
        for items in try_join_all(reads).await? {
            passing.extend(items.into_iter().filter(|item| memory_filter.matches(item)));
        }
        if passing.len() >= request.candidates {
            break;
        }
    }
    let place: HashMap<(&Namespace, &str), usize> = best
        .iter()
        .enumerate()
        .map(|(at, ((namespace, id), _))| ((namespace, id.as_str()), at + 1))
        .collect();
    let rank_of = |item: &memory_core::MemoryItem| {
        place
            .get(&(&item.namespace, item.id.as_str()))
            .copied()
            .unwrap_or(best.len())
    };
    // The reads come back by namespace: the best first again.
    passing.sort_by_key(|item| rank_of(item));
    let mut out = Vec::new();
    for item in passing.into_iter().take(request.candidates) {
        let Some(score) = linked.get(&(item.namespace.clone(), item.id.clone())) else {
            continue;
        };
        let mut signals =
            Signals::of_memory(&item, request.now, request.config.recency_half_life_hours);
        signals[Signal::Graph] = *score;
        if request.wants_overlap() {
            signals[Signal::Overlap] = text_overlap(&request.grams, &[(&item.content, 1.0)]);
        }
        let rank = rank_of(&item);
        out.push(Candidate {
            signals,
            channels: Found::new(Channel::GraphTraversal, rank),
            record: RetrievalSource::Memory(std::sync::Arc::new(item)),
        });
    }
    Ok(out)
}

/// Merges the graph channel's memories into the memory channel's: a memory both found gets
/// the graph signal (and the channel); one only the graph found joins the candidates.
pub(super) fn merge_linked(
    memories: &mut Vec<Candidate>,
    linked: &HashMap<(Namespace, String), f32>,
    found: Vec<Candidate>,
) {
    if linked.is_empty() {
        return;
    }
    let mut rank = 0;
    let mut known: HashMap<Key, usize> = HashMap::with_capacity(memories.len());
    for (at, candidate) in memories.iter_mut().enumerate() {
        if let RetrievalSource::Memory(item) = &candidate.record
            && let Some(score) = linked.get(&(item.namespace.clone(), item.id.clone()))
        {
            rank += 1;
            candidate.signals[Signal::Graph] = candidate.signals[Signal::Graph].max(*score);
            if !candidate.channels.contains(Channel::GraphTraversal) {
                candidate.channels.add(Channel::GraphTraversal, rank);
            }
        }
        known.insert(candidate.owned_key(), at);
    }
    for candidate in found {
        if !known.contains_key(&candidate.owned_key()) {
            memories.push(candidate);
        }
    }
}
