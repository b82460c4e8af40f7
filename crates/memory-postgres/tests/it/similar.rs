//! Similarity search in two passes (keys and embeddings ranked, then the best rows read
//! whole): the same hits, in the same order with the same scores, as the in-memory backend,
//! and further rounds when decoded items fail the filter's check in Rust.

use memory_core::{MemoryFilter, MemoryStore, Namespace, SearchHit};
use memory_inmem::InMemoryStore;

use crate::common::{item, schema_or_skip};

/// A reproducible vector of `dimension` values from `seed` (a small linear congruential
/// generator: the test needs spread, not quality).
fn vector(seed: u64, dimension: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..dimension)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            // Few distinct values, so some scores tie and the order by id is exercised.
            f32::from(((state >> 33) % 5) as u8) - 2.0
        })
        .collect()
}

fn keys(hits: &[SearchHit]) -> Vec<(String, String, u32)> {
    hits.iter()
        .map(|hit| {
            (
                hit.item.namespace.to_string(),
                hit.item.id.clone(),
                hit.score.to_bits(),
            )
        })
        .collect()
}

#[tokio::test]
async fn ranks_as_the_in_memory_backend() {
    let schema = schema_or_skip!("similar_ranks");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let reference = InMemoryStore::new();
    let ns = Namespace::parse("similar/ranks").unwrap();
    let child = Namespace::parse("similar/ranks/child").unwrap();
    for n in 0..300u64 {
        let space = if n % 7 == 0 { &child } else { &ns };
        // Most have 4 values, some 3 (not comparable with a 4-value query), some none.
        let mut memory = item(space, &format!("m{n:03}"), "an embedded memory")
            .with_metadata(serde_json::json!({"parity": n % 2, "turn": if n % 3 == 0 { serde_json::json!(3.0) } else { serde_json::json!(3) }}))
            .unwrap();
        if n % 11 != 0 {
            memory = memory
                .with_embedding(vector(n, if n % 13 == 0 { 3 } else { 4 }))
                .unwrap();
        }
        store.save(memory.clone()).await.unwrap();
        reference.save(memory).await.unwrap();
    }
    let filters = [
        MemoryFilter::new(ns.exact()),
        MemoryFilter::new(ns.subtree()),
        MemoryFilter::new(ns.subtree()).with_metadata("parity", serde_json::json!(1)),
        // jsonb calls 3 and 3.0 equal; the check in Rust does not, so rows come back that
        // the filter then turns away.
        MemoryFilter::new(ns.subtree()).with_metadata("turn", serde_json::json!(3)),
        MemoryFilter::new(ns.subtree()).with_metadata("turn", serde_json::json!(3.0)),
    ];
    for (f, filter) in filters.iter().enumerate() {
        for q in 0..6u64 {
            let query = vector(1_000 + q, 4);
            if query.iter().all(|v| *v == 0.0) {
                continue;
            }
            for top_k in [1, 5, 40, 500] {
                let got = store.search_similar(filter, &query, top_k).await.unwrap();
                let want = reference
                    .search_similar(filter, &query, top_k)
                    .await
                    .unwrap();
                assert_eq!(
                    keys(&got),
                    keys(&want),
                    "filter {f}, query {q}, top_k {top_k}"
                );
            }
        }
    }
}

#[tokio::test]
async fn reads_further_rows_when_the_best_fail_the_filter() {
    let schema = schema_or_skip!("similar_rounds");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("similar/rounds").unwrap();
    // 150 memories closer to the query whose metadata jsonb finds equal to the condition
    // and serde_json does not, then the one that matches.
    for n in 0..150 {
        let memory = item(&ns, &format!("near{n:03}"), "close")
            .with_metadata(serde_json::json!({"turn": 3.0}))
            .unwrap()
            .with_embedding(vec![1.0, 0.01 * n as f32])
            .unwrap();
        store.save(memory).await.unwrap();
    }
    let far = item(&ns, "far", "the match")
        .with_metadata(serde_json::json!({"turn": 3}))
        .unwrap()
        .with_embedding(vec![0.0, 1.0])
        .unwrap();
    store.save(far).await.unwrap();
    let filter = MemoryFilter::new(ns.exact()).with_metadata("turn", serde_json::json!(3));
    let hits = store.search_similar(&filter, &[1.0, 0.0], 2).await.unwrap();
    assert_eq!(
        hits.iter()
            .map(|hit| hit.item.id.as_str())
            .collect::<Vec<_>>(),
        ["far"]
    );
    // A filter's limit bounds listings, not a similarity search's hits.
    let mut limited = MemoryFilter::new(ns.exact());
    limited.limit = Some(1);
    let hits = store
        .search_similar(&limited, &[1.0, 0.0], 3)
        .await
        .unwrap();
    assert_eq!(
        hits.iter()
            .map(|hit| hit.item.id.as_str())
            .collect::<Vec<_>>(),
        ["near000", "near001", "near002"]
    );
}
