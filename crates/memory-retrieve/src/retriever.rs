//! The retriever: one query, every channel in parallel, fused, scored, thresholded, ranked.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use memory_core::{
    Channel, Clock, EmbeddingProvider, KeywordExtractor, KnowledgeGraph, KnowledgeStore,
    MemoryFilter, MemoryItem, MemoryStore, Namespace, PageQuery, Result, RetrievalResult,
    RetrievalSource, Scope, ScoreBreakdown, ScoredItem, SearchQuery, SignalScore, SystemClock,
    entity_matches_keyword,
};

mod config;

pub use self::config::{
    DEFAULT_MAX_QUERY_BYTES, Fusion, MAX_CONTEXT_SOURCES, MAX_CONTEXT_WINDOW,
    MAX_EXPANDED_ENTITIES, MAX_RESULTS_LIMIT, RecallFilter, RetrievalStrategy, RetrieverConfig,
};
use crate::keywords::AnalyzerKeywordExtractor;
use crate::scoring::{
    NGrams, Signals, frequency, recency, recency_of_age, reciprocal_rank, reference,
    temporal_weight, temporal_weight_of_age, text_overlap,
};

/// The memory-store filter of a recall in `scope` (the context lookup narrows its scope).
fn memory_filter(scope: &Scope, filter: &RecallFilter) -> MemoryFilter {
    let mut memory_filter = MemoryFilter::new(scope.clone())
        .with_time_range(filter.since, filter.until)
        .with_kinds(filter.kinds());
    memory_filter.tags = filter.tags.clone();
    memory_filter
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum RecordType {
    Memory,
    Page,
    Entity,
}

#[derive(Debug)]
struct Candidate {
    source: RetrievalSource,
    channels: Found,
    signals: Signals,
}

/// The channels that found a candidate, each with the candidate's rank there, kept inline
/// (no allocation per candidate). Two suffice: a record comes from one channel, except a
/// graph entity both matched and reached by traversal, and a memory found by keywords and by
/// similarity (context neighbours are never hits, so no record has three).
#[derive(Clone, Copy, Debug)]
struct Found {
    first: (Channel, usize),
    second: Option<(Channel, usize)>,
}

impl Found {
    fn new(channel: Channel, rank: usize) -> Self {
        Self {
            first: (channel, rank),
            second: None,
        }
    }

    fn iter(&self) -> impl Iterator<Item = (Channel, usize)> + '_ {
        std::iter::once(self.first).chain(self.second)
    }

    fn contains(&self, channel: Channel) -> bool {
        self.iter().any(|(found, _)| found == channel)
    }

    /// Records a second channel (a third is never needed; it would be ignored).
    fn add(&mut self, channel: Channel, rank: usize) {
        if self.second.is_none() {
            self.second = Some((channel, rank));
        }
    }
}

/// A record's identity across channels (owned: for the maps that merge channels).
type Key = (RecordType, Namespace, String);

impl Candidate {
    /// The record's identity, borrowed from its source (the final order's tie-break).
    fn key(&self) -> (RecordType, &Namespace, &str) {
        match &self.source {
            RetrievalSource::Memory(item) => (RecordType::Memory, &item.namespace, &item.id),
            RetrievalSource::KnowledgePage(page) => (RecordType::Page, &page.namespace, &page.id),
            RetrievalSource::GraphEntity(entity) => {
                (RecordType::Entity, &entity.namespace, &entity.id)
            }
        }
    }

    fn owned_key(&self) -> Key {
        let (kind, namespace, id) = self.key();
        (kind, namespace.clone(), id.to_owned())
    }
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
                    source: RetrievalSource::Memory(item),
                    channels: Found::new(Channel::Embedding, rank + 1),
                    signals,
                });
            }
        }
    }
}

/// Combines a memory store with optional knowledge store and graph into one ranked recall.
///
/// Scoring is a pure function of the candidates, the query and `clock.now()`; only the
/// channel calls are async, and they run concurrently.
#[derive(Debug, Clone)]
pub struct Retriever {
    memory: Arc<dyn MemoryStore>,
    knowledge: Option<Arc<dyn KnowledgeStore>>,
    graph: Option<Arc<dyn KnowledgeGraph>>,
    keywords: Arc<dyn KeywordExtractor>,
    clock: Arc<dyn Clock>,
    config: RetrieverConfig,
    embedder: Option<Arc<dyn EmbeddingProvider>>,
}

