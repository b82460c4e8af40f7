//! The memory-core conformance suite on a temporary file, directly and through `Box<dyn>`.

use memory_core::{KnowledgeGraph, KnowledgeStore, MemoryStore, Namespace, testsuite};
use memory_sqlite::SqliteBackend;

use crate::common::TempDb;

fn base(name: &str) -> Namespace {
    Namespace::parse(name).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_conformance() {
    let file = TempDb::new("conformance-memory");
    let backend = SqliteBackend::open(file.path()).unwrap();
    testsuite::run_memory_store(backend.memory_store(), &base("direct")).await;
    let boxed: Box<dyn MemoryStore> = Box::new(backend.memory_store().clone());
    testsuite::run_memory_store(&boxed, &base("boxed")).await;
    backend.check_integrity().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knowledge_store_conformance() {
    let file = TempDb::new("conformance-knowledge");
    let backend = SqliteBackend::open(file.path()).unwrap();
    testsuite::run_knowledge_store(backend.knowledge_store(), &base("direct")).await;
    let boxed: Box<dyn KnowledgeStore> = Box::new(backend.knowledge_store().clone());
    testsuite::run_knowledge_store(&boxed, &base("boxed")).await;
    backend.check_integrity().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knowledge_graph_conformance() {
    let file = TempDb::new("conformance-graph");
    let backend = SqliteBackend::open(file.path()).unwrap();
    testsuite::run_knowledge_graph(backend.graph(), &base("direct")).await;
    let boxed: Box<dyn KnowledgeGraph> = Box::new(backend.graph().clone());
    testsuite::run_knowledge_graph(&boxed, &base("boxed")).await;
    backend.check_integrity().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn conformance_in_memory_on_a_current_thread_runtime() {
    let backend = SqliteBackend::open_in_memory().unwrap();
    testsuite::run_memory_store(backend.memory_store(), &base("m")).await;
    testsuite::run_knowledge_store(backend.knowledge_store(), &base("k")).await;
    testsuite::run_knowledge_graph(backend.graph(), &base("g")).await;
}

#[test]
fn works_without_a_tokio_runtime() {
    // Calls run inline when no tokio runtime is present.
    let backend = SqliteBackend::open_in_memory().unwrap();
    let ns = base("plain");
    futures_lite_block_on(async {
        let item = memory_core::MemoryItem::new(ns.clone(), "no runtime here").unwrap();
        backend.memory_store().save(item.clone()).await.unwrap();
        assert_eq!(
            backend.memory_store().get(&ns, &item.id).await.unwrap(),
            Some(item)
        );
    });
}

/// A minimal executor: polls the future on this thread until it is ready.
fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut context) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}
