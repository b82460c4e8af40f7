//! Retrieval for agent-memory: keyword extraction, hybrid scoring with an explainable
//! breakdown, the parallel multi-channel [`Retriever`], eviction and decay, and the
//! high-level [`Memory`] API an agent keeps.
//!
//! ```
//! use std::sync::Arc;
//! use memory_core::{KnowledgePage, KnowledgeStore, Namespace};
//! use memory_inmem::InMemoryKnowledgeStore;
//! use memory_retrieve::{Memory, RetrievalStrategy, RecallOptions};
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let pages = Arc::new(InMemoryKnowledgeStore::new());
//! let memory = Memory::builder().knowledge(pages.clone()).build()?;
//! let wiki = Namespace::parse("team/wiki")?;
//! pages.add_page(KnowledgePage::new(wiki.clone(), "sg", "StateGraph 状态管理")?
//!     .with_summary("LangGraph 的核心抽象")).await?;
//! let options = RecallOptions::default().strategy(RetrievalStrategy::KnowledgeOnly);
//! let found = memory.recall_with(&wiki.exact(), "LangGraph 的 StateGraph 状态管理原理？", &options).await?;
//! let best = &found.items[0];
//! assert_eq!(best.record.id(), "sg");
//! assert!(best.breakdown.value("relevance").is_some());
//! # Ok::<(), memory_core::MemoryError>(()) }).unwrap();
//! ```

mod embedding;
mod eviction;
mod feedback;
mod keywords;
mod memory;
mod retriever;
pub mod scoring;

pub use crate::{
    eviction::{
        DECAY_METADATA_KEY, MaintenanceReport, decay, evict, evict_namespace, eviction_order,
    },
    feedback::RecallRecorder,
    keywords::{AnalyzerKeywordExtractor, MAX_KEYWORDS},
    memory::{Memory, MemoryBuilder, MemoryStats, RecallOptions, Remember},
    retriever::{
        DEFAULT_MAX_QUERY_BYTES, Fusion, MAX_CONTEXT_SOURCES, MAX_CONTEXT_WINDOW,
        MAX_EXPANDED_ENTITIES, MAX_RESULTS_LIMIT, RecallFilter, RetrievalStrategy, Retriever,
        RetrieverConfig,
    },
    scoring::{ScoreWeights, ScoringStrategy, Signals},
};
