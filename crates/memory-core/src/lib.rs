//! The vocabulary of agent-memory: record types, the storage traits every backend
//! implements, the shared error, namespaces, validation and the text analyzer.
//!
//! This crate has no runtime, container or graph dependency; backends live in
//! `memory-inmem`, `memory-graph` and the persistent crates, retrieval in `memory-retrieve`.
//!
//! ```
//! use memory_core::{MemoryItem, MemoryKind, Namespace, Tag};
//!
//! let ns = Namespace::parse("user-42/agent-a")?;
//! let item = MemoryItem::new(ns, "The user prefers short code examples")?
//!     .with_kind(MemoryKind::Semantic)
//!     .with_tags(["Coding Style"])?;
//! assert_eq!(item.tags, [Tag::new("coding-style")?]);
//! # Ok::<(), memory_core::MemoryError>(())
//! ```

mod error;
mod fact;
mod graph;
mod graph_context;
mod graph_store;
mod keyword;
mod knowledge;
mod knowledge_store;
mod memory;
mod namespace;
mod recall;
mod retrieval;
pub mod search;
mod store;
mod stores;
pub mod text;
pub mod transfer;
mod validate;
mod vector;

#[cfg(feature = "testsuite")]
pub mod testsuite;

pub use async_trait::async_trait;

pub use crate::{
    error::{BoxError, MemoryError, Result},
    fact::{
        EndReason, Ended, Lineage, MAX_FACT_KEY_LEN, MAX_FACT_LINKS, MAX_REASON_LEN, TimeView,
        normalize_fact_key, push_link,
    },
    graph::{
        Attributes, DEFAULT_MAX_TAGS_PER_ENTITY, EntityPosition, GraphEntity, GraphRelation,
        MultiHopResult, RelationPosition, ScoredEntity, TagConstraints,
    },
    graph_context::{KnowledgeGraphExt, context_header},
    graph_store::{KnowledgeGraph, MAX_TRAVERSAL_DEPTH, MAX_TRAVERSAL_VISITED, write_entity},
    keyword::{Clock, EmbeddingProvider, KeywordExtractor, ManualClock, SystemClock},
    knowledge::{
        KnowledgePage, MAX_ACCESS_COUNT, MAX_REFERENCES, MAX_SUMMARY_BYTES, MAX_TITLE_BYTES,
        PageHit, PageIndexEntry, PageMatchSignals, PageQuery, PageRuleBits, PageRuleKeywords,
        PageRuleText,
    },
    knowledge_store::{AccessEvent, AccessTally, KnowledgeStore, write_page},
    memory::{
        CONTEXT_METADATA_KEY, ListPosition, MemoryFilter, MemoryItem, MemoryKind,
        ORIGINAL_METADATA_KEY, PINNED_METADATA_KEY, SearchHit, SearchQuery,
    },
    namespace::{MAX_NAMESPACE_DEPTH, MAX_NAMESPACE_LEN, Namespace, Scope},
    recall::{
        DecayConfig, EvictionConfig, EvictionPolicy, RecallBasedConfig, RecallStats,
        ValueBasedConfig, memory_value, storable_time,
    },
    retrieval::{
        Channel, Channels, RetrievalResult, RetrievalSource, ScoreBreakdown, ScoredItem, Signal,
        SignalScore, SignalScores,
    },
    search::CONTEXT_FIELD_WEIGHT,
    store::{ConditionalSave, MemoryStore, RecallEvent, TermPositions},
    stores::Stores,
    validate::{
        DEFAULT_MAX_CONTENT_BYTES, MAX_CONTEXT_BYTES, MAX_ID_LEN, MAX_METADATA_BYTES,
        MAX_METADATA_DEPTH, MAX_TAG_LEN, MAX_TAGS, Tag, new_id,
    },
    vector::cosine_similarity,
};

/// For backend authors: the helpers every backend uses to agree with the others (validation
/// of what a caller stores, graph scoring and ordering, the page match rules, the eviction
/// order, vector math). A program that only uses the memory does not need them.
pub mod backend {
    pub use crate::{
        graph_store::{distance_score, entity_matches_keyword, other_end, sort_scored},
        knowledge::page_rule_keywords,
        memory::listing_order,
        recall::least_valuable,
        store::{expected_nanos, validate_expected},
        validate::{
            drop_json, validate_attributes, validate_id, validate_len, validate_metadata,
            validate_non_negative, validate_tag_count, validate_text, validate_time, validate_unit,
        },
        vector::{CosineQuery, validate_embedding},
    };
}
