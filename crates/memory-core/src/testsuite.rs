//! The backend conformance suite: every contract the trait docs state, written once against
//! `&dyn Trait`, run by every backend (in-memory, SQLite, PostgreSQL) and by third-party
//! backends.
//!
//! Enable the `testsuite` feature in your backend's dev-dependencies and call the `run_*`
//! functions from an async test. Each takes a `base` namespace and works only under it, so
//! suites for several backends, or several runs against one shared database, can run in
//! parallel as long as each gets its own `base`. A failed check panics with a message naming
//! the contract.
//!
//! ```no_run
//! # async fn example(store: &dyn memory_core::MemoryStore) {
//! use memory_core::{Namespace, testsuite};
//! let base = Namespace::parse("conformance/my-backend").unwrap();
//! testsuite::run_memory_store(store, &base).await;
//! # }
//! ```
//!
//! Expectations beyond the required methods: `record_recall` and `recall_stats` must be
//! implemented, and so must `record_accesses` of pages and entities (the suite checks that
//! statistics accumulate), and full-text search must
//! match whole words (after the shared [`Analyzer`](crate::text::Analyzer)), Chinese included.

mod eviction;
mod facts;
mod graph;
mod knowledge;
mod memory;
mod model;
mod ranking;

pub use graph::run_knowledge_graph;
pub use knowledge::run_knowledge_store;
pub use memory::run_memory_store;
pub use model::{MODEL_SPACES, MODEL_WORDS, MemoryOp, check_memory_operations};

use crate::Namespace;

/// A child of `base`, panicking on an invalid segment (the suite uses fixed segments).
fn child(base: &Namespace, segment: &str) -> Namespace {
    match base.child(segment) {
        Ok(namespace) => namespace,
        Err(error) => panic!("conformance: bad namespace segment {segment}: {error}"),
    }
}
