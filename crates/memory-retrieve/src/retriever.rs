//! The retriever: one query, every channel in parallel, fused, scored, thresholded, ranked.

mod channels;
mod config;

use std::sync::Arc;
use std::time::Instant;

use memory_core::{
    Channel, Clock, EmbeddingProvider, KeywordExtractor, KnowledgeGraph, KnowledgeStore,
    MemoryStore, Namespace, Result, RetrievalResult, RetrievalSource, Scope, ScoreBreakdown,
    ScoredItem, SignalScore, SystemClock,
};
use tracing::Instrument;

use crate::keywords::AnalyzerKeywordExtractor;
use crate::scoring::{NGrams, Signals, reciprocal_rank};

pub use self::config::{
    DEFAULT_MAX_QUERY_BYTES, Fusion, MAX_CONTEXT_SOURCES, MAX_CONTEXT_WINDOW,
    MAX_EXPANDED_ENTITIES, MAX_RESULTS_LIMIT, RecallFilter, RetrievalStrategy, RetrieverConfig,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum RecordType {
    Memory,
    Page,
    Entity,
}

#[derive(Debug)]
struct Candidate {
    record: RetrievalSource,
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
    /// The record's identity, borrowed from the record (the final order's tie-break).
    fn key(&self) -> (RecordType, &Namespace, &str) {
        match &self.record {
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
        // Attached to the future, not entered: a span entered across an await is reported
        // on whatever task the runtime polls next.
        self.run(scope, query, filter, config)
            .instrument(span)
            .await
    }

    /// The body of [`retrieve_with`](Self::retrieve_with), once the inputs are valid.
    async fn run(
        &self,
        scope: &Scope,
        query: &str,
        filter: &RecallFilter,
        config: &RetrieverConfig,
    ) -> Result<RetrievalResult> {
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
                        record: candidate.record,
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
}
