//! Traversals: cycles, depth limits, seed 004's multi-hop queries, shortest paths, scores,
//! and agreement with the trait's default algorithms.

use memory_core::{
    GraphEntity, GraphRelation, KnowledgeGraph, MAX_TRAVERSAL_DEPTH, MAX_TRAVERSAL_VISITED,
    MemoryError, MultiHopResult, Namespace, Result, Scope, ScoredEntity, TagConstraints,
    async_trait,
};
use memory_graph::{KnowledgeGraphExt, PetGraph};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{XorShift, entity, ns, relation, seeded};

fn chain(types: &[&str]) -> Vec<String> {
    types.iter().map(|t| (*t).to_owned()).collect()
}

fn reached(related: &[ScoredEntity]) -> Vec<(&str, usize)> {
    related
        .iter()
        .map(|s| (s.entity.id.as_str(), s.hops))
        .collect()
}

#[tokio::test]
async fn get_related_walks_both_directions_level_by_level() {
    let ns = ns("walk/seed");
    let graph = seeded(&ns).await;
    let depth = |d: usize| {
        let graph = &graph;
        let ns = &ns;
        async move { graph.get_related(ns, "react", d).await.unwrap() }
    };
    assert!(depth(0).await.is_empty());
    assert_eq!(
        reached(&depth(1).await),
        [("project-alpha", 1)],
        "incoming relation followed"
    );
    assert_eq!(
        reached(&depth(2).await),
        [
            ("project-alpha", 1),
            ("li", 2),
            ("typescript", 2),
            ("zhang", 2)
        ]
    );
    let all = depth(3).await;
    assert_eq!(
        all.len(),
        4,
        "the zhang-li-alpha cycle visits each entity once"
    );
    assert_eq!(
        depth(MAX_TRAVERSAL_DEPTH + 100).await,
        all,
        "depth is clamped"
    );
    assert!(
        !all.iter()
            .any(|s| s.entity.id == "island" || s.entity.id == "react")
    );
    let zhang = all.iter().find(|s| s.entity.id == "zhang").unwrap();
    let path: Vec<(&str, &str, &str)> = zhang
        .path
        .iter()
        .map(|r| {
            (
                r.source_id.as_str(),
                r.relation_type.as_str(),
                r.target_id.as_str(),
            )
        })
        .collect();
    assert_eq!(
        path,
        [
            ("project-alpha", "uses", "react"),
            ("zhang", "leads", "project-alpha")
        ],
        "relations keep their stored direction"
    );
    assert!(
        graph
            .get_related(&ns, "island", 3)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        graph.get_related(&ns, "ghost", 1).await,
        Err(MemoryError::NotFound { .. })
    ));
    assert!(matches!(
        graph
            .get_related(&crate::ns("walk/empty"), "react", 1)
            .await,
        Err(MemoryError::NotFound { .. })
    ));
}

#[tokio::test]
async fn scores_use_hops_and_path_weights() {
    let ns = ns("walk/scores");
    let graph = PetGraph::new();
    for id in ["a", "b", "c", "d"] {
        graph
            .add_entity(entity(&ns, id, id, "x", &[]))
            .await
            .unwrap();
    }
    graph
        .add_relation(relation(&ns, "a", "b", "r", 0.5))
        .await
        .unwrap();
    graph
        .add_relation(relation(&ns, "b", "c", "r", 0.4))
        .await
        .unwrap();
    graph
        .add_relation(relation(&ns, "a", "d", "r", 1.0))
        .await
        .unwrap();
    let related = graph.get_related(&ns, "a", 2).await.unwrap();
    let scores: Vec<(&str, usize, f32)> = related
        .iter()
        .map(|s| (s.entity.id.as_str(), s.hops, s.score))
        .collect();
    assert_eq!(scores.len(), 3);
    assert_eq!(
        (scores[0].0, scores[0].1),
        ("d", 1),
        "higher score first within a level"
    );
    assert!((scores[0].2 - 0.5).abs() < 1e-6);
    assert_eq!((scores[1].0, scores[1].1), ("b", 1));
    assert!((scores[1].2 - 0.25).abs() < 1e-6);
    assert_eq!((scores[2].0, scores[2].1), ("c", 2));
    assert!((scores[2].2 - 0.2 / 3.0).abs() < 1e-6);
    for scored in &related {
        assert_eq!(
            scored.score,
            memory_core::backend::distance_score(scored.hops, &scored.path)
        );
    }
}

