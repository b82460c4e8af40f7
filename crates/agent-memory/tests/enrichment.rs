//! Enrichment links memories to the entities they mention in every backend: in memory, on
//! SQLite and, when `AGENT_MEMORY_TEST_POSTGRES_URL` names a server, on PostgreSQL. Recall
//! reaches a memory through the graph, namespaces keep their links apart, and `forget`
//! removes a memory's node.
#![cfg(all(feature = "retrieve", feature = "sqlite"))]

mod common;

use std::sync::Arc;

use agent_memory::prelude::*;
use agent_memory::retrieve::{MENTIONS, Memory, memory_node_id};
use agent_memory::{Channel, RuleEnricher};
use common::backends;

fn ns(text: &str) -> Namespace {
    Namespace::parse(text).expect("valid namespace")
}

#[tokio::test]
async fn links_live_in_every_backend() {
    for backend in backends("enrich").await {
        let memory = Memory::builder()
            .store(Arc::clone(&backend.store))
            .knowledge(Arc::clone(&backend.knowledge))
            .graph(Arc::clone(&backend.graph))
            .enricher(Arc::new(RuleEnricher))
            .build()
            .expect("valid settings");
        let (family, work) = (ns("family"), ns("work"));
        memory
            .remember(&family, "Caroline's sister Anna moved to Lisbon")
            .await
            .expect("remember");
        let painting = memory
            .remember(&family, "Anna paints sunsets every weekend")
            .await
            .expect("remember");
        let other = memory
            .remember(&work, "Anna reviews the quarterly budget")
            .await
            .expect("remember");
        memory.flush().await.expect("flush");
        let name = backend.name;

        let links = backend
            .graph
            .relations_of(&family, &memory_node_id(&painting))
            .await
            .expect("relations");
        assert_eq!(links.len(), 1, "{name}: {links:?}");
        assert_eq!(
            (links[0].target_id.as_str(), links[0].relation_type.as_str()),
            ("anna", MENTIONS),
            "{name}"
        );

        let found = memory
            .recall(&family.exact(), "What is Caroline's sister into?")
            .await
            .expect("recall");
        let reached = found
            .items
            .iter()
            .find(|item| item.record.id() == painting)
            .unwrap_or_else(|| panic!("{name}: not reached through the graph"));
        assert!(
            reached
                .breakdown
                .channels
                .contains(&Channel::GraphTraversal),
            "{name}"
        );
        assert!(
            found.items.iter().all(|item| item.record.id() != other),
            "{name}: another namespace's Anna stays there"
        );
        let work_anna = backend
            .graph
            .relations_of(&work, "anna")
            .await
            .expect("relations");
        assert_eq!(work_anna.len(), 1, "{name}: {work_anna:?}");

        assert!(memory.forget(&family, &painting).await.expect("forget"));
        assert!(
            backend
                .graph
                .get_entity(&family, &memory_node_id(&painting))
                .await
                .expect("entity")
                .is_none(),
            "{name}: forget removes the node"
        );
        backend.cleanup().await;
    }
}
