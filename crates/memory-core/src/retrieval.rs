//! The types a retrieval returns: what was found, its score, and why.

use serde::{Deserialize, Serialize};

use crate::{GraphEntity, KnowledgePage, MemoryItem};

mod channels;
mod signal_scores;

pub use channels::Channels;
pub use signal_scores::SignalScores;

/// The retrieval channel that found a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// Full-text (BM25) search over memory items.
    Memory,
    /// Knowledge-page search.
    Knowledge,
    /// Graph: entities matched by name or tag.
    GraphMatch,
    /// Graph: entities reached by traversal from a matched entity.
    GraphTraversal,
    /// Embedding similarity: memory-retrieve's optional embedding channel (its feature
    /// `embeddings`), over [`MemoryStore::search_similar`](crate::MemoryStore::search_similar).
    Embedding,
    /// A memory next to a memory hit in time (conversation context).
    Context,
}

/// What a result is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "record", rename_all = "snake_case")]
pub enum RetrievalSource {
    /// A memory item (shared with the store that returned it).
    Memory(std::sync::Arc<MemoryItem>),
    /// A knowledge page (shared with the store that returned it, as a memory is).
    KnowledgePage(std::sync::Arc<KnowledgePage>),
    /// A graph entity (boxed).
    GraphEntity(Box<GraphEntity>),
}

impl RetrievalSource {
    /// The record's id.
    pub fn id(&self) -> &str {
        match self {
            RetrievalSource::Memory(item) => &item.id,
            RetrievalSource::KnowledgePage(page) => &page.id,
            RetrievalSource::GraphEntity(entity) => &entity.id,
        }
    }

    /// The record's namespace.
    pub fn namespace(&self) -> &crate::Namespace {
        match self {
            RetrievalSource::Memory(item) => &item.namespace,
            RetrievalSource::KnowledgePage(page) => &page.namespace,
            RetrievalSource::GraphEntity(entity) => &entity.namespace,
        }
    }

    /// The main text of the record (memory content, page title and summary, entity name and
    /// description).
    pub fn text(&self) -> String {
        match self {
            RetrievalSource::Memory(item) => item.content.clone(),
            RetrievalSource::KnowledgePage(page) => format!("{}: {}", page.title, page.summary),
            RetrievalSource::GraphEntity(entity) => {
                if entity.description.is_empty() {
                    format!("{} ({})", entity.name, entity.entity_type)
                } else {
                    format!(
                        "{} ({}): {}",
                        entity.name, entity.entity_type, entity.description
                    )
                }
            }
        }
    }
}

/// Every signal's value and contribution to a result's score, so a user can see why it was
/// returned. Signal values lie in `[0, 1]`; a contribution is the value times its weight.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScoreBreakdown {
    /// The channels that found the candidate.
    pub channels: Channels,
    /// Each signal: `(name, value, contribution)`.
    pub signals: SignalScores,
}

/// A signal of a result's score. The first ten are weighted by the scoring strategy;
/// [`Signal::Rrf`] is the fused rank when reciprocal rank fusion replaces the weights;
/// [`Signal::Stale`] marks a penalty for a memory no longer current; [`Signal::Rerank`] is
/// the reranking stage's share; [`Signal::Time`] marks a memory made outside the time the
/// query names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// The channel's own relevance (BM25F, graph keyword share), normalised by its best hit.
    Relevance,
    /// Text overlap with the raw query (n-gram Dice).
    Overlap,
    /// Graph distance from a matched entity.
    Graph,
    /// Time decay of the last update: `1 / (1 + days)`.
    Temporal,
    /// Reference count (pages referencing a page, relations of an entity).
    Reference,
    /// The record's importance.
    Importance,
    /// Access frequency.
    Frequency,
    /// Recency with a half-life.
    Recency,
    /// Conversation context: the relevance of a memory next to this one in time.
    Context,
    /// Embedding similarity to the query.
    Embedding,
    /// Reciprocal rank fusion of the channels' rankings.
    Rrf,
    /// A penalty, not a weighted signal: the memory is no longer current (superseded or
    /// retracted, shown because the recall asked for every memory), a newer memory
    /// contradicts it, or a newer fact answers the same question (memory-retrieve's
    /// `RetrieverConfig::newer_facts_first`). Its value is the factor the score was multiplied by; its contribution
    /// the (negative) change of the score.
    Stale,
    /// A reranking stage's score (memory-retrieve's `Reranker`): its value is the
    /// reranker's score in `[0, 1]`, its contribution the change of the final score.
    Rerank,
    /// A penalty, not a weighted signal: the query names a time ("last week") and the
    /// memory was made at another. Its value is the factor the score was multiplied by; its
    /// contribution the (negative) change of the score.
    Time,
}

impl Signal {
    /// The signals a scoring strategy weighs, in order ([`Signal::index`] is the position).
    pub const WEIGHTED: [Signal; 10] = [
        Signal::Relevance,
        Signal::Overlap,
        Signal::Graph,
        Signal::Temporal,
        Signal::Reference,
        Signal::Importance,
        Signal::Frequency,
        Signal::Recency,
        Signal::Context,
        Signal::Embedding,
    ];

    /// The position in [`Signal::WEIGHTED`]; [`Signal::Rrf`] comes after them all.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The lowercase name, as serialised.
    pub const fn as_str(self) -> &'static str {
        match self {
            Signal::Relevance => "relevance",
            Signal::Overlap => "overlap",
            Signal::Graph => "graph",
            Signal::Temporal => "temporal",
            Signal::Reference => "reference",
            Signal::Importance => "importance",
            Signal::Frequency => "frequency",
            Signal::Recency => "recency",
            Signal::Context => "context",
            Signal::Embedding => "embedding",
            Signal::Rrf => "rrf",
            Signal::Stale => "stale",
            Signal::Rerank => "rerank",
            Signal::Time => "time",
        }
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One signal of a [`ScoreBreakdown`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignalScore {
    /// Which signal.
    pub name: Signal,
    /// The signal's value, in `[0, 1]`.
    pub value: f32,
    /// Its contribution to the final score (value times normalised weight).
    pub contribution: f32,
}

impl ScoreBreakdown {
    /// The value of `signal`, if it took part.
    pub fn value(&self, signal: Signal) -> Option<f32> {
        self.signals
            .iter()
            .find(|score| score.name == signal)
            .map(|score| score.value)
    }

    /// The contribution of `signal`, if it took part.
    pub fn contribution(&self, signal: Signal) -> Option<f32> {
        self.signals
            .iter()
            .find(|score| score.name == signal)
            .map(|score| score.contribution)
    }
}

/// One ranked result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoredItem {
    /// The record found: a memory, a page or an entity.
    pub record: RetrievalSource,
    /// The final score, in `[0, 1]`.
    pub score: f32,
    /// Why.
    pub breakdown: ScoreBreakdown,
}

/// The result of one retrieval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RetrievalResult {
    /// The results, best first.
    pub items: Vec<ScoredItem>,
    /// How many candidates were scored before the threshold and the cut.
    pub total_found: usize,
    /// The query as given.
    pub query: String,
}
