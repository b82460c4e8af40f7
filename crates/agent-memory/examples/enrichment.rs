//! An agent's memory with enrichment on: every memory is linked to the people, places and
//! terms it mentions, off the write path, and recall follows the links, so a question
//! about "Caroline's sister" reaches what was said about Anna. A reranker rescores the
//! best candidates before the cut.
//!
//! ```text
//! cargo run --example enrichment
//! ```
//!
//! With a model instead of the rules (feature `llm`; Ollama, vLLM, llama.cpp's server or
//! OpenAI), build the enricher from the environment:
//!
//! ```text
//! AGENT_MEMORY_LLM_BASE_URL=http://localhost:11434/v1 AGENT_MEMORY_LLM_MODEL=llama3.1 \
//!     cargo run --example enrichment --features llm
//! ```

use std::sync::Arc;

use agent_memory::prelude::*;
use agent_memory::{Channel, Enricher, RuleEnricher, Signal, TermReranker};

fn enricher() -> Result<Arc<dyn Enricher>, MemoryError> {
    #[cfg(feature = "llm")]
    if std::env::var_os("AGENT_MEMORY_LLM_BASE_URL").is_some() {
        use agent_memory::models::{ChatConfig, ChatModel, LlmEnricher};
        let model = ChatModel::new(ChatConfig::from_env())?;
        println!("enriching with the model {}", model.config().model);
        return Ok(Arc::new(LlmEnricher::new(model)));
    }
    println!("enriching with the rules (no model)");
    Ok(Arc::new(RuleEnricher))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), MemoryError> {
    let memory = Memory::builder()
        .enricher(enricher()?)
        .reranker(Arc::new(TermReranker))
        .build()?;
    let user = Namespace::parse("user-42")?;
    for text in [
        "Caroline's sister Anna moved to Lisbon last spring.",
        "Anna paints sunsets every weekend.",
        "Caroline is building a LangGraph agent with a state-machine design.",
        "Melanie ran the Boston marathon on 17 April 2023.",
    ] {
        // Returns as soon as the memory is stored; enrichment is queued.
        memory.remember(&user, text).await?;
    }
    // Waits for the queue: the graph now holds the entities and the mention links.
    memory.flush().await?;
    if let Some(stats) = memory.enrichment_stats() {
        println!(
            "enriched {} of {} memories ({} failed)",
            stats.enriched, stats.queued, stats.failed
        );
    }
    for entity in memory.graph().list_entities(&user.exact()).await? {
        if entity.entity_type != agent_memory::retrieve::MEMORY_NODE_TYPE {
            println!("  entity {:<12} [{}]", entity.name, entity.entity_type);
        }
    }

    let question = "What is Caroline's sister into?";
    println!("\n{question}");
    let found = memory.recall(&user.subtree(), question).await?;
    for scored in &found.items {
        let through_graph = if scored.breakdown.channels.contains(&Channel::GraphTraversal) {
            "  (through the graph)"
        } else {
            ""
        };
        let rerank = scored
            .breakdown
            .value(Signal::Rerank)
            .map_or(String::new(), |value| format!("  rerank {value:.2}"));
        println!(
            "  {:.3}  {}{through_graph}{rerank}",
            scored.score,
            scored.record.text()
        );
    }
    Ok(())
}
