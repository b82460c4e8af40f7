//! The retriever: one query, every channel in parallel, fused, scored, thresholded, ranked.

mod candidate;
mod config;
mod fusion;
mod graph_channel;
mod knowledge_channel;
mod memory_channel;
mod request;
mod staleness;

use std::sync::Arc;

use memory_core::{
    Clock, EmbeddingProvider, KeywordExtractor, KnowledgeGraph, KnowledgeStore, MemoryStore,
    Namespace, Result, RetrievalResult, RetrievalSource, Scope, ScoredItem, SystemClock,
    TermPositions,
};
use tracing::Instrument;

use self::request::Request;
use crate::keywords::AnalyzerKeywordExtractor;
use crate::rerank::{RerankConfig, Reranker};
use crate::scoring::NGrams;

pub use self::config::{
    CANDIDATES_PER_RESULT, DEFAULT_ASSISTANT_WEIGHT, DEFAULT_CONTEXT_ONLY_FACTOR,
    DEFAULT_HEAD_ANSWER_BONUS, DEFAULT_HEAD_QUESTION_FACTOR, DEFAULT_HEAD_REPLY_BONUS,
    DEFAULT_HEAD_RERANK_DEPTH, DEFAULT_HEAD_RERANK_WEIGHT, DEFAULT_MAX_QUERY_BYTES,
    DEFAULT_OTHER_SPEAKER_FACTOR, DEFAULT_OUTSIDE_TIME_FACTOR, DEFAULT_ROLE_SEARCH_DEPTH,
    DEFAULT_USER_WEIGHT_ABOUT_AGENT, Fusion, MAX_CONTEXT_SOURCES, MAX_CONTEXT_WINDOW,
    MAX_EXPANDED_ENTITIES, MAX_HEAD_RERANK_DEPTH, MAX_METADATA_CONDITIONS, MAX_METADATA_KEY_BYTES,
    MAX_RESULTS_LIMIT, MAX_ROLE_SEARCH_DEPTH, MAX_WEIGHTED_ROLES, MIN_CANDIDATES, RecallFilter,
    RecallView, RetrievalStrategy, RetrieverConfig,
};
pub use self::staleness::STALE_FACTOR;

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
    reranker: Option<(Arc<dyn Reranker>, RerankConfig)>,
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
            reranker: None,
        }
    }

    /// Adds the reranking stage: after fusion, the best `config.depth` candidates are
    /// rescored by `reranker` (its share in the breakdown as [`Signal::Rerank`](memory_core::Signal::Rerank))
    /// and sorted again; the `min_score` and `max_results` cut comes after it. A reranker
    /// that fails leaves the fused order (logged).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) naming `depth`
    /// or `weight`.
    pub fn with_reranker(
        mut self,
        reranker: Arc<dyn Reranker>,
        config: RerankConfig,
    ) -> Result<Self> {
        config.validate()?;
        self.reranker = Some((reranker, config));
        Ok(self)
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

    pub(crate) fn set_reranker_unchecked(
        &mut self,
        reranker: Arc<dyn Reranker>,
        config: RerankConfig,
    ) {
        self.reranker = Some((reranker, config));
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
        filter.validate()?;
        memory_core::backend::validate_len("query", query, config.max_query_bytes)?;
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
        let weights = config.scoring.weights();
        let now = self.clock.now();
        // The results fused: those returned, or the reranker's depth.
        let fused = match &self.reranker {
            None => config.max_results.max(config.head_rerank_depth),
            Some((_, rerank)) => config.max_results.max(rerank.depth),
        };
        let time = if config.outside_time_factor < 1.0 {
            crate::when::read_time(query, now)
        } else {
            None
        };
        let (terms, time_phrases) = if (config.drop_time_words || config.time_words_as_phrase)
            && config.strategy.memory()
        {
            let (terms, phrases) = memory_channel::search_terms(
                &*self.memory,
                scope,
                filter,
                now,
                query,
                time.as_ref(),
            )
            .await?;
            (terms, phrases.filter(|_| !config.drop_time_words))
        } else {
            (memory_channel::question_terms(query), None)
        };
        let terms: std::sync::Arc<[String]> = terms.into();
        let request = Request {
            scope,
            query,
            filter,
            config,
            candidates: config.candidates_for(fused),
            weights,
            grams: if weights.overlap > 0.0 {
                NGrams::of(query)
            } else {
                NGrams::default()
            },
            now,
            window: time.map(|time| time.window),
            about_agent: config.read_addressee
                && !(config.role_weights.is_empty() && config.role_weights_about_agent.is_empty())
                && config.strategy.memory()
                && crate::who::asks_about_agent(query),
            memory: &*self.memory,
            knowledge: self.knowledge.as_deref(),
            graph: self.graph.as_deref(),
            terms,
            time_phrases,
            keywords: std::sync::OnceLock::new(),
            extractor: &*self.keywords,
            embedder: self.embedder.as_deref(),
        };
        let started = request::Stopwatch::start();
        let (memories, pages, entities) = tokio::join!(
            memory_channel::gather(&request),
            knowledge_channel::gather(&request),
            graph_channel::gather(&request),
        );
        let (mut memories, memory_time) = memories?;
        let (pages, page_time) = pages?;
        let graph_found = entities?;
        let (entities, graph_time) = (graph_found.entities, graph_found.micros);
        graph_channel::merge_linked(&mut memories, &graph_found.linked, graph_found.memories);
        tracing::debug!(
            memory_candidates = memories.len(),
            memory_us = memory_time,
            knowledge_candidates = pages.len(),
            knowledge_us = page_time,
            graph_candidates = entities.len(),
            graph_us = graph_time,
            "channels answered"
        );
        let stale = staleness::mark(&memories, &request).await?;
        let (items, total_found) = match &self.reranker {
            None if config.head_rerank_depth < 2 || config.head_rerank_weight <= 0.0 => {
                fusion::rank(memories, pages, entities, config, &stale, request.window)
            }
            None => {
                // The head is reordered before the cut, so even a recall of one result
                // gets the best of the head.
                let wide;
                let fuse = if config.max_results >= config.head_rerank_depth {
                    config
                } else {
                    let mut widened = config.clone();
                    widened.max_results = config.head_rerank_depth;
                    wide = widened;
                    &wide
                };
                let (mut items, total_found) =
                    fusion::rank(memories, pages, entities, fuse, &stale, request.window);
                let known = head_positions(
                    request.memory,
                    &items,
                    config.head_rerank_depth,
                    &request.terms,
                )
                .await;
                let order_by = crate::rerank::HeadOrder {
                    depth: config.head_rerank_depth,
                    weight: config.head_rerank_weight,
                    question_factor: config.head_question_factor,
                    asks: if config.head_answer_bonus > 0.0 {
                        crate::answer::Asks::of(query)
                    } else {
                        crate::answer::Asks::Nothing
                    },
                    answer_bonus: config.head_answer_bonus,
                    reply_bonus: config.head_reply_bonus,
                };
                crate::rerank::reorder_head(&request.terms, &mut items, order_by, &known);
                items.truncate(config.max_results);
                (items, total_found)
            }
            Some((reranker, rerank)) => {
                // Fused wide and without the threshold: the cut comes after the reranker.
                let mut wide = config.clone();
                wide.max_results = config.max_results.max(rerank.depth);
                wide.min_score = 0.0;
                let (items, total_found) =
                    fusion::rank(memories, pages, entities, &wide, &stale, request.window);
                let mut items = crate::rerank::apply(&**reranker, rerank, query, items).await;
                items.retain(|item| item.score >= config.min_score && item.score > 0.0);
                items.truncate(config.max_results);
                (items, total_found)
            }
        };
        tracing::debug!(
            returned = items.len(),
            total_found,
            elapsed_us = started.micros(),
            "recall done"
        );
        Ok(RetrievalResult {
            items,
            total_found,
            query: query.to_owned(),
        })
    }
}

