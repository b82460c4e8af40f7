//! Conformance checks for reading the graph a page at a time
//! ([`KnowledgeGraph::list_entities_after`], [`KnowledgeGraph::list_relations_after`]).

use super::{child, entity, must, relation};
use crate::{EntityPosition, GraphEntity, GraphRelation, KnowledgeGraph, Namespace, Scope};

fn entity_keys(entities: &[GraphEntity]) -> Vec<(String, String)> {
    entities
        .iter()
        .map(|e| (e.namespace.to_string(), e.id.clone()))
        .collect()
}

fn relation_keys(relations: &[GraphRelation]) -> Vec<String> {
    relations
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r.namespace, r.source_id, r.relation_type, r.target_id
            )
        })
        .collect()
}

async fn entity_pages(graph: &dyn KnowledgeGraph, scope: &Scope, size: usize) -> Vec<GraphEntity> {
    let mut all: Vec<GraphEntity> = Vec::new();
    loop {
        let after = all.last().map(EntityPosition::of);
        let page = must(
            graph.list_entities_after(scope, after.as_ref(), size),
            "list_entities_after",
        )
        .await;
        assert!(
            page.len() <= size,
            "a page of entities holds at most its limit"
        );
        let full = page.len() == size;
        all.extend(page);
        if !full || all.len() > 1_000 {
            return all;
        }
    }
}

async fn relation_pages(
    graph: &dyn KnowledgeGraph,
    scope: &Scope,
    size: usize,
) -> Vec<GraphRelation> {
    let mut all: Vec<GraphRelation> = Vec::new();
    loop {
        let after = all.last().map(crate::RelationPosition::of);
        let page = must(
            graph.list_relations_after(scope, after.as_ref(), size),
            "list_relations_after",
        )
        .await;
        assert!(
            page.len() <= size,
            "a page of relations holds at most its limit"
        );
        let full = page.len() == size;
        all.extend(page);
        if !full || all.len() > 1_000 {
            return all;
        }
    }
}

/// Pages of every size give the whole listing in its order, across namespaces sharing ids,
/// and survive entities added and removed between them.
pub(super) async fn pages(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    let a = child(ns, "a");
    let b = child(ns, "b");
    for space in [&a, &b] {
        for id in ["ana", "bob", "cy", "dee"] {
            must(
                graph.add_entity(entity(space, id, id, "person", &[])),
                "add_entity",
            )
            .await;
        }
        for (from, to, kind) in [
            ("ana", "bob", "knows"),
            ("ana", "bob", "hired"),
            ("ana", "cy", "knows"),
            ("bob", "ana", "knows"),
            ("cy", "dee", "mentors"),
        ] {
            must(
                graph.add_relation(relation(space, from, to, kind, 0.5)),
                "add_relation",
            )
            .await;
        }
    }
    let scope = ns.subtree();
    let whole = must(graph.list_entities(&scope), "list_entities").await;
    let whole_relations = must(graph.list_relations(&scope), "list_relations").await;
    assert_eq!(whole.len(), 8);
    assert_eq!(whole_relations.len(), 10);
    // The order itself: namespace, then id; namespace, then source, type and target.
    let mut ordered = entity_keys(&whole);
    ordered.sort();
    assert_eq!(entity_keys(&whole), ordered, "entities in id order");
    let order = |r: &GraphRelation| {
        (
            r.namespace.to_string(),
            r.source_id.clone(),
            r.relation_type.clone(),
            r.target_id.clone(),
        )
    };
    let mut ordered: Vec<GraphRelation> = whole_relations.clone();
    ordered.sort_by_key(order);
    assert_eq!(
        relation_keys(&whole_relations),
        relation_keys(&ordered),
        "relations in source, type, target order"
    );
    for size in [1, 2, 3, 5, 100] {
        assert_eq!(
            entity_keys(&entity_pages(graph, &scope, size).await),
            entity_keys(&whole),
            "pages of {size} entities give list_entities in its order"
        );
        assert_eq!(
            relation_keys(&relation_pages(graph, &scope, size).await),
            relation_keys(&whole_relations),
            "pages of {size} relations give list_relations in its order"
        );
    }
    // One namespace exactly: the position within it, before it and after it.
    let exact = a.exact();
    let whole_a = must(graph.list_entities(&exact), "list_entities").await;
    let whole_a_relations = must(graph.list_relations(&exact), "list_relations").await;
    for size in [1, 3] {
        assert_eq!(
            entity_keys(&entity_pages(graph, &exact, size).await),
            entity_keys(&whole_a),
            "pages of {size} entities of one namespace"
        );
        assert_eq!(
            relation_keys(&relation_pages(graph, &exact, size).await),
            relation_keys(&whole_a_relations),
            "pages of {size} relations of one namespace"
        );
    }
    let in_b = crate::RelationPosition::new(b.clone(), "ana", "knows", "bob")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        must(
            graph.list_relations_after(&exact, Some(&in_b), 10),
            "list_relations_after"
        )
        .await
        .is_empty(),
        "nothing of a namespace comes after a position in a later one"
    );
    let in_parent = crate::RelationPosition::new(ns.clone(), "zed", "knows", "zed")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        relation_keys(
            &must(
                graph.list_relations_after(&exact, Some(&in_parent), 10),
                "list_relations_after"
            )
            .await
        ),
        relation_keys(&whole_a_relations),
        "all of a namespace comes after a position in an earlier one"
    );
    assert!(
        must(graph.list_entities_after(&scope, None, 0), "a page of none")
            .await
            .is_empty()
    );
    // One namespace, and a position no entity holds.
    let only_b = must(
        graph.list_entities_after(
            &b.exact(),
            Some(&EntityPosition::new(a.clone(), "zzz").unwrap_or_else(|e| panic!("{e}"))),
            10,
        ),
        "list_entities_after",
    )
    .await;
    assert_eq!(
        only_b.len(),
        4,
        "a position in an earlier namespace lists all of b"
    );
    let after_bo = must(
        graph.list_entities_after(
            &scope,
            Some(&EntityPosition::new(a.clone(), "bo").unwrap_or_else(|e| panic!("{e}"))),
            3,
        ),
        "list_entities_after",
    )
    .await;
    assert_eq!(
        entity_keys(&after_bo),
        entity_keys(&whole[1..4]),
        "a position no entity holds splits the listing where it would stand"
    );
    // Writes between pages: a removed entity is not listed and takes no other with it; an
    // added one after the position is listed.
    let first = must(graph.list_entities_after(&scope, None, 2), "first page").await;
    let Some(last) = first.last() else {
        panic!("conformance: the first page of entities is empty");
    };
    must(graph.remove_entity(&a, "ana"), "remove_entity").await;
    must(graph.remove_entity(&a, "cy"), "remove_entity").await;
    must(
        graph.add_entity(entity(&a, "eve", "eve", "person", &[])),
        "add_entity",
    )
    .await;
    let rest = must(
        graph.list_entities_after(&scope, Some(&EntityPosition::of(last)), 100),
        "the rest",
    )
    .await;
    let ids: Vec<(String, String)> = entity_keys(&rest);
    let expected: Vec<(String, String)> = [
        (&a, "dee"),
        (&a, "eve"),
        (&b, "ana"),
        (&b, "bob"),
        (&b, "cy"),
        (&b, "dee"),
    ]
    .iter()
    .map(|(space, id)| (space.to_string(), (*id).to_owned()))
    .collect();
    assert_eq!(
        ids, expected,
        "the rest of a listing after writes between pages"
    );
}

