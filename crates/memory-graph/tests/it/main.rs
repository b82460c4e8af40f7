//! Integration tests of memory-graph: conformance, matching, tags, traversal, removal,
//! concurrency and agent context.

mod concurrency;
mod conformance;
mod context;
mod matching;
mod removal;
mod tags;
mod traversal;

use memory_core::{GraphEntity, GraphRelation, KnowledgeGraph, Namespace};
use memory_graph::PetGraph;

/// A namespace from a fixed string.
pub(crate) fn ns(text: &str) -> Namespace {
    Namespace::parse(text).unwrap()
}

/// An entity with tags.
pub(crate) fn entity(
    ns: &Namespace,
    id: &str,
    name: &str,
    kind: &str,
    tags: &[&str],
) -> GraphEntity {
    GraphEntity::new(ns.clone(), id, name, kind)
        .unwrap()
        .with_tags(tags.iter().copied())
        .unwrap()
}

/// A relation.
pub(crate) fn relation(
    ns: &Namespace,
    from: &str,
    to: &str,
    kind: &str,
    weight: f32,
) -> GraphRelation {
    GraphRelation::new(ns.clone(), from, to, kind, weight).unwrap()
}

/// The ids of `entities`, in order.
pub(crate) fn ids<E: std::borrow::Borrow<GraphEntity>>(entities: &[E]) -> Vec<&str> {
    entities.iter().map(|e| e.borrow().id.as_str()).collect()
}

/// Seed 004's example graph: project-alpha, zhang (leads) and li (works on), react and
/// typescript (used), zhang colleague_of li, plus an unconnected entity.
pub(crate) async fn seed_004(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    for (id, kind) in [
        ("project-alpha", "project"),
        ("zhang", "person"),
        ("li", "person"),
        ("react", "technology"),
        ("typescript", "technology"),
        ("island", "place"),
    ] {
        graph
            .add_entity(entity(ns, id, id, kind, &[]))
            .await
            .unwrap();
    }
    for (from, kind, to) in [
        ("zhang", "leads", "project-alpha"),
        ("li", "works_on", "project-alpha"),
        ("project-alpha", "uses", "react"),
        ("project-alpha", "uses", "typescript"),
        ("zhang", "colleague_of", "li"),
    ] {
        graph
            .add_relation(relation(ns, from, to, kind, 1.0))
            .await
            .unwrap();
    }
}

/// A fresh graph with the seed 004 example in `ns`.
pub(crate) async fn seeded(ns: &Namespace) -> PetGraph {
    let graph = PetGraph::new();
    seed_004(&graph, ns).await;
    graph
}

/// A tiny deterministic generator.
pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
