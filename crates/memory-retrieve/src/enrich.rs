//! Enrichment: what an [`Enricher`] reads in new memories (entities, relations, tags,
//! importance, fact keys), and how it reaches the knowledge graph.
//!
//! Each enriched memory is linked to the entities it mentions: the memory gets a node in
//! the graph (an entity of type [`MEMORY_NODE_TYPE`], id [`memory_node_id`]) with a
//! [`MENTIONS`] relation to each entity. The links use the graph's ordinary entities and
//! relations, so every backend (in memory, SQLite, PostgreSQL) keeps them without a schema
//! of its own, an export carries them, and namespaces isolate them like any entity. The
//! graph channel of recall follows them: a memory that mentions an entity the query names,
//! or an entity related to it, is found through the graph (see
//! [`MemoryBuilder::enricher`](crate::MemoryBuilder::enricher)).
//!
//! Enrichment never runs inside [`Memory::remember`](crate::Memory::remember): the memory is
//! stored first, then queued for a worker on the caller's runtime (see
//! [`EnrichmentConfig`]).

mod link;
mod rules;

use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;
use memory_core::{MemoryError, MemoryItem, Result};
use serde::{Deserialize, Serialize};

pub(crate) use self::link::{TagCache, apply};
pub use self::rules::RuleEnricher;

/// The entity type of a memory's node in the graph.
///
/// Chosen so that no query keyword matches it by type (keywords are single words), and the
/// node's name (`#` and the memory id) matches no keyword by prefix either: memory nodes are
/// found only through the entities they mention.
pub const MEMORY_NODE_TYPE: &str = "memory-link";

/// The relation type from a memory's node to an entity it mentions.
pub const MENTIONS: &str = "mentions";

/// The id of the graph node of memory `memory_id` (`memory:` and the id).
pub fn memory_node_id(memory_id: &str) -> String {
    format!("memory:{memory_id}")
}

/// The memory id of a memory node id, if it is one.
pub fn memory_of_node(node_id: &str) -> Option<&str> {
    node_id.strip_prefix("memory:")
}

/// Whether `entity` is a memory's link node: of type [`MEMORY_NODE_TYPE`] and with the id
/// [`memory_node_id`] gives. An entity's id made from a name is a tag, which holds no `:`,
/// so an entity an enricher or a user names is never taken for one, whatever its type.
pub(crate) fn is_link_node(entity: &memory_core::GraphEntity) -> bool {
    entity.entity_type == MEMORY_NODE_TYPE && memory_of_node(&entity.id).is_some()
}

/// An entity a memory mentions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntityMention {
    /// The name as written ("Caroline", "New York", "StateGraph"). The entity's id is the
    /// name normalised as a tag ([`memory_core::Tag::new`]), so every memory that mentions
    /// the same name reaches the same entity.
    pub name: String,
    /// `person`, `place`, `concept`, `date`, ...
    pub entity_type: String,
    /// Retrieval tags, most relevant first; existing tags of the namespace are reused
    /// before new ones are made (see [`KnowledgeGraph::find_tags`](memory_core::KnowledgeGraph::find_tags)).
    #[serde(default)]
    pub tags: Vec<String>,
}

impl EntityMention {
    /// A mention of `name` as an entity of `entity_type`, without tags.
    pub fn new(name: impl Into<String>, entity_type: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            entity_type: entity_type.into(),
            tags: Vec::new(),
        }
    }
}

/// A relation between two mentioned entities, by their names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelationMention {
    /// The source entity's name.
    pub source: String,
    /// The target entity's name.
    pub target: String,
    /// The relation type (`sister`, `works_at`, ...).
    pub relation_type: String,
}

/// What an [`Enricher`] found in one memory. Every field is optional: an enricher returns
/// what it can.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Enrichment {
    /// The entities the memory mentions; each is linked to the memory.
    pub entities: Vec<EntityMention>,
    /// Relations between entities the memory states.
    pub relations: Vec<RelationMention>,
    /// Tags for the memory itself.
    pub tags: Vec<String>,
    /// An importance estimate in `[0, 1]`.
    pub importance: Option<f32>,
    /// A fact key (what single-valued fact the memory states, `user.city`).
    pub fact_key: Option<String>,
}

