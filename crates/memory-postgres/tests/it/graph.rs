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

/// The same entities and relations in the in-memory graph.
async fn in_memory_copy(graph: &PostgresGraph, scope: &Scope) -> memory_graph::PetGraph {
    let copy = memory_graph::PetGraph::new();
    for entity in graph.list_entities(scope).await.unwrap() {
        copy.add_entity(entity).await.unwrap();
    }
    for relation in graph.list_relations(scope).await.unwrap() {
        copy.add_relation(relation).await.unwrap();
    }
    copy
}

/// `multi_hop` and `shortest_path` of the PostgreSQL graph, the trait's defaults over it and
/// the in-memory graph agree, for every start, goal and chain given.
async fn assert_traversals_agree(
    graph: &PostgresGraph,
    ns: &Namespace,
    starts: &[String],
    goals: &[String],
    chains: &[Vec<String>],
) {
    let reference = DefaultTraversal(graph.clone());
    let in_memory = in_memory_copy(graph, &ns.exact()).await;
    for start in starts {
        for chain in chains {
            let got = graph.multi_hop(ns, start, chain).await.unwrap();
            let want = reference.multi_hop(ns, start, chain).await.unwrap();
            assert_eq!(got, want, "multi_hop from {start} along {chain:?}: default");
            let want = in_memory.multi_hop(ns, start, chain).await.unwrap();
            assert_eq!(
                got, want,
                "multi_hop from {start} along {chain:?}: in memory"
            );
        }
        for goal in goals {
            let got = graph.shortest_path(ns, start, goal).await.unwrap();
            let want = reference.shortest_path(ns, start, goal).await.unwrap();
            assert_eq!(got, want, "shortest_path {start} -> {goal}: default");
            let want = in_memory.shortest_path(ns, start, goal).await.unwrap();
            assert_eq!(got, want, "shortest_path {start} -> {goal}: in memory");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_hop_and_shortest_path_equal_the_default_and_the_in_memory_graph() {
    let schema = schema_or_skip!("graph_paths");
    let backend = schema.connect().await;
    let graph = backend.graph();
    let ids = |prefix: &str, count: usize| -> Vec<String> {
        (0..count).map(|i| format!("{prefix}{i:02}")).collect()
    };
    let chain = |types: &[&str]| -> Vec<String> { types.iter().map(|t| (*t).to_owned()).collect() };

    // A chain of 40 entities: paths of up to 32 hops only.
    let line = Namespace::parse("paths/chain").unwrap();
    let nodes = ids("c", 40);
    for id in &nodes {
        graph
            .add_entity(GraphEntity::new(line.clone(), id.as_str(), "C", "x").unwrap())
            .await
            .unwrap();
    }
    for pair in nodes.windows(2) {
        let relation = GraphRelation::new(
            line.clone(),
            pair[0].as_str(),
            pair[1].as_str(),
            "next",
            0.5,
        )
        .unwrap();
        graph.add_relation(relation).await.unwrap();
    }
    let long: Vec<String> = vec!["next".to_owned(); 32];
    assert_eq!(
        graph.multi_hop(&line, "c00", &long).await.unwrap().results,
        ["c32"]
    );
    assert_eq!(
        graph
            .shortest_path(&line, "c00", "c32")
            .await
            .unwrap()
            .map(|path| path.len()),
        Some(32)
    );
    assert_eq!(
        graph.shortest_path(&line, "c00", "c33").await.unwrap(),
        None
    );
    assert!(graph.multi_hop(&line, "c00", &[]).await.is_err());
    let too_long: Vec<String> = vec!["next".to_owned(); 33];
    assert!(matches!(
        graph.multi_hop(&line, "c00", &too_long).await,
        Err(memory_core::MemoryError::InvalidInput { .. })
    ));
    assert!(matches!(
        graph.shortest_path(&line, "c00", "nobody").await,
        Err(memory_core::MemoryError::NotFound { .. })
    ));
    assert!(matches!(
        graph.multi_hop(&line, "no\0body", &long).await,
        Err(memory_core::MemoryError::NotFound { .. })
    ));
    let goals: Vec<String> = ["c00", "c01", "c20", "c31", "c32", "c33", "c39"]
        .map(String::from)
        .to_vec();
    let starts: Vec<String> = ["c00", "c07", "c39"].map(String::from).to_vec();
    assert_traversals_agree(
        graph,
        &line,
        &starts,
        &goals,
        &[
            chain(&["next"]),
            chain(&["next", "next", "next"]),
            long.clone(),
            chain(&["next", "nul\0"]),
        ],
    )
    .await;

    // A branching graph: ten layers of five, each entity related to every entity of the next
    // layer by two types, and back by a third: 5^9 paths along nine hops, over the limit.
    let layers = Namespace::parse("paths/layers").unwrap();
    let width = 5;
    let depth = 10;
    let id = |layer: usize, index: usize| format!("l{layer}n{index}");
    for layer in 0..depth {
        for index in 0..width {
            let entity = GraphEntity::new(layers.clone(), id(layer, index), "N", "x").unwrap();
            graph.add_entity(entity).await.unwrap();
        }
    }
    let weights = [0.25f32, 0.5, 0.75, 1.0];
    for layer in 0..depth - 1 {
        for from in 0..width {
            for to in 0..width {
                for (kind, relation_type) in ["a", "b"].into_iter().enumerate() {
                    if (from + to + kind) % 3 == 0 {
                        continue;
                    }
                    let relation = GraphRelation::new(
                        layers.clone(),
                        id(layer, from),
                        id(layer + 1, to),
                        relation_type,
                        weights[(from * 3 + to + kind) % 4],
                    )
                    .unwrap();
                    graph.add_relation(relation).await.unwrap();
                }
                let back = GraphRelation::new(
                    layers.clone(),
                    id(layer + 1, to),
                    id(layer, from),
                    "back",
                    0.5,
                )
                .unwrap();
                graph.add_relation(back).await.unwrap();
            }
        }
    }
    let starts: Vec<String> = vec![id(0, 0), id(0, 3), id(4, 2)];
    let goals: Vec<String> = vec![id(0, 1), id(3, 3), id(9, 4), id(5, 0)];
    assert_traversals_agree(
        graph,
        &layers,
        &starts,
        &goals,
        &[
            chain(&["a"]),
            chain(&["a", "b", "back", "a"]),
            chain(&["a", "a", "a", "a", "a", "a", "a", "a", "a"]),
            chain(&["b", "a", "b", "a", "b", "a", "b", "a", "b"]),
            chain(&["back", "a"]),
        ],
    )
    .await;
    let many = graph
        .multi_hop(&layers, &id(0, 0), &chain(&["a"; 9]))
        .await
        .unwrap();
    assert_eq!(
        many.paths.len(),
        MAX_TRAVERSAL_VISITED,
        "the paths stop at the limit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_hop_builds_no_more_paths_than_it_keeps() {
    let schema = schema_or_skip!("graph_funnel");
    let backend = schema.connect().await;
    let graph = backend.graph();
    let ns = Namespace::parse("funnel").unwrap();
    // A fan-out, a funnel and a fan-out again: start -> 10,000 middles -> neck -> 10,000
    // ends. The neck is reached by 10,000 paths, each of which its 10,000 relations would
    // extend: 10^8 extensions of which the default keeps the first 10,000, all to end000001,
    // the only end reached.
    let width = MAX_TRAVERSAL_VISITED;
    let client = schema.raw_client().await;
    client
        .batch_execute(&format!(
            "INSERT INTO \"{s}\".entities (ns, id, name, name_key, entity_type, type_key, description, tags)
             SELECT 'funnel', id, 'N', 'n', 'x', 'x', '', '{{}}'
             FROM unnest(ARRAY['start', 'neck']) AS id;
             INSERT INTO \"{s}\".entities (ns, id, name, name_key, entity_type, type_key, description, tags)
             SELECT 'funnel', kind || lpad(i::text, 6, '0'), 'N', 'n', 'x', 'x', '', '{{}}'
             FROM generate_series(1, {width}) AS i, unnest(ARRAY['middle', 'end']) AS kind;
             INSERT INTO \"{s}\".relations (ns, source_id, target_id, relation_type, weight)
             SELECT 'funnel', 'start', 'middle' || lpad(i::text, 6, '0'), 'has', 0.5
             FROM generate_series(1, {width}) AS i;
             INSERT INTO \"{s}\".relations (ns, source_id, target_id, relation_type, weight)
             SELECT 'funnel', 'middle' || lpad(i::text, 6, '0'), 'neck', 'to', 0.5
             FROM generate_series(1, {width}) AS i;
             INSERT INTO \"{s}\".relations (ns, source_id, target_id, relation_type, weight)
             SELECT 'funnel', 'neck', 'end' || lpad(i::text, 6, '0'), 'out', 0.5
             FROM generate_series(1, {width}) AS i;",
            s = schema.name
        ))
        .await
        .unwrap();
    let chain: Vec<String> = ["has", "to", "out"].map(String::from).to_vec();
    let got = graph.multi_hop(&ns, "start", &chain).await.unwrap();
    assert_eq!(
        got.results,
        ["end000001"],
        "only the end of the paths kept is reached"
    );
    assert_eq!(
        got.paths.len(),
        MAX_TRAVERSAL_VISITED,
        "the paths stop at the limit"
    );
    assert!(
        got.paths
            .iter()
            .all(|path| path[2].target_id == "end000001"),
        "the first relation of the neck takes every path kept"
    );
    let in_memory = in_memory_copy(graph, &ns.exact()).await;
    assert_eq!(
        got,
        in_memory.multi_hop(&ns, "start", &chain).await.unwrap()
    );
    // Two hops: every middle's one path to the neck is kept.
    let two = &chain[..2];
    assert_eq!(
        graph.multi_hop(&ns, "start", two).await.unwrap(),
        in_memory.multi_hop(&ns, "start", two).await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shortest_path_stops_at_the_visited_limit_like_the_default() {
    let schema = schema_or_skip!("graph_path_limit");
    let backend = schema.connect().await;
    let graph = backend.graph();
    let ns = Namespace::parse("wide").unwrap();
    // start -> a1, a2, a3; a1 -> leaves; a2 -> near; a3 -> far (and a leaf -> deep). The
    // default search expands a1 first: with 9,996 leaves it has reached 10,000 entities
    // and still expands a2 (finding near, the 10,001st), then stops before a3 (never finding
    // far).
    let leaves = MAX_TRAVERSAL_VISITED - 4;
    let client = schema.raw_client().await;
    client
        .batch_execute(&format!(
            "INSERT INTO \"{s}\".entities (ns, id, name, name_key, entity_type, type_key, description, tags)
             SELECT 'wide', id, 'N', 'n', 'x', 'x', '', '{{}}'
             FROM unnest(ARRAY['start', 'a1', 'a2', 'a3', 'near', 'far', 'deep']) AS id;
             INSERT INTO \"{s}\".entities (ns, id, name, name_key, entity_type, type_key, description, tags)
             SELECT 'wide', 'leaf' || lpad(i::text, 6, '0'), 'Leaf', 'leaf', 'x', 'x', '', '{{}}'
             FROM generate_series(1, {leaves}) AS i;
             INSERT INTO \"{s}\".relations (ns, source_id, target_id, relation_type, weight)
             VALUES ('wide', 'start', 'a1', 'has', 1), ('wide', 'start', 'a2', 'has', 1),
                    ('wide', 'start', 'a3', 'has', 1), ('wide', 'a2', 'near', 'has', 1),
                    ('wide', 'a3', 'far', 'has', 1), ('wide', 'leaf000001', 'deep', 'has', 1);
             INSERT INTO \"{s}\".relations (ns, source_id, target_id, relation_type, weight)
             SELECT 'wide', 'a1', 'leaf' || lpad(i::text, 6, '0'), 'has', 0.5
             FROM generate_series(1, {leaves}) AS i;",
            s = schema.name
        ))
        .await
        .unwrap();
    let reference = DefaultTraversal(graph.clone());
    for (goal, found) in [
        ("a3", true),
        ("leaf009996", true),
        ("near", true),
        ("far", false),
        ("deep", false),
    ] {
        let got = graph.shortest_path(&ns, "start", goal).await.unwrap();
        assert_eq!(got.is_some(), found, "{goal}");
        assert_eq!(
            got,
            reference.shortest_path(&ns, "start", goal).await.unwrap(),
            "{goal}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traversals_follow_current_relations_like_the_default() {
    let schema = schema_or_skip!("graph_validity");
    let backend = schema.connect().await;
    let graph = backend.graph();
    let ns = Namespace::parse("validity").unwrap();
    let year = |y: i32| {
        chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, y, 1, 1, 0, 0, 0)
            .single()
            .unwrap()
    };
    // Open; closed in the past; closing in the future; starting in the future (current).
    let validities = [
        (None, None),
        (Some(year(2020)), Some(year(2021))),
        (None, Some(year(2100))),
        (Some(year(2100)), None),
        (None, Some(year(2001))),
    ];
    let count = 12;
    let id = |i: usize| format!("n{:02}", i % count);
    for i in 0..count {
        graph
            .add_entity(GraphEntity::new(ns.clone(), id(i), "N", "x").unwrap())
            .await
            .unwrap();
    }
    let mut nth = 0;
    for i in 0..count {
        for (step, relation_type) in [(1, "a"), (3, "b"), (5, "a")] {
            let (from, until) = validities[nth % validities.len()];
            nth += 1;
            let relation = GraphRelation::new(ns.clone(), id(i), id(i + step), relation_type, 0.5)
                .unwrap()
                .with_validity(from, until)
                .unwrap();
            graph.add_relation(relation).await.unwrap();
        }
    }
    let stored = graph.list_relations(&ns.exact()).await.unwrap();
    assert_eq!(stored.len(), 3 * count);
    assert!(
        stored
            .iter()
            .any(|relation| relation.valid_until == Some(year(2021))),
        "validity is stored"
    );
    let reference = DefaultTraversal(graph.clone());
    let chains: Vec<Vec<String>> = [vec!["a"], vec!["a", "b"], vec!["b", "a", "a"]]
        .iter()
        .map(|chain| chain.iter().map(|t| (*t).to_owned()).collect())
        .collect();
    for start in 0..count {
        let start = id(start);
        for depth in [1, 2, 4] {
            let got = graph.get_related(&ns, &start, depth).await.unwrap();
            let want = reference.get_related(&ns, &start, depth).await.unwrap();
            assert_eq!(got, want, "get_related from {start}, depth {depth}");
            for scored in &got {
                assert!(
                    scored
                        .path
                        .iter()
                        .all(|relation| relation.is_current_at(chrono::Utc::now())),
                    "only current relations are followed"
                );
            }
        }
        for chain in &chains {
            let got = graph.multi_hop(&ns, &start, chain).await.unwrap();
            let want = reference.multi_hop(&ns, &start, chain).await.unwrap();
            assert_eq!(got, want, "multi_hop from {start} along {chain:?}");
        }
        for goal in 0..count {
            let goal = id(goal);
            let got = graph.shortest_path(&ns, &start, &goal).await.unwrap();
            let want = reference.shortest_path(&ns, &start, &goal).await.unwrap();
            assert_eq!(got, want, "shortest_path {start} -> {goal}");
        }
    }
}
