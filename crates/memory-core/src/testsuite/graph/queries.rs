//! Conformance checks for the [`KnowledgeGraph`]'s queries: keyword and tag matching,
//! and traversal (related entities, multi-hop paths, shortest paths).

use super::{entity, must, names, relation};
use crate::{KnowledgeGraph, MemoryError, Namespace};

pub(super) async fn matching_and_tags(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    must(
        graph.add_entity(entity(
            ns,
            "lg",
            "LangGraph",
            "framework",
            &["langgraph", "agent-framework"],
        )),
        "add",
    )
    .await;
    must(
        graph.add_entity(entity(ns, "lc", "LangChain", "framework", &["langchain"])),
        "add",
    )
    .await;
    must(
        graph.add_entity(entity(
            ns,
            "sg",
            "StateGraph",
            "concept",
            &["langgraph", "state-graph"],
        )),
        "add",
    )
    .await;
    must(
        graph.add_entity(entity(ns, "st", "State", "concept", &["state"])),
        "add",
    )
    .await;
    let find = |keywords: &[&str]| {
        let keywords: Vec<String> = keywords.iter().map(|k| (*k).to_owned()).collect();
        async move {
            must(
                graph.find_by_keywords(&ns.exact(), &keywords),
                "find_by_keywords",
            )
            .await
        }
    };
    assert_eq!(
        names(&find(&["lang"]).await),
        ["lc", "lg"],
        "name prefix, case-insensitive"
    );
    assert_eq!(
        names(&find(&["LANGG"]).await),
        ["lg"],
        "prefix is case-insensitive"
    );
    assert_eq!(
        names(&find(&["graph"]).await),
        Vec::<&str>::new(),
        "name matches by prefix only"
    );
    assert_eq!(names(&find(&["state-graph"]).await), ["sg"], "tag exact");
    assert_eq!(
        names(&find(&["State Graph"]).await),
        ["sg"],
        "keywords are normalised as tags"
    );
    assert_eq!(
        names(&find(&["state"]).await),
        ["sg", "st"],
        "'state' is a name prefix of both, tag of one"
    );
    assert_eq!(
        names(&find(&["Framework"]).await),
        ["lc", "lg"],
        "entity type exact, case-insensitive"
    );
    assert_eq!(
        names(&find(&["frame"]).await),
        Vec::<&str>::new(),
        "entity type is not a prefix match"
    );
    assert!(
        find(&["", "  "]).await.is_empty(),
        "blank keywords match nothing"
    );

    assert_eq!(
        must(graph.find_tags(&ns.exact(), "lang"), "find_tags").await,
        ["langchain", "langgraph"]
    );
    assert_eq!(
        must(graph.find_tags(&ns.exact(), "STATE"), "find_tags").await,
        ["state", "state-graph"]
    );
    assert_eq!(
        must(graph.entity_count_by_tag(&ns.exact(), "langgraph"), "count").await,
        2
    );
    assert_eq!(
        must(graph.entity_count_by_tag(&ns.exact(), "c++"), "count").await,
        0
    );

    let limit = graph.tag_constraints().max_tags_per_entity;
    let many: Vec<String> = (0..limit + 3).map(|i| format!("Tag Number{i}")).collect();
    must(graph.set_entity_tags(ns, "st", many), "set_entity_tags").await;
    let tags = must(graph.get_entity(ns, "st"), "get")
        .await
        .map(|e| e.tags)
        .unwrap_or_default();
    assert_eq!(tags.len(), limit, "tags are truncated to the limit");
    assert_eq!(
        tags[0].as_str(),
        "tag-number0",
        "tags are normalised and keep their order"
    );
    assert_eq!(
        must(graph.entity_count_by_tag(&ns.exact(), "state"), "count").await,
        0,
        "old tags leave the index"
    );
    assert_eq!(
        must(
            graph.entity_count_by_tag(&ns.exact(), "tag-number0"),
            "count"
        )
        .await,
        1
    );
    let result = graph
        .set_entity_tags(ns, "st", vec!["ok".into(), "c++".into()])
        .await;
    assert!(
        matches!(result, Err(MemoryError::InvalidInput { .. })),
        "invalid tags are rejected"
    );
    let after = must(graph.get_entity(ns, "st"), "get")
        .await
        .map(|e| e.tags)
        .unwrap_or_default();
    assert_eq!(after, tags, "a rejected tag set changes nothing");
    assert!(matches!(
        graph.set_entity_tags(ns, "ghost", vec![]).await,
        Err(MemoryError::NotFound { .. })
    ));
    let mut wide = entity(ns, "wide", "Wide", "x", &[]);
    wide.tags = crate::Tag::normalize_all((0..20).map(|i| format!("w{i}"))).unwrap_or_default();
    must(graph.add_entity(wide), "add").await;
    let stored = must(graph.get_entity(ns, "wide"), "get")
        .await
        .map(|e| e.tags.len());
    assert_eq!(stored, Some(limit), "add_entity truncates tags too");
}

