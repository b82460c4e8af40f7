//! Records read back exactly as they were written: every field, and every float bit
//! pattern that means a number.

use memory_core::{MemoryFilter, MemoryItem, MemoryStore, Namespace};

use crate::common::{item, schema_or_skip};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_round_trip_exactly() {
    let schema = schema_or_skip!("fts_roundtrip");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("roundtrip").unwrap();
    // MemoryItem::new stamps the current time with nanoseconds: they must survive.
    let entry = MemoryItem::new(ns.clone(), "precise 🙂 text with ünïcödé")
        .unwrap()
        .with_importance(0.123_456_79)
        .unwrap()
        .with_credibility(0.1)
        .unwrap()
        .with_metadata(serde_json::json!({
            "float": 0.1, "tiny": 1e-300, "big": 18_446_744_073_709_551_615u64,
            "negative": -42, "nested": {"list": [1, 2.5, "three", null, true]}, "empty": {}
        }))
        .unwrap()
        .with_tags(["Alpha Beta", "状态管理"])
        .unwrap()
        .with_source("unit test")
        .with_embedding(vec![0.1, -2.5e-8, f32::MAX, f32::MIN_POSITIVE])
        .unwrap();
    store.save(entry.clone()).await.unwrap();
    assert_eq!(
        store.get(&ns, &entry.id).await.unwrap(),
        Some(entry.clone())
    );
    let mut bad = entry.clone();
    bad.content = "nul \0 inside".into();
    let error = store.save(bad).await.unwrap_err();
    assert!(
        matches!(error, memory_core::MemoryError::InvalidInput { field: ref m, .. } if m.contains("content")),
        "{error}"
    );
    assert_eq!(store.get(&ns, "no\0such").await.unwrap(), None);
    assert!(!store.delete(&ns, "no\0such").await.unwrap());
}

/// The bits of the numbers of an item that PostgreSQL could normalise and keeps exactly: the
/// embedding and the metadata's JSON text.
fn exact_number_bits(item: &MemoryItem) -> (Vec<u32>, String) {
    (
        item.embedding
            .iter()
            .flatten()
            .map(|value| value.to_bits())
            .collect(),
        item.metadata.to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_zero_is_positive_zero_in_importance_and_exact_elsewhere() {
    let schema = schema_or_skip!("fts_negative_zero");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("roundtrip").unwrap();
    let entry = item(&ns, "z", "negative zero everywhere")
        .with_importance(-0.0)
        .unwrap()
        .with_credibility(-0.0)
        .unwrap()
        .with_metadata(serde_json::json!({
            "zero": -0.0, "list": [-0.0, 0.0, -1.5], "nested": {"deep": [-0.0]}
        }))
        .unwrap()
        .with_embedding(vec![-0.0, 0.0, -1.0])
        .unwrap();
    store.save(entry.clone()).await.unwrap();
    let back = store.get(&ns, "z").await.unwrap().unwrap();
    // Every backend stores -0.0 as 0.0 in importance and credibility.
    assert_eq!(
        (back.importance.to_bits(), back.credibility.to_bits()),
        (0, 0)
    );
    assert_eq!(exact_number_bits(&back), exact_number_bits(&entry));
    let listed = store.list(&MemoryFilter::new(ns.exact())).await.unwrap();
    assert_eq!(listed[0].importance.to_bits(), 0);
    assert_eq!(exact_number_bits(&listed[0]), exact_number_bits(&entry));
    // Through update and save_many as well.
    store.update(entry.clone()).await.unwrap();
    let many = entry.clone().with_id("z2").unwrap();
    store.save_many(vec![many]).await.unwrap();
    for id in ["z", "z2"] {
        let back = store.get(&ns, id).await.unwrap().unwrap();
        assert_eq!(
            (back.importance.to_bits(), back.credibility.to_bits()),
            (0, 0),
            "{id}"
        );
    }
    // A metadata filter on the value still finds it.
    let filtered = store
        .list(&MemoryFilter::new(ns.exact()).with_metadata("zero", serde_json::json!(-0.0)))
        .await
        .unwrap();
    assert_eq!(filtered.len(), 2);
}

/// A float that JSON writes with an exponent reads back as the float (`jsonb` writes it in
/// plain digits, which read back as an integer), and a metadata condition on it finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floats_with_an_exponent_read_back_and_match() {
    let schema = schema_or_skip!("records_exponent");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("exponent").unwrap();
    let values = [
        serde_json::json!(1.7e18),
        serde_json::json!(-1.7e18),
        serde_json::json!(2.5e-7),
        serde_json::json!(1e300),
    ];
    for (index, value) in values.iter().enumerate() {
        let entry = item(&ns, &format!("e{index}"), "a number in metadata")
            .with_metadata(serde_json::json!({ "ts": value }))
            .unwrap();
        store.save(entry.clone()).await.unwrap();
        assert_eq!(
            store.get(&ns, &entry.id).await.unwrap(),
            Some(entry.clone()),
            "{value}"
        );
        let mut filter = MemoryFilter::new(ns.exact()).with_limit(5);
        filter.metadata = vec![("ts".into(), value.clone())];
        let found = store.list(&filter).await.unwrap();
        assert_eq!(
            found
                .iter()
                .map(|item| item.id.as_str())
                .collect::<Vec<_>>(),
            [entry.id.as_str()],
            "{value}"
        );
    }
}
