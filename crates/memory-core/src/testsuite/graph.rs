//! Conformance checks for [`KnowledgeGraph`].

use chrono::{DateTime, Utc};

use super::child;
use super::knowledge::{at, unstorable};
use crate::{AccessEvent, GraphEntity, GraphRelation, KnowledgeGraph, MemoryError, Namespace};

mod paging;
mod queries;

use self::queries::{matching_and_tags, tag_prefixes, traversal};

fn entity(ns: &Namespace, id: &str, name: &str, kind: &str, tags: &[&str]) -> GraphEntity {
    GraphEntity::new(ns.clone(), id, name, kind)
        .and_then(|e| e.with_tags(tags.iter().copied()))
        .unwrap_or_else(|error| panic!("conformance: building entity {id}: {error}"))
}

fn relation(ns: &Namespace, from: &str, to: &str, kind: &str, weight: f32) -> GraphRelation {
    GraphRelation::new(ns.clone(), from, to, kind, weight)
        .unwrap_or_else(|error| panic!("conformance: building relation {from}->{to}: {error}"))
}

async fn must<T>(future: impl Future<Output = crate::Result<T>>, what: &str) -> T {
    match future.await {
        Ok(value) => value,
        Err(error) => panic!("conformance: {what} failed: {error}"),
    }
}

fn names(entities: &[std::sync::Arc<GraphEntity>]) -> Vec<&str> {
    entities.iter().map(|e| e.id.as_str()).collect()
}

/// Runs every [`KnowledgeGraph`] check under `base`.
pub async fn run_knowledge_graph(graph: &dyn KnowledgeGraph, base: &Namespace) {
    entities_and_relations(graph, &child(base, "crud")).await;
    matching_and_tags(graph, &child(base, "tags")).await;
    tag_prefixes(graph, &child(base, "tag-prefixes")).await;
    traversal(graph, &child(base, "walk")).await;
    isolation_and_clear(graph, &child(base, "isolation")).await;
    access_statistics(graph, &child(base, "access")).await;
    attributes(graph, &child(base, "attributes")).await;
    paging::pages(graph, &child(base, "pages")).await;
    paging::hub_pages(graph, &child(base, "hub-pages")).await;
    depth_bound(graph, &child(base, "chain")).await;
    multi_hop_bound(graph, &child(base, "fan")).await;
    super::facts::run_graph_facts(graph, &child(base, "facts")).await;
}

/// On a chain longer than [`MAX_TRAVERSAL_DEPTH`](crate::MAX_TRAVERSAL_DEPTH), a walk of
/// any depth stops at the bound, a path past it is not found, and one at it is.
async fn depth_bound(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    let bound = crate::MAX_TRAVERSAL_DEPTH;
    let id = |n: usize| format!("c{n:03}");
    for n in 0..bound + 8 {
        must(
            graph.add_entity(entity(ns, &id(n), &format!("Link {n}"), "link", &[])),
            "add_entity",
        )
        .await;
        if n > 0 {
            must(
                graph.add_relation(relation(ns, &id(n - 1), &id(n), "next", 1.0)),
                "add_relation",
            )
            .await;
        }
    }
    let reached = must(graph.get_related(ns, &id(0), bound * 4), "get_related").await;
    assert_eq!(
        reached.len(),
        bound,
        "get_related clamps its depth to MAX_TRAVERSAL_DEPTH"
    );
    assert_eq!(
        reached.iter().map(|scored| scored.hops).max(),
        Some(bound),
        "the farthest entity reached is MAX_TRAVERSAL_DEPTH hops away"
    );
    let at_bound = must(graph.shortest_path(ns, &id(0), &id(bound)), "shortest_path").await;
    assert_eq!(
        at_bound.map(|path| path.len()),
        Some(bound),
        "a path of MAX_TRAVERSAL_DEPTH hops is found"
    );
    assert_eq!(
        must(
            graph.shortest_path(ns, &id(0), &id(bound + 1)),
            "shortest_path"
        )
        .await,
        None,
        "a path longer than MAX_TRAVERSAL_DEPTH is not"
    );
}

