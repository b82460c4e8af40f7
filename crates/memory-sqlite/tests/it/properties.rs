//! Property test: random sequences of saves, updates, deletes, recalls and clears over
//! nested namespaces, after which every read channel agrees with a simple model
//! (`memory_core::testsuite::check_memory_operations`).

use memory_core::Namespace;
use memory_core::testsuite::{MemoryOp, check_memory_operations};
use memory_sqlite::SqliteBackend;
use proptest::prelude::*;

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

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn every_channel_agrees_with_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let backend = SqliteBackend::open_in_memory().unwrap();
            let base = Namespace::parse("prop").unwrap();
            check_memory_operations(backend.memory_store(), &base, &ops).await;
        });
    }
}