#[tokio::test]
async fn depth_limits_on_a_long_chain_and_a_ring() {
    let ns = ns("walk/chain");
    let graph = PetGraph::new();
    let n = 50;
    for i in 0..n {
        graph
            .add_entity(entity(&ns, &format!("n{i:02}"), "node", "x", &[]))
            .await
            .unwrap();
    }
    for i in 0..n {
        // A ring: n49 -> n00 closes the cycle.
        let next = (i + 1) % n;
        graph
            .add_relation(relation(
                &ns,
                &format!("n{i:02}"),
                &format!("n{next:02}"),
                "next",
                1.0,
            ))
            .await
            .unwrap();
    }
    for depth in [1, 2, 5, 24, 25] {
        let related = graph.get_related(&ns, "n00", depth).await.unwrap();
        assert_eq!(
            related.len(),
            (2 * depth).min(n - 1),
            "depth {depth} on a ring"
        );
        assert!(
            related
                .iter()
                .all(|s| s.hops <= depth && s.path.len() == s.hops)
        );
    }
    let all = graph.get_related(&ns, "n00", 1000).await.unwrap();
    assert_eq!(all.len(), n - 1, "every node once, the start excluded");
    assert_eq!(all.iter().map(|s| s.hops).max(), Some(25));

    // Past MAX_TRAVERSAL_DEPTH hops a chain is cut off.
    let line = ns.child("line").unwrap();
    for i in 0..=40 {
        graph
            .add_entity(entity(&line, &format!("l{i:02}"), "l", "x", &[]))
            .await
            .unwrap();
    }
    for i in 0..40 {
        graph
            .add_relation(relation(
                &line,
                &format!("l{i:02}"),
                &format!("l{:02}", i + 1),
                "next",
                1.0,
            ))
            .await
            .unwrap();
    }
    let far = graph.get_related(&line, "l00", usize::MAX).await.unwrap();
    assert_eq!(far.len(), MAX_TRAVERSAL_DEPTH);
    assert_eq!(
        graph.shortest_path(&line, "l00", "l40").await.unwrap(),
        None
    );
    let within = graph
        .shortest_path(&line, "l00", "l32")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(within.len(), MAX_TRAVERSAL_DEPTH);
}

#[tokio::test]
async fn traversal_stops_after_max_visited() {
    let ns = ns("walk/star");
    let graph = PetGraph::new();
    graph
        .add_entity(entity(&ns, "hub", "hub", "x", &[]))
        .await
        .unwrap();
    let leaves = MAX_TRAVERSAL_VISITED + 50;
    for i in 0..leaves {
        let id = format!("leaf{i:05}");
        graph
            .add_entity(entity(&ns, &id, "leaf", "x", &[]))
            .await
            .unwrap();
        graph
            .add_relation(relation(&ns, "hub", &id, "has", 1.0))
            .await
            .unwrap();
    }
    let related = graph.get_related(&ns, "hub", 3).await.unwrap();
    assert_eq!(related.len(), MAX_TRAVERSAL_VISITED);
    assert_eq!(graph.degree(&ns, "hub").await.unwrap(), leaves);
    assert_eq!(graph.degree_centrality(&ns, "hub").unwrap(), 1.0);
    let leaf = graph.degree_centrality(&ns, "leaf00000").unwrap();
    assert!((leaf - 1.0 / leaves as f32).abs() < 1e-9);
}