/// `multi_hop` keeps at most [`MAX_TRAVERSAL_VISITED`](crate::MAX_TRAVERSAL_VISITED) paths
/// per hop, stops expanding entities once a hop holds them, and reaches an entity only with
/// a path. From `start`, 25 entities by `a`, each to 20 by `b` (25 paths to each), each to 24
/// by `c`: 600 paths per entity of the second level, so the bound falls in the 17th
/// (`m2-16`), after its relations to the first 16 ends. `m2-16`'s relation to `n-late` comes
/// after the bound, and `m2-17`, which holds the only relation to `o-late`, is past it.
async fn multi_hop_bound(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    let bound = crate::MAX_TRAVERSAL_VISITED;
    let level = |name: &str, count: usize| -> Vec<String> {
        (0..count).map(|i| format!("{name}-{i:02}")).collect()
    };
    let (first, second, ends) = (level("m1", 25), level("m2", 20), level("m3", 24));
    let late = ["n-late", "o-late"];
    for id in ["start"]
        .iter()
        .copied()
        .chain(late)
        .chain(first.iter().chain(&second).chain(&ends).map(String::as_str))
    {
        must(
            graph.add_entity(entity(ns, id, id, "node", &[])),
            "add_entity",
        )
        .await;
    }
    let mut relations: Vec<(&str, &str, &str)> = Vec::new();
    for m1 in &first {
        relations.push(("start", m1, "a"));
        relations.extend(second.iter().map(|m2| (m1.as_str(), m2.as_str(), "b")));
    }
    for m2 in &second {
        relations.extend(ends.iter().map(|m3| (m2.as_str(), m3.as_str(), "c")));
    }
    relations.push(("m2-16", "n-late", "c"));
    relations.push(("m2-17", "o-late", "c"));
    for (from, to, kind) in relations {
        must(
            graph.add_relation(relation(ns, from, to, kind, 0.5)),
            "add_relation",
        )
        .await;
    }
    let chain: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    let found = must(graph.multi_hop(ns, "start", &chain), "multi_hop").await;
    assert_eq!(
        found.results, ends,
        "the ends of the paths kept, and no entity reached past the bound"
    );
    assert_eq!(found.paths.len(), bound, "the paths stop at the bound");
    for result in &found.results {
        assert!(
            found.paths.iter().any(|path| path[2].target_id == *result),
            "a result without a path: {result}"
        );
    }
    let through = |end: &str| {
        found
            .paths
            .iter()
            .filter(|path| path[2].target_id == end)
            .count()
    };
    assert_eq!(
        (
            through("m3-00"),
            through("m3-15"),
            through("m3-16"),
            through("m3-23")
        ),
        (17 * 25, 17 * 25, 16 * 25, 16 * 25),
        "the first 16 second-level entities' paths, then the 17th's up to the bound"
    );
    assert!(
        found
            .paths
            .iter()
            .all(|path| path[1].target_id.as_str() <= "m2-16"),
        "no entity past the bound is expanded"
    );
}

