//! The optional embedding channel: recall by meaning, beside keywords.
//!
//! agent-memory ships no model. This example plugs in a toy `EmbeddingProvider` (a few
//! words per topic, each topic one axis) to show the wiring; a real one calls your embedding
//! model or service. Run with:
//!
//! ```text
//! cargo run --example embeddings --features embeddings
//! ```

use std::sync::Arc;

use agent_memory::retrieve::Memory;
use agent_memory::{EmbeddingProvider, Namespace, RetrievalSource};
use async_trait::async_trait;

/// Topic axes: vehicles, food, music.
const TOPICS: [&[&str]; 3] = [
    &["car", "automobile", "bike", "drive", "commute"],
    &["pizza", "pasta", "dinner", "cook"],
    &["guitar", "piano", "song"],
];

#[derive(Debug)]
struct Topics;

#[async_trait]
impl EmbeddingProvider for Topics {
    async fn embed(&self, text: &str) -> agent_memory::Result<Vec<f32>> {
        let mut vector = vec![0.0; TOPICS.len()];
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            let word = word.to_lowercase();
            for (axis, words) in TOPICS.iter().enumerate() {
                if words.contains(&word.as_str()) {
                    vector[axis] += 1.0;
                }
            }
        }
        Ok(vector)
    }

    fn dimension(&self) -> usize {
        TOPICS.len()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> agent_memory::Result<()> {
    let memory = Memory::builder().embedder(Arc::new(Topics)).build()?;
    let user = Namespace::parse("user-1")?;
    for text in [
        "Ana takes her bike to the office every morning",
        "We cook pasta on Fridays",
        "Ana is learning the piano",
    ] {
        memory.remember(&user, text).await?;
    }

    // No memory holds the word "commute": keywords alone find nothing.
    let found = memory
        .recall(&user.exact(), "How does she commute?")
        .await?;
    for item in &found.items {
        if let RetrievalSource::Memory(memory) = &item.record {
            println!(
                "{:.2}  {}  (channels {:?}, embedding {:.2})",
                item.score,
                memory.content,
                item.breakdown.channels,
                item.breakdown
                    .value(agent_memory::Signal::Embedding)
                    .unwrap_or(0.0)
            );
        }
    }
    Ok(())
}
