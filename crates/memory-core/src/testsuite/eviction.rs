//! Conformance of [`MemoryStore::least_valuable`]: a backend that answers it names the same
//! victims, in the same order, as ranking every item of the namespace by
//! [`RecallStats::value`], ties by creation time, then id.

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::child;
use crate::{MemoryFilter, MemoryItem, MemoryStore, Namespace, RecallBasedConfig, RecallStats};

async fn must<T>(future: impl Future<Output = crate::Result<T>>, what: &str) -> T {
    match future.await {
        Ok(value) => value,
        Err(error) => panic!("conformance: {what} failed: {error}"),
    }
}

fn at(second: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + second, 0)
        .single()
        .unwrap_or_default()
}

/// The victims by reading every item and its statistics.
async fn reference(
    store: &dyn MemoryStore,
    ns: &Namespace,
    count: usize,
    config: &RecallBasedConfig,
    now: DateTime<Utc>,
) -> Vec<String> {
    let items = must(store.list(&MemoryFilter::new(ns.exact())), "list").await;
    let mut ranked = Vec::with_capacity(items.len());
    for item in items {
        let stats = must(store.recall_stats(ns, &item.id), "recall_stats")
            .await
            .unwrap_or_default();
        ranked.push((stats.value(now, config), item.created_at, item.id));
    }
    ranked.sort_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| a.2.cmp(&b.2))
    });
    ranked
        .into_iter()
        .take(count)
        .map(|(_, _, id)| id)
        .collect()
}

/// Items never recalled (equal values, some created at the same second: ties by time, then
/// id), recalled once or often, long ago or lately, with equal statistics on different
/// items; asked for none, some, and more than there are, under two weightings.
pub(super) async fn least_valuable(store: &dyn MemoryStore, ns: &Namespace) {
    let now = at(30 * 86_400);
    let stats = |count: u64, total: f64, days_ago: Option<i64>| RecallStats {
        recall_count: count,
        total_score: total,
        last_recall_at: days_ago.map(|days| now - Duration::days(days)),
    };
    let fixtures: [(&str, i64, Option<RecallStats>); 12] = [
        ("n3", 5, None),
        ("n1", 5, None),
        ("n2", 2, None),
        ("n0", 9, None),
        ("old", 1, Some(stats(1, 0.9, Some(25)))),
        ("fresh", 3, Some(stats(1, 0.2, Some(0)))),
        ("often", 4, Some(stats(9, 4.5, Some(3)))),
        ("twin-b", 6, Some(stats(2, 1.0, Some(7)))),
        ("twin-a", 6, Some(stats(2, 1.0, Some(7)))),
        ("twin-c", 2, Some(stats(2, 1.0, Some(7)))),
        ("low", 8, Some(stats(4, 0.1, Some(12)))),
        ("high", 7, Some(stats(3, 2.9, Some(1)))),
    ];
    for (id, second, recall) in &fixtures {
        let item = MemoryItem::new(ns.clone(), format!("memory {id}"))
            .and_then(|item| item.with_id(*id))
            .map(|item| item.with_created_at(at(*second)))
            .unwrap_or_else(|error| panic!("conformance: building item {id}: {error}"));
        must(store.save(item), "save").await;
        if let Some(recall) = recall {
            must(store.set_recall_stats(ns, id, *recall), "set_recall_stats").await;
        }
    }
    let weighted = RecallBasedConfig {
        recall_weight: 0.0,
        score_weight: 1.0,
        recency_weight: 2.5,
        ..RecallBasedConfig::default()
    };
    for config in [RecallBasedConfig::default(), weighted] {
        for count in [0, 1, 5, 9, fixtures.len(), fixtures.len() + 3] {
            let Some(victims) = must(
                store.least_valuable(ns, count, &config, now),
                "least_valuable",
            )
            .await
            else {
                // The backend leaves the ranking to the evictor.
                return;
            };
            assert_eq!(
                victims,
                reference(store, ns, count, &config, now).await,
                "conformance: least_valuable({count}) names the lowest recall values first, \
                 ties by creation time then id"
            );
        }
    }
    let empty = child(ns, "empty");
    let none = must(
        store.least_valuable(&empty, 3, &RecallBasedConfig::default(), now),
        "least_valuable",
    )
    .await;
    assert!(
        none.is_none_or(|ids| ids.is_empty()),
        "an empty namespace has no victims"
    );
    must(store.clear(&ns.subtree()), "clear").await;
}
