//! The quickstart: remember a user's preferences, recall "programming", build a prompt
//! context, with knowledge pages and a small knowledge graph alongside.
//!
//! ```text
//! cargo run --release --example quickstart               # memories in ./agent-memory-quickstart.db
//! cargo run --release --example quickstart -- --in-memory  # nothing written to disk
//! ```
//!
//! Run it twice: the second run finds what the first one remembered.

use agent_memory::prelude::*;
use agent_memory::{MemoryFilter, SqliteBackend};
use serde_json::json;

const DATABASE: &str = "agent-memory-quickstart.db";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), MemoryError> {
    // One option: anything else (a typo of it) is refused rather than taken as the file.
    let mut in_memory = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--in-memory" => in_memory = true,
            other => {
                return Err(MemoryError::invalid(
                    "arguments",
                    format!("unknown argument {other:?}; the quickstart takes only --in-memory"),
                ));
            }
        }
    }
    let memory = if in_memory {
        println!("backend: in memory (nothing is kept after this run)");
        Memory::in_memory()
    } else {
        println!("backend: SQLite file ./{DATABASE}");
        Memory::builder()
            .stores(SqliteBackend::open(DATABASE)?.stores())
            .build()?
    };
    // Pages and the graph are written through their stores; recall reads all three.
    let pages = memory.knowledge();
    let graph = memory.graph();
    let user = Namespace::parse("user-42/assistant")?;

    let earlier = memory.store().count(&user.subtree()).await?;
    let runs = memory
        .store()
        .list(&MemoryFilter::new(user.exact()).with_id_prefix("run-"))
        .await?;
    println!(
        "{earlier} memories found from earlier runs ({} earlier runs)",
        runs.len()
    );

    println!("\n== remember ==");
    for (id, text, kind, importance) in [
        (
            "likes-rust",
            "The user likes the Rust programming language",
            MemoryKind::LongTerm,
            0.9,
        ),
        (
            "engineer",
            "The user is a software engineer",
            MemoryKind::Semantic,
            0.7,
        ),
        (
            "async-talk",
            "Last time we discussed asynchronous programming with tokio",
            MemoryKind::Episodic,
            0.6,
        ),
        (
            "concise",
            "用户喜欢简洁的代码示例",
            MemoryKind::Semantic,
            0.8,
        ),
        (
            "cat",
            "The user has a cat called Miso",
            MemoryKind::Episodic,
            0.4,
        ),
    ] {
        // Fixed ids: a second run replaces these instead of duplicating them.
        memory
            .remember_with(
                Remember::new(user.clone(), text)
                    .id(id)
                    .kind(kind)
                    .importance(importance),
            )
            .await?;
        println!("  {id:<11} {text}");
    }
    let run_id = format!("run-{}", runs.len() + 1);
    memory
        .remember_with(
            Remember::new(
                user.clone(),
                format!("Quickstart run number {} happened", runs.len() + 1),
            )
            .id(run_id.clone()),
        )
        .await?;
    println!("  {run_id:<11} (one new memory per run)");

    if pages.get_page(&user, "rust-async").await?.is_none() {
        pages
            .add_page(
                KnowledgePage::new(user.clone(), "rust-async", "Rust async programming")?
                    .with_summary("Futures, executors and tokio")
                    .with_content("Async Rust runs futures on an executor such as tokio.")
                    .with_tags(["rust", "async"])?,
            )
            .await?;
    }
    // Entities and relations may carry attributes: what is known about them.
    for (id, name, kind, attributes) in [
        ("rust", "Rust", "language", json!({"first_release": 2015})),
        ("tokio", "Tokio", "library", json!({})),
        ("user", "User", "person", json!({})),
    ] {
        if graph.get_entity(&user, id).await?.is_none() {
            graph
                .add_entity(
                    GraphEntity::new(user.clone(), id, name, kind)?
                        .with_tags([id])?
                        .with_attributes(attributes)?,
                )
                .await?;
        }
    }
    graph
        .add_relation(
            GraphRelation::new(user.clone(), "user", "rust", "likes", 0.9)?
                .with_attributes(json!({"since": 2021}))?,
        )
        .await?;
    graph
        .add_relation(GraphRelation::new(
            user.clone(),
            "tokio",
            "rust",
            "written_in",
            1.0,
        )?)
        .await?;

    println!("\n== recall \"programming\" ==");
    let found = memory.recall(&user.subtree(), "programming").await?;
    for item in &found.items {
        println!("  {:.3}  {}", item.score, item.record.text());
        let why: Vec<String> = item
            .breakdown
            .signals
            .iter()
            .filter(|signal| signal.contribution > 0.0)
            .map(|signal| format!("{}={:.2}", signal.name, signal.value))
            .collect();
        println!(
            "         via {:?}: {}",
            item.breakdown.channels,
            why.join(" ")
        );
    }

    println!("\n== recall \"Rust\" (memories, pages and the graph) ==");
    for item in memory.recall(&user.subtree(), "Rust").await?.items {
        println!(
            "  {:.3}  {:?} {}",
            item.score,
            item.breakdown.channels,
            item.record.text()
        );
    }

    println!("\n== recall_context(\"the user's technical background\", 160 tokens) ==");
    println!(
        "{}",
        memory
            .recall_context(
                &user.subtree(),
                "the user's technical background: Rust programming",
                160
            )
            .await?
    );

    let stats = memory.stats(&user.subtree()).await?;
    println!(
        "== stats ==\n  {} memories, {} pages, {} entities, mean access {:.2}",
        stats.total, stats.pages, stats.entities, stats.mean_access
    );
    if !in_memory {
        println!("\nRun it again: the memories above are kept in ./{DATABASE}.");
    }
    Ok(())
}
