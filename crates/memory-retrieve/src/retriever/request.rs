//! [`Request`]: one recall as every channel sees it, built once per call.

use chrono::{DateTime, Utc};
use memory_core::{
    EmbeddingProvider, KeywordExtractor, KnowledgeGraph, KnowledgeStore, MemoryStore, Scope,
};

use super::{RecallFilter, RetrieverConfig};
use crate::scoring::{NGrams, ScoreWeights};

/// What a channel needs to answer: the stores, the query (with its n-grams when the overlap
/// signal has weight), the settings and the time. Channels are plain functions of it.
pub(super) struct Request<'a> {
    pub(super) scope: &'a Scope,
    pub(super) query: &'a str,
    pub(super) filter: &'a RecallFilter,
    pub(super) config: &'a RetrieverConfig,
    /// Candidates each channel contributes ([`RetrieverConfig::candidates_for`] the
    /// results fused).
    pub(super) candidates: usize,
    /// The scoring strategy's weights.
    pub(super) weights: ScoreWeights,
    /// The query's n-grams; empty unless the overlap signal has weight.
    pub(super) grams: NGrams,
    /// The query's search terms (`Analyzer::query_terms`), analysed once for every channel
    /// and backend.
    pub(super) terms: std::sync::Arc<[String]>,
    /// The words of the times the query names by their distance from now, when `terms`
    /// leaves them out but a memory holding one of them as the expression still matches
    /// them ([`RetrieverConfig::time_words_as_phrase`]).
    pub(super) time_phrases: Option<super::memory_channel::TimePhrases>,
    /// The query's keywords for the graph's matching, by the memory's keyword extractor:
    /// extracted on first use, so a recall whose graph holds nothing in scope pays nothing.
    pub(super) keywords: std::sync::OnceLock<Vec<String>>,
    pub(super) extractor: &'a dyn KeywordExtractor,
    pub(super) now: DateTime<Utc>,
    /// The time the query names, when it names one and the config reads times.
    pub(super) window: Option<crate::when::TimeWindow>,
    /// Whether the query asks about what the agent said, and the config reads that: roles
    /// weigh by [`RetrieverConfig::role_weights_about_agent`]
    /// ([`RetrieverConfig::read_addressee`]).
    pub(super) about_agent: bool,
    pub(super) memory: &'a dyn MemoryStore,
    pub(super) knowledge: Option<&'a dyn KnowledgeStore>,
    pub(super) graph: Option<&'a dyn KnowledgeGraph>,
    pub(super) embedder: Option<&'a dyn EmbeddingProvider>,
}

impl Request<'_> {
    /// The query's keywords (see [`Request::keywords`]).
    pub(super) fn keywords(&self) -> &[String] {
        self.keywords
            .get_or_init(|| self.extractor.extract(self.query))
    }

    /// Whether the overlap signal is computed.
    pub(super) fn wants_overlap(&self) -> bool {
        self.weights.overlap > 0.0
    }
}

/// Times a stage for the debug log only: reading the clock costs more than some steps of a
/// small recall, so the clock is read only when debug events are enabled (otherwise every
/// duration is 0).
#[derive(Clone, Copy, Debug)]
pub(super) struct Stopwatch(Option<std::time::Instant>);

impl Stopwatch {
    pub(super) fn start() -> Self {
        Self(tracing::enabled!(tracing::Level::DEBUG).then(std::time::Instant::now))
    }

    /// Microseconds since the start; 0 when debug events are off.
    pub(super) fn micros(self) -> u64 {
        self.0
            .map_or(0, |started| started.elapsed().as_micros() as u64)
    }
}
