//! Property tests: after any sequence of saves, updates, deletes, recalls and clears (one
//! at a time and in batches, of a namespace or a subtree) across
//! namespaces, every read channel of the store agrees with a simple model
//! (`memory_core::testsuite::check_memory_operations`).

use std::sync::atomic::{AtomicUsize, Ordering};

use memory_core::Namespace;
use memory_core::testsuite::{MemoryOp, check_memory_operations};
use memory_inmem::InMemoryStore;
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

static CASES: AtomicUsize = AtomicUsize::new(0);

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn every_channel_agrees_with_the_model(ops in proptest::collection::vec(op(), 1..80)) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let case = CASES.fetch_add(1, Ordering::Relaxed);
        runtime.block_on(async {
            let store = InMemoryStore::new();
            let base = Namespace::parse(&format!("prop/{case}")).unwrap();
            check_memory_operations(&store, &base, &ops).await;
        });
    }
}