#[tokio::test]
async fn multi_hop_on_the_seed_004_graph() {
    let ns = ns("walk/multi-hop");
    let graph = seeded(&ns).await;
    let hop = |start: &'static str, types: &'static [&'static str]| {
        let graph = &graph;
        let ns = &ns;
        async move { graph.multi_hop(ns, start, &chain(types)).await }
    };
    // Seed 004: the projects of zhang's colleagues.
    let result = hop("zhang", &["colleague_of", "works_on"]).await.unwrap();
    assert_eq!(result.results, ["project-alpha"]);
    let path: Vec<(&str, &str, &str)> = result.paths[0]
        .iter()
        .map(|r| {
            (
                r.source_id.as_str(),
                r.relation_type.as_str(),
                r.target_id.as_str(),
            )
        })
        .collect();
    assert_eq!(
        path,
        [
            ("zhang", "colleague_of", "li"),
            ("li", "works_on", "project-alpha")
        ]
    );
    // The technologies of the colleague's project: three hops, two end entities.
    let result = hop("zhang", &["colleague_of", "works_on", "uses"])
        .await
        .unwrap();
    assert_eq!(result.results, ["react", "typescript"]);
    assert_eq!(result.paths.len(), 2);
    assert!(result.paths.iter().all(|p| p.len() == 3));
    assert_eq!(result.paths[1][2].target_id, "typescript");
    // Relations are followed along their direction only.
    assert_eq!(
        hop("project-alpha", &["leads"]).await.unwrap(),
        MultiHopResult::default()
    );
    assert_eq!(
        hop("zhang", &["leads"]).await.unwrap().results,
        ["project-alpha"]
    );
    // Relation types match exactly.
    assert!(
        hop("zhang", &["Colleague_Of"])
            .await
            .unwrap()
            .results
            .is_empty()
    );
    // A chain that dies out midway.
    assert!(
        hop("zhang", &["leads", "leads", "uses"])
            .await
            .unwrap()
            .results
            .is_empty()
    );
    // Errors.
    assert!(matches!(
        hop("zhang", &[]).await,
        Err(MemoryError::InvalidInput { .. })
    ));
    assert!(matches!(
        hop("ghost", &["leads"]).await,
        Err(MemoryError::NotFound { .. })
    ));
    let too_long: Vec<String> = vec!["leads".to_owned(); MAX_TRAVERSAL_DEPTH + 1];
    assert!(matches!(
        graph.multi_hop(&ns, "zhang", &too_long).await,
        Err(MemoryError::InvalidInput { .. })
    ));
}

#[tokio::test]
async fn multi_hop_keeps_every_path_to_a_shared_end() {
    let ns = ns("walk/multi-paths");
    let graph = PetGraph::new();
    for id in ["me", "c1", "c2", "p"] {
        graph
            .add_entity(entity(&ns, id, id, "x", &[]))
            .await
            .unwrap();
    }
    for (from, kind, to) in [
        ("me", "colleague_of", "c2"),
        ("me", "colleague_of", "c1"),
        ("c1", "works_on", "p"),
        ("c2", "works_on", "p"),
        ("p", "works_on", "p"),
    ] {
        graph
            .add_relation(relation(&ns, from, to, kind, 1.0))
            .await
            .unwrap();
    }
    let result = graph
        .multi_hop(&ns, "me", &chain(&["colleague_of", "works_on"]))
        .await
        .unwrap();
    assert_eq!(result.results, ["p"]);
    let via: Vec<&str> = result
        .paths
        .iter()
        .map(|p| p[0].target_id.as_str())
        .collect();
    assert_eq!(
        via,
        ["c1", "c2"],
        "paths in order of the intermediate entity"
    );
    // A self loop can be followed repeatedly.
    let result = graph
        .multi_hop(&ns, "c1", &chain(&["works_on", "works_on", "works_on"]))
        .await
        .unwrap();
    assert_eq!(result.results, ["p"]);
    assert_eq!(result.paths.len(), 1);
}

#[tokio::test]
async fn shortest_paths() {
    let ns = ns("walk/shortest");
    let graph = seeded(&ns).await;
    let path = |from: &'static str, to: &'static str| {
        let graph = &graph;
        let ns = &ns;
        async move { graph.shortest_path(ns, from, to).await }
    };
    let found = path("li", "react").await.unwrap().unwrap();
    let hops: Vec<(&str, &str)> = found
        .iter()
        .map(|r| (r.source_id.as_str(), r.target_id.as_str()))
        .collect();
    assert_eq!(hops, [("li", "project-alpha"), ("project-alpha", "react")]);
    assert_eq!(
        path("react", "typescript").await.unwrap().map(|p| p.len()),
        Some(2)
    );
    assert_eq!(path("zhang", "li").await.unwrap().map(|p| p.len()), Some(1));
    assert_eq!(path("li", "li").await.unwrap(), Some(vec![]));
    assert_eq!(path("li", "island").await.unwrap(), None);
    assert!(
        matches!(path("ghost", "li").await, Err(MemoryError::NotFound { id, .. }) if id == "ghost")
    );
    assert!(
        matches!(path("li", "ghost").await, Err(MemoryError::NotFound { id, .. }) if id == "ghost")
    );
}

