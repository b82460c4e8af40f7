//! The memory-core conformance suite, directly and through `Box<dyn ...>`.

use memory_core::{KnowledgeStore, MemoryStore, Namespace, testsuite};
use memory_inmem::{InMemoryKnowledgeStore, InMemoryStore};

fn base(name: &str) -> Namespace {
    Namespace::parse(&format!("conformance/{name}")).unwrap()
}

#[tokio::test]
async fn memory_store_direct() {
    testsuite::run_memory_store(&InMemoryStore::new(), &base("direct")).await;
}

#[tokio::test]
async fn memory_store_boxed() {
    let store: Box<dyn MemoryStore> = Box::new(InMemoryStore::new());
    testsuite::run_memory_store(&store, &base("boxed")).await;
}

#[tokio::test]
async fn knowledge_store_direct() {
    testsuite::run_knowledge_store(&InMemoryKnowledgeStore::new(), &base("direct")).await;
}

#[tokio::test]
async fn knowledge_store_boxed() {
    let store: Box<dyn KnowledgeStore> = Box::new(InMemoryKnowledgeStore::new());
    testsuite::run_knowledge_store(&store, &base("boxed")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_lose_nothing() {
    use std::sync::Arc;
    let store = Arc::new(InMemoryStore::new());
    let mut tasks = Vec::new();
    for task in 0..16 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            // Half the tasks share a namespace, half have their own.
            let ns = Namespace::parse(&format!("load/{}", task % 2 + task / 8 * 10)).unwrap();
            for i in 0..200 {
                let item =
                    memory_core::MemoryItem::new(ns.clone(), format!("note {task} {i} alpha"))
                        .unwrap()
                        .with_id(format!("t{task}-{i}"))
                        .unwrap();
                store.save(item).await.unwrap();
                if i % 10 == 0 {
                    store
                        .record_recall(&ns, &format!("t{task}-0"), 0.5, chrono::Utc::now())
                        .await
                        .unwrap();
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let all = Namespace::parse("load").unwrap().subtree();
    assert_eq!(store.count(&all).await.unwrap(), 16 * 200);
    let hits = store
        .search(&memory_core::SearchQuery::new(all.clone(), "alpha", 5000))
        .await
        .unwrap();
    assert_eq!(hits.len(), 16 * 200, "every write is indexed");
    for task in 0..16 {
        let ns = Namespace::parse(&format!("load/{}", task % 2 + task / 8 * 10)).unwrap();
        let stats = store
            .recall_stats(&ns, &format!("t{task}-0"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stats.recall_count, 20, "no recall increment is lost");
    }
}

/// The in-memory store answers `term_positions` from its index for a memory indexed by its
/// content alone (the conformance suite checks the answers are right), and leaves a memory
/// whose indexed text holds tags to be read from its text.
#[tokio::test]
async fn memory_store_tells_term_positions() {
    let store = InMemoryStore::new();
    let ns = base("positions");
    let plain = memory_core::MemoryItem::new(ns.clone(), "the cat sat; cats ran")
        .unwrap()
        .with_id("plain")
        .unwrap();
    let tagged = plain
        .clone()
        .with_id("tagged")
        .unwrap()
        .with_tags(["pets"])
        .unwrap();
    store.save(plain).await.unwrap();
    store.save(tagged).await.unwrap();
    let terms = vec!["cat".to_owned(), "run".to_owned()];
    let told = store
        .term_positions(&[(&ns, "plain"), (&ns, "tagged")], &terms)
        .await
        .unwrap();
    // "the" is a stop word: "cat" 0, "sat" 1, "cats" (stemmed "cat") 2, "ran" (read as
    // "run") 3.
    assert_eq!(told, vec![Some(vec![(0, 0), (2, 0), (3, 1)]), None]);
}

/// A knowledge store that implements only what the trait requires, so its defaults
/// (`put_page`, `referrers`, `reference_count`, `list_pages`) answer, over the in-memory
/// store's required methods.
#[derive(Debug, Default)]
struct RequiredOnly(InMemoryKnowledgeStore);

#[async_trait::async_trait]
impl KnowledgeStore for RequiredOnly {
    async fn add_page(&self, page: memory_core::KnowledgePage) -> memory_core::Result<()> {
        self.0.add_page(page).await
    }
    async fn get_page(
        &self,
        namespace: &Namespace,
        id: &str,
    ) -> memory_core::Result<Option<memory_core::KnowledgePage>> {
        self.0.get_page(namespace, id).await
    }
    async fn update_page(&self, page: memory_core::KnowledgePage) -> memory_core::Result<()> {
        self.0.update_page(page).await
    }
    async fn delete_page(&self, namespace: &Namespace, id: &str) -> memory_core::Result<bool> {
        self.0.delete_page(namespace, id).await
    }
    async fn search(
        &self,
        query: &memory_core::PageQuery,
    ) -> memory_core::Result<Vec<memory_core::PageHit>> {
        self.0.search(query).await
    }
    async fn get_index(
        &self,
        scope: &memory_core::Scope,
    ) -> memory_core::Result<Vec<memory_core::PageIndexEntry>> {
        self.0.get_index(scope).await
    }
    async fn clear(&self, scope: &memory_core::Scope) -> memory_core::Result<usize> {
        self.0.clear(scope).await
    }
    async fn list_namespaces(
        &self,
        scope: &memory_core::Scope,
    ) -> memory_core::Result<Vec<Namespace>> {
        self.0.list_namespaces(scope).await
    }
}

/// The trait's defaults agree with the in-memory store's own answers.
#[tokio::test]
async fn knowledge_store_defaults_agree_with_the_store() {
    use memory_core::KnowledgePage;
    let ns = base("defaults");
    let store = RequiredOnly::default();
    let page = |id: &str, refs: &[&str]| {
        KnowledgePage::new(ns.clone(), id, format!("Page {id}"))
            .and_then(|page| page.with_references(refs.iter().copied()))
            .unwrap()
    };
    for (id, refs) in [
        ("hub", &["hub"][..]),
        ("b", &["hub", "later"][..]),
        ("a", &["hub"][..]),
    ] {
        store.put_page(page(id, refs)).await.unwrap();
    }
    let mut again = page("a", &["later"]);
    again.access_count = 2;
    store.put_page(again.clone()).await.unwrap();
    assert_eq!(store.get_page(&ns, "a").await.unwrap(), Some(again));
    for id in ["hub", "later", "a", "none"] {
        assert_eq!(
            store.referrers(&ns, id).await.unwrap(),
            store.0.referrers(&ns, id).await.unwrap(),
            "{id}"
        );
    }
    assert_eq!(store.referrers(&ns, "hub").await.unwrap(), ["b"]);
    assert_eq!(store.referrers(&ns, "later").await.unwrap(), ["a", "b"]);
}
