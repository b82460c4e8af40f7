//! Dangling relations, removal cascades, updates, clearing and namespaces.

use memory_core::{KnowledgeGraph, MemoryError, Scope};
use memory_graph::PetGraph;

use crate::{entity, ids, ns, relation, seeded};

#[tokio::test]
async fn relations_to_missing_entities_are_graph_errors() {
    let ns = ns("remove/dangling");
    let graph = seeded(&ns).await;
    for (from, to) in [("zhang", "ghost"), ("ghost", "zhang"), ("ghost", "ghost2")] {
        let result = graph
            .add_relation(relation(&ns, from, to, "knows", 0.5))
            .await;
        assert!(
            matches!(&result, Err(MemoryError::NotFound { id, .. }) if id == "ghost"),
            "{from} -> {to}: {result:?}"
        );
    }
    // The namespace of the relation decides: an entity elsewhere does not count.
    let other = crate::ns("remove/dangling-other");
    let result = graph
        .add_relation(relation(&other, "zhang", "li", "knows", 0.5))
        .await;
    assert!(matches!(result, Err(MemoryError::NotFound { .. })));
    // Invalid relations are input errors, checked before the endpoints.
    let mut bad = relation(&ns, "zhang", "ghost", "knows", 0.5);
    bad.weight = 1.5;
    assert!(
        matches!(graph.add_relation(bad).await, Err(MemoryError::InvalidInput { field: m, .. }) if m == "weight")
    );
    let mut bad = relation(&ns, "zhang", "li", "knows", 0.5);
    bad.relation_type = "  ".into();
    assert!(matches!(
        graph.add_relation(bad).await,
        Err(MemoryError::InvalidInput { .. })
    ));
    assert_eq!(graph.relation_count(&ns), 5, "nothing was added");
    assert!(
        !graph
            .remove_relation(&ns, "zhang", "ghost", "knows")
            .await
            .unwrap()
    );
    assert!(
        !graph
            .remove_relation(&other, "zhang", "li", "colleague_of")
            .await
            .unwrap()
    );
    assert!(graph.relations_of(&ns, "ghost").await.unwrap().is_empty());
    assert_eq!(graph.degree(&ns, "ghost").await.unwrap(), 0);
}

#[tokio::test]
async fn removing_an_entity_cascades_to_relations_and_indexes() {
    let ns = ns("remove/cascade");
    let graph = seeded(&ns).await;
    graph
        .set_entity_tags(&ns, "project-alpha", vec!["web".into(), "frontend".into()])
        .await
        .unwrap();
    assert!(graph.remove_entity(&ns, "project-alpha").await.unwrap());
    assert!(!graph.remove_entity(&ns, "project-alpha").await.unwrap());
    assert_eq!(graph.get_entity(&ns, "project-alpha").await.unwrap(), None);
    assert_eq!(
        graph.relation_count(&ns),
        1,
        "only zhang colleague_of li is left"
    );
    for id in ["zhang", "li", "react", "typescript"] {
        for relation in graph.relations_of(&ns, id).await.unwrap() {
            assert_ne!(relation.source_id, "project-alpha");
            assert_ne!(relation.target_id, "project-alpha");
        }
    }
    assert_eq!(graph.degree(&ns, "react").await.unwrap(), 0);
    assert_eq!(
        graph.entity_count_by_tag(&ns.exact(), "web").await.unwrap(),
        0
    );
    assert!(graph.find_tags(&ns.exact(), "").await.unwrap().is_empty());
    let found = graph
        .find_by_keywords(&ns.exact(), &["project".into()])
        .await
        .unwrap();
    assert!(found.is_empty(), "name and type indexes forget it too");
    assert!(graph.get_related(&ns, "react", 5).await.unwrap().is_empty());
    assert!(matches!(
        graph
            .multi_hop(&ns, "project-alpha", &["uses".into()])
            .await,
        Err(MemoryError::NotFound { .. })
    ));

    // Re-adding the id gives a fresh entity without the old relations.
    graph
        .add_entity(entity(
            &ns,
            "project-alpha",
            "Project Alpha",
            "project",
            &[],
        ))
        .await
        .unwrap();
    assert!(
        graph
            .relations_of(&ns, "project-alpha")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(graph.shortest_path(&ns, "li", "react").await.unwrap(), None);
}

#[tokio::test]
async fn update_keeps_relations_and_reindexes() {
    let ns = ns("remove/update");
    let graph = seeded(&ns).await;
    let mut li = graph.get_entity(&ns, "li").await.unwrap().unwrap();
    li.name = "Li Si".into();
    li.entity_type = "Engineer".into();
    li.description = "backend".into();
    graph.update_entity(li.clone()).await.unwrap();
    assert_eq!(graph.get_entity(&ns, "li").await.unwrap(), Some(li.clone()));
    assert_eq!(graph.degree(&ns, "li").await.unwrap(), 2);
    let by = |keyword: &'static str| {
        let graph = &graph;
        let ns = &ns;
        async move {
            let found = graph
                .find_by_keywords(&ns.exact(), &[keyword.to_owned()])
                .await
                .unwrap();
            found.iter().map(|e| e.id.clone()).collect::<Vec<_>>()
        }
    };
    assert_eq!(by("li s").await, ["li"]);
    assert_eq!(by("engineer").await, ["li"]);
    assert_eq!(by("person").await, ["zhang"], "the old type left the index");
    li.name = " ".into();
    assert!(matches!(
        graph.update_entity(li).await,
        Err(MemoryError::InvalidInput { .. })
    ));
    let stranger = entity(&crate::ns("remove/update-elsewhere"), "li", "Li", "x", &[]);
    assert!(matches!(
        graph.update_entity(stranger).await,
        Err(MemoryError::NotFound { .. })
    ));
}