/// A graph that forwards the required methods to a [`PetGraph`] and keeps the trait's
/// default traversal algorithms: the reference the native ones must agree with. It counts
/// the relations its reads return.
#[derive(Debug)]
struct DefaultAlgorithms(PetGraph, AtomicUsize);

impl DefaultAlgorithms {
    fn new() -> Self {
        Self(PetGraph::new(), AtomicUsize::new(0))
    }

    /// The relations read since the last call.
    fn read(&self) -> usize {
        self.1.swap(0, Ordering::Relaxed)
    }

    fn counted(&self, relations: Result<Vec<GraphRelation>>) -> Result<Vec<GraphRelation>> {
        if let Ok(relations) = &relations {
            self.1.fetch_add(relations.len(), Ordering::Relaxed);
        }
        relations
    }
}

#[async_trait]
impl KnowledgeGraph for DefaultAlgorithms {
    async fn add_entity(&self, entity: GraphEntity) -> Result<()> {
        self.0.add_entity(entity).await
    }
    async fn update_entity(&self, entity: GraphEntity) -> Result<()> {
        self.0.update_entity(entity).await
    }
    async fn get_entity(&self, namespace: &Namespace, id: &str) -> Result<Option<GraphEntity>> {
        self.0.get_entity(namespace, id).await
    }
    async fn remove_entity(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        self.0.remove_entity(namespace, id).await
    }
    async fn add_relation(&self, relation: GraphRelation) -> Result<()> {
        self.0.add_relation(relation).await
    }
    async fn remove_relation(
        &self,
        namespace: &Namespace,
        source_id: &str,
        target_id: &str,
        relation_type: &str,
    ) -> Result<bool> {
        self.0
            .remove_relation(namespace, source_id, target_id, relation_type)
            .await
    }
    async fn relations_of(&self, namespace: &Namespace, id: &str) -> Result<Vec<GraphRelation>> {
        self.counted(self.0.relations_of(namespace, id).await)
    }
    async fn relations_of_at_most(
        &self,
        namespace: &Namespace,
        id: &str,
        limit: usize,
    ) -> Result<Vec<GraphRelation>> {
        self.counted(self.0.relations_of_at_most(namespace, id, limit).await)
    }
    async fn find_by_keywords(
        &self,
        scope: &Scope,
        keywords: &[String],
    ) -> Result<Vec<std::sync::Arc<GraphEntity>>> {
        self.0.find_by_keywords(scope, keywords).await
    }
    async fn find_tags(&self, scope: &Scope, prefix: &str) -> Result<Vec<String>> {
        self.0.find_tags(scope, prefix).await
    }
    async fn entity_count_by_tag(&self, scope: &Scope, tag: &str) -> Result<usize> {
        self.0.entity_count_by_tag(scope, tag).await
    }
    async fn set_entity_tags(
        &self,
        namespace: &Namespace,
        id: &str,
        tags: Vec<String>,
    ) -> Result<()> {
        self.0.set_entity_tags(namespace, id, tags).await
    }
    fn tag_constraints(&self) -> TagConstraints {
        self.0.tag_constraints()
    }
    async fn list_entities(&self, scope: &Scope) -> Result<Vec<GraphEntity>> {
        self.0.list_entities(scope).await
    }
    async fn list_relations(&self, scope: &Scope) -> Result<Vec<GraphRelation>> {
        self.0.list_relations(scope).await
    }
    async fn clear(&self, scope: &Scope) -> Result<usize> {
        self.0.clear(scope).await
    }
    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        self.0.list_namespaces(scope).await
    }
}

