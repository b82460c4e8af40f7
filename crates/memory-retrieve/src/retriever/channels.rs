//! The channels of a recall: keyword search over memories (with the embedding channel and
//! conversation context), knowledge pages, and the knowledge graph. Each returns its
//! candidates with their signals; the retriever fuses and ranks them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use memory_core::{
    Channel, MemoryFilter, MemoryItem, PageQuery, Result, RetrievalSource, Scope, SearchQuery,
    entity_matches_keyword,
};

use super::{
    Candidate, Found, Key, MAX_CONTEXT_SOURCES, MAX_EXPANDED_ENTITIES, RecallFilter, RecordType,
    Retriever, RetrieverConfig,
};
use crate::scoring::{
    NGrams, Signals, frequency, recency, recency_of_age, reference, temporal_weight,
    temporal_weight_of_age, text_overlap,
};

/// The memory-store filter of a recall in `scope` (the context lookup narrows its scope).
fn memory_filter(scope: &Scope, filter: &RecallFilter) -> MemoryFilter {
    let mut memory_filter = MemoryFilter::new(scope.clone())
        .with_time_range(filter.since, filter.until)
        .with_kinds(filter.kinds());
    memory_filter.tags = filter.tags.clone();
    memory_filter
}

/// Merges the embedding channel's hits (those with a positive cosine) into the keyword hits:
/// a memory found by both gains the `Embedding` channel; one found only by similarity becomes
/// a candidate of that channel, with no keyword relevance.
fn merge_similar(
    out: &mut Vec<Candidate>,
    similar: Vec<memory_core::SearchHit>,
    config: &RetrieverConfig,
    now: DateTime<Utc>,
) {
    let mut position: HashMap<Key, usize> = out
        .iter()
        .enumerate()
        .map(|(at, candidate)| (candidate.owned_key(), at))
        .collect();
    // Only a positive cosine relates a memory to the query: the rest would be candidates
    // found by nothing, as keyword search never returns a document without a query word.
    let related = similar.into_iter().filter(|hit| hit.score > 0.0);
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
                candidate.signals.embedding = similarity;
            }
            None => {
                let item = hit.item;
                let signals = Signals {
                    temporal: temporal_weight(item.updated_at, now),
                    importance: item.importance,
                    frequency: frequency(item.access_count),
                    recency: recency(item.created_at, now, config.recency_half_life_hours),
                    embedding: similarity,
                    ..Signals::default()
                };
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

impl Retriever {
    pub(super) async fn memory_channel(
        &self,
        scope: &Scope,
        query: &str,
        filter: &RecallFilter,
        config: &RetrieverConfig,
        grams: &NGrams,
        now: DateTime<Utc>,
    ) -> Result<(Vec<Candidate>, u64)> {
        if !config.strategy.memory() {
            return Ok((Vec::new(), 0));
        }
        let started = Instant::now();
        let search = SearchQuery::new(scope.clone(), query, config.candidates_per_channel)
            .with_filter(memory_filter(scope, filter));
        // Keyword search, and with an embedder the similarity search beside it.
        let (hits, similar) = match &self.embedder {
            None => (self.memory.search(&search).await?, None),
            Some(embedder) => {
                let semantic = async {
                    let vector = crate::embedding::embed_checked(&**embedder, query).await?;
                    let hits = self
                        .memory
                        .search_similar(&search.filter, &vector, config.candidates_per_channel)
                        .await?;
                    Ok::<_, memory_core::MemoryError>((vector, hits))
                };
                let (hits, semantic) = tokio::join!(self.memory.search(&search), semantic);
                (hits?, Some(semantic?))
            }
        };
        let (query_vector, similar) = match similar {
            Some((vector, hits)) => (Some(vector), Some(hits)),
            None => (None, None),
        };
        let query_vector = query_vector.as_deref();
        let best = hits
            .first()
            .map_or(1.0, |hit| hit.score)
            .max(f32::MIN_POSITIVE);
        let weights = config.scoring.weights();
        let now_secs = now.timestamp();
        let out: Vec<Candidate> = hits
            .into_iter()
            .enumerate()
            .map(|(rank, hit)| {
                let item = hit.item;
                let signals = Signals {
                    relevance: hit.score / best,
                    overlap: if weights.overlap > 0.0 {
                        text_overlap(grams, &[(&item.content, 1.0)])
                    } else {
                        0.0
                    },
                    graph: 0.0,
                    temporal: temporal_weight_of_age(now_secs - item.updated_at.timestamp()),
                    reference: 0.0,
                    importance: item.importance,
                    frequency: frequency(item.access_count),
                    recency: recency_of_age(
                        now_secs - item.created_at.timestamp(),
                        config.recency_half_life_hours,
                    ),
                    context: 0.0,
                    embedding: query_vector
                        .map_or(0.0, |vector| crate::embedding::similarity(vector, &item)),
                };
                Candidate {
                    record: RetrievalSource::Memory(item),
                    channels: Found::new(Channel::Memory, rank + 1),
                    signals,
                }
            })
            .collect();
        let mut out = out;
        if let Some(similar) = similar {
            merge_similar(&mut out, similar, config, now);
        }
        if weights.context > 0.0 && config.context_window > 0 {
            let filter = memory_filter(scope, filter);
            self.add_context(&mut out, &filter, config, now, query_vector)
                .await?;
        }
        Ok((out, started.elapsed().as_micros() as u64))
    }

    pub(super) async fn knowledge_channel(
        &self,
        scope: &Scope,
        query: &str,
        filter: &RecallFilter,
        config: &RetrieverConfig,
        grams: &NGrams,
        now: DateTime<Utc>,
    ) -> Result<(Vec<Candidate>, u64)> {
        let Some(knowledge) = &self.knowledge else {
            return Ok((Vec::new(), 0));
        };
        if !config.strategy.knowledge() || !filter.allows_semantic() {
            return Ok((Vec::new(), 0));
        }
        let started = Instant::now();
        let mut page_query = PageQuery::new(scope.clone(), query, config.candidates_per_channel);
        page_query.tags = filter.tags.clone();
        let hits = knowledge.search(&page_query).await?;
        let weights = config.scoring.weights();
        let best = hits
            .first()
            .map_or(1.0, |hit| hit.score)
            .max(f32::MIN_POSITIVE);
        let out = hits
            .into_iter()
            .filter(|hit| filter.in_range(hit.page.updated_at))
            .enumerate()
            .map(|(rank, hit)| {
                let page = hit.page;
                let signals = Signals {
                    relevance: hit.score / best,
                    overlap: if weights.overlap > 0.0 {
                        text_overlap(
                            grams,
                            &[
                                (&page.title, 3.0),
                                (&page.summary, 2.0),
                                (&page.content, 1.0),
                            ],
                        )
                    } else {
                        0.0
                    },
                    graph: 0.0,
                    temporal: temporal_weight(page.updated_at, now),
                    reference: reference(hit.referenced_by),
                    importance: 0.5,
                    frequency: 0.0,
                    recency: recency(page.updated_at, now, config.recency_half_life_hours),
                    context: 0.0,
                    embedding: 0.0,
                };
                Candidate {
                    record: RetrievalSource::KnowledgePage(Box::new(page)),
                    channels: Found::new(Channel::Knowledge, rank + 1),
                    signals,
                }
            })
            .collect();
        Ok((out, started.elapsed().as_micros() as u64))
    }

    /// Gives the memories next to the best hits (in `(created_at, id)` order, within
    /// `context_window` on each side) the hit's relevance as the `context` signal: all of it
    /// to the next memory, half to the previous one, halved again per further step.
    /// Neighbours that were not hits become candidates of the `Context` channel.
    pub(super) async fn add_context(
        &self,
        out: &mut Vec<Candidate>,
        filter: &MemoryFilter,
        config: &RetrieverConfig,
        now: DateTime<Utc>,
        query_vector: Option<&[f32]>,
    ) -> Result<()> {
        let window = config.context_window;
        // Keyword hits lend context; a memory found by similarity alone has no relevance to
        // lend.
        let sources: Vec<(Arc<MemoryItem>, f32)> = out
            .iter()
            .filter(|candidate| candidate.channels.contains(Channel::Memory))
            .take(MAX_CONTEXT_SOURCES)
            .filter_map(|candidate| match &candidate.record {
                RetrievalSource::Memory(item) => Some((item.clone(), candidate.signals.relevance)),
                _ => None,
            })
            .collect();
        let mut position: HashMap<Key, usize> = out
            .iter()
            .enumerate()
            .map(|(at, candidate)| (candidate.owned_key(), at))
            .collect();
        for (item, relevance) in sources {
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
            // (neighbour, steps of halving): the memory right after a hit gets its full
            // relevance (an answer follows its question), the one right before gets half.
            let mut neighbours: Vec<(MemoryItem, i32)> = Vec::new();
            for (list, offset) in [
                (self.memory.list(&earlier).await?, 1),
                (self.memory.list(&later).await?, 0),
            ] {
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
            for (neighbour, halvings) in neighbours {
                let lent = relevance * 0.5f32.powi(halvings);
                let key = (
                    RecordType::Memory,
                    neighbour.namespace.clone(),
                    neighbour.id.clone(),
                );
                match position.get(&key) {
                    Some(at) => {
                        let candidate = &mut out[*at];
                        candidate.signals.context = candidate.signals.context.max(lent);
                    }
                    None => {
                        let signals = Signals {
                            temporal: temporal_weight(neighbour.updated_at, now),
                            importance: neighbour.importance,
                            frequency: frequency(neighbour.access_count),
                            recency: recency(
                                neighbour.created_at,
                                now,
                                config.recency_half_life_hours,
                            ),
                            context: lent,
                            embedding: query_vector.map_or(0.0, |vector| {
                                crate::embedding::similarity(vector, &neighbour)
                            }),
                            ..Signals::default()
                        };
                        position.insert(key, out.len());
                        let rank = out.len() + 1;
                        out.push(Candidate {
                            record: RetrievalSource::Memory(Arc::new(neighbour)),
                            channels: Found::new(Channel::Context, rank),
                            signals,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) async fn graph_channel(
        &self,
        scope: &Scope,
        query: &str,
        filter: &RecallFilter,
        config: &RetrieverConfig,
        grams: &NGrams,
    ) -> Result<(Vec<Candidate>, u64)> {
        let Some(graph) = &self.graph else {
            return Ok((Vec::new(), 0));
        };
        if !config.strategy.graph()
            || !filter.allows_semantic()
            || filter.since.is_some()
            || filter.until.is_some()
        {
            return Ok((Vec::new(), 0));
        }
        let started = Instant::now();
        if !graph.may_have_entities(scope).await? {
            return Ok((Vec::new(), started.elapsed().as_micros() as u64));
        }
        let keywords = self.keywords.extract(query);
        if keywords.is_empty() {
            return Ok((Vec::new(), 0));
        }
        let mut matched = graph.find_by_keywords(scope, &keywords).await?;
        let keyword_share = |entity: &memory_core::GraphEntity| {
            keywords
                .iter()
                .filter(|k| entity_matches_keyword(entity, k))
                .count() as f32
                / keywords.len() as f32
        };
        matched.sort_by(|a, b| {
            keyword_share(b)
                .total_cmp(&keyword_share(a))
                .then_with(|| a.id.cmp(&b.id))
        });
        matched.truncate(config.candidates_per_channel);
        let mut found: HashMap<Key, Candidate> = HashMap::new();
        let mut rank = 0;
        for entity in &matched {
            rank += 1;
            let key = (
                RecordType::Entity,
                entity.namespace.clone(),
                entity.id.clone(),
            );
            found.insert(
                key,
                Candidate {
                    signals: Signals {
                        relevance: keyword_share(entity),
                        graph: 1.0,
                        ..Signals::default()
                    },
                    channels: Found::new(Channel::GraphMatch, rank),
                    record: RetrievalSource::GraphEntity(Box::new(entity.clone())),
                },
            );
        }
        if config.graph_depth > 0 {
            for entity in matched.iter().take(MAX_EXPANDED_ENTITIES) {
                for reached in graph
                    .get_related(&entity.namespace, &entity.id, config.graph_depth)
                    .await?
                {
                    let key = (
                        RecordType::Entity,
                        reached.entity.namespace.clone(),
                        reached.entity.id.clone(),
                    );
                    match found.get_mut(&key) {
                        Some(existing) => {
                            existing.signals.graph = existing.signals.graph.max(reached.score);
                            if !existing.channels.contains(Channel::GraphTraversal) {
                                rank += 1;
                                existing.channels.add(Channel::GraphTraversal, rank);
                            }
                        }
                        None => {
                            rank += 1;
                            found.insert(
                                key,
                                Candidate {
                                    signals: Signals {
                                        graph: reached.score,
                                        ..Signals::default()
                                    },
                                    channels: Found::new(Channel::GraphTraversal, rank),
                                    record: RetrievalSource::GraphEntity(Box::new(reached.entity)),
                                },
                            );
                        }
                    }
                    if found.len() >= config.candidates_per_channel * 2 {
                        break;
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(found.len());
        for (_, mut candidate) in found {
            let RetrievalSource::GraphEntity(entity) = &candidate.record else {
                continue;
            };
            if !filter.tags.iter().all(|tag| entity.tags.contains(tag)) {
                continue;
            }
            if config.scoring.weights().overlap > 0.0 {
                candidate.signals.overlap =
                    text_overlap(grams, &[(&entity.name, 3.0), (&entity.description, 1.0)]);
            }
            candidate.signals.reference =
                reference(graph.degree(&entity.namespace, &entity.id).await?);
            candidate.signals.importance = 0.5;
            out.push(candidate);
        }
        Ok((out, started.elapsed().as_micros() as u64))
    }
}
