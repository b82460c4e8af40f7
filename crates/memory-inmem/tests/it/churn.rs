//! A namespace kept under churn (the oldest memories deleted as new ones arrive, as an
//! eviction policy does) searches exactly as a store holding only the survivors: slots are
//! renumbered as removals free them, and nothing of a removed memory is left behind.

use chrono::{Duration, Utc};
use memory_core::{
    EndReason, Ended, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, RecallEvent,
    SearchQuery, TimeView,
};
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
    // Deleted ids are gone from the id index, and recall statistics still reach the right
    // memory after every renumbering.
    for gone in ["m00000", "m01001", "m02500"] {
        assert_eq!(churned.get(&ns, gone).await.unwrap(), None, "{gone}");
        assert_eq!(
            churned.recall_stats(&ns, gone).await.unwrap(),
            None,
            "{gone}"
        );
    }
    let events: Vec<RecallEvent> = survivors
        .iter()
        .step_by(7)
        .map(|survivor| RecallEvent {
            namespace: ns.clone(),
            id: survivor.id.clone(),
            score: 0.5,
            at: Utc::now(),
        })
        .collect();
    churned.record_recalls(&events).await.unwrap();
    for (i, survivor) in survivors.iter().enumerate() {
        let stats = churned.recall_stats(&ns, &survivor.id).await.unwrap();
        let count = stats.map(|stats| stats.recall_count);
        assert_eq!(count, Some(u64::from(i % 7 == 0)), "{}", survivor.id);
    }
}

/// Memory `i` with a kind, and an end or a validity end, that vary with `i` and `round`
/// (an update changes them).
fn varied(
    ns: &Namespace,
    i: usize,
    round: usize,
    now: chrono::DateTime<chrono::Utc>,
) -> MemoryItem {
    let mut item = MemoryItem::new(ns.clone(), text(i))
        .and_then(|item| item.with_id(format!("m{i:05}")))
        .expect("valid")
        .with_kind(MemoryKind::ALL[(i + round) % 4]);
    match (i + 2 * round) % 7 {
        0 => {
            item.ended = Some(Ended {
                at: now - Duration::hours(1),
                reason: EndReason::Retracted {
                    reason: "wrong".into(),
                },
            });
        }
        1 => {
            item = item
                .with_validity(None, Some(now - Duration::hours(1)))
                .unwrap()
        }
        2 => {
            item = item
                .with_validity(None, Some(now + Duration::hours(1)))
                .unwrap()
        }
        _ => {}
    }
    item
}

/// Whether `item` passes a filter of `kinds` (empty: all) and the time `view`, as the
/// filter's documentation states.
fn admitted(item: &MemoryItem, kinds: &[MemoryKind], view: TimeView) -> bool {
    (kinds.is_empty() || kinds.contains(&item.kind))
        && match view {
            TimeView::All => true,
            TimeView::Current(now) => {
                item.ended.is_none() && item.valid_until.is_none_or(|until| until > now)
            }
            TimeView::AsOf(_) => unreachable!("not asked"),
        }
}

/// Searches filtered by kind and by what is current (the filters a recall and a write's
/// self-match search make, decided on per-slot flags) return exactly the matching memories
/// that pass them, however often slots were freed, reused and renumbered, and after
/// updates that change a memory's kind, end or validity.
#[tokio::test]
async fn filtered_search_under_churn_returns_exactly_what_passes() {
    let ns = Namespace::parse("churn").unwrap();
    let store = InMemoryStore::new();
    let now = Utc::now();
    let window = 200;
    let mut live = std::collections::VecDeque::new();
    for i in 0..2_000 {
        store.save(varied(&ns, i, 0, now)).await.unwrap();
        live.push_back(i);
        // Every fifth write also rewrites a live memory with a different kind and end.
        if i % 5 == 0 && live.len() > 3 {
            let j = live[live.len() / 2];
            store.update(varied(&ns, j, i, now)).await.unwrap();
        }
        if live.len() > window {
            let oldest = live.pop_front().unwrap();
            assert!(store.delete(&ns, &format!("m{oldest:05}")).await.unwrap());
        }
    }
    let survivors = store.list(&MemoryFilter::new(ns.exact())).await.unwrap();
    assert_eq!(survivors.len(), window);
    let kind_sets: [&[MemoryKind]; 3] = [
        &[],
        &[
            MemoryKind::LongTerm,
            MemoryKind::Episodic,
            MemoryKind::Semantic,
        ],
        &[MemoryKind::ShortTerm],
    ];
    let mut checked = 0;
    for kinds in kind_sets {
        for view in [TimeView::All, TimeView::Current(now)] {
            for word in ["rust", "graph", "window"] {
                let filter = MemoryFilter::new(ns.exact())
                    .with_kinds(kinds.iter().copied())
                    .with_view(view);
                let query = SearchQuery::new(ns.exact(), word, 1_000).with_filter(filter);
                let mut found: Vec<String> = store
                    .search(&query)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|hit| hit.item.id.clone())
                    .collect();
                found.sort();
                let mut expected: Vec<String> = survivors
                    .iter()
                    .filter(|item| item.content.split(' ').any(|w| w == word))
                    .filter(|item| admitted(item, kinds, view))
                    .map(|item| item.id.clone())
                    .collect();
                expected.sort();
                assert_eq!(found, expected, "{word} {kinds:?} {view:?}");
                checked += expected.len();
            }
        }
    }
    assert!(
        checked > 100,
        "the filters let memories through ({checked})"
    );
}
