//! Agent context rendering over any `KnowledgeGraph`.

use memory_core::{KnowledgeGraph, MemoryError};
use memory_graph::{KnowledgeGraphExt, PetGraph};

use crate::{entity, ns, relation, seeded};

const ZHANG_DEPTH_2: &str = "\
[person] zhang
  -- colleague_of --> li
  -- leads --> project-alpha
[person] li
  -- works_on --> project-alpha
[project] project-alpha
  -- uses --> react
  -- uses --> typescript
[technology] react
[technology] typescript";

#[tokio::test]
async fn renders_the_seed_004_neighbourhood() {
    let ns = ns("context/seed");
    let graph = seeded(&ns).await;
    let context = graph
        .context_for_agent(&ns, "zhang", 2, 10_000)
        .await
        .unwrap();
    assert_eq!(context, ZHANG_DEPTH_2);
    assert_eq!(
        graph
            .context_for_agent(&ns, "zhang", 1, 10_000)
            .await
            .unwrap(),
        "[person] zhang\n  -- colleague_of --> li\n  -- leads --> project-alpha\n\
         [person] li\n  -- works_on --> project-alpha\n[project] project-alpha",
        "relations leaving the neighbourhood are not shown"
    );
    assert_eq!(
        graph
            .context_for_agent(&ns, "react", 1, 10_000)
            .await
            .unwrap(),
        "[technology] react\n  <-- uses -- project-alpha\n[project] project-alpha",
        "incoming relations point back"
    );
    assert_eq!(
        graph
            .context_for_agent(&ns, "react", 0, 10_000)
            .await
            .unwrap(),
        "[technology] react"
    );
    assert_eq!(
        graph
            .context_for_agent(&ns, "island", 3, 10_000)
            .await
            .unwrap(),
        "[place] island"
    );
    assert_eq!(
        graph
            .context_for_agent(&ns, "zhang", usize::MAX, 10_000)
            .await
            .unwrap(),
        ZHANG_DEPTH_2,
        "depth is clamped, cycles are safe"
    );
}

#[tokio::test]
async fn renders_a_neighbourhood_already_walked() {
    let ns = ns("context/walked");
    let graph = seeded(&ns).await;
    let zhang = graph.get_entity(&ns, "zhang").await.unwrap().unwrap();
    let related = graph.get_related(&ns, "zhang", 2).await.unwrap();
    assert_eq!(
        graph
            .render_neighbourhood(&ns, &zhang, &related, 10_000)
            .await
            .unwrap(),
        ZHANG_DEPTH_2,
        "the same text as context_for_agent over the same walk"
    );
    // Only the entities given are shown, with the relations between them.
    let li_only: Vec<_> = related
        .iter()
        .filter(|scored| scored.entity.id == "li")
        .cloned()
        .collect();
    assert_eq!(
        graph
            .render_neighbourhood(&ns, &zhang, &li_only, 10_000)
            .await
            .unwrap(),
        "[person] zhang\n  -- colleague_of --> li\n[person] li"
    );
    assert_eq!(
        graph
            .render_neighbourhood(&ns, &zhang, &[], 10)
            .await
            .unwrap(),
        "[person] z",
        "cut at max_chars like context_for_agent"
    );
}

#[tokio::test]
async fn works_through_a_trait_object() {
    let ns = ns("context/dyn");
    let graph: Box<dyn KnowledgeGraph> = Box::new(seeded(&ns).await);
    let context = graph
        .context_for_agent(&ns, "zhang", 2, 10_000)
        .await
        .unwrap();
    assert_eq!(context, ZHANG_DEPTH_2);
    let by_ref: &dyn KnowledgeGraph = graph.as_ref();
    assert_eq!(
        by_ref
            .context_for_agent(&ns, "zhang", 2, 10_000)
            .await
            .unwrap(),
        ZHANG_DEPTH_2
    );
    assert!(matches!(
        graph.context_for_agent(&ns, "ghost", 2, 100).await,
        Err(MemoryError::NotFound { .. })
    ));
}

#[tokio::test]
async fn truncates_within_the_budget_at_character_boundaries() {
    let ns = ns("context/budget");
    let graph = PetGraph::new();
    let mut start = entity(&ns, "zs", "张三", "人物", &[]);
    start.description = "技术负责人\n带领  前端团队".into();
    graph.add_entity(start).await.unwrap();
    graph
        .add_entity(entity(&ns, "ls", "李四", "人物", &[]))
        .await
        .unwrap();
    graph
        .add_relation(relation(&ns, "zs", "ls", "同事", 1.0))
        .await
        .unwrap();
    let full = graph
        .context_for_agent(&ns, "zs", 1, usize::MAX)
        .await
        .unwrap();
    assert_eq!(
        full,
        "[人物] 张三: 技术负责人 带领 前端团队\n  -- 同事 --> 李四\n[人物] 李四"
    );
    let full_chars = full.chars().count();
    for max_chars in 0..=full_chars + 3 {
        let cut = graph
            .context_for_agent(&ns, "zs", 1, max_chars)
            .await
            .unwrap();
        assert!(cut.chars().count() <= max_chars, "{max_chars}: {cut:?}");
        assert!(full.starts_with(&cut), "{max_chars}: {cut:?}");
    }
    let first_line = "[人物] 张三: 技术负责人 带领 前端团队";
    let fits = first_line.chars().count();
    assert_eq!(
        graph.context_for_agent(&ns, "zs", 1, fits).await.unwrap(),
        first_line
    );
    assert_eq!(
        graph
            .context_for_agent(&ns, "zs", 1, fits + 5)
            .await
            .unwrap(),
        first_line,
        "only whole lines after the first"
    );
    assert_eq!(
        graph.context_for_agent(&ns, "zs", 1, 7).await.unwrap(),
        "[人物] 张三"
    );
    assert_eq!(graph.context_for_agent(&ns, "zs", 1, 0).await.unwrap(), "");
}

#[tokio::test]
async fn long_descriptions_are_shortened() {
    let ns = ns("context/long");
    let graph = PetGraph::new();
    let mut long = entity(&ns, "e", "Essay", "doc", &[]);
    long.description = "word ".repeat(1000);
    graph.add_entity(long).await.unwrap();
    let context = graph.context_for_agent(&ns, "e", 1, 10_000).await.unwrap();
    assert!(context.starts_with("[doc] Essay: word word"));
    assert!(context.ends_with('…'));
    assert_eq!(
        context.chars().count(),
        "[doc] Essay: ".chars().count() + 160
    );
}

#[tokio::test]
async fn large_neighbourhoods_stop_at_the_budget() {
    let ns = ns("context/large");
    let graph = PetGraph::new();
    graph
        .add_entity(entity(&ns, "hub", "Hub", "x", &[]))
        .await
        .unwrap();
    for i in 0..2000 {
        let id = format!("n{i:04}");
        graph
            .add_entity(entity(&ns, &id, &id, "x", &[]))
            .await
            .unwrap();
        graph
            .add_relation(relation(&ns, "hub", &id, "has", 1.0))
            .await
            .unwrap();
    }
    let context = graph.context_for_agent(&ns, "hub", 2, 300).await.unwrap();
    assert!(context.chars().count() <= 300);
    assert!(context.starts_with("[x] Hub\n  -- has --> n0000\n  -- has --> n0001\n"));
}
