//! Tag normalisation and truncation on every write.

use memory_core::{KnowledgeGraph, MemoryError, Tag, TagConstraints};
use memory_graph::PetGraph;

use crate::{entity, ns};

fn tags(raw: &[&str]) -> Vec<Tag> {
    raw.iter().map(|t| Tag::new(t).unwrap()).collect()
}

#[tokio::test]
async fn set_entity_tags_normalises_dedups_and_keeps_the_first() {
    let ns = ns("tags/set");
    let graph = PetGraph::with_tag_constraints(TagConstraints::new(3).unwrap());
    graph
        .add_entity(entity(&ns, "e", "E", "x", &[]))
        .await
        .unwrap();
    let check = |input: &[&str], want: &[&str]| {
        let graph = &graph;
        let ns = &ns;
        let input: Vec<String> = input.iter().map(|t| (*t).to_owned()).collect();
        let want = tags(want);
        async move {
            graph.set_entity_tags(ns, "e", input.clone()).await.unwrap();
            let stored = graph.get_entity(ns, "e").await.unwrap().unwrap().tags;
            assert_eq!(stored, want, "{input:?}");
        }
    };
    check(
        &["State Graph", "LangGraph", "rust"],
        &["state-graph", "lang-graph", "rust"],
    )
    .await;
    check(&["A", "a", "B", "b", "C", "D"], &["a", "b", "c"]).await;
    check(
        &["one", "two", "three", "four", "five"],
        &["one", "two", "three"],
    )
    .await;
    check(&["  padded_tag  "], &["padded-tag"]).await;
    check(&[], &[]).await;
    assert_eq!(
        graph.find_tags(&ns.exact(), "").await.unwrap(),
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn a_rejected_tag_changes_nothing() {
    let ns = ns("tags/rejected");
    let graph = PetGraph::new();
    graph
        .add_entity(entity(&ns, "e", "E", "x", &["keep"]))
        .await
        .unwrap();
    for bad in ["c++", "", "   ", "a,b", &"x".repeat(65)] {
        let result = graph
            .set_entity_tags(&ns, "e", vec!["fine".into(), bad.to_owned()])
            .await;
        assert!(
            matches!(result, Err(MemoryError::InvalidInput { .. })),
            "{bad:?}"
        );
    }
    assert_eq!(
        graph.get_entity(&ns, "e").await.unwrap().unwrap().tags,
        tags(&["keep"])
    );
    assert_eq!(
        graph
            .entity_count_by_tag(&ns.exact(), "fine")
            .await
            .unwrap(),
        0
    );
    assert!(matches!(
        graph.set_entity_tags(&ns, "ghost", vec!["ok".into()]).await,
        Err(MemoryError::NotFound { .. })
    ));
    assert!(matches!(
        graph
            .set_entity_tags(&crate::ns("tags/no-such-namespace"), "e", vec![])
            .await,
        Err(MemoryError::NotFound { .. })
    ));
}

#[tokio::test]
async fn add_and_update_truncate_and_dedup_too() {
    let ns = ns("tags/write");
    let graph = PetGraph::new();
    let mut wide = entity(&ns, "w", "Wide", "x", &[]);
    // Public fields allow duplicates and more tags than the limit; the store fixes both.
    wide.tags = tags(&["a", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]);
    graph.add_entity(wide.clone()).await.unwrap();
    let stored = graph.get_entity(&ns, "w").await.unwrap().unwrap();
    assert_eq!(stored.tags, tags(&["a", "b", "c", "d", "e", "f", "g", "h"]));
    assert_eq!(
        graph.entity_count_by_tag(&ns.exact(), "i").await.unwrap(),
        0
    );

    wide.tags = tags(&["z", "y", "x", "w", "v", "u", "t", "s", "r", "q"]);
    graph.update_entity(wide).await.unwrap();
    let stored = graph.get_entity(&ns, "w").await.unwrap().unwrap();
    assert_eq!(stored.tags, tags(&["z", "y", "x", "w", "v", "u", "t", "s"]));
    assert_eq!(
        graph.entity_count_by_tag(&ns.exact(), "a").await.unwrap(),
        0,
        "old tags leave"
    );
    assert_eq!(
        graph.entity_count_by_tag(&ns.exact(), "z").await.unwrap(),
        1
    );
    assert_eq!(
        graph.entity_count_by_tag(&ns.exact(), "q").await.unwrap(),
        0
    );
}

#[tokio::test]
async fn a_limit_of_one_keeps_the_most_relevant_tag() {
    let ns = ns("tags/one");
    let graph = PetGraph::with_tag_constraints(TagConstraints::new(1).unwrap());
    graph
        .add_entity(entity(&ns, "e", "E", "x", &["first", "second"]))
        .await
        .unwrap();
    assert_eq!(
        graph.get_entity(&ns, "e").await.unwrap().unwrap().tags,
        tags(&["first"])
    );
    assert!(TagConstraints::new(0).is_err());
}