impl Enrichment {
    /// Checks the values a model could get wrong: importance in `[0, 1]`, names and types
    /// not empty.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        if let Some(importance) = self.importance {
            memory_core::backend::validate_unit("importance", importance)?;
        }
        for entity in &self.entities {
            if entity.name.trim().is_empty() {
                return Err(MemoryError::invalid("entities.name", "empty"));
            }
            if entity.entity_type.trim().is_empty() {
                return Err(MemoryError::invalid("entities.entity_type", "empty"));
            }
        }
        for relation in &self.relations {
            if relation.relation_type.trim().is_empty() {
                return Err(MemoryError::invalid("relations.relation_type", "empty"));
            }
        }
        Ok(())
    }
}

/// Reads new memories and returns what they mention.
///
/// Called off the write path by the enrichment worker, with batches of up to
/// [`EnrichmentConfig::batch_size`] memories. An enricher may call a model; it is given
/// [`EnrichmentConfig::timeout`] per batch and retried with backoff when it fails.
#[async_trait]
pub trait Enricher: Send + Sync + Debug + 'static {
    /// One [`Enrichment`] per memory of `memories`, in the same order.
    ///
    /// # Errors
    /// Any error: the batch is retried (up to [`EnrichmentConfig::max_attempts`] in all),
    /// then given up with a warning. The memories stay stored either way.
    async fn enrich(&self, memories: &[MemoryItem]) -> Result<Vec<Enrichment>>;
}

#[async_trait]
impl<T: Enricher + ?Sized> Enricher for std::sync::Arc<T> {
    async fn enrich(&self, memories: &[MemoryItem]) -> Result<Vec<Enrichment>> {
        (**self).enrich(memories).await
    }
}

/// How the enrichment worker runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnrichmentConfig {
    /// Memories waiting for enrichment at most (default 4,096). When the queue is full,
    /// `remember` waits for room after storing its memory: back-pressure instead of
    /// unbounded memory.
    pub queue_capacity: usize,
    /// Memories per call of the enricher at most (default 32).
    pub batch_size: usize,
    /// Calls per batch at most, the first included (default 4).
    pub max_attempts: u32,
    /// The wait before the first retry; it doubles with each retry (default 200 ms).
    #[serde(with = "crate::serde_millis")]
    pub backoff: Duration,
    /// How long one call of the enricher may take before it counts as failed (default 60 s).
    #[serde(with = "crate::serde_millis")]
    pub timeout: Duration,
    /// Whether the tags, importance and fact key an enricher finds are written to the
    /// memory itself (default `false`: only the graph is written). The memory's own values
    /// win: tags are added, importance and fact key are set only when the memory has the
    /// default importance or no fact key.
    pub update_memories: bool,
}

impl Default for EnrichmentConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 4096,
            batch_size: 32,
            max_attempts: 4,
            backoff: Duration::from_millis(200),
            timeout: Duration::from_secs(60),
            update_memories: false,
        }
    }
}

impl EnrichmentConfig {
    /// Checks every setting.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `queue_capacity`, `batch_size`, `max_attempts`
    /// or `timeout` when it is zero or too large.
    pub fn validate(&self) -> Result<()> {
        if self.queue_capacity == 0 || self.queue_capacity > 1 << 20 {
            return Err(MemoryError::invalid(
                "queue_capacity",
                "must be between 1 and 1048576",
            ));
        }
        if self.batch_size == 0 || self.batch_size > 1024 {
            return Err(MemoryError::invalid(
                "batch_size",
                "must be between 1 and 1024",
            ));
        }
        if self.max_attempts == 0 || self.max_attempts > 32 {
            return Err(MemoryError::invalid(
                "max_attempts",
                "must be between 1 and 32",
            ));
        }
        if self.timeout.is_zero() {
            return Err(MemoryError::invalid("timeout", "must be positive"));
        }
        Ok(())
    }
}

/// What the enrichment worker has done since the [`Memory`](crate::Memory) was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnrichmentStats {
    /// Memories queued.
    pub queued: u64,
    /// Queued memories enriched and linked (a memory queued twice before the worker read
    /// it is enriched once and counted for both).
    pub enriched: u64,
    /// Memories given up after every attempt failed (they stay stored, unlinked).
    pub failed: u64,
    /// Calls of the enricher retried after a failure or timeout.
    pub retries: u64,
    /// Queued memories that were gone (forgotten) by the time the worker read them, or
    /// forgotten while their links were written (their node then removed).
    pub missing: u64,
}
