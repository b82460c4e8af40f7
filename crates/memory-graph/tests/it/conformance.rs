//! The memory-core conformance suite, directly and through trait objects.

use std::sync::Arc;

use memory_core::{KnowledgeGraph, TagConstraints, testsuite};
use memory_graph::{InMemoryGraph, PetGraph};

use crate::ns;

#[tokio::test]
async fn conformance_direct() {
    let graph = PetGraph::new();
    testsuite::run_knowledge_graph(&graph, &ns("conformance/direct")).await;
}

#[tokio::test]
async fn conformance_through_box_dyn() {
    let graph: Box<dyn KnowledgeGraph> = Box::new(PetGraph::new());
    testsuite::run_knowledge_graph(&graph, &ns("conformance/box")).await;
    testsuite::run_knowledge_graph(graph.as_ref(), &ns("conformance/box-inner")).await;
}

#[tokio::test]
async fn conformance_through_arc_dyn() {
    let graph: Arc<dyn KnowledgeGraph> = Arc::new(InMemoryGraph::default());
    testsuite::run_knowledge_graph(&graph, &ns("conformance/arc")).await;
}

#[tokio::test]
async fn conformance_with_custom_tag_limit() {
    let graph = PetGraph::with_tag_constraints(TagConstraints::new(3).unwrap());
    assert_eq!(graph.tag_constraints().max_tags_per_entity, 3);
    testsuite::run_knowledge_graph(&graph, &ns("conformance/three-tags")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suites_in_parallel_share_one_graph() {
    let graph: Arc<dyn KnowledgeGraph> = Arc::new(PetGraph::new());
    let mut tasks = Vec::new();
    for i in 0..4 {
        let graph = Arc::clone(&graph);
        tasks.push(tokio::spawn(async move {
            testsuite::run_knowledge_graph(graph.as_ref(), &ns(&format!("parallel/run-{i}"))).await;
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}
