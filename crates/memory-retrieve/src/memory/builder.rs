//! [`MemoryBuilder`]: a [`Memory`] from any backends, the in-memory ones by default.

use std::sync::Arc;

use memory_core::{
    Clock, DecayConfig, EvictionConfig, KeywordExtractor, KnowledgeGraph, KnowledgeStore,
    MemoryStore, Result, Stores, SystemClock,
};
use memory_graph::PetGraph;
use memory_inmem::{InMemoryKnowledgeStore, InMemoryStore};

use super::Memory;
use super::consolidate::ConsolidationConfig;
use crate::compression::{CompressionConfig, ExtractiveSummarizer, Summarizer};
use crate::facts::{ConflictDetector, FactsConfig, RuleConflictDetector};
use crate::feedback::RecallRecorder;
use crate::keywords::AnalyzerKeywordExtractor;
use crate::retriever::{Retriever, RetrieverConfig};

/// Most recall events a feedback write may wait for ([`MemoryBuilder::recall_batch`]):
/// events not yet written are held in memory, and a pass of maintenance or a flush writes
/// them sooner.
pub const MAX_RECALL_BATCH: usize = 65_536;

/// Builds a [`Memory`] from any backends; unset ones default to the in-memory backends.
#[derive(Debug, Default)]
pub struct MemoryBuilder {
    store: Option<Arc<dyn MemoryStore>>,
    knowledge: Option<Arc<dyn KnowledgeStore>>,
    graph: Option<Arc<dyn KnowledgeGraph>>,
    keywords: Option<Arc<dyn KeywordExtractor>>,
    clock: Option<Arc<dyn Clock>>,
    retriever: RetrieverConfig,
    eviction: EvictionConfig,
    decay: Option<DecayConfig>,
    compression: Option<(CompressionConfig, Arc<dyn Summarizer>)>,
    recall_batch: Option<usize>,
    facts: FactsConfig,
    consolidation: Option<ConsolidationConfig>,
    detector: Option<Arc<dyn ConflictDetector>>,
    single_valued: Vec<String>,
    knowledge_policy: crate::KnowledgePolicy,
    enricher: Option<(
        Arc<dyn crate::enrich::Enricher>,
        crate::enrich::EnrichmentConfig,
    )>,
    reranker: Option<(
        Arc<dyn crate::rerank::Reranker>,
        crate::rerank::RerankConfig,
    )>,
    #[cfg(feature = "embeddings")]
    embedder: Option<Arc<dyn memory_core::EmbeddingProvider>>,
}

