//! Similarity search: SQLite's two-pass ranking (blobs first, whole rows for the best) agrees
//! with the in-memory store on corpora large enough for several rounds of decoding, with
//! many exact ties (small integer vectors), ids saved out of order and shared by two
//! namespaces, and metadata filters that reject most rows.

use memory_core::{MemoryFilter, MemoryItem, MemoryStore, Namespace};
use memory_inmem::InMemoryStore;
use memory_sqlite::SqliteBackend;

use crate::common::TempDb;

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn ids(hits: &[memory_core::SearchHit]) -> Vec<(String, String)> {
    hits.iter()
        .map(|hit| (hit.item.namespace.to_string(), hit.item.id.clone()))
        .collect()
}

#[tokio::test]
async fn sqlite_ranks_like_the_in_memory_store() {
    let db = TempDb::new("similar");
    let sqlite = SqliteBackend::open(db.path()).expect("opened");
    let inmem = InMemoryStore::new();
    let base = Namespace::parse("similar").expect("a namespace");
    let namespaces = [
        base.clone(),
        Namespace::parse("similar/child").expect("a namespace"),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut items = Vec::new();
    for n in 0..600u64 {
        // Ids in an order unrelated to the saving order, each once in each namespace (`n * 337`
        // has the parity of `n`, which picks the namespace); values in {-1, 0, 1, 2}, so
        // many scores tie and the order falls to id, then namespace.
        let id = format!("m{:03}", (n * 337) % 600 / 2);
        let vector: Vec<f32> = (0..4).map(|_| rng.below(4) as f32 - 1.0).collect();
        let keep = rng.below(10) == 0;
        let namespace = namespaces[(n % 2) as usize].clone();
        let item = MemoryItem::new(namespace, format!("memory {n}"))
            .and_then(|item| item.with_id(id))
            .and_then(|item| item.with_embedding(vector))
            .and_then(|item| item.with_metadata(serde_json::json!({ "keep": keep })))
            .expect("a valid memory");
        items.push(item);
    }
    for store in [sqlite.memory_store() as &dyn MemoryStore, &inmem] {
        store.save_many(items.clone()).await.expect("saved");
    }
    let mut kept = MemoryFilter::new(base.subtree());
    kept.metadata = vec![("keep".into(), serde_json::json!(true))];
    let filters = [
        MemoryFilter::new(base.exact()),
        MemoryFilter::new(base.subtree()),
        kept,
    ];
    for query in [
        [1.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, -1.0, 2.0],
        [0.0, 0.0, 0.0, 1.0],
    ] {
        for filter in &filters {
            for top_k in [1, 7, 64, 65, 200, 1000] {
                let ours = sqlite
                    .memory_store()
                    .search_similar(filter, &query, top_k)
                    .await
                    .expect("sqlite");
                let reference = inmem
                    .search_similar(filter, &query, top_k)
                    .await
                    .expect("in-memory");
                assert_eq!(
                    ids(&ours),
                    ids(&reference),
                    "query {query:?}, top {top_k}, filter {filter:?}"
                );
                let scores = |hits: &[memory_core::SearchHit]| -> Vec<f32> {
                    hits.iter().map(|hit| hit.score).collect()
                };
                assert_eq!(scores(&ours), scores(&reference));
            }
        }
    }
}
