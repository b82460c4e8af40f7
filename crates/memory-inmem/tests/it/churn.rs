//! A namespace kept under churn (the oldest memories deleted as new ones arrive, as an
//! eviction policy does) searches exactly as a store holding only the survivors: slots are
//! renumbered as removals free them, and nothing of a removed memory is left behind.

use memory_core::{MemoryFilter, MemoryItem, MemoryStore, Namespace, SearchQuery};
use memory_inmem::InMemoryStore;

const WORDS: [&str; 12] = [
    "rust", "tokio", "memory", "graph", "search", "index", "agent", "page", "recall", "fact",
    "session", "window",
];

fn text(i: usize) -> String {
    (0..5)
        .map(|k| WORDS[(i * 7 + k * (i % 5 + 1)) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn item(ns: &Namespace, i: usize) -> MemoryItem {
    let item = MemoryItem::new(ns.clone(), text(i))
        .and_then(|item| item.with_id(format!("m{i:05}")))
        .expect("valid");
    let mut embedding = vec![0.0f32; 4];
    embedding[i % 4] = 1.0;
    item.with_embedding(embedding).expect("valid embedding")
}

async fn ranking(store: &InMemoryStore, ns: &Namespace, query: &str) -> Vec<(String, u32)> {
    store
        .search(&SearchQuery::new(ns.exact(), query, 50))
        .await
        .expect("search")
        .into_iter()
        .map(|hit| (hit.item.id.clone(), (hit.score * 1e4).round() as u32))
        .collect()
}

async fn near(store: &InMemoryStore, filter: &MemoryFilter) -> Vec<String> {
    store
        .search_similar(filter, &[1.0, 0.0, 0.0, 0.0], 20)
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.item.id.clone())
        .collect()
}

#[tokio::test]
async fn churned_store_searches_as_a_fresh_one() {
    let ns = Namespace::parse("churn").unwrap();
    let churned = InMemoryStore::new();
    // 3,000 writes into a window of 300: most slots are freed and renumbered many times,
    // with deletes one by one and in batches.
    let window = 300;
    let mut live = std::collections::VecDeque::new();
    for i in 0..3_000 {
        churned.save(item(&ns, i)).await.unwrap();
        live.push_back(format!("m{i:05}"));
        if live.len() > window + 10 {
            if i % 2 == 0 {
                let ids: Vec<String> = live.drain(..10).collect();
                assert_eq!(churned.delete_many(&ns, &ids).await.unwrap(), 10);
            } else if let Some(oldest) = live.pop_front() {
                assert!(churned.delete(&ns, &oldest).await.unwrap());
            }
        }
    }
    let survivors: Vec<MemoryItem> = churned.list(&MemoryFilter::new(ns.exact())).await.unwrap();
    assert!(survivors.len() <= window + 10, "{} left", survivors.len());
    let fresh = InMemoryStore::new();
    fresh.save_many(survivors.clone()).await.unwrap();
    for query in [
        "rust memory",
        "graph",
        "session window fact",
        "agent page recall index",
    ] {
        assert_eq!(
            ranking(&churned, &ns, query).await,
            ranking(&fresh, &ns, query).await,
            "{query}"
        );
    }
    let filter = MemoryFilter::new(ns.exact());
    let (a, b) = (near(&churned, &filter).await, near(&fresh, &filter).await);
    assert_eq!(a.len(), 20);
    let mut sorted_a = a.clone();
    sorted_a.sort();
    let mut sorted_b = b.clone();
    sorted_b.sort();
    assert_eq!(sorted_a, sorted_b, "the same nearest memories");
    for survivor in &survivors {
        assert_eq!(
            churned.get(&ns, &survivor.id).await.unwrap().as_ref(),
            Some(survivor)
        );
    }
}
