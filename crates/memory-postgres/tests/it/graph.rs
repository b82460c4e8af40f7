//! The recursive `get_related` query against memory-core's default algorithm, on the same
//! stored graph: same entities, hops, paths, scores and order, cycles and limits included.

use memory_core::{
    GraphEntity, GraphRelation, KnowledgeGraph, MAX_TRAVERSAL_VISITED, Namespace, Result, Scope,
    TagConstraints,
};
use memory_postgres::PostgresGraph;

use crate::common::schema_or_skip;

/// Forwards every required method to the PostgreSQL graph but keeps the trait's default
/// traversals, so the two `get_related`s run over the same data.
#[derive(Debug)]
struct DefaultTraversal(PostgresGraph);

#[memory_core::async_trait]
impl KnowledgeGraph for DefaultTraversal {
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
        self.0.relations_of(namespace, id).await
    }
    async fn find_by_keywords(
        &self,
        scope: &Scope,
        keywords: &[String],
    ) -> Result<Vec<GraphEntity>> {
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

/// A small deterministic pseudo-random sequence (no dependency, same graph every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % below as u64) as usize
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_related_equals_the_default_algorithm_on_random_graphs() {
    let schema = schema_or_skip!("graph_random");
    let backend = schema.connect().await;
    let graph = backend.graph();
    let reference = DefaultTraversal(graph.clone());
    let types = ["knows", "uses", "part_of"];
    // Few distinct weights, so different paths often tie and the choice of path shows.
    let weights = [0.25f32, 0.5, 0.75, 1.0];
    for (round, (entities, relations)) in [(12usize, 30usize), (40, 90), (60, 240)]
        .into_iter()
        .enumerate()
    {
        let ns = Namespace::parse(&format!("random/g{round}")).unwrap();
        let mut random = Lcg(round as u64 + 7);
        for index in 0..entities {
            let entity =
                GraphEntity::new(ns.clone(), format!("e{index:02}"), format!("E{index}"), "x")
                    .unwrap();
            graph.add_entity(entity).await.unwrap();
        }
        for _ in 0..relations {
            // Self loops and relations in both directions between one pair included.
            let source = format!("e{:02}", random.next(entities));
            let target = format!("e{:02}", random.next(entities));
            let relation = GraphRelation::new(
                ns.clone(),
                source,
                target,
                types[random.next(types.len())],
                weights[random.next(weights.len())],
            )
            .unwrap();
            graph.add_relation(relation).await.unwrap();
        }
        for start in 0..entities.min(15) {
            let start = format!("e{start:02}");
            for depth in [0, 1, 2, 3, 5, 1_000] {
                let got = graph.get_related(&ns, &start, depth).await.unwrap();
                let want = reference.get_related(&ns, &start, depth).await.unwrap();
                assert_eq!(
                    got, want,
                    "round {round}, start {start}, depth {depth}: recursive query differs from the default"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_related_on_a_long_cycle_and_across_namespaces() {
    let schema = schema_or_skip!("graph_cycle");
    let backend = schema.connect().await;
    let graph = backend.graph();
    let ns = Namespace::parse("cycle").unwrap();
    let other = Namespace::parse("cycle-twin").unwrap();
    let length = 50;
    for space in [&ns, &other] {
        for index in 0..length {
            let entity = GraphEntity::new(space.clone(), format!("n{index}"), "N", "x").unwrap();
            graph.add_entity(entity).await.unwrap();
        }
        for index in 0..length {
            let relation = GraphRelation::new(
                space.clone(),
                format!("n{index}"),
                format!("n{}", (index + 1) % length),
                "next",
                1.0,
            )
            .unwrap();
            graph.add_relation(relation).await.unwrap();
        }
    }
    // A ring of 50 reached both ways: 25 levels, each entity once, depth clamped to 32.
    let related = graph.get_related(&ns, "n0", usize::MAX).await.unwrap();
    assert_eq!(related.len(), length - 1, "every other entity once");
    assert_eq!(related.iter().map(|s| s.hops).max(), Some(length / 2));
    assert!(related.iter().all(|s| s.path.len() == s.hops));
    assert!(
        related.iter().all(|s| s.entity.namespace == ns),
        "stays in its namespace"
    );
    let reference = DefaultTraversal(graph.clone());
    assert_eq!(
        related,
        reference.get_related(&ns, "n0", usize::MAX).await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_related_stops_at_the_visited_limit_like_the_default() {
    let schema = schema_or_skip!("graph_limit");
    let backend = schema.connect().await;
    let graph = backend.graph();
    let ns = Namespace::parse("star").unwrap();
    graph
        .add_entity(GraphEntity::new(ns.clone(), "hub", "Hub", "x").unwrap())
        .await
        .unwrap();
    // More leaves than the limit, inserted in bulk: the stores would take a statement each.
    let leaves = MAX_TRAVERSAL_VISITED + 25;
    let client = schema.raw_client().await;
    client
        .batch_execute(&format!(
            "INSERT INTO \"{s}\".entities (ns, id, name, name_key, entity_type, type_key, description, tags)
             SELECT 'star', 'leaf' || lpad(i::text, 6, '0'), 'Leaf', 'leaf', 'x', 'x', '', '{{}}'
             FROM generate_series(1, {leaves}) AS i;
             INSERT INTO \"{s}\".relations (ns, source_id, target_id, relation_type, weight)
             SELECT 'star', 'hub', 'leaf' || lpad(i::text, 6, '0'), 'has', 0.5
             FROM generate_series(1, {leaves}) AS i;
             INSERT INTO \"{s}\".entities (ns, id, name, name_key, entity_type, type_key, description, tags)
             VALUES ('star', 'far', 'Far', 'far', 'x', 'x', '', '{{}}');
             INSERT INTO \"{s}\".relations (ns, source_id, target_id, relation_type, weight)
             VALUES ('star', 'leaf000001', 'far', 'has', 0.5);",
            s = schema.name
        ))
        .await
        .unwrap();
    let related = graph.get_related(&ns, "hub", 3).await.unwrap();
    assert_eq!(
        related.len(),
        MAX_TRAVERSAL_VISITED,
        "the walk stops at the limit"
    );
    assert!(
        related.iter().all(|s| s.hops == 1),
        "the limit is reached in the first level, so the second is never walked"
    );
    let reference = DefaultTraversal(graph.clone());
    assert_eq!(related, reference.get_related(&ns, "hub", 3).await.unwrap());
}