/// An entity's attributes are stored and read back exactly, by every read (get, list,
/// traversal), replaced by an update, and refused by name when they cannot be stored.
async fn attributes(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    let attributes = serde_json::json!({
        "born": 1990,
        "height": 1.72,
        "city": "Lisbon",
        "languages": ["pt", "en"],
        "employer": {"name": "Acme", "since": "2019-04"},
        "retired": false,
        "nickname": null
    });
    let ana = entity(ns, "ana", "Ana", "person", &[])
        .with_attributes(attributes.clone())
        .unwrap_or_else(|error| panic!("conformance: attributes: {error}"));
    must(graph.add_entity(ana.clone()), "add_entity").await;
    must(
        graph.add_entity(entity(ns, "acme", "Acme", "company", &[])),
        "add_entity",
    )
    .await;
    let employs = relation(ns, "acme", "ana", "employs", 1.0)
        .with_attributes(serde_json::json!({"since": 2019, "role": "lead"}))
        .unwrap_or_else(|error| panic!("conformance: attributes: {error}"));
    must(graph.add_relation(employs.clone()), "add_relation").await;
    let read = must(graph.get_entity(ns, "ana"), "get_entity").await;
    assert_eq!(
        read.as_ref(),
        Some(&ana),
        "get_entity reads the attributes back"
    );
    let listed = must(graph.list_entities(&ns.exact()), "list_entities").await;
    let listed = listed.iter().find(|e| e.id == "ana");
    assert_eq!(
        listed.map(|e| &e.attributes),
        Some(&ana.attributes),
        "list_entities"
    );
    let related = must(graph.get_related(ns, "acme", 1), "get_related").await;
    assert_eq!(
        related.first().map(|found| &found.entity.attributes),
        Some(&ana.attributes),
        "a traversal reads the attributes of what it reaches"
    );
    // The agent's view of the neighbourhood shows both.
    let context = must(
        crate::KnowledgeGraphExt::context_for_agent(graph, ns, "acme", 1, 2_000),
        "context_for_agent",
    )
    .await;
    for line in [
        "[company] Acme",
        "  -- employs (role: lead; since: 2019) --> Ana",
        "[person] Ana (born: 1990; city: Lisbon; employer: {\"name\":\"Acme\",\"since\":\"2019-04\"}; height: 1.72; languages: [\"pt\",\"en\"]; nickname: null; retired: false)",
    ] {
        assert!(context.lines().any(|l| l == line), "{line:?} in {context}");
    }
    // A relation's attributes, by every read of relations.
    assert_eq!(
        related
            .first()
            .and_then(|found| found.path.first())
            .map(|r| &r.attributes),
        Some(&employs.attributes),
        "a traversal's path"
    );
    for (read, label) in [
        (
            must(graph.relations_of(ns, "ana"), "relations_of").await,
            "relations_of",
        ),
        (
            must(graph.list_relations(&ns.exact()), "list_relations").await,
            "list_relations",
        ),
        (
            must(
                graph.multi_hop(ns, "acme", &["employs".to_owned()]),
                "multi_hop",
            )
            .await
            .paths
            .concat(),
            "multi_hop",
        ),
        (
            must(graph.shortest_path(ns, "acme", "ana"), "shortest_path")
                .await
                .unwrap_or_default(),
            "shortest_path",
        ),
    ] {
        assert_eq!(read, vec![employs.clone()], "{label}");
    }
    let renewed = relation(ns, "acme", "ana", "employs", 0.5)
        .with_attributes(serde_json::json!({"since": 2024}))
        .unwrap_or_else(|error| panic!("conformance: attributes: {error}"));
    must(graph.add_relation(renewed.clone()), "add_relation again").await;
    assert_eq!(
        must(graph.relations_of(ns, "acme"), "relations_of").await,
        vec![renewed.clone()],
        "adding a relation again replaces its weight and attributes"
    );
    // Stated again without attributes by a writer that does not know them, it keeps them.
    let stated = relation(ns, "acme", "ana", "employs", 0.7);
    must(
        crate::KnowledgeGraphExt::add_relation_keeping_attributes(graph, stated),
        "add_relation_keeping_attributes",
    )
    .await;
    let kept = must(graph.relations_of(ns, "acme"), "relations_of").await;
    assert_eq!(
        kept.iter()
            .map(|r| (r.weight, r.attributes.clone()))
            .collect::<Vec<_>>(),
        vec![(0.7, renewed.attributes.clone())],
        "the weight changes, the attributes stay"
    );
    let mut nul_relation = relation(ns, "ana", "acme", "knows", 1.0);
    nul_relation
        .attributes
        .insert("note".into(), serde_json::json!("a\u{0}b"));
    assert!(
        matches!(
            graph.add_relation(nul_relation).await,
            Err(MemoryError::InvalidInput { ref field, .. }) if field == "attributes"
        ),
        "a relation's NUL character cannot be stored"
    );
    assert!(
        must(graph.get_entity(ns, "acme"), "get_entity")
            .await
            .is_some_and(|e| e.attributes.is_empty()),
        "an entity without attributes has none"
    );

    let moved = ana
        .clone()
        .with_attributes(serde_json::json!({"city": "Porto"}))
        .unwrap_or_else(|error| panic!("conformance: attributes: {error}"));
    must(graph.update_entity(moved.clone()), "update_entity").await;
    assert_eq!(
        must(graph.get_entity(ns, "ana"), "get_entity")
            .await
            .map(|e| e.attributes),
        Some(moved.attributes),
        "an update replaces the attributes"
    );
    let mut cleared = ana.clone();
    cleared.attributes.clear();
    must(graph.update_entity(cleared), "update_entity").await;
    assert!(
        must(graph.get_entity(ns, "ana"), "get_entity")
            .await
            .is_some_and(|e| e.attributes.is_empty()),
        "an update without attributes clears them"
    );

    assert!(matches!(
        ana.clone().with_attributes(serde_json::json!(["city"])),
        Err(MemoryError::InvalidInput { ref field, .. }) if field == "attributes"
    ));
    let mut nul = entity(ns, "nul", "Nul", "person", &[]);
    nul.attributes
        .insert("note".into(), serde_json::json!("a\u{0}b"));
    assert!(
        matches!(
            graph.add_entity(nul).await,
            Err(MemoryError::InvalidInput { ref field, .. }) if field == "attributes"
        ),
        "a NUL character cannot be stored"
    );
    assert!(
        must(graph.get_entity(ns, "nul"), "get_entity")
            .await
            .is_none(),
        "a refused entity leaves nothing behind"
    );
}

