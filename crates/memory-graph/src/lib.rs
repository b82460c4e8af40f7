//! The knowledge graph of agent-memory, on petgraph.
//!
//! [`PetGraph`] implements [`memory_core::KnowledgeGraph`] in memory: one petgraph
//! `StableGraph` per namespace (removals never invalidate other nodes), each entity's
//! relations also kept grouped by node in one contiguous array in traversal order, with
//! indexes for the matching rules (name prefix, case-insensitive; tag exact; entity type
//! exact), a sorted tag index for [`find_tags`](memory_core::KnowledgeGraph::find_tags),
//! and native breadth-first traversals over those arrays: related entities with hop
//! distance and path, the multi-hop relation chains, and shortest paths (a bidirectional
//! search). Results share the stored entities and relations (`Arc`). For graph scoring it
//! offers [`degree`](memory_core::KnowledgeGraph::degree) and
//! [`PetGraph::degree_centrality`]; the distance score is [`memory_core::backend::distance_score`].
//!
//! [`KnowledgeGraphExt::context_for_agent`] renders an entity's neighbourhood as compact
//! text for a prompt, over any `KnowledgeGraph` backend.
//!
//! petgraph stays inside this crate: the API speaks in entity ids.
//!
//! ```
//! use memory_core::{GraphEntity, GraphRelation, KnowledgeGraph, Namespace};
//! use memory_graph::{KnowledgeGraphExt, PetGraph};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> memory_core::Result<()> {
//! let graph = PetGraph::new();
//! let ns = Namespace::parse("team-7")?;
//! for (id, kind) in [("zhang", "person"), ("li", "person"), ("project-alpha", "project")] {
//!     graph.add_entity(GraphEntity::new(ns.clone(), id, id, kind)?).await?;
//! }
//! for (from, kind, to) in [
//!     ("zhang", "colleague_of", "li"),
//!     ("li", "works_on", "project-alpha"),
//! ] {
//!     graph.add_relation(GraphRelation::new(ns.clone(), from, to, kind, 1.0)?).await?;
//! }
//!
//! // Multi-hop: the projects of zhang's colleagues.
//! let chain = ["colleague_of".to_owned(), "works_on".to_owned()];
//! let found = graph.multi_hop(&ns, "zhang", &chain).await?;
//! assert_eq!(found.results, ["project-alpha"]);
//!
//! // Everything within two hops, nearest first.
//! let related = graph.get_related(&ns, "zhang", 2).await?;
//! assert_eq!(related[1].entity.id, "project-alpha");
//! assert_eq!(related[1].hops, 2);
//!
//! // Context for an agent's prompt.
//! let context = graph.context_for_agent(&ns, "zhang", 2, 500).await?;
//! assert_eq!(
//!     context,
//!     "[person] zhang\n  -- colleague_of --> li\n[person] li\n  -- works_on --> project-alpha\n[project] project-alpha"
//! );
//! # Ok(())
//! # }
//! ```

mod namespace_graph;
mod pet_graph;

/// Agent context rendering, defined beside the graph trait in memory-core.
pub use memory_core::KnowledgeGraphExt;

pub use crate::pet_graph::{InMemoryGraph, PetGraph};