#[tokio::test]
async fn relations_are_unique_and_removal_is_exact() {
    let ns = ns("remove/unique");
    let graph = seeded(&ns).await;
    graph
        .add_relation(relation(&ns, "zhang", "li", "colleague_of", 0.3))
        .await
        .unwrap();
    graph
        .add_relation(relation(&ns, "li", "zhang", "colleague_of", 0.7))
        .await
        .unwrap();
    graph
        .add_relation(relation(&ns, "zhang", "li", "mentors", 0.9))
        .await
        .unwrap();
    let of_zhang = graph.relations_of(&ns, "zhang").await.unwrap();
    let listed: Vec<(&str, &str, &str, f32)> = of_zhang
        .iter()
        .map(|r| {
            (
                r.source_id.as_str(),
                r.relation_type.as_str(),
                r.target_id.as_str(),
                r.weight,
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("zhang", "colleague_of", "li", 0.3),
            ("zhang", "leads", "project-alpha", 1.0),
            ("zhang", "mentors", "li", 0.9),
            ("li", "colleague_of", "zhang", 0.7),
        ],
        "outgoing first, each by type then the other end"
    );
    assert!(
        graph
            .remove_relation(&ns, "li", "zhang", "colleague_of")
            .await
            .unwrap()
    );
    assert!(
        !graph
            .remove_relation(&ns, "li", "zhang", "colleague_of")
            .await
            .unwrap()
    );
    assert!(
        !graph
            .remove_relation(&ns, "zhang", "li", "COLLEAGUE_OF")
            .await
            .unwrap()
    );
    assert_eq!(graph.degree(&ns, "zhang").await.unwrap(), 3);
    let all = graph.list_relations(&ns.exact()).await.unwrap();
    let keys: Vec<(&str, &str, &str)> = all
        .iter()
        .map(|r| {
            (
                r.source_id.as_str(),
                r.relation_type.as_str(),
                r.target_id.as_str(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(
        keys, sorted,
        "list_relations is ordered by source, type, target"
    );
    assert_eq!(keys.len(), 6);
}

#[tokio::test]
async fn clear_list_and_namespaces() {
    let root = ns("remove/clear");
    let a = root.child("a").unwrap();
    let b = root.child("b").unwrap();
    let graph = PetGraph::new();
    crate::seed_004(&graph, &a).await;
    crate::seed_004(&graph, &b).await;
    assert_eq!(
        graph.list_namespaces(&root.subtree()).await.unwrap(),
        [a.clone(), b.clone()]
    );
    let listed = graph.list_entities(&root.subtree()).await.unwrap();
    assert_eq!(listed.len(), 12);
    assert_eq!(
        ids(&listed[..6]),
        [
            "island",
            "li",
            "project-alpha",
            "react",
            "typescript",
            "zhang"
        ]
    );
    assert!(listed[..6].iter().all(|e| e.namespace == a));
    assert_eq!(graph.clear(&a.exact()).await.unwrap(), 6);
    assert_eq!(graph.clear(&a.exact()).await.unwrap(), 0);
    assert_eq!(
        graph.list_namespaces(&root.subtree()).await.unwrap(),
        std::slice::from_ref(&b)
    );
    assert!(graph.list_relations(&a.exact()).await.unwrap().is_empty());
    assert_eq!(graph.list_relations(&b.exact()).await.unwrap().len(), 5);
    // A cleared namespace can be used again.
    graph
        .add_entity(entity(&a, "x", "X", "x", &[]))
        .await
        .unwrap();
    assert_eq!(graph.entity_count(&a), 1);
    // Removing the last entity empties the namespace.
    assert!(graph.remove_entity(&a, "x").await.unwrap());
    assert_eq!(
        graph.list_namespaces(&root.subtree()).await.unwrap(),
        std::slice::from_ref(&b)
    );
    graph
        .add_entity(entity(&a, "y", "Y", "x", &[]))
        .await
        .unwrap();
    assert_eq!(graph.entity_count(&a), 1);
    assert_eq!(graph.clear(&Scope::all()).await.unwrap(), 7);
    assert!(
        graph
            .list_namespaces(&Scope::all())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(format!("{graph:?}").contains("PetGraph"));
}

#[tokio::test]
async fn invalid_entities_are_rejected() {
    let graph = PetGraph::new();
    let mut bad = entity(&ns("remove/invalid"), "e", "E", "x", &[]);
    bad.namespace = memory_core::Namespace::root();
    assert!(matches!(
        graph.add_entity(bad.clone()).await,
        Err(MemoryError::InvalidInput { .. })
    ));
    bad.namespace = ns("remove/invalid");
    bad.id = "a\nb".into();
    assert!(matches!(
        graph.add_entity(bad.clone()).await,
        Err(MemoryError::InvalidInput { .. })
    ));
    bad.id = "e".into();
    bad.entity_type = String::new();
    assert!(matches!(
        graph.add_entity(bad).await,
        Err(MemoryError::InvalidInput { .. })
    ));
    assert!(
        graph
            .list_namespaces(&Scope::all())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        graph.degree_centrality(&ns("remove/invalid"), "e"),
        Err(MemoryError::NotFound { .. })
    ));
}