impl Retriever {
    /// A retriever over a memory store only, with default settings.
    pub fn new(memory: Arc<dyn MemoryStore>) -> Self {
        Self {
            memory,
            knowledge: None,
            graph: None,
            keywords: Arc::new(AnalyzerKeywordExtractor),
            clock: Arc::new(SystemClock),
            config: RetrieverConfig::default(),
            embedder: None,
        }
    }

    /// Adds the embedding channel (feature `embeddings`): each recall embeds the query with
    /// `embedder` and asks the memory store for the memories whose stored embeddings are
    /// most similar ([`MemoryStore::search_similar`]), beside the keyword search. Memories
    /// found by both carry both channels; every memory candidate with an embedding gets the
    /// `embedding` signal (its cosine with the query, negatives as 0).
    ///
    /// If the scoring is still the default, it becomes
    /// [`ScoreWeights::with_embeddings`](crate::ScoreWeights::with_embeddings): with the
    /// default weights the new signal would count for nothing. Set the config afterwards to
    /// choose other weights. Memories need embeddings to be found this way:
    /// [`Memory::remember`](crate::Memory::remember) computes them when the
    /// [`MemoryBuilder`](crate::MemoryBuilder) has an embedder.
    #[cfg(feature = "embeddings")]
    pub fn with_embedder(mut self, embedder: Arc<dyn EmbeddingProvider>) -> Self {
        self.config = crate::embedding::with_embedding_weights(self.config);
        self.embedder = Some(embedder);
        self
    }

    /// The embedding provider, if the embedding channel is on.
    pub(crate) fn embedder(&self) -> Option<&Arc<dyn EmbeddingProvider>> {
        self.embedder.as_ref()
    }

    /// Adds the knowledge channel.
    pub fn with_knowledge(mut self, knowledge: Arc<dyn KnowledgeStore>) -> Self {
        self.knowledge = Some(knowledge);
        self
    }

    /// Adds the graph channel.
    pub fn with_graph(mut self, graph: Arc<dyn KnowledgeGraph>) -> Self {
        self.graph = Some(graph);
        self
    }

    /// Replaces the keyword extractor.
    pub fn with_keyword_extractor(mut self, keywords: Arc<dyn KeywordExtractor>) -> Self {
        self.keywords = keywords;
        self
    }

    /// Replaces the clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces the default settings.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) for an invalid config.
    pub fn with_config(mut self, config: RetrieverConfig) -> Result<Self> {
        config.validate()?;
        self.config = config;
        Ok(self)
    }

    pub(crate) fn set_config_unchecked(&mut self, config: RetrieverConfig) {
        self.config = config;
    }

    /// The default settings.
    pub fn config(&self) -> &RetrieverConfig {
        &self.config
    }

    /// Retrieves with the default settings and no filter.
    ///
    /// # Errors
    /// As [`retrieve_with`](Self::retrieve_with).
    pub async fn retrieve(&self, scope: &Scope, query: &str) -> Result<RetrievalResult> {
        self.retrieve_with(scope, query, &RecallFilter::default(), &self.config)
            .await
    }