/// The default walk reads a hub's relations as far as it goes, not to the hub's degree,
/// and finds what the native walk finds; the neighbourhood text reads as far as its length
/// goes, and still finds a relation past the first read.
#[tokio::test]
async fn the_default_algorithms_read_a_hub_only_as_far_as_they_go() {
    let ns = ns("walk/hub");
    let graph = DefaultAlgorithms::new();
    let leaves = MAX_TRAVERSAL_VISITED + 2_000;
    graph
        .add_entity(entity(&ns, "hub", "Hub", "x", &[]))
        .await
        .unwrap();
    for i in 0..leaves {
        let id = format!("leaf{i:05}");
        graph
            .add_entity(entity(&ns, &id, &id, "x", &[]))
            .await
            .unwrap();
        graph
            .add_relation(relation(&ns, "hub", &id, "links", 1.0))
            .await
            .unwrap();
    }
    graph.read();
    let walked = graph.get_related(&ns, "hub", 1).await.unwrap();
    assert_eq!(walked.len(), MAX_TRAVERSAL_VISITED);
    assert!(graph.read() <= MAX_TRAVERSAL_VISITED + 1);
    assert_eq!(walked, graph.0.get_related(&ns, "hub", 1).await.unwrap());

    // 200 relations to entities the text does not show come first (by type), then one to
    // the neighbour it shows: found past the first two reads.
    graph
        .add_entity(entity(&ns, "star", "Star", "x", &[]))
        .await
        .unwrap();
    graph
        .add_entity(entity(&ns, "near", "Near", "x", &[]))
        .await
        .unwrap();
    for i in 0..200 {
        graph
            .add_relation(relation(&ns, "star", &format!("leaf{i:05}"), "a-far", 1.0))
            .await
            .unwrap();
    }
    graph
        .add_relation(relation(&ns, "star", "near", "z-near", 1.0))
        .await
        .unwrap();
    let star = graph.get_entity(&ns, "star").await.unwrap().unwrap();
    let near: Vec<ScoredEntity> = graph
        .get_related(&ns, "star", 1)
        .await
        .unwrap()
        .into_iter()
        .filter(|scored| scored.entity.id == "near")
        .collect();
    graph.read();
    let text = graph
        .render_neighbourhood(&ns, &star, &near, 10_000)
        .await
        .unwrap();
    assert!(text.contains("-- z-near --> Near"), "{text}");
    // A hub's text fills long before its relations end.
    let hub = graph.get_entity(&ns, "hub").await.unwrap().unwrap();
    graph.read();
    let text = graph
        .render_neighbourhood(&ns, &hub, &walked, 500)
        .await
        .unwrap();
    assert!(text.contains("-- links --> leaf00000"), "{text}");
    assert!(graph.read() <= 64, "{text}");
}

/// On a complete graph, a chain of 32 hops of one type makes far more than
/// `MAX_TRAVERSAL_VISITED` paths from the second hop on: the default stops expanding each
/// hop once it holds that many paths. Each expanded entity extends its paths along its 199
/// relations of the type, so a hop expands at most `ceil(MAX_TRAVERSAL_VISITED / 199)`
/// entities, not all 200 it reached; each expansion reads the entity's 398 relations.
#[tokio::test]
async fn the_default_multi_hop_stops_expanding_at_the_bound() {
    let ns = ns("walk/complete");
    let graph = DefaultAlgorithms::new();
    let n = 200;
    let id = |i: usize| format!("k{i:03}");
    for i in 0..n {
        graph
            .add_entity(entity(&ns, &id(i), "K", "x", &[]))
            .await
            .unwrap();
    }
    for from in 0..n {
        for to in (0..n).filter(|to| *to != from) {
            graph
                .add_relation(relation(&ns, &id(from), &id(to), "r", 1.0))
                .await
                .unwrap();
        }
    }
    let steps = vec!["r".to_owned(); MAX_TRAVERSAL_DEPTH];
    graph.read();
    let found = graph.multi_hop(&ns, &id(0), &steps).await.unwrap();
    let per_hop = MAX_TRAVERSAL_VISITED.div_ceil(n - 1);
    let expanded = graph.read() / (2 * (n - 1));
    assert!(
        expanded <= 1 + (MAX_TRAVERSAL_DEPTH - 1) * per_hop,
        "{expanded} entities expanded"
    );
    assert_eq!(found.paths.len(), MAX_TRAVERSAL_VISITED);
    assert!(found.results.iter().all(|end| {
        found
            .paths
            .iter()
            .any(|path| path.last().is_some_and(|last| last.target_id == *end))
    }));
    assert_eq!(found, graph.0.multi_hop(&ns, &id(0), &steps).await.unwrap());
}

