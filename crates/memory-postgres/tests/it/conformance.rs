//! The memory-core conformance suite on PostgreSQL, directly and through `Box<dyn>`.

use memory_core::{KnowledgeGraph, KnowledgeStore, MemoryStore, Namespace, testsuite};

use crate::common::schema_or_skip;

fn base(name: &str) -> Namespace {
    Namespace::parse(name).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_conformance() {
    let schema = schema_or_skip!("conf_memory");
    let backend = schema.connect().await;
    testsuite::run_memory_store(backend.memory_store(), &base("direct")).await;
    let boxed: Box<dyn MemoryStore> = Box::new(backend.memory_store().clone());
    testsuite::run_memory_store(&boxed, &base("boxed")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knowledge_store_conformance() {
    let schema = schema_or_skip!("conf_knowledge");
    let backend = schema.connect().await;
    testsuite::run_knowledge_store(backend.knowledge_store(), &base("direct")).await;
    let boxed: Box<dyn KnowledgeStore> = Box::new(backend.knowledge_store().clone());
    testsuite::run_knowledge_store(&boxed, &base("boxed")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knowledge_graph_conformance() {
    let schema = schema_or_skip!("conf_graph");
    let backend = schema.connect().await;
    testsuite::run_knowledge_graph(backend.graph(), &base("direct")).await;
    let boxed: Box<dyn KnowledgeGraph> = Box::new(backend.graph().clone());
    testsuite::run_knowledge_graph(&boxed, &base("boxed")).await;
}

#[tokio::test(flavor = "current_thread")]
async fn conformance_on_a_current_thread_runtime() {
    let schema = schema_or_skip!("conf_current");
    let backend = schema.connect().await;
    testsuite::run_memory_store(backend.memory_store(), &base("m")).await;
    testsuite::run_knowledge_store(backend.knowledge_store(), &base("k")).await;
    testsuite::run_knowledge_graph(backend.graph(), &base("g")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_backends_on_one_schema_see_each_other() {
    let schema = schema_or_skip!("conf_shared");
    let first = schema.connect().await;
    let second = schema.connect().await;
    let ns = base("shared/user-1");
    let item = memory_core::MemoryItem::new(ns.clone(), "written by the first backend")
        .unwrap()
        .with_id("m1")
        .unwrap();
    first.memory_store().save(item.clone()).await.unwrap();
    assert_eq!(
        second.memory_store().get(&ns, "m1").await.unwrap(),
        Some(item),
        "a write through one pool is read through another, unchanged"
    );
}
