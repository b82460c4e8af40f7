//! The seed's matching rules: name prefix (case-insensitive), tag exact, entity type exact.

use memory_core::{KnowledgeGraph, Namespace, Scope};
use memory_graph::PetGraph;

use crate::{entity, ids, ns};

async fn sample(ns: &Namespace) -> PetGraph {
    let graph = PetGraph::new();
    for (id, name, kind, tags) in [
        (
            "lg",
            "LangGraph",
            "framework",
            &["langgraph", "agent-framework"][..],
        ),
        ("lc", "LangChain", "Framework", &["langchain"][..]),
        (
            "sg",
            "StateGraph",
            "concept",
            &["langgraph", "state-graph"][..],
        ),
        ("st", "State", "concept", &["state"][..]),
        ("zs", "张三", "person", &["团队"][..]),
        ("ae", "Ärger Éclair", "feeling", &[][..]),
        ("sp", "Graph Theory", "field", &["graph"][..]),
    ] {
        graph
            .add_entity(entity(ns, id, name, kind, tags))
            .await
            .unwrap();
    }
    graph
}

async fn check(graph: &PetGraph, scope: &Scope, keywords: &[&str], want: &[&str]) {
    let keywords: Vec<String> = keywords.iter().map(|k| (*k).to_owned()).collect();
    let found = graph.find_by_keywords(scope, &keywords).await.unwrap();
    assert_eq!(ids(&found), want, "keywords {keywords:?}");
}

#[tokio::test]
async fn name_prefix_is_case_insensitive_and_prefix_only() {
    let ns = ns("match/names");
    let graph = sample(&ns).await;
    let scope = ns.exact();
    check(&graph, &scope, &["lang"], &["lc", "lg"]).await;
    check(&graph, &scope, &["LANG"], &["lc", "lg"]).await;
    check(&graph, &scope, &["LangG"], &["lg"]).await;
    check(&graph, &scope, &["langgraph"], &["lg", "sg"]).await; // name of lg, tag of sg
    check(&graph, &scope, &["chain"], &[]).await; // inside the name, not a prefix
    check(&graph, &scope, &["  lang  "], &["lc", "lg"]).await; // keywords are trimmed
    check(&graph, &scope, &["张"], &["zs"]).await;
    check(&graph, &scope, &["är"], &["ae"]).await; // Unicode lowercase
    check(&graph, &scope, &["ÄRGER É"], &["ae"]).await; // spaces inside a name prefix
    check(&graph, &scope, &["graph t"], &["sp"]).await;
    check(&graph, &scope, &["LangGraphX"], &[]).await; // longer than the name
}

#[tokio::test]
async fn tags_match_exactly_after_normalisation() {
    let ns = ns("match/tags");
    let graph = sample(&ns).await;
    let scope = ns.exact();
    check(&graph, &scope, &["state-graph"], &["sg"]).await;
    check(&graph, &scope, &["State Graph"], &["sg"]).await;
    check(&graph, &scope, &["STATE_GRAPH"], &["sg"]).await;
    check(&graph, &scope, &["团队"], &["zs"]).await;
    check(&graph, &scope, &["agent"], &[]).await; // tags are not prefix-matched
    check(&graph, &scope, &["agent-framework"], &["lg"]).await;
    check(&graph, &scope, &["graph"], &["sp"]).await; // tag of sp and prefix of its name
    check(&graph, &scope, &["c++"], &[]).await; // not a valid tag, no name starts with it
}

#[tokio::test]
async fn entity_type_matches_exactly_ignoring_case() {
    let ns = ns("match/types");
    let graph = sample(&ns).await;
    let scope = ns.exact();
    check(&graph, &scope, &["framework"], &["lc", "lg"]).await;
    check(&graph, &scope, &["FRAMEWORK"], &["lc", "lg"]).await;
    check(&graph, &scope, &["frame"], &[]).await;
    check(&graph, &scope, &["concepts"], &[]).await;
    check(&graph, &scope, &["Person"], &["zs"]).await;
}

