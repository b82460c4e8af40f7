//! Postings added inside lists of several blocks: a batch that rewrites old records and adds
//! new ones keeps every list in order, so the index passes its check and searches as the
//! in-memory backend does.

use memory_core::{MemoryItem, MemoryStore, Namespace, SearchQuery};
use memory_inmem::InMemoryStore;
use memory_sqlite::SqliteBackend;

use crate::common::TempDb;

fn item(ns: &Namespace, id: &str, content: &str) -> MemoryItem {
    MemoryItem::new(ns.clone(), content)
        .and_then(|item| item.with_id(id))
        .unwrap_or_else(|error| panic!("{error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_adding_before_the_last_block_keeps_lists_in_order() {
    let file = TempDb::new("blocks");
    let backend = SqliteBackend::open(file.path()).unwrap_or_else(|error| panic!("{error}"));
    let sqlite = backend.memory_store();
    let memory = InMemoryStore::new();
    let ns = Namespace::parse("blocks").unwrap_or_else(|error| panic!("{error}"));
    // "common" in 300 records: three blocks of postings. "rare" in none yet.
    let first: Vec<MemoryItem> = (0..300)
        .map(|i| item(&ns, &format!("m{i:03}"), &format!("common word{i}")))
        .collect();
    // The next batch: old records rewritten with words that lists of several blocks and a
    // new list then hold before their ends, and new records after them.
    let second = vec![
        item(&ns, "m005", "common rare extra"),
        item(&ns, "new1", "common rare newer"),
        item(&ns, "m150", "rare common word150 extra"),
        item(&ns, "new2", "extra common"),
    ];
    for store in [sqlite as &dyn MemoryStore, &memory] {
        store
            .save_many(first.clone())
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        store
            .save_many(second.clone())
            .await
            .unwrap_or_else(|error| panic!("{error}"));
    }
    backend
        .check_integrity()
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    for query in ["common", "rare", "extra", "common rare extra"] {
        let search = SearchQuery::new(ns.exact(), query, 400);
        let ranked = |hits: Vec<memory_core::SearchHit>| -> Vec<(String, u32)> {
            hits.into_iter()
                .map(|hit| (hit.item.id.clone(), hit.score.to_bits()))
                .collect()
        };
        let got = ranked(
            sqlite
                .search(&search)
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        );
        let expected = ranked(
            memory
                .search(&search)
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        );
        assert_eq!(got, expected, "{query}");
    }
    let common = sqlite
        .search(&SearchQuery::new(ns.exact(), "common", 400))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(common.len(), 302);
}
