//! The store's save path: what a save re-indexes, and what it replaces in place.

use chrono::Duration;
use memory_core::{MemoryFilter, MemoryItem, MemoryStore, Namespace, SearchQuery};

use super::InMemoryStore;
use crate::registry::read;

/// How many documents the namespace's search index has indexed and removed so far.
fn churn(store: &InMemoryStore, namespace: &Namespace) -> (usize, usize) {
    let shard = store
        .registry
        .get(namespace)
        .expect("the namespace has a shard");
    read(&shard).index.churn()
}

async fn found(store: &InMemoryStore, namespace: &Namespace, text: &str) -> Vec<String> {
    store
        .search(&SearchQuery::new(namespace.exact(), text, 10))
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.item.id.clone())
        .collect()
}

#[tokio::test]
async fn a_save_re_indexes_a_memory_only_when_its_indexed_text_changed() {
    let store = InMemoryStore::new();
    let ns = Namespace::parse("reindex").unwrap();
    let item = MemoryItem::new(ns.clone(), "Ava lives in Lisbon")
        .unwrap()
        .with_fact_key("ava.city")
        .unwrap();
    let other = MemoryItem::new(ns.clone(), "Ava has a sister in Oslo").unwrap();
    store.save(item.clone()).await.unwrap();
    store.save(other.clone()).await.unwrap();
    assert_eq!(churn(&store, &ns), (2, 0));

    // Importance, access, metadata other than the context, creation time and a fact key
    // of the same words: the index keeps the document.
    let mut reweighed = item.clone();
    reweighed.importance = 0.125;
    reweighed.access_count = 3;
    reweighed.metadata = serde_json::json!({"decay": {"base": 0.5}});
    reweighed.created_at -= Duration::days(2);
    reweighed.fact_key = Some("ava_city".to_owned());
    store.save(reweighed.clone()).await.unwrap();
    let mut other_reweighed = other.clone();
    other_reweighed.importance = 0.75;
    store
        .save_many(vec![other_reweighed.clone()])
        .await
        .unwrap();
    assert_eq!(
        churn(&store, &ns),
        (2, 0),
        "only non-indexed fields changed"
    );
    let stored = store.get(&ns, &item.id).await.unwrap().unwrap();
    assert_eq!(stored.importance, 0.125);
    assert_eq!(stored.access_count, 3);
    assert_eq!(
        found(&store, &ns, "Lisbon").await,
        std::slice::from_ref(&item.id)
    );
    // What follows the fields that changed follows them.
    let listed: Vec<String> = store
        .list(&MemoryFilter::new(ns.exact()))
        .await
        .unwrap()
        .into_iter()
        .map(|listed| listed.id)
        .collect();
    assert_eq!(listed, [item.id.clone(), other.id.clone()]);
    let by_key = |key: &str| {
        let filter = MemoryFilter::new(ns.exact()).with_fact_key(key).unwrap();
        let store = &store;
        async move { store.list(&filter).await.unwrap().len() }
    };
    assert_eq!(by_key("ava.city").await, 0);
    assert_eq!(by_key("ava_city").await, 1);

    // A new content: the document is indexed again, and a search finds the new text only.
    let mut rewritten = reweighed;
    rewritten.content = "Ava moved to Porto".to_owned();
    store.save(rewritten).await.unwrap();
    assert_eq!(churn(&store, &ns), (3, 1));
    assert_eq!(
        found(&store, &ns, "Porto").await,
        std::slice::from_ref(&item.id)
    );
    assert!(found(&store, &ns, "Lisbon").await.is_empty());
    assert_eq!(found(&store, &ns, "Oslo").await, [other.id]);
}
