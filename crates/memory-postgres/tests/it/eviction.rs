//! The victims of a recall-based eviction pass: PostgreSQL's one-query `least_valuable`
//! against the in-memory backend on the same items and statistics, ties included.

use chrono::{DateTime, Duration, Utc};
use memory_core::{MemoryItem, MemoryStore, Namespace, RecallBasedConfig, RecallStats};
use memory_inmem::InMemoryStore;

use crate::common::schema_or_skip;

fn at(nanos: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(1_700_000_000_000_000_000 + nanos)
}

fn config(recall_weight: f32, score_weight: f32, recency_weight: f32) -> RecallBasedConfig {
    RecallBasedConfig {
        max_items: 1,
        recall_weight,
        score_weight,
        recency_weight,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_valuable_picks_the_in_memory_backends_victims() {
    let schema = schema_or_skip!("evict_least_valuable");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let reference = InMemoryStore::new();
    let ns = Namespace::parse("evict/a").unwrap();
    let other = Namespace::parse("evict/b").unwrap();
    // Counts whose ln(1 + n) in SQL differs from Rust's ln_1p in the last bit, among others.
    let counts = [0u64, 1, 2, 13, 47, 73, 2, 13];
    let now = at(86_400_000_000_000 * 3 + 500_000);
    for index in 0..96usize {
        // Three items per creation time, and ids out of creation order: ties break by
        // creation time, then id.
        let id = format!("m{:02}", (index * 37) % 96);
        let item = MemoryItem::new(ns.clone(), format!("memory {index}"))
            .unwrap()
            .with_id(&id)
            .unwrap()
            .with_created_at(at(i64::try_from(index / 3).unwrap() * 1_000));
        store.save(item.clone()).await.unwrap();
        reference.save(item).await.unwrap();
        let count = counts[index % counts.len()];
        let stats = match index % 6 {
            // Never recalled: value 0 under every weight.
            0 => RecallStats::default(),
            // The same statistics for many items: only creation time and id tell them apart.
            1 => RecallStats {
                recall_count: 2,
                total_score: 1.0,
                last_recall_at: Some(at(86_400_000_000_000)),
            },
            // Recalled less than a millisecond before now, or just after it.
            2 => RecallStats {
                recall_count: count,
                total_score: count as f64 * 0.25,
                last_recall_at: Some(now - Duration::nanoseconds(index as i64 * 7_919)),
            },
            3 => RecallStats {
                recall_count: count,
                total_score: count as f64 * 0.5,
                last_recall_at: Some(now + Duration::milliseconds(5)),
            },
            // A tiny and a huge total.
            4 => RecallStats {
                recall_count: count.max(1),
                total_score: if index % 12 == 4 { 5e-324 } else { 1e300 },
                last_recall_at: None,
            },
            _ => RecallStats {
                recall_count: count,
                total_score: count as f64 * 0.75,
                last_recall_at: Some(at(index as i64 * 3_600_000_000_123)),
            },
        };
        store.set_recall_stats(&ns, &id, stats).await.unwrap();
        reference.set_recall_stats(&ns, &id, stats).await.unwrap();
    }
    // Another namespace with items of value 0 must not be picked.
    let stranger = MemoryItem::new(other.clone(), "elsewhere").unwrap();
    store.save(stranger).await.unwrap();

    let configs = [
        RecallBasedConfig::default(),
        config(1.0, 0.0, 0.0),
        config(0.0, 1.0, 0.0),
        config(0.0, 0.0, 1.0),
        config(0.0, 0.0, 0.0),
        config(f32::MAX, f32::MAX, 1e-45),
        config(1e-45, 0.5, f32::MAX),
    ];
    for (index, config) in configs.iter().enumerate() {
        for count in [0, 1, 2, 5, 16, 17, 40, 95, 96, 200] {
            let got = store.least_valuable(&ns, count, config, now).await.unwrap();
            let want = reference
                .least_valuable(&ns, count, config, now)
                .await
                .unwrap();
            assert_eq!(got, want, "config {index}, {count} victims");
        }
    }
    let missing = Namespace::parse("evict/none").unwrap();
    assert_eq!(
        store
            .least_valuable(&missing, 3, &configs[0], now)
            .await
            .unwrap(),
        Some(Vec::new())
    );
}