pub(super) async fn traversal(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    // The seed 004 example: project-alpha, its people and technologies, plus a cycle.
    for (id, kind) in [
        ("project-alpha", "project"),
        ("zhang", "person"),
        ("li", "person"),
        ("react", "technology"),
        ("typescript", "technology"),
        ("island", "x"),
    ] {
        must(graph.add_entity(entity(ns, id, id, kind, &[])), "add").await;
    }
    for (from, kind, to) in [
        ("zhang", "leads", "project-alpha"),
        ("li", "works_on", "project-alpha"),
        ("project-alpha", "uses", "react"),
        ("project-alpha", "uses", "typescript"),
        ("zhang", "colleague_of", "li"),
    ] {
        must(
            graph.add_relation(relation(ns, from, to, kind, 0.5)),
            "add_relation",
        )
        .await;
    }
    let related = must(graph.get_related(ns, "zhang", 1), "get_related").await;
    let reached: Vec<(&str, usize)> = related
        .iter()
        .map(|s| (s.entity.id.as_str(), s.hops))
        .collect();
    assert_eq!(
        reached,
        [("li", 1), ("project-alpha", 1)],
        "depth 1 reaches direct neighbours"
    );
    let related = must(graph.get_related(ns, "zhang", 2), "get_related").await;
    assert_eq!(
        related.len(),
        4,
        "depth 2 reaches the technologies; the cycle zhang-li-alpha visits each once"
    );
    let react = related
        .iter()
        .find(|s| s.entity.id == "react")
        .unwrap_or_else(|| panic!("react not reached"));
    assert_eq!(react.hops, 2);
    assert_eq!(react.path.len(), 2, "the path has one relation per hop");
    assert!(
        (react.score - 0.25 / 3.0).abs() < 1e-6,
        "score is 1/(1+hops) times the weights"
    );
    assert!(
        !related
            .iter()
            .any(|s| s.entity.id == "zhang" || s.entity.id == "island")
    );
    assert!(
        must(graph.get_related(ns, "zhang", 0), "get_related")
            .await
            .is_empty(),
        "depth 0 reaches nothing"
    );
    assert_eq!(
        must(graph.get_related(ns, "zhang", 1_000_000), "get_related")
            .await
            .len(),
        4,
        "huge depth is clamped"
    );
    assert!(matches!(
        graph.get_related(ns, "ghost", 2).await,
        Err(MemoryError::NotFound { .. })
    ));

    let chain = vec!["colleague_of".to_owned(), "works_on".to_owned()];
    let hop = must(graph.multi_hop(ns, "zhang", &chain), "multi_hop").await;
    assert_eq!(hop.results, ["project-alpha"], "the colleague's project");
    assert_eq!(hop.paths.len(), 1);
    assert_eq!(
        hop.paths[0]
            .iter()
            .map(|r| r.relation_type.as_str())
            .collect::<Vec<_>>(),
        ["colleague_of", "works_on"]
    );
    let uses = must(
        graph.multi_hop(ns, "li", &["works_on".to_owned(), "uses".to_owned()]),
        "multi_hop",
    )
    .await;
    assert_eq!(uses.results, ["react", "typescript"]);
    assert!(
        must(graph.multi_hop(ns, "react", &chain), "multi_hop")
            .await
            .results
            .is_empty()
    );
    assert!(matches!(
        graph.multi_hop(ns, "zhang", &[]).await,
        Err(MemoryError::InvalidInput { .. })
    ));

    let path = must(graph.shortest_path(ns, "li", "react"), "shortest_path").await;
    assert_eq!(
        path.map(|p| p.len()),
        Some(2),
        "li -> project-alpha -> react"
    );
    assert_eq!(
        must(graph.shortest_path(ns, "li", "island"), "shortest_path").await,
        None
    );
    assert_eq!(
        must(graph.shortest_path(ns, "li", "li"), "shortest_path").await,
        Some(vec![])
    );
}

/// `find_tags` normalises its prefix as the beginning of a tag: the letters [`crate::Tag`]
/// lowercases one by one (a dotted capital I, a capital sigma at the end of the text), a
/// trailing separator kept as the `-` of a word boundary, a CamelCase boundary.
pub(super) async fn tag_prefixes(graph: &dyn KnowledgeGraph, ns: &Namespace) {
    // One tag each, so that any tag limit keeps them.
    for (id, tag) in [
        ("city", "İstanbul"),
        ("sis", "ΣΊΣ"),
        ("st", "state"),
        ("sg", "state-graph"),
        ("sm", "statement"),
    ] {
        must(
            graph.add_entity(entity(ns, id, id, "concept", &[tag])),
            "add",
        )
        .await;
    }
    let scope = ns.exact();
    assert_eq!(
        must(graph.entity_count_by_tag(&scope, "İstanbul"), "count").await,
        1,
        "the tag as stored"
    );
    for (prefix, expected) in [
        ("İstanbul", &["istanbul"][..]),
        ("İST", &["istanbul"]),
        ("ΣΊΣ", &["σίσ"]),
        ("ΣΊ", &["σίσ"]),
        ("Σ", &["σίσ"]),
        ("state", &["state", "state-graph", "statement"]),
        ("State_", &["state-graph"]),
        ("state-", &["state-graph"]),
        ("state.", &["state-graph"]),
        ("StateG", &["state-graph"]),
        ("State Graph", &["state-graph"]),
        (" statem ", &["statement"]),
        (
            "",
            &["istanbul", "state", "state-graph", "statement", "σίσ"],
        ),
        (
            "_",
            &["istanbul", "state", "state-graph", "statement", "σίσ"],
        ),
        ("c++", &[]),
        ("state\0", &[]),
        ("stateless", &[]),
    ] {
        assert_eq!(
            must(graph.find_tags(&scope, prefix), "find_tags").await,
            expected,
            "find_tags with the prefix {prefix:?}"
        );
    }
}