type Stats = (Option<DateTime<Utc>>, u64, Option<DateTime<Utc>>);

async fn stats(graph: &dyn KnowledgeGraph, ns: &Namespace, id: &str) -> Stats {
    let entity = must(graph.get_entity(ns, id), "get_entity")
        .await
        .unwrap_or_else(|| panic!("conformance: entity {id} vanished"));
    (entity.created_at, entity.access_count, entity.last_accessed)
}

async fn access_statistics(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    let other = child(ns, "other");
    // Creation time and statistics given to add_entity are stored and read back exactly.
    let mut used = entity(ns, "used", "Used", "thing", &["kept"]).with_created_at(Some(at(1)));
    used.access_count = 5;
    used.last_accessed = Some(at(10));
    must(graph.add_entity(used.clone()), "add_entity").await;
    assert_eq!(
        must(graph.get_entity(ns, "used"), "get_entity").await,
        Some(used.clone()),
        "add_entity stores created_at, access_count and last_accessed"
    );
    let unknown = entity(ns, "unknown", "Unknown age", "thing", &[]).with_created_at(None);
    must(graph.add_entity(unknown.clone()), "add_entity").await;
    assert_eq!(
        must(graph.get_entity(ns, "unknown"), "get_entity").await,
        Some(unknown.clone()),
        "an unknown creation time reads back as unknown"
    );
    assert_eq!(
        must(graph.list_entities(&ns.exact()), "list_entities").await,
        vec![unknown.clone(), used.clone()],
        "list_entities carries the statistics"
    );
    assert_eq!(
        must(
            graph.find_by_keywords(&ns.exact(), &["used".into()]),
            "find_by_keywords"
        )
        .await,
        vec![std::sync::Arc::new(used.clone())],
        "find_by_keywords carries the statistics"
    );
    must(
        graph.add_relation(relation(ns, "used", "unknown", "near", 0.5)),
        "add_relation",
    )
    .await;
    let related = must(graph.get_related(ns, "unknown", 1), "get_related").await;
    assert_eq!(
        related.first().map(|scored| &*scored.entity),
        Some(&used),
        "traversals carry the statistics"
    );

    let fresh = entity(ns, "fresh", "Fresh", "thing", &[]).with_created_at(Some(at(2)));
    must(graph.add_entity(fresh.clone()), "add_entity").await;
    must(
        graph.add_entity(entity(&other, "fresh", "Other fresh", "thing", &[])),
        "add_entity",
    )
    .await;
    must(graph.record_accesses(&[]), "record_accesses of nothing").await;
    must(
        graph.record_accesses(&[
            AccessEvent::new(ns.clone(), "fresh", at(100)),
            AccessEvent::new(ns.clone(), "ghost", at(100)),
            AccessEvent::new(ns.clone(), "fresh", at(300)),
            AccessEvent::new(other.clone(), "fresh", at(400)),
            AccessEvent::new(ns.clone(), "fresh", at(200)),
            AccessEvent::new(ns.clone(), "used", at(5)),
        ]),
        "record_accesses",
    )
    .await;
    assert_eq!(
        stats(graph, ns, "fresh").await,
        (Some(at(2)), 3, Some(at(300))),
        "accesses add up and last_accessed is the latest"
    );
    assert_eq!(
        stats(graph, ns, "used").await,
        (Some(at(1)), 6, Some(at(10))),
        "an earlier access never moves last_accessed back"
    );
    let (_, count, last) = stats(graph, &other, "fresh").await;
    assert_eq!(
        (count, last),
        (1, Some(at(400))),
        "accesses stay in their namespace"
    );
    assert_eq!(
        must(graph.get_entity(ns, "ghost"), "get_entity").await,
        None,
        "an access to a missing entity is ignored and creates nothing"
    );

    // update_entity and set_entity_tags keep what the graph counted and when it was made.
    let mut changed = fresh.clone().with_created_at(Some(at(50)));
    changed.description = "edited".into();
    changed.access_count = 0;
    changed.last_accessed = None;
    must(graph.update_entity(changed), "update_entity").await;
    let stored = must(graph.get_entity(ns, "fresh"), "get_entity")
        .await
        .unwrap_or_else(|| panic!("conformance: entity fresh vanished"));
    assert_eq!(stored.description, "edited");
    assert_eq!(
        (stored.created_at, stored.access_count, stored.last_accessed),
        (Some(at(2)), 3, Some(at(300))),
        "update_entity keeps created_at, access_count and last_accessed"
    );
    must(
        graph.set_entity_tags(ns, "fresh", vec!["tagged".into()]),
        "set_entity_tags",
    )
    .await;
    assert_eq!(
        stats(graph, ns, "fresh").await,
        (Some(at(2)), 3, Some(at(300))),
        "set_entity_tags keeps the statistics"
    );
    // An unknown creation time is learnt from an update that knows it.
    must(
        graph.update_entity(unknown.clone().with_created_at(Some(at(7)))),
        "update_entity",
    )
    .await;
    assert_eq!(
        stats(graph, ns, "unknown").await,
        (Some(at(7)), 0, None),
        "update_entity fills an unknown created_at"
    );

    // A batch holding a time no backend stores is refused whole.
    let refused = graph
        .record_accesses(&[
            AccessEvent::new(ns.clone(), "fresh", at(500)),
            AccessEvent::new(ns.clone(), "fresh", unstorable()),
        ])
        .await;
    assert!(
        matches!(refused, Err(MemoryError::InvalidInput { ref field, .. }) if field == "at"),
        "an unstorable access time is InvalidInput naming at: {refused:?}"
    );
    assert_eq!(
        stats(graph, ns, "fresh").await,
        (Some(at(2)), 3, Some(at(300))),
        "a refused batch changes nothing"
    );
    // A removed entity takes its statistics with it.
    assert!(must(graph.remove_entity(ns, "fresh"), "remove_entity").await);
    must(
        graph.record_accesses(&[AccessEvent::new(ns.clone(), "fresh", at(600))]),
        "record_accesses",
    )
    .await;
    assert_eq!(
        must(graph.get_entity(ns, "fresh"), "get_entity").await,
        None
    );
    must(graph.clear(&ns.subtree()), "clear").await;
}