impl MemoryBuilder {
    /// The embedding provider (feature `embeddings`): [`Memory::remember`] stores each
    /// memory's embedding, and recall adds the embedding channel (see
    /// [`Retriever::with_embedder`], which also explains the weights). agent-memory ships no
    /// model: implement [`EmbeddingProvider`](memory_core::EmbeddingProvider) over yours.
    #[cfg(feature = "embeddings")]
    pub fn embedder(mut self, embedder: Arc<dyn memory_core::EmbeddingProvider>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Enriches every remembered memory off the write path with `enricher` (for example
    /// [`RuleEnricher`](crate::RuleEnricher), no model needed) and default
    /// [`EnrichmentConfig`](crate::EnrichmentConfig): entities, relations and the memory's
    /// links to the entities it mentions go to the graph, where recall's graph channel finds
    /// the memory through them. See [`enricher_with`](Self::enricher_with).
    pub fn enricher(self, enricher: Arc<dyn crate::enrich::Enricher>) -> Self {
        self.enricher_with(enricher, crate::enrich::EnrichmentConfig::default())
    }

    /// [`enricher`](Self::enricher) with settings: the queue's bound, the batch size, the
    /// retries and their backoff, the timeout. [`Memory::remember`] stores the memory and
    /// queues it; a worker on the caller's tokio runtime enriches in batches;
    /// [`Memory::flush`] waits for the queue. The runtime needs its time driver
    /// (`enable_time` or `enable_all`; `#[tokio::main]` has it) for the timeouts and
    /// backoff; without it the worker stops at its first batch, logged, and the memories
    /// stay stored without links.
    pub fn enricher_with(
        mut self,
        enricher: Arc<dyn crate::enrich::Enricher>,
        config: crate::enrich::EnrichmentConfig,
    ) -> Self {
        self.enricher = Some((enricher, config));
        self
    }

    /// The reranking stage with default [`RerankConfig`](crate::RerankConfig) (see
    /// [`Retriever::with_reranker`]).
    pub fn reranker(self, reranker: Arc<dyn crate::rerank::Reranker>) -> Self {
        self.reranker_with(reranker, crate::rerank::RerankConfig::default())
    }

    /// The reranking stage with settings (see [`Retriever::with_reranker`]).
    pub fn reranker_with(
        mut self,
        reranker: Arc<dyn crate::rerank::Reranker>,
        config: crate::rerank::RerankConfig,
    ) -> Self {
        self.reranker = Some((reranker, config));
        self
    }

    /// All three stores of a backend at once (`SqliteBackend::stores()`,
    /// `PostgresBackend::stores()`).
    pub fn stores(mut self, stores: Stores) -> Self {
        self.store = Some(stores.memories);
        self.knowledge = Some(stores.knowledge);
        self.graph = Some(stores.graph);
        self
    }

    /// The memory-item store.
    pub fn store(mut self, store: Arc<dyn MemoryStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The knowledge-page store.
    pub fn knowledge(mut self, knowledge: Arc<dyn KnowledgeStore>) -> Self {
        self.knowledge = Some(knowledge);
        self
    }

    /// The knowledge graph.
    pub fn graph(mut self, graph: Arc<dyn KnowledgeGraph>) -> Self {
        self.graph = Some(graph);
        self
    }

    /// The keyword extractor for the graph channel.
    pub fn keyword_extractor(mut self, keywords: Arc<dyn KeywordExtractor>) -> Self {
        self.keywords = Some(keywords);
        self
    }

    /// The clock (a [`memory_core::ManualClock`] in tests).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Default retrieval settings.
    pub fn retriever_config(mut self, config: RetrieverConfig) -> Self {
        self.retriever = config;
        self
    }

    /// Eviction policy and interval (per namespace).
    pub fn eviction(mut self, eviction: EvictionConfig) -> Self {
        self.eviction = eviction;
        self
    }

    /// Compression of stale memories by [`Memory::maintain`], with the
    /// [`ExtractiveSummarizer`] (no model needed).
    pub fn compression(self, config: CompressionConfig) -> Self {
        self.compression_with(config, Arc::new(ExtractiveSummarizer))
    }

    /// Compression of stale memories by [`Memory::maintain`], with your summarizer.
    pub fn compression_with(
        mut self,
        config: CompressionConfig,
        summarizer: Arc<dyn Summarizer>,
    ) -> Self {
        self.compression = Some((config, summarizer));
        self
    }

    /// Importance decay, applied by [`Memory::maintain`].
    pub fn decay(mut self, decay: DecayConfig) -> Self {
        self.decay = Some(decay);
        self
    }

    /// How `remember` reconciles new memories with stored ones: duplicates, conflicts
    /// (default [`FactsConfig::default`]: merge duplicates, flag conflicts).
    pub fn facts(mut self, facts: FactsConfig) -> Self {
        self.facts = facts;
        self
    }

    /// Consolidation of old episodic memories into summaries by [`Memory::maintain`] (see
    /// [`ConsolidationConfig`]); the summarizer is the compression's, else
    /// [`ExtractiveSummarizer`].
    pub fn consolidation(mut self, config: ConsolidationConfig) -> Self {
        self.consolidation = Some(config);
        self
    }

    /// The conflict detector (default [`RuleConflictDetector`]).
    pub fn conflict_detector(mut self, detector: Arc<dyn ConflictDetector>) -> Self {
        self.detector = Some(detector);
        self
    }

    /// Relation types that hold one value per source at a time (`lives_in`, `works_at`):
    /// [`Memory::relate`] closes the current relation of such a type when a new one from the
    /// same source arrives (see [`KnowledgeGraphExt::relate`](memory_core::KnowledgeGraphExt::relate)).
    pub fn single_valued_relations<I, S>(mut self, relation_types: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.single_valued = relation_types.into_iter().map(Into::into).collect();
        self
    }

    /// Bounds on the pages and entities of each namespace, applied by [`Memory::maintain`]
    /// (default: none). Recall records page and entity accesses either way.
    pub fn knowledge_policy(mut self, policy: crate::KnowledgePolicy) -> Self {
        self.knowledge_policy = policy;
        self
    }

    /// Recall events per feedback write (default 64; also the batch of page and entity
    /// accesses); at least 1, which writes each recall's events at once, and at most
    /// [`MAX_RECALL_BATCH`]: the events wait in memory until their batch is full.
    pub fn recall_batch(mut self, events: usize) -> Self {
        self.recall_batch = Some(events);
        self
    }

    /// Validates the settings and builds.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) naming the bad setting.
    pub fn build(self) -> Result<Memory> {
        self.retriever.validate()?;
        self.eviction.validate()?;
        self.facts.validate()?;
        if let Some(consolidation) = &self.consolidation {
            consolidation.validate()?;
        }
        if let Some(decay) = &self.decay {
            decay.validate()?;
        }
        self.knowledge_policy.validate()?;
        match self.recall_batch {
            Some(0) => {
                return Err(memory_core::MemoryError::invalid(
                    "recall_batch",
                    "must be at least 1",
                ));
            }
            Some(events) if events > MAX_RECALL_BATCH => {
                return Err(memory_core::MemoryError::invalid(
                    "recall_batch",
                    format!("must be at most {MAX_RECALL_BATCH}, not {events}"),
                ));
            }
            _ => {}
        }
        if let Some((_, config)) = &self.enricher {
            config.validate()?;
        }
        if let Some((_, config)) = &self.reranker {
            config.validate()?;
        }
        Ok(self.assemble())
    }

    pub(super) fn assemble(self) -> Memory {
        let store = self.store.unwrap_or_else(|| Arc::new(InMemoryStore::new()));
        let knowledge = self
            .knowledge
            .unwrap_or_else(|| Arc::new(InMemoryKnowledgeStore::new()));
        let graph = self.graph.unwrap_or_else(|| Arc::new(PetGraph::new()));
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let keywords = self
            .keywords
            .unwrap_or_else(|| Arc::new(AnalyzerKeywordExtractor));
        let mut retriever = Retriever::new(Arc::clone(&store))
            .with_knowledge(Arc::clone(&knowledge))
            .with_graph(Arc::clone(&graph))
            .with_keyword_extractor(keywords)
            .with_clock(Arc::clone(&clock));
        retriever.set_config_unchecked(self.retriever);
        // After the config: `with_embedder` switches default scoring to the embedding weights.
        #[cfg(feature = "embeddings")]
        if let Some(embedder) = self.embedder {
            retriever = retriever.with_embedder(embedder);
        }
        if let Some((reranker, config)) = self.reranker {
            // Validated by `build`; `assemble` alone builds only the defaults.
            retriever.set_reranker_unchecked(reranker, config);
        }
        let enrichment = self.enricher.map(|(enricher, config)| {
            super::enrich::Pipeline::new(enricher, config, Arc::clone(&store), Arc::clone(&graph))
        });
        let batch = self.recall_batch.unwrap_or(64).max(1);
        Memory {
            knowledge_upkeep: crate::knowledge_upkeep::KnowledgeUpkeep::new(
                Arc::clone(&knowledge),
                Arc::clone(&graph),
                self.knowledge_policy,
                batch,
            ),
            recorder: RecallRecorder::new(Arc::clone(&store), batch),
            store,
            knowledge,
            graph,
            clock,
            retriever,
            eviction: self.eviction,
            decay: self.decay,
            compression: self.compression,
            writes: super::upkeep::WriteTracker::default(),
            facts: self.facts,
            consolidation: self.consolidation,
            detector: self
                .detector
                .unwrap_or_else(|| Arc::new(RuleConflictDetector::default())),
            single_valued: self.single_valued.into_iter().collect(),
            enrichment,
        }
    }
}