/// Where `terms` stand in the text of each of the first `depth` of `items` that is a memory,
/// as the store can tell without the text being analysed again
/// ([`MemoryStore::term_positions`]); `None` for the rest, and nothing at all when fewer
/// than two of them may move. A store that fails to tell leaves every text to be analysed:
/// the recall goes on.
async fn head_positions(
    memory: &dyn MemoryStore,
    items: &[ScoredItem],
    depth: usize,
    terms: &[String],
) -> Vec<Option<TermPositions>> {
    let head = &items[..depth.min(items.len())];
    // Nothing moves unless two results may (see `reorder_head`): then nothing is asked.
    let movable = head
        .iter()
        .filter(|item| crate::rerank::movable_in_head(item))
        .count();
    if movable < 2 || terms.is_empty() {
        return Vec::new();
    }
    let mut known = vec![None; head.len()];
    let (places, keys): (Vec<usize>, Vec<(&Namespace, &str)>) = head
        .iter()
        .enumerate()
        .filter_map(|(at, item)| match &item.record {
            RetrievalSource::Memory(memory) => Some((at, (&memory.namespace, memory.id.as_str()))),
            _ => None,
        })
        .unzip();
    let answers = told_by_store(
        memory.term_positions(&keys, terms).await,
        keys.len(),
        "term positions",
    );
    for (at, answer) in places.into_iter().zip(answers) {
        known[at] = answer;
    }
    known
}

/// A store's answer about each of `expected` memories (`MemoryStore::term_positions`),
/// `None` for each it did not tell: all of them when it failed or told of a different number
/// of memories (logged with `what` it was asked). The caller reads the text of a memory the
/// store did not tell of.
fn told_by_store<T>(answer: Result<Vec<Option<T>>>, expected: usize, what: &str) -> Vec<Option<T>> {
    let mut told = match answer {
        Ok(answers) if answers.len() == expected => return answers,
        Ok(answers) => {
            tracing::warn!(
                expected,
                got = answers.len(),
                "store told {what} for a different number of memories; texts read"
            );
            Vec::new()
        }
        Err(error) => {
            tracing::warn!(%error, "store failed to tell {what}; texts read");
            Vec::new()
        }
    };
    told.resize_with(expected, || None);
    told
}
