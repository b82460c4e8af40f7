//! The quickstart: remember a user's preferences, recall "programming", build a prompt
//! context, with knowledge pages and a small knowledge graph alongside.
//!
//! Run it with `cargo run --release --example quickstart`.

use std::sync::Arc;

use agent_memory::graph::PetGraph;
use agent_memory::inmem::{InMemoryKnowledgeStore, InMemoryStore};
use agent_memory::prelude::*;
use agent_memory::retrieve::{Memory, Remember};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let store: Arc<dyn MemoryStore> = Arc::new(InMemoryStore::new());
    let pages: Arc<dyn KnowledgeStore> = Arc::new(InMemoryKnowledgeStore::new());
    let graph: Arc<dyn KnowledgeGraph> = Arc::new(PetGraph::new());
    let memory = Memory::builder().store(store).knowledge(pages.clone()).graph(graph.clone()).build()?;

    let user = Namespace::parse("user-42/assistant")?;
    println!("== remember ==");
    for (text, kind, importance) in [
        ("The user likes the Rust programming language", MemoryKind::LongTerm, 0.9),
        ("The user is a software engineer", MemoryKind::Semantic, 0.7),
        ("Last time we discussed asynchronous programming with tokio", MemoryKind::Episodic, 0.6),
        ("用户喜欢简洁的代码示例", MemoryKind::Semantic, 0.8),
        ("The user has a cat called Miso", MemoryKind::Episodic, 0.4),
    ] {
        let id = memory.remember_with(Remember::new(user.clone(), text).kind(kind).importance(importance)).await?;
        println!("  {id}  {text}");
    }

    pages
        .add_page(
            KnowledgePage::new(user.clone(), "rust-async", "Rust async programming")?
                .with_summary("Futures, executors and tokio")
                .with_content("Async Rust runs futures on an executor such as tokio.")
                .with_tags(["rust", "async"])?,
        )
        .await?;
    for (id, name, kind) in [("rust", "Rust", "language"), ("tokio", "Tokio", "library"), ("user", "User", "person")] {
        graph.add_entity(GraphEntity::new(user.clone(), id, name, kind)?.with_tags([id])?).await?;
    }
    graph.add_relation(GraphRelation::new(user.clone(), "user", "rust", "likes", 0.9)?).await?;
    graph.add_relation(GraphRelation::new(user.clone(), "tokio", "rust", "written_in", 1.0)?).await?;

    println!("\n== recall \"programming\" ==");
    let found = memory.recall(&user.subtree(), "programming").await?;
    for item in &found.items {
        println!("  {:.3}  {}", item.score, item.source.text());
        let why: Vec<String> = item
            .breakdown
            .signals
            .iter()
            .filter(|signal| signal.contribution > 0.0)
            .map(|signal| format!("{}={:.2}", signal.name, signal.value))
            .collect();
        println!("         via {:?}: {}", item.breakdown.channels, why.join(" "));
    }

    println!("\n== recall \"Rust\" (memories, pages and the graph) ==");
    for item in memory.recall(&user.subtree(), "Rust").await?.items {
        println!("  {:.3}  {:?} {}", item.score, item.breakdown.channels, item.source.text());
    }

    println!("\n== recall_context(\"the user's technical background\", 120 tokens) ==");
    println!("{}", memory.recall_context(&user.subtree(), "the user's technical background: Rust programming", 120).await?);

    let stats = memory.stats(&user.subtree()).await?;
    println!("== stats ==\n  {} memories, {} pages, {} entities, mean access {:.2}", stats.total, stats.pages, stats.entities, stats.mean_access);
    Ok(())
}