async fn entities_and_relations(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    let a = entity(ns, "a", "Alice", "person", &["team"]);
    must(graph.add_entity(a.clone()), "add_entity").await;
    assert_eq!(
        must(graph.get_entity(ns, "a"), "get_entity").await,
        Some(a.clone())
    );
    assert!(
        matches!(
            graph.add_entity(a.clone()).await,
            Err(MemoryError::AlreadyExists(_))
        ),
        "duplicate entity"
    );
    must(
        graph.add_entity(entity(ns, "b", "Bob", "person", &["team"])),
        "add_entity",
    )
    .await;
    assert!(
        matches!(
            graph
                .add_relation(relation(ns, "a", "ghost", "knows", 0.5))
                .await,
            Err(MemoryError::NotFound { .. })
        ),
        "a relation to a missing entity is a graph error"
    );
    let mut bad = relation(ns, "a", "b", "knows", 0.5);
    bad.weight = f32::NAN;
    assert!(
        matches!(
            graph.add_relation(bad).await,
            Err(MemoryError::InvalidInput { .. })
        ),
        "NaN weight"
    );
    must(
        graph.add_relation(relation(ns, "a", "b", "knows", 0.5)),
        "add_relation",
    )
    .await;
    must(
        graph.add_relation(relation(ns, "a", "b", "knows", 0.8)),
        "add_relation again",
    )
    .await;
    let relations = must(graph.relations_of(ns, "a"), "relations_of").await;
    assert_eq!(
        relations.len(),
        1,
        "same source, target and type is one relation"
    );
    assert_eq!(relations[0].weight, 0.8, "re-adding updates the weight");
    assert_eq!(
        must(graph.relations_of(ns, "b"), "relations_of")
            .await
            .len(),
        1,
        "incoming relations are listed"
    );
    assert_eq!(must(graph.degree(ns, "b"), "degree").await, 1);

    let mut renamed = a.clone();
    renamed.name = "Alicia".into();
    must(graph.update_entity(renamed), "update_entity").await;
    assert_eq!(
        must(graph.relations_of(ns, "a"), "relations_of")
            .await
            .len(),
        1,
        "update keeps relations"
    );
    let ghost = entity(ns, "ghost", "G", "x", &[]);
    assert!(matches!(
        graph.update_entity(ghost).await,
        Err(MemoryError::NotFound { .. })
    ));

    assert!(
        must(
            graph.remove_relation(ns, "a", "b", "knows"),
            "remove_relation"
        )
        .await
    );
    assert!(
        !must(
            graph.remove_relation(ns, "a", "b", "knows"),
            "remove_relation"
        )
        .await
    );
    must(
        graph.add_relation(relation(ns, "b", "a", "likes", 1.0)),
        "add_relation",
    )
    .await;
    assert!(must(graph.remove_entity(ns, "a"), "remove_entity").await);
    assert!(!must(graph.remove_entity(ns, "a"), "remove_entity").await);
    assert!(
        must(graph.relations_of(ns, "b"), "relations_of")
            .await
            .is_empty(),
        "removal cascades to relations"
    );
    assert_eq!(
        must(graph.entity_count_by_tag(&ns.exact(), "team"), "count").await,
        1,
        "removal cascades to tags"
    );
    assert_eq!(
        must(graph.list_relations(&ns.exact()), "list_relations")
            .await
            .len(),
        0
    );
}