#[tokio::test]
async fn keywords_are_a_union_without_duplicates() {
    let ns = ns("match/union");
    let graph = sample(&ns).await;
    let scope = ns.exact();
    check(
        &graph,
        &scope,
        &["lang", "state", "person"],
        &["lc", "lg", "sg", "st", "zs"],
    )
    .await;
    check(
        &graph,
        &scope,
        &["lang", "LANG", "framework"],
        &["lc", "lg"],
    )
    .await;
    check(&graph, &scope, &[], &[]).await;
    check(&graph, &scope, &["", "   ", "\t"], &[]).await;
}

#[tokio::test]
async fn results_are_ordered_by_namespace_then_id_and_stay_in_scope() {
    let root = ns("match/scoped");
    let a = root.child("a").unwrap();
    let b = root.child("b").unwrap();
    let deep = a.child("deep").unwrap();
    let sibling = ns("match/scoped-sibling");
    let graph = PetGraph::new();
    for (namespace, id) in [
        (&b, "z"),
        (&b, "a"),
        (&deep, "m"),
        (&a, "y"),
        (&sibling, "s"),
    ] {
        graph
            .add_entity(entity(namespace, id, "Widget", "thing", &["shared"]))
            .await
            .unwrap();
    }
    let found = graph
        .find_by_keywords(&root.subtree(), &["widget".to_owned()])
        .await
        .unwrap();
    let keys: Vec<(String, &str)> = found
        .iter()
        .map(|e| (e.namespace.to_string(), e.id.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            ("match/scoped/a".to_owned(), "y"),
            ("match/scoped/a/deep".to_owned(), "m"),
            ("match/scoped/b".to_owned(), "a"),
            ("match/scoped/b".to_owned(), "z"),
        ],
        "the sibling namespace match/scoped-sibling is not under match/scoped"
    );
    check(&graph, &a.exact(), &["shared"], &["y"]).await;
    check(&graph, &a.subtree(), &["shared"], &["y", "m"]).await;
    assert_eq!(
        graph
            .find_by_keywords(&Scope::all(), &["shared".to_owned()])
            .await
            .unwrap()
            .len(),
        5
    );
    check(&graph, &ns("match/nowhere").subtree(), &["shared"], &[]).await;
}

#[tokio::test]
async fn find_tags_is_a_sorted_prefix_scan_over_the_scope() {
    let root = ns("match/find-tags");
    let a = root.child("a").unwrap();
    let b = root.child("b").unwrap();
    let graph = PetGraph::new();
    graph
        .add_entity(entity(
            &a,
            "1",
            "One",
            "x",
            &["state-graph", "state", "langgraph"],
        ))
        .await
        .unwrap();
    graph
        .add_entity(entity(
            &b,
            "2",
            "Two",
            "x",
            &["state-machine", "state", "rust"],
        ))
        .await
        .unwrap();
    let tags = |scope: Scope, prefix: &'static str| {
        let graph = &graph;
        async move { graph.find_tags(&scope, prefix).await.unwrap() }
    };
    assert_eq!(
        tags(root.subtree(), "state").await,
        ["state", "state-graph", "state-machine"]
    );
    assert_eq!(
        tags(root.subtree(), "STATE-").await,
        ["state-graph", "state-machine"]
    );
    assert_eq!(tags(a.exact(), "state").await, ["state", "state-graph"]);
    assert_eq!(
        tags(root.subtree(), "").await,
        ["langgraph", "rust", "state", "state-graph", "state-machine"]
    );
    assert!(tags(root.subtree(), "z").await.is_empty());
    assert!(
        tags(root.exact(), "").await.is_empty(),
        "the parent holds no entity"
    );

    let count = |scope: Scope, tag: &'static str| {
        let graph = &graph;
        async move { graph.entity_count_by_tag(&scope, tag).await.unwrap() }
    };
    assert_eq!(count(root.subtree(), "state").await, 2);
    assert_eq!(count(root.subtree(), "State").await, 2, "normalised first");
    assert_eq!(count(b.exact(), "state").await, 1);
    assert_eq!(count(root.subtree(), "stat").await, 0, "exact, not prefix");
    assert_eq!(count(root.subtree(), "").await, 0);
    assert_eq!(count(root.subtree(), "c++").await, 0);
}
