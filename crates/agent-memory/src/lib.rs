#![doc = include_str!("../../../README.md")]

pub use memory_core::*;

#[cfg(feature = "graph")]
pub use memory_graph as graph;
#[cfg(feature = "inmem")]
pub use memory_inmem as inmem;
#[cfg(feature = "postgres")]
pub use memory_postgres as postgres;
#[cfg(feature = "retrieve")]
pub use memory_retrieve as retrieve;
#[cfg(feature = "sqlite")]
pub use memory_sqlite as sqlite;

/// The names most programs need, for `use agent_memory::prelude::*`.
pub mod prelude {
    pub use memory_core::{
        Clock, GraphEntity, GraphRelation, KnowledgeGraph, KnowledgePage, KnowledgeStore,
        MemoryError, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, Result, Scope,
        SearchQuery, Tag,
    };
}
