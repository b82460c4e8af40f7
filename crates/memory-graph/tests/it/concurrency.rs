//! Many tasks reading and writing one graph at once on a multi-thread runtime.

use std::sync::Arc;

use memory_core::{KnowledgeGraph, Namespace, Scope};
use memory_graph::PetGraph;

use crate::{entity, ns, relation};

const TASKS: usize = 16;
const PER_TASK: usize = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_writers_and_readers_lose_nothing() {
    let graph = Arc::new(PetGraph::new());
    let shared = ns("concurrent/shared");
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let graph = Arc::clone(&graph);
        let shared = shared.clone();
        tasks.push(tokio::spawn(async move {
            // Half the tasks share one namespace, the others have their own.
            let own = ns(&format!("concurrent/task-{task}"));
            let namespace: &Namespace = if task % 2 == 0 { &shared } else { &own };
            for i in 0..PER_TASK {
                let id = format!("t{task}-e{i}");
                graph
                    .add_entity(entity(namespace, &id, &id, "node", &["common"]))
                    .await
                    .unwrap();
                if i > 0 {
                    let previous = format!("t{task}-e{}", i - 1);
                    graph
                        .add_relation(relation(namespace, &previous, &id, "next", 1.0))
                        .await
                        .unwrap();
                }
                // Readers interleave with the writers.
                let related = graph.get_related(namespace, &id, 2).await.unwrap();
                assert!(related.len() <= 2);
                let _ = graph
                    .find_by_keywords(&Scope::all(), &["common".to_owned()])
                    .await
                    .unwrap();
            }
            task
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let shared_tasks = TASKS.div_ceil(2);
    assert_eq!(graph.entity_count(&shared), shared_tasks * PER_TASK);
    assert_eq!(graph.relation_count(&shared), shared_tasks * (PER_TASK - 1));
    for task in (1..TASKS).step_by(2) {
        let own = ns(&format!("concurrent/task-{task}"));
        assert_eq!(graph.entity_count(&own), PER_TASK);
        assert_eq!(graph.relation_count(&own), PER_TASK - 1);
    }
    for task in 0..TASKS {
        let namespace = if task % 2 == 0 {
            shared.clone()
        } else {
            ns(&format!("concurrent/task-{task}"))
        };
        for i in 1..PER_TASK {
            let id = format!("t{task}-e{i}");
            let relations = graph.relations_of(&namespace, &id).await.unwrap();
            let previous = format!("t{task}-e{}", i - 1);
            assert!(
                relations
                    .iter()
                    .any(|r| r.source_id == previous && r.target_id == id),
                "task {task}'s chain is whole at {id}"
            );
        }
        // Chains are longer than MAX_TRAVERSAL_DEPTH; check a reachable stretch.
        let first = format!("t{task}-e0");
        let far = format!("t{task}-e{}", memory_core::MAX_TRAVERSAL_DEPTH);
        let path = graph.shortest_path(&namespace, &first, &far).await.unwrap();
        assert_eq!(
            path.map(|p| p.len()),
            Some(memory_core::MAX_TRAVERSAL_DEPTH)
        );
    }
    assert_eq!(
        graph
            .entity_count_by_tag(&Scope::all(), "common")
            .await
            .unwrap(),
        TASKS * PER_TASK
    );
    assert_eq!(
        graph.list_namespaces(&Scope::all()).await.unwrap().len(),
        1 + TASKS / 2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clearing_while_writing_never_loses_a_write_after_it() {
    // Writers add entities while another task keeps clearing the namespace; whatever was
    // added after the last clear must be visible, never written into a dropped graph.
    let graph: Arc<dyn KnowledgeGraph> = Arc::new(PetGraph::new());
    let namespace = ns("concurrent/clear");
    let clearer = {
        let graph = Arc::clone(&graph);
        let namespace = namespace.clone();
        tokio::spawn(async move {
            let mut removed = 0;
            for _ in 0..200 {
                removed += graph.clear(&namespace.subtree()).await.unwrap();
                tokio::task::yield_now().await;
            }
            removed
        })
    };
    let mut writers = Vec::new();
    for task in 0..4 {
        let graph = Arc::clone(&graph);
        let namespace = namespace.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..200 {
                let id = format!("w{task}-{i}");
                graph
                    .add_entity(entity(&namespace, &id, "n", "x", &[]))
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let removed = clearer.await.unwrap();
    let left = graph.list_entities(&namespace.exact()).await.unwrap().len();
    assert_eq!(
        removed + left,
        800,
        "every entity was either cleared or is still there"
    );
    let after = entity(&namespace, "after", "after", "x", &[]);
    graph.add_entity(after.clone()).await.unwrap();
    assert_eq!(
        graph.get_entity(&namespace, "after").await.unwrap(),
        Some(after)
    );
}
