#![doc = include_str!("../../../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The vocabulary: records, scopes, the store traits, errors, limits.
pub use memory_core::*;

mod location;
// Where a memory keeps its records, from one string (the command's and the bindings').
pub use location::StoreLocation;

// The front door: the memory an agent keeps, and how to ask it things.
#[cfg(feature = "retrieve")]
#[cfg_attr(docsrs, doc(cfg(feature = "retrieve")))]
pub use memory_retrieve::{
    CompactConfig, CompressionConfig, Conflict, ConflictDetector, ConflictPair, ConflictPolicy,
    ConsolidationConfig, ConversationConfig, ConversationMemory, Dialogue, DuplicatePolicy,
    Enricher, Enrichment, EnrichmentConfig, EnrichmentStats, ExtractiveSummarizer, FactsConfig,
    HistoryStrategy, KnowledgePolicy, MaintenanceHandle, MaintenanceReport, Memory, MemoryBuilder,
    MemoryStats, MemoryUpdate, Message, Outcome, PassReport, RecallFilter, RecallOptions,
    RecallView, Reembed, ReembedReport, Remember, Remembered, RerankConfig, Reranker,
    RetrievalStrategy, RetrieverConfig, Role, RuleConflictDetector, RuleEnricher, ScoreWeights,
    ScoringStrategy, Summarizer, TermReranker, Turn,
};

// The backends, each behind its feature.
#[cfg(feature = "graph")]
#[cfg_attr(docsrs, doc(cfg(feature = "graph")))]
pub use memory_graph::{KnowledgeGraphExt, PetGraph};
#[cfg(feature = "inmem")]
#[cfg_attr(docsrs, doc(cfg(feature = "inmem")))]
pub use memory_inmem::{InMemoryKnowledgeStore, InMemoryStore};
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use memory_postgres::{PostgresBackend, PostgresOptions};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use memory_sqlite::{SqliteBackend, SqliteOptions};

// Each crate whole, for everything else it offers.
#[cfg(feature = "graph")]
#[cfg_attr(docsrs, doc(cfg(feature = "graph")))]
pub use memory_graph as graph;
#[cfg(feature = "inmem")]
#[cfg_attr(docsrs, doc(cfg(feature = "inmem")))]
pub use memory_inmem as inmem;
#[cfg(any(feature = "llm", feature = "embeddings-http", feature = "rerank-http"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "llm", feature = "embeddings-http", feature = "rerank-http")))
)]
pub use memory_models as models;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use memory_postgres as postgres;
#[cfg(feature = "retrieve")]
#[cfg_attr(docsrs, doc(cfg(feature = "retrieve")))]
pub use memory_retrieve as retrieve;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use memory_sqlite as sqlite;

/// What a program that uses the memory needs, for `use agent_memory::prelude::*`: the
/// memory and its requests, the records it returns, and the store traits (so their methods
/// can be called on the stores a backend hands out). Names for backend authors stay at the
/// crate root.
pub mod prelude {
    pub use memory_core::{
        GraphEntity, GraphRelation, KnowledgeGraph, KnowledgePage, KnowledgeStore, MemoryError,
        MemoryItem, MemoryKind, MemoryStore, Namespace, RetrievalResult, RetrievalSource, Scope,
        Stores, Tag,
    };
    #[cfg(feature = "retrieve")]
    pub use memory_retrieve::{Memory, Outcome, RecallOptions, RecallView, Remember, Remembered};
}
