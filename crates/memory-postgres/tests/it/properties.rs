//! Property test: random sequences of saves, updates, deletes, recalls and clears over
//! nested namespaces, after which every read channel agrees with a simple model
//! (`memory_core::testsuite::check_memory_operations`).

use memory_core::Namespace;
use memory_core::testsuite::{MemoryOp, check_memory_operations};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::common::TestSchema;

fn op() -> impl Strategy<Value = MemoryOp> {
    prop_oneof![
        5 => (0..3usize, 0..8usize, 0..6usize).prop_map(|(space, id, word)| MemoryOp::Save { space, id, word }),
        2 => (0..3usize, 0..8usize, 0..6usize).prop_map(|(space, id, word)| MemoryOp::Update { space, id, word }),
        3 => (0..3usize, 0..8usize).prop_map(|(space, id)| MemoryOp::Delete { space, id }),
        2 => (0..3usize, 0..8usize).prop_map(|(space, id)| MemoryOp::Recall { space, id }),
        1 => (0..3usize).prop_map(|space| MemoryOp::Clear { space }),
        2 => (0..3usize, 0..8usize, 0..6usize).prop_map(|(space, id, word)| MemoryOp::SaveMany { space, id, word }),
        1 => (0..3usize, 0..8usize).prop_map(|(space, id)| MemoryOp::DeleteMany { space, id }),
        1 => (0..3usize).prop_map(|space| MemoryOp::ClearSubtree { space }),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_channel_agrees_with_the_model() {
    let Some(schema) = TestSchema::new("properties") else {
        return;
    };
    let backend = schema.connect().await;
    let store = backend.memory_store().clone();
    let handle = tokio::runtime::Handle::current();
    let mut runner = TestRunner::new(Config {
        cases: 24,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicUsize::new(0);
    let result = runner.run(&proptest::collection::vec(op(), 1..40), |ops| {
        let case = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = Namespace::parse(&format!("prop/{case}"))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        tokio::task::block_in_place(|| {
            handle.block_on(check_memory_operations(&store, &base, &ops))
        });
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}
