//! Fuzz the JSONL import: any bytes either import or fail with a clear error, never panic;
//! a rejected file writes nothing.
#![no_main]

use agent_memory::graph::PetGraph;
use agent_memory::inmem::{InMemoryKnowledgeStore, InMemoryStore};
use agent_memory::{MemoryStore, Scope, transfer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let store = InMemoryStore::new();
        let pages = InMemoryKnowledgeStore::new();
        let graph = PetGraph::new();
        let mut reader = std::io::Cursor::new(data.to_vec());
        let result =
            transfer::import_jsonl(&mut reader, Some(&store), Some(&pages), Some(&graph)).await;
        if result.is_err() {
            assert_eq!(
                store.count(&Scope::all()).await.ok(),
                Some(0),
                "a rejected import writes nothing"
            );
        }
        let mut again = std::io::Cursor::new(data.to_vec());
        let _ = transfer::read_jsonl(&mut again);
    });
});
