//! Retrieval for agent-memory: keyword extraction, hybrid scoring with an explainable
//! breakdown, the parallel multi-channel [`Retriever`], eviction and decay, and the
//! high-level [`Memory`] API an agent keeps.
//!
//! ```
//! use memory_core::{KnowledgePage, Namespace};
//! use memory_retrieve::{Memory, RetrievalStrategy, RecallOptions};
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let memory = Memory::in_memory();
//! let wiki = Namespace::parse("team/wiki")?;
//! memory.knowledge().add_page(KnowledgePage::new(wiki.clone(), "sg", "StateGraph 状态管理")?
//!     .with_summary("LangGraph 的核心抽象")).await?;
//! let options = RecallOptions::default().strategy(RetrievalStrategy::KnowledgeOnly);
//! let found = memory.recall_with(&wiki.exact(), "LangGraph 的 StateGraph 状态管理原理？", &options).await?;
//! let best = &found.items[0];
//! assert_eq!(best.record.id(), "sg");
//! assert!(best.breakdown.value(memory_core::Signal::Relevance).is_some());
//! # Ok::<(), memory_core::MemoryError>(()) }).unwrap();
//! ```

mod answer;
mod background;
mod compression;
mod conversation;
mod embedding;
mod enrich;
mod eviction;
mod facts;
mod feedback;
mod keywords;
mod knowledge_upkeep;
mod memory;
mod prompt;
mod rerank;
mod retriever;
pub mod scoring;
pub mod serde_millis;
mod when;
mod who;

pub use crate::{
    answer::{asks_for_quantity, asks_for_time},
    compression::{CompressionConfig, ExtractiveSummarizer, Summarizer},
    conversation::{
        CompactConfig, ConversationConfig, ConversationMemory, HistoryStrategy, Message,
        PROMOTED_SEGMENT, Role, promoted_namespace,
    },
    enrich::{
        Enricher, Enrichment, EnrichmentConfig, EnrichmentStats, EntityMention, MEMORY_NODE_TYPE,
        MENTIONS, RelationMention, RuleEnricher, memory_node_id, memory_of_node,
    },
    eviction::{
        DECAY_METADATA_KEY, DELETE_GROUP, MaintenanceReport, decay, evict, evict_namespace,
        eviction_order,
    },
    facts::{
        Conflict, ConflictDetector, ConflictPolicy, DuplicatePolicy, FactsConfig, Outcome,
        Remembered, RuleConflictDetector, similarity,
    },
    feedback::RecallRecorder,
    keywords::{AnalyzerKeywordExtractor, MAX_KEYWORDS},
    knowledge_upkeep::KnowledgePolicy,
    memory::{
        CONSOLIDATED_METADATA_KEY, CONTEXT_BEFORE_METADATA_KEY, ConflictPair, ConsolidationConfig,
        Dialogue, MAX_HISTORY, MAX_RECALL_BATCH, MAX_SESSION_BYTES, MAX_SPEAKER_BYTES,
        MaintenanceHandle, Memory, MemoryBuilder, MemoryStats, MemoryUpdate, PassReport,
        ROLE_METADATA_KEY, RecallOptions, Reembed, ReembedReport, Remember, SESSION_METADATA_KEY,
        SPEAKER_METADATA_KEY, Turn,
    },
    prompt::estimate_tokens,
    rerank::{RerankConfig, Reranker, TermReranker},
    retriever::{
        CANDIDATES_PER_RESULT, DEFAULT_ASSISTANT_WEIGHT, DEFAULT_CONTEXT_ONLY_FACTOR,
        DEFAULT_HEAD_ANSWER_BONUS, DEFAULT_HEAD_QUESTION_FACTOR, DEFAULT_HEAD_REPLY_BONUS,
        DEFAULT_HEAD_RERANK_DEPTH, DEFAULT_HEAD_RERANK_WEIGHT, DEFAULT_MAX_QUERY_BYTES,
        DEFAULT_OTHER_SPEAKER_FACTOR, DEFAULT_OUTSIDE_TIME_FACTOR, DEFAULT_ROLE_SEARCH_DEPTH,
        DEFAULT_USER_WEIGHT_ABOUT_AGENT, Fusion, MAX_CONTEXT_SOURCES, MAX_CONTEXT_WINDOW,
        MAX_EXPANDED_ENTITIES, MAX_HEAD_RERANK_DEPTH, MAX_METADATA_CONDITIONS,
        MAX_METADATA_KEY_BYTES, MAX_RESULTS_LIMIT, MAX_ROLE_SEARCH_DEPTH, MAX_WEIGHTED_ROLES,
        MIN_CANDIDATES, RecallFilter, RecallView, RetrievalStrategy, Retriever, RetrieverConfig,
        STALE_FACTOR,
    },
    scoring::{ScoreWeights, ScoringStrategy, Signals},
    when::{TimeWindow, time_window},
    who::asks_about_agent,
};