async fn isolation_and_clear(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    let a = child(ns, "a");
    let b = child(ns, "b");
    must(
        graph.add_entity(entity(&a, "x", "Xavier", "person", &["secret"])),
        "add",
    )
    .await;
    must(
        graph.add_entity(entity(&b, "x", "Xena", "person", &["secret"])),
        "add",
    )
    .await;
    must(
        graph.add_entity(entity(&b, "y", "Yann", "person", &[])),
        "add",
    )
    .await;
    assert!(
        matches!(
            graph
                .add_relation(relation(&a, "x", "y", "knows", 1.0))
                .await,
            Err(MemoryError::NotFound { .. })
        ),
        "relations never cross namespaces"
    );
    must(
        graph.add_relation(relation(&b, "x", "y", "knows", 1.0)),
        "add_relation",
    )
    .await;
    assert!(
        must(graph.get_related(&a, "x", 3), "get_related")
            .await
            .is_empty(),
        "traversal stays in its namespace"
    );
    assert_eq!(
        names(&must(graph.find_by_keywords(&a.exact(), &["x".into()]), "find").await),
        ["x"]
    );
    let found = must(
        graph.find_by_keywords(&a.exact(), &["secret".into()]),
        "find",
    )
    .await;
    assert!(
        found.iter().all(|e| e.namespace == a),
        "find stays in scope"
    );
    assert_eq!(
        must(graph.entity_count_by_tag(&a.exact(), "secret"), "count").await,
        1
    );
    assert_eq!(
        must(graph.entity_count_by_tag(&ns.subtree(), "secret"), "count").await,
        2
    );
    assert_eq!(
        must(graph.list_namespaces(&ns.subtree()), "list_namespaces").await,
        vec![a.clone(), b.clone()]
    );
    assert_eq!(
        must(graph.list_entities(&b.exact()), "list_entities")
            .await
            .len(),
        2
    );
    assert_eq!(must(graph.clear(&b.subtree()), "clear").await, 2);
    assert!(
        must(graph.list_relations(&b.exact()), "list_relations")
            .await
            .is_empty(),
        "clear removes relations"
    );
    assert_eq!(
        must(graph.entity_count_by_tag(&ns.subtree(), "secret"), "count").await,
        1
    );
    assert!(
        must(graph.get_entity(&a, "x"), "get").await.is_some(),
        "clear spares other namespaces"
    );
    assert_eq!(must(graph.clear(&ns.subtree()), "clear").await, 1);
}