    /// Retrieves the best records in `scope` for `query`: recall from every channel of
    /// `config.strategy` in parallel, fuse, score against the raw query, drop those under
    /// `min_score`, sort (score descending, then record type, namespace, id), cut to
    /// `max_results`. A blank query returns no results.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) for an invalid config or a query longer than
    /// `max_query_bytes`; channel errors as the backend reports them.
    pub async fn retrieve_with(
        &self,
        scope: &Scope,
        query: &str,
        filter: &RecallFilter,
        config: &RetrieverConfig,
    ) -> Result<RetrievalResult> {
        config.validate()?;
        memory_core::validate_len("query", query, config.max_query_bytes)?;
        let span =
            tracing::debug_span!("recall", scope = %scope.namespace, strategy = ?config.strategy);
        let _entered = span.enter();
        if query.trim().is_empty() {
            return Ok(RetrievalResult {
                items: Vec::new(),
                total_found: 0,
                query: query.to_owned(),
            });
        }
        let now = self.clock.now();
        let grams = if config.scoring.weights().overlap > 0.0 {
            NGrams::of(query)
        } else {
            NGrams::default()
        };
        let started = Instant::now();
        let (memories, pages, entities) = tokio::join!(
            self.memory_channel(scope, query, filter, config, &grams, now),
            self.knowledge_channel(scope, query, filter, config, &grams, now),
            self.graph_channel(scope, query, filter, config, &grams),
        );
        let (memories, memory_time) = memories?;
        let (pages, page_time) = pages?;
        let (entities, graph_time) = entities?;
        tracing::debug!(
            memory_candidates = memories.len(),
            memory_us = memory_time,
            knowledge_candidates = pages.len(),
            knowledge_us = page_time,
            graph_candidates = entities.len(),
            graph_us = graph_time,
            "channels answered"
        );
        let found_by = |channel: Channel| {
            memories
                .iter()
                .any(|candidate| candidate.channels.contains(channel))
        };
        // How many channel lists took part: only reciprocal rank fusion needs it.
        let active = match config.fusion {
            Fusion::Weighted => 0,
            Fusion::ReciprocalRank { .. } => [
                found_by(Channel::Memory) || found_by(Channel::Context),
                found_by(Channel::Embedding),
                !pages.is_empty(),
                !entities.is_empty(),
            ]
            .iter()
            .filter(|active| **active)
            .count(),
        };
        // Collected in place over the memory channel's buffer (no allocation when the other
        // channels found nothing).
        let mut candidates: Vec<Option<Candidate>> = memories.into_iter().map(Some).collect();
        candidates.extend(pages.into_iter().map(Some));
        candidates.extend(entities.into_iter().map(Some));
        let total_found = candidates.len();
        let weights = config.scoring.weights().prepare();
        // Score every candidate cheaply and rank (score, index) pairs, so the candidates
        // themselves never move; build the breakdowns only for what is returned.
        let mut scored: Vec<(f32, usize)> = Vec::with_capacity(candidates.len());
        for (at, candidate) in candidates.iter().enumerate() {
            let Some(candidate) = candidate else { continue };
            let score = match config.fusion {
                Fusion::Weighted => weights.score(&candidate.signals),
                Fusion::ReciprocalRank { k } => {
                    let mut ranks = [0usize; 2];
                    let mut count = 0;
                    for (_, rank) in candidate.channels.iter() {
                        ranks[count] = rank;
                        count += 1;
                    }
                    reciprocal_rank(&ranks[..count], k, active)
                }
            };
            if score < config.min_score || score <= 0.0 {
                continue;
            }
            scored.push((score, at));
        }
        let key_of = |at: usize| candidates[at].as_ref().map(Candidate::key);
        let order = |a: &(f32, usize), b: &(f32, usize)| {
            b.0.total_cmp(&a.0)
                .then_with(|| key_of(a.1).cmp(&key_of(b.1)))
        };
        if scored.len() > config.max_results {
            scored.select_nth_unstable_by(config.max_results - 1, order);
            scored.truncate(config.max_results);
        }
        scored.sort_unstable_by(order);
        let mut items: Vec<ScoredItem> = Vec::with_capacity(scored.len());
        items.extend(
            scored
                .into_iter()
                .filter_map(|(score, at)| Some((score, candidates[at].take()?)))
                .map(|(score, candidate)| {
                    let mut signals = weights.breakdown(&candidate.signals);
                    if let Fusion::ReciprocalRank { .. } = config.fusion {
                        for signal in &mut signals {
                            signal.contribution = 0.0;
                        }
                        signals.push(SignalScore {
                            name: "rrf".into(),
                            value: score,
                            contribution: score,
                        });
                    }
                    let breakdown = ScoreBreakdown {
                        channels: candidate
                            .channels
                            .iter()
                            .map(|(channel, _)| channel)
                            .collect(),
                        signals,
                    };
                    ScoredItem {
                        source: candidate.source,
                        score,
                        breakdown,
                    }
                }),
        );
        tracing::debug!(
            returned = items.len(),
            total_found,
            elapsed_us = started.elapsed().as_micros() as u64,
            "recall done"
        );
        Ok(RetrievalResult {
            items,
            total_found,
            query: query.to_owned(),
        })
    }

    async fn memory_channel(
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
                    source: RetrievalSource::Memory(item),
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

    async fn knowledge_channel(
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
                    source: RetrievalSource::KnowledgePage(Box::new(page)),
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
    async fn add_context(
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
            .filter_map(|candidate| match &candidate.source {
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
                            source: RetrievalSource::Memory(Arc::new(neighbour)),
                            channels: Found::new(Channel::Context, rank),
                            signals,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    async fn graph_channel(
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
                    source: RetrievalSource::GraphEntity(Box::new(entity.clone())),
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
                                    source: RetrievalSource::GraphEntity(Box::new(reached.entity)),
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
            let RetrievalSource::GraphEntity(entity) = &candidate.source else {
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