/// A hub's relations, many of one source and of interleaved types, paged across them, and
/// after a position between two of them that no relation holds.
pub(super) async fn hub_pages(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    let hub = ns.clone();
    for id in [
        "hub", "t00", "t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09",
    ] {
        must(
            graph.add_entity(entity(&hub, id, id, "thing", &[])),
            "add_entity",
        )
        .await;
    }
    for target in 0..10 {
        for kind in ["alpha", "beta", "gamma"] {
            must(
                graph.add_relation(relation(&hub, "hub", &format!("t{target:02}"), kind, 0.5)),
                "add_relation",
            )
            .await;
        }
    }
    let hub_scope = hub.exact();
    let whole_hub = must(graph.list_relations(&hub_scope), "list_relations").await;
    assert_eq!(whole_hub.len(), 30);
    for size in [1, 4, 7, 29] {
        assert_eq!(
            relation_keys(&relation_pages(graph, &hub_scope, size).await),
            relation_keys(&whole_hub),
            "pages of {size} relations of a hub"
        );
    }
    let between = crate::RelationPosition::new(hub.clone(), "hub", "beta", "t04x")
        .unwrap_or_else(|e| panic!("{e}"));
    let rest = must(
        graph.list_relations_after(&hub_scope, Some(&between), 2),
        "list_relations_after",
    )
    .await;
    assert_eq!(
        relation_keys(&rest),
        relation_keys(&whole_hub[15..17]),
        "after a position no relation holds"
    );

    // The first relations of a hub, outgoing then incoming (a loop once).
    for (source, kind) in [("t03", "alpha"), ("t01", "zeta"), ("hub", "omega")] {
        let target = "hub";
        must(
            graph.add_relation(relation(&hub, source, target, kind, 0.5)),
            "add_relation",
        )
        .await;
    }
    let all = must(graph.relations_of(&hub, "hub"), "relations_of").await;
    assert_eq!(all.len(), 33, "30 out, a loop, 2 in");
    for limit in [0, 1, 5, 30, 31, 32, 33, 34, usize::MAX] {
        let first = must(
            graph.relations_of_at_most(&hub, "hub", limit),
            "relations_of_at_most",
        )
        .await;
        assert_eq!(
            relation_keys(&first),
            relation_keys(&all[..limit.min(all.len())]),
            "the first {limit} relations of a hub"
        );
    }
    assert!(
        must(
            graph.relations_of_at_most(&hub, "nobody", 10),
            "relations_of_at_most"
        )
        .await
        .is_empty()
    );
}
