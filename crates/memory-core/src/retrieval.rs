//! The types a retrieval returns: what was found, its score, and why.

use serde::{Deserialize, Serialize};

use crate::{GraphEntity, KnowledgePage, MemoryItem};

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
    /// The short-term buffer.
    ShortTerm,
    /// A memory next to a memory hit in time (conversation context).
    Context,
}

/// What a result is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "record", rename_all = "snake_case")]
pub enum RetrievalSource {
    /// A memory item (shared with the store that returned it).
    Memory(std::sync::Arc<MemoryItem>),
    /// A knowledge page (boxed, as the memory is shared: a result stays small to move).
    KnowledgePage(Box<KnowledgePage>),
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
    pub channels: Vec<Channel>,
    /// Each signal: `(name, value, contribution)`.
    pub signals: Vec<SignalScore>,
}

/// One signal of a [`ScoreBreakdown`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignalScore {
    /// `overlap`, `bm25`, `graph`, `temporal`, `reference`, `importance`, `frequency`,
    /// `recency`, `context`, `rrf`, `embedding`.
    pub name: std::borrow::Cow<'static, str>,
    /// The signal's value, in `[0, 1]`.
    pub value: f32,
    /// Its contribution to the final score (value times normalised weight).
    pub contribution: f32,
}

impl ScoreBreakdown {
    /// The value of the signal called `name`, if present.
    pub fn value(&self, name: &str) -> Option<f32> {
        self.signals
            .iter()
            .find(|signal| signal.name == name)
            .map(|signal| signal.value)
    }

    /// The contribution of the signal called `name`, if present.
    pub fn contribution(&self, name: &str) -> Option<f32> {
        self.signals
            .iter()
            .find(|signal| signal.name == name)
            .map(|signal| signal.contribution)
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