#[tokio::test]
async fn native_traversals_agree_with_the_default_algorithms() {
    let relation_types = ["knows", "uses", "part_of"];
    for seed in 1..=12u64 {
        let mut rng = XorShift(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
        let ns = ns(&format!("walk/agree-{seed}"));
        let reference = DefaultAlgorithms::new();
        let n = 10 + rng.below(40) as usize;
        for i in 0..n {
            reference
                .add_entity(entity(&ns, &format!("e{i}"), "e", "x", &[]))
                .await
                .unwrap();
        }
        let edges = rng.below(3 * n as u64) as usize;
        for _ in 0..edges {
            let from = format!("e{}", rng.below(n as u64));
            let to = format!("e{}", rng.below(n as u64));
            let kind = relation_types[rng.below(3) as usize];
            let weight = (1 + rng.below(10)) as f32 / 10.0;
            reference
                .add_relation(relation(&ns, &from, &to, kind, weight))
                .await
                .unwrap();
        }
        let native = &reference.0;
        for _ in 0..15 {
            let from = format!("e{}", rng.below(n as u64));
            let to = format!("e{}", rng.below(n as u64));
            let depth = rng.below(6) as usize;
            assert_eq!(
                native.get_related(&ns, &from, depth).await.unwrap(),
                reference.get_related(&ns, &from, depth).await.unwrap(),
                "get_related {from} {depth} (seed {seed})"
            );
            assert_eq!(
                native.shortest_path(&ns, &from, &to).await.unwrap(),
                reference.shortest_path(&ns, &from, &to).await.unwrap(),
                "shortest_path {from} {to} (seed {seed})"
            );
            let hops: Vec<String> = (0..1 + rng.below(3))
                .map(|_| relation_types[rng.below(3) as usize].to_owned())
                .collect();
            assert_eq!(
                native.multi_hop(&ns, &from, &hops).await.unwrap(),
                reference.multi_hop(&ns, &from, &hops).await.unwrap(),
                "multi_hop {from} {hops:?} (seed {seed})"
            );
            assert_eq!(
                native.degree(&ns, &from).await.unwrap(),
                reference.degree(&ns, &from).await.unwrap()
            );
        }
    }
}

/// Long ids sharing their first eight bytes, added out of order, and two weights, so many
/// entities of a level tie on score and are ordered by whole id.
#[tokio::test]
async fn equal_scores_order_by_whole_id_like_the_default() {
    for seed in 1..=6u64 {
        let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let ns = ns(&format!("walk/ties-{seed}"));
        let reference = DefaultAlgorithms::new();
        let n = 40 + rng.below(40);
        let id = |i: u64| format!("entity-{:03}", (i * 37) % 1000);
        for i in (0..n).rev() {
            reference
                .add_entity(entity(&ns, &id(i), "e", "x", &[]))
                .await
                .unwrap();
        }
        for _ in 0..3 * n {
            let (from, to) = (id(rng.below(n)), id(rng.below(n)));
            let weight = [0.5, 1.0][rng.below(2) as usize];
            reference
                .add_relation(relation(&ns, &from, &to, "r", weight))
                .await
                .unwrap();
        }
        let native = &reference.0;
        for _ in 0..10 {
            let from = id(rng.below(n));
            let depth = 1 + rng.below(3) as usize;
            assert_eq!(
                native.get_related(&ns, &from, depth).await.unwrap(),
                reference.get_related(&ns, &from, depth).await.unwrap(),
                "get_related {from} {depth} (seed {seed})"
            );
        }
    }
}

/// Dense graphs have many shortest paths of the same length: the bidirectional search must
/// still return the one the default (one-sided) search returns, with closed relations,
/// self loops and removals in the mix, and traversals must agree after every change.
#[tokio::test]
async fn dense_graphs_agree_with_the_default_after_changes() {
    let relation_types = ["a", "b"];
    let past = chrono::DateTime::from_timestamp(1_000_000_000, 0).unwrap();
    let future = chrono::DateTime::from_timestamp(4_000_000_000, 0).unwrap();
    for seed in 1..=8u64 {
        let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let ns = ns(&format!("walk/dense-{seed}"));
        let reference = DefaultAlgorithms::new();
        let n = 60 + rng.below(60) as usize;
        let id = |i: u64| format!("n{i:03}");
        for i in 0..n {
            reference
                .add_entity(entity(&ns, &id(i as u64), "n", "x", &[]))
                .await
                .unwrap();
        }
        for _ in 0..4 * n {
            let (from, to) = (id(rng.below(n as u64)), id(rng.below(n as u64)));
            let kind = relation_types[rng.below(2) as usize];
            let weight = (1 + rng.below(10)) as f32 / 10.0;
            let mut relation = relation(&ns, &from, &to, kind, weight);
            match rng.below(8) {
                0 => relation = relation.with_validity(None, Some(past)).unwrap(),
                1 => relation = relation.with_validity(None, Some(future)).unwrap(),
                _ => {}
            }
            reference.add_relation(relation).await.unwrap();
        }
        let native = &reference.0;
        for round in 0..3 {
            for _ in 0..40 {
                let (from, to) = (id(rng.below(n as u64)), id(rng.below(n as u64)));
                let depth = 1 + rng.below(4) as usize;
                assert_eq!(
                    native.shortest_path(&ns, &from, &to).await.unwrap(),
                    reference.shortest_path(&ns, &from, &to).await.unwrap(),
                    "shortest_path {from} {to} (seed {seed}, round {round})"
                );
                assert_eq!(
                    native.get_related(&ns, &from, depth).await.unwrap(),
                    reference.get_related(&ns, &from, depth).await.unwrap(),
                    "get_related {from} {depth} (seed {seed}, round {round})"
                );
                let chain = chain(&["a", "b"][..1 + rng.below(2) as usize]);
                assert_eq!(
                    native.multi_hop(&ns, &from, &chain).await.unwrap(),
                    reference.multi_hop(&ns, &from, &chain).await.unwrap(),
                    "multi_hop {from} {chain:?} (seed {seed}, round {round})"
                );
            }
            // Change the graph: remove some entities and relations, close others.
            for _ in 0..n / 10 {
                let victim = id(rng.below(n as u64));
                native.remove_entity(&ns, &victim).await.unwrap();
                native
                    .add_entity(entity(&ns, &victim, "n", "x", &[]))
                    .await
                    .unwrap();
            }
            for relation in native.list_relations(&ns.exact()).await.unwrap() {
                match rng.below(10) {
                    0 => {
                        native
                            .remove_relation(
                                &ns,
                                &relation.source_id,
                                &relation.target_id,
                                &relation.relation_type,
                            )
                            .await
                            .unwrap();
                    }
                    1 => {
                        let closed = relation.with_validity(None, Some(past)).unwrap();
                        native.add_relation(closed).await.unwrap();
                    }
                    2 => {
                        // A new weight: paths handed out from now on carry it.
                        let mut reweighted = relation;
                        reweighted.weight = (1 + rng.below(10)) as f32 / 10.0;
                        native.add_relation(reweighted).await.unwrap();
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The default search gives up once it has reached `MAX_TRAVERSAL_VISITED` entities; the
/// bidirectional search reaches few entities from each end, so it still finds a path
/// between two entities whose neighbourhoods are large.
#[tokio::test]
async fn shortest_path_finds_paths_beyond_the_one_sided_limit() {
    let ns = ns("walk/two-stars");
    let graph = PetGraph::new();
    for id in ["left", "right", "bridge"] {
        graph
            .add_entity(entity(&ns, id, id, "x", &[]))
            .await
            .unwrap();
    }
    // Two hubs with leaves, joined through `bridge`: left -> bridge -> right. The left
    // star alone is more than the one-sided search may reach.
    let leaves = |hub: &str| {
        if hub == "left" {
            MAX_TRAVERSAL_VISITED + 10
        } else {
            100
        }
    };
    for hub in ["left", "right"] {
        for i in 0..leaves(hub) {
            let id = format!("{hub}-leaf{i:05}");
            graph
                .add_entity(entity(&ns, &id, "leaf", "x", &[]))
                .await
                .unwrap();
            graph
                .add_relation(relation(&ns, hub, &id, "has", 1.0))
                .await
                .unwrap();
        }
    }
    graph
        .add_relation(relation(&ns, "left", "bridge", "to", 1.0))
        .await
        .unwrap();
    graph
        .add_relation(relation(&ns, "bridge", "right", "to", 1.0))
        .await
        .unwrap();
    let far = format!("right-leaf{:05}", leaves("right") - 1);
    let reference = DefaultAlgorithms::new();
    for entity in graph.list_entities(&ns.exact()).await.unwrap() {
        reference.add_entity(entity).await.unwrap();
    }
    for relation in graph.list_relations(&ns.exact()).await.unwrap() {
        reference.add_relation(relation).await.unwrap();
    }
    assert_eq!(
        reference
            .shortest_path(&ns, "left-leaf00000", &far)
            .await
            .unwrap(),
        None,
        "the one-sided search stops inside the left star"
    );
    let path = graph
        .shortest_path(&ns, "left-leaf00000", &far)
        .await
        .unwrap()
        .expect("the bidirectional search meets in the middle");
    let steps: Vec<(&str, &str)> = path
        .iter()
        .map(|r| (r.source_id.as_str(), r.target_id.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("left", "left-leaf00000"),
            ("left", "bridge"),
            ("bridge", "right"),
            ("right", far.as_str()),
        ]
    );
    // Where the default finds a path, both agree.
    let found = reference.shortest_path(&ns, "bridge", &far).await.unwrap();
    assert_eq!(found.as_ref().map(Vec::len), Some(2));
    assert_eq!(
        graph.shortest_path(&ns, "bridge", &far).await.unwrap(),
        found
    );
}

/// The trait's default pages (a listing filtered) agree with the in-memory graph's own
/// (chosen without sorting the whole namespace), at every position of random graphs.
#[tokio::test]
async fn pages_of_the_graph_agree_with_the_default() {
    use memory_core::{EntityPosition, RelationPosition};
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for round in 0..4 {
        let native = PetGraph::new();
        let reference = DefaultAlgorithms::new();
        let spaces = [ns(&format!("p{round}/a")), ns(&format!("p{round}/b"))];
        for space in &spaces {
            let count = 3 + rng.below(12);
            for n in 0..count {
                let id = format!("e{}", rng.below(40));
                if native.get_entity(space, &id).await.unwrap().is_some() {
                    continue;
                }
                let made = entity(space, &id, &format!("name {n}"), "thing", &[]);
                native.add_entity(made.clone()).await.unwrap();
                reference.add_entity(made).await.unwrap();
            }
            let ids: Vec<String> = native
                .list_entities(&space.exact())
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.id)
                .collect();
            for _ in 0..ids.len() * 2 {
                let from = &ids[rng.below(ids.len() as u64) as usize];
                let to = &ids[rng.below(ids.len() as u64) as usize];
                let kind = ["knows", "likes", "owns"][rng.below(3) as usize];
                let made = relation(space, from, to, kind, 0.5);
                native.add_relation(made.clone()).await.unwrap();
                reference.add_relation(made).await.unwrap();
            }
        }
        let scope = ns(&format!("p{round}")).subtree();
        let entities = native.list_entities(&scope).await.unwrap();
        let relations = native.list_relations(&scope).await.unwrap();
        let mut positions: Vec<Option<EntityPosition>> = vec![None];
        positions.extend(entities.iter().map(|e| Some(EntityPosition::of(e))));
        positions.push(Some(EntityPosition::new(spaces[0].clone(), "e2").unwrap()));
        for position in &positions {
            for limit in [0, 1, 3, 100] {
                assert_eq!(
                    native
                        .list_entities_after(&scope, position.as_ref(), limit)
                        .await
                        .unwrap(),
                    reference
                        .list_entities_after(&scope, position.as_ref(), limit)
                        .await
                        .unwrap(),
                    "{position:?} {limit}"
                );
            }
        }
        let mut positions: Vec<Option<RelationPosition>> = vec![None];
        positions.extend(relations.iter().map(|r| Some(RelationPosition::of(r))));
        for position in &positions {
            for limit in [1, 4, 100] {
                assert_eq!(
                    native
                        .list_relations_after(&scope, position.as_ref(), limit)
                        .await
                        .unwrap(),
                    reference
                        .list_relations_after(&scope, position.as_ref(), limit)
                        .await
                        .unwrap(),
                    "{position:?} {limit}"
                );
            }
        }
    }
}
