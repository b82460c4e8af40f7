//! [`Stores`]: one backend's three stores, handed to a memory in one value.

use std::sync::Arc;

use crate::{KnowledgeGraph, KnowledgeStore, MemoryStore};

/// The three stores of one backend: memories, knowledge pages and the knowledge graph.
///
/// Every persistent backend returns one (`SqliteBackend::stores`, `PostgresBackend::stores`)
/// and `MemoryBuilder::stores` takes one, so opening a persistent memory is one line:
///
/// ```text
/// let memory = Memory::builder().stores(SqliteBackend::open("agent.db")?.stores()).build()?;
/// ```
#[derive(Clone, Debug)]
pub struct Stores {
    /// The memory-item store.
    pub memories: Arc<dyn MemoryStore>,
    /// The knowledge-page store.
    pub knowledge: Arc<dyn KnowledgeStore>,
    /// The knowledge graph.
    pub graph: Arc<dyn KnowledgeGraph>,
}

impl Stores {
    /// Bundles three stores (they may come from different backends).
    pub fn new(
        memories: Arc<dyn MemoryStore>,
        knowledge: Arc<dyn KnowledgeStore>,
        graph: Arc<dyn KnowledgeGraph>,
    ) -> Self {
        Self {
            memories,
            knowledge,
            graph,
        }
    }
}
