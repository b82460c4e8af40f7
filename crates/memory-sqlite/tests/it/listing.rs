//! Listings whose metadata conditions SQL cannot decide (a float, an array): read in chunks
//! from the position, they page through the scope exactly as the in-memory store does,
//! matches sparse across chunks and memories sharing a creation time included.

use chrono::{Duration, TimeZone, Utc};
use memory_core::{ListPosition, MemoryFilter, MemoryItem, MemoryStore, Namespace};
use memory_inmem::InMemoryStore;
use memory_sqlite::SqliteBackend;

use crate::common::TempDb;

fn keys(items: &[MemoryItem]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|item| (item.namespace.to_string(), item.id.clone()))
        .collect()
}

#[tokio::test]
async fn a_listing_decided_after_decoding_pages_like_the_in_memory_store() {
    let db = TempDb::new("listing");
    let sqlite = SqliteBackend::open(db.path()).expect("opened");
    let inmem = InMemoryStore::new();
    let base = Namespace::parse("list").expect("a namespace");
    let child = Namespace::parse("list/child").expect("a namespace");
    let start = Utc
        .with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
        .single()
        .expect("a time");
    let mut items = Vec::new();
    for n in 0..1_500i64 {
        // Three memories share each second; every 97th holds the float, every 211th the
        // array, so a page of matches spans several chunks of rows.
        let weight = if n % 97 == 5 { 1.5 } else { 2.0 };
        let tags = if n % 211 == 7 { vec![1, 2] } else { vec![3] };
        let namespace = if n % 2 == 0 { &base } else { &child };
        let item = MemoryItem::new(namespace.clone(), format!("memory {n}"))
            .and_then(|item| item.with_id(format!("m{:04}", (n * 7) % 1_500)))
            .and_then(|item| {
                item.with_metadata(serde_json::json!({ "weight": weight, "tags": tags }))
            })
            .map(|mut item| {
                item.created_at = start + Duration::seconds(n / 3);
                item
            })
            .expect("a valid memory");
        items.push(item);
    }
    for store in [sqlite.memory_store() as &dyn MemoryStore, &inmem] {
        store.save_many(items.clone()).await.expect("saved");
    }
    for (key, value) in [
        ("weight", serde_json::json!(1.5)),
        ("tags", serde_json::json!([1, 2])),
        ("weight", serde_json::json!(9.5)),
    ] {
        for newest_first in [false, true] {
            for limit in [1, 3, 300] {
                let mut filter = MemoryFilter::new(base.subtree()).with_limit(limit);
                filter.metadata = vec![(key.into(), value.clone())];
                filter.newest_first = newest_first;
                let mut pages = 0;
                loop {
                    let ours = sqlite.memory_store().list(&filter).await.expect("sqlite");
                    let reference = inmem.list(&filter).await.expect("in-memory");
                    assert_eq!(
                        keys(&ours),
                        keys(&reference),
                        "{key} = {value}, newest first {newest_first}, limit {limit}, page {pages}"
                    );
                    let Some(last) = ours.last() else {
                        break;
                    };
                    filter.after = Some(ListPosition::of(last));
                    pages += 1;
                }
                let matches = items
                    .iter()
                    .filter(|item| item.metadata.get(key) == Some(&value))
                    .count();
                assert_eq!(
                    pages,
                    matches.div_ceil(limit),
                    "{key} = {value}, limit {limit}"
                );
            }
        }
    }
}
