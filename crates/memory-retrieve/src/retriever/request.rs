//! [`Request`]: one recall as every channel sees it, built once per call.

use chrono::{DateTime, Utc};
use memory_core::{EmbeddingProvider, KnowledgeGraph, KnowledgeStore, MemoryStore, Scope};

use super::{RecallFilter, RetrieverConfig};
use crate::scoring::{NGrams, ScoreWeights};

/// What a channel needs to answer: the stores, the query (with its n-grams when the overlap
/// signal has weight), the settings and the time. Channels are plain functions of it.
pub(super) struct Request<'a> {
    pub(super) scope: &'a Scope,
    pub(super) query: &'a str,
    pub(super) filter: &'a RecallFilter,
    pub(super) config: &'a RetrieverConfig,
    /// The scoring strategy's weights.
    pub(super) weights: ScoreWeights,
    /// The query's n-grams; empty unless the overlap signal has weight.
    pub(super) grams: NGrams,
    /// The query analysed once for every channel and backend: its search terms
    /// (`Analyzer::query_terms`) ...
    pub(super) terms: Vec<String>,
    /// ... and its keywords, by the memory's keyword extractor, for the graph's matching
    /// and the page match rules alike.
    pub(super) keywords: Vec<String>,
    pub(super) now: DateTime<Utc>,
    pub(super) memory: &'a dyn MemoryStore,
    pub(super) knowledge: Option<&'a dyn KnowledgeStore>,
    pub(super) graph: Option<&'a dyn KnowledgeGraph>,
    pub(super) embedder: Option<&'a dyn EmbeddingProvider>,
}

impl Request<'_> {
    /// Whether the overlap signal is computed.
    pub(super) fn wants_overlap(&self) -> bool {
        self.weights.overlap > 0.0
    }
}
