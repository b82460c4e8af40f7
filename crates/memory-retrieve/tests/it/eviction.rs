//! Eviction policies and decay, with a manual clock.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use memory_core::{
    Clock, DecayConfig, EvictionPolicy, ManualClock, MemoryFilter, MemoryItem, MemoryStore,
    Namespace, RecallBasedConfig,
};
use memory_inmem::InMemoryStore;
use memory_retrieve::{Memory, Remember, decay, evict, eviction_order};

use crate::instrumented::Instrumented;

fn t0() -> DateTime<Utc> {
    "2024-01-01T00:00:00Z".parse().unwrap()
}

async fn seeded(n: i64) -> (Arc<InMemoryStore>, Namespace) {
    let store = Arc::new(InMemoryStore::new());
    let ns = Namespace::parse("tenant").unwrap();
    for i in 0..n {
        let item = MemoryItem::new(ns.clone(), format!("memory number {i}"))
            .unwrap()
            .with_id(format!("m{i}"))
            .unwrap()
            .with_created_at(t0() + Duration::hours(i));
        store.save(item).await.unwrap();
    }
    (store, ns)
}

async fn ids(store: &InMemoryStore, ns: &Namespace) -> Vec<String> {
    store
        .list(&MemoryFilter::new(ns.exact()))
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect()
}

#[tokio::test]
async fn none_keeps_everything() {
    let (store, ns) = seeded(5).await;
    let report = evict(
        &*store,
        &ns.subtree(),
        &EvictionPolicy::None,
        t0() + Duration::days(999),
    )
    .await
    .unwrap();
    assert_eq!(report.evicted + report.expired, 0);
    assert_eq!(ids(&store, &ns).await.len(), 5);
}

#[tokio::test]
async fn ttl_expires_by_creation_time() {
    let (store, ns) = seeded(5).await;
    // now = t0 + 5h; ttl 3h: items created before t0 + 2h expire (m0, m1).
    let report = evict(
        &*store,
        &ns.subtree(),
        &EvictionPolicy::Ttl { ttl_secs: 3 * 3600 },
        t0() + Duration::hours(5),
    )
    .await
    .unwrap();
    assert_eq!(report.expired, 2);
    assert_eq!(ids(&store, &ns).await, ["m2", "m3", "m4"]);
}

/// A pass that expires a large namespace deletes it a group at a time, each group one
/// conditional delete, so a store's write lock is never held for the whole pass; every
/// memory expired is still deleted.
#[tokio::test]
async fn a_large_expiry_deletes_a_group_at_a_time() {
    let store = crate::instrumented::Instrumented::default();
    let ns = Namespace::parse("tenant").unwrap();
    let total = memory_retrieve::DELETE_GROUP * 2 + 500;
    let items: Vec<MemoryItem> = (0..total)
        .map(|i| {
            MemoryItem::new(ns.clone(), format!("memory number {i}"))
                .unwrap()
                .with_id(format!("m{i}"))
                .unwrap()
                .with_created_at(t0())
        })
        .collect();
    store.inner.save_many(items).await.unwrap();
    let report = evict(
        &store,
        &ns.subtree(),
        &EvictionPolicy::Ttl { ttl_secs: 3600 },
        t0() + Duration::days(1),
    )
    .await
    .unwrap();
    assert_eq!(report.expired, total);
    assert!(ids(&store.inner, &ns).await.is_empty());
    let sizes = store.conditional_deletes.lock().unwrap().clone();
    assert_eq!(
        sizes,
        [
            memory_retrieve::DELETE_GROUP,
            memory_retrieve::DELETE_GROUP,
            500
        ]
    );
}

#[tokio::test]
async fn capacity_keeps_the_newest() {
    let (store, ns) = seeded(6).await;
    let report = evict(
        &*store,
        &ns.subtree(),
        &EvictionPolicy::Capacity { max_items: 4 },
        t0(),
    )
    .await
    .unwrap();
    assert_eq!(report.evicted, 2);
    assert_eq!(ids(&store, &ns).await, ["m2", "m3", "m4", "m5"]);
    let other = Namespace::parse("tenant-b").unwrap();
    store
        .save(MemoryItem::new(other.clone(), "lonely").unwrap())
        .await
        .unwrap();
    evict(
        &*store,
        &memory_core::Scope::all(),
        &EvictionPolicy::Capacity { max_items: 1 },
        t0(),
    )
    .await
    .unwrap();
    assert_eq!(
        ids(&store, &other).await.len(),
        1,
        "capacity is per namespace"
    );
    assert_eq!(ids(&store, &ns).await, ["m5"]);
}

/// An end at `at` for `reason`.
fn ended(at: chrono::DateTime<chrono::Utc>, reason: memory_core::EndReason) -> memory_core::Ended {
    memory_core::Ended { at, reason }
}

/// A summary shares the time of the last memory folded into it, so an eviction by age can
/// take the summary and keep that source: the source's end would then name a memory that
/// no longer exists. An evicted memory takes the history it ends with it, transitively.
#[tokio::test]
async fn an_evicted_memory_takes_the_history_it_ends() {
    let (store, ns) = seeded(5).await;
    let folded_at = t0() + Duration::hours(3);
    let end = |mut item: MemoryItem, into: &str| {
        item.ended = Some(ended(
            folded_at,
            memory_core::EndReason::Consolidated { into: into.into() },
        ));
        item
    };
    // m2 and m3 are folded into "0sum", created with m3 and first by id at that time.
    let m2 = store.get(&ns, "m2").await.unwrap().unwrap();
    let m3 = store.get(&ns, "m3").await.unwrap().unwrap();
    let mut summary = MemoryItem::new(ns.clone(), "memory numbers two and three")
        .unwrap()
        .with_id("0sum")
        .unwrap()
        .with_created_at(folded_at);
    summary.supersedes = vec!["m2".into(), "m3".into()];
    store
        .save_many(vec![summary, end(m2, "0sum"), end(m3, "0sum")])
        .await
        .unwrap();
    // Six memories, capacity two: the four oldest by time, then id, are m0, m1, m2 and
    // 0sum, and 0sum takes m3 with it.
    let report = evict(
        &*store,
        &ns.subtree(),
        &EvictionPolicy::Capacity { max_items: 2 },
        t0(),
    )
    .await
    .unwrap();
    assert_eq!(ids(&store, &ns).await, ["m4"], "m3 went with its summary");
    assert_eq!(report.evicted, 5);

    // A pinned source stays (pinned memories are exempt), and so does the summary it
    // names as its successor: evicted, it would leave the source naming a memory that is
    // gone. A current memory named by a summary is not history: only ended memories go
    // along.
    let (store, ns) = seeded(2).await;
    let mut m0 = store.get(&ns, "m0").await.unwrap().unwrap();
    m0.ended = Some(ended(
        t0(),
        memory_core::EndReason::Consolidated {
            into: "0sum".into(),
        },
    ));
    let m0 = m0.with_pinned(true);
    let mut summary = MemoryItem::new(ns.clone(), "a summary")
        .unwrap()
        .with_id("0sum")
        .unwrap()
        .with_created_at(t0() - Duration::hours(1));
    summary.supersedes = vec!["m0".into(), "m1".into()];
    store.save_many(vec![summary, m0]).await.unwrap();
    let report = evict(
        &*store,
        &ns.subtree(),
        &EvictionPolicy::Capacity { max_items: 2 },
        t0(),
    )
    .await
    .unwrap();
    assert_eq!(ids(&store, &ns).await, ["0sum", "m0", "m1"]);
    assert_eq!(report.evicted, 0, "the oldest is held by its pinned source");

    // The same for a version a memory superseded: pinned, it keeps its successor.
    let (store, ns) = seeded(3).await;
    let mut m0 = store.get(&ns, "m0").await.unwrap().unwrap();
    m0.ended = Some(ended(
        t0(),
        memory_core::EndReason::Superseded { by: "m1".into() },
    ));
    let mut m1 = store.get(&ns, "m1").await.unwrap().unwrap();
    m1.supersedes = vec!["m0".into()];
    store
        .save_many(vec![m0.with_pinned(true), m1])
        .await
        .unwrap();
    evict(
        &*store,
        &ns.subtree(),
        &EvictionPolicy::Capacity { max_items: 1 },
        t0(),
    )
    .await
    .unwrap();
    let left = ids(&store, &ns).await;
    assert!(
        left.contains(&"m1".to_owned()),
        "the successor of a pinned version stays: {left:?}"
    );

    // A link the older memory does not confirm (it ended into another) is no history.
    let (store, ns) = seeded(3).await;
    let mut m2 = store.get(&ns, "m2").await.unwrap().unwrap();
    m2.ended = Some(ended(
        t0(),
        memory_core::EndReason::Superseded {
            by: "elsewhere".into(),
        },
    ));
    let mut m0 = store.get(&ns, "m0").await.unwrap().unwrap();
    m0.supersedes = vec!["m2".into()];
    store.save_many(vec![m0, m2]).await.unwrap();
    evict(
        &*store,
        &ns.subtree(),
        &EvictionPolicy::Capacity { max_items: 2 },
        t0(),
    )
    .await
    .unwrap();
    assert_eq!(
        ids(&store, &ns).await,
        ["m1", "m2"],
        "m2 is not m0's history"
    );
}

#[tokio::test]
async fn recall_based_evicts_least_valuable_first() {
    let (store, ns) = seeded(5).await;
    let now = t0() + Duration::days(10);
    // m3: recalled often and well; m1: once, recently, low score; m4: once, long ago, high score.
    for _ in 0..5 {
        store.record_recall(&ns, "m3", 0.9, now).await.unwrap();
    }
    store.record_recall(&ns, "m1", 0.2, now).await.unwrap();
    store
        .record_recall(&ns, "m4", 0.9, now - Duration::days(9))
        .await
        .unwrap();
    let config = RecallBasedConfig {
        max_items: 2,
        ..RecallBasedConfig::default()
    };
    // values: m0, m2 never recalled = 0 (older first); m1 = ln2*0.3 + 0.2*0.5 + 1*0.2 = 0.508;
    // m4 = ln2*0.3 + 0.9*0.5 + 0.1*0.2 = 0.678; m3 = ln6*0.3 + 0.45 + 0.2 = 1.19.
    let order: Vec<String> = eviction_order(&*store, &ns, &config, now)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(order, ["m0", "m2", "m1"]);
    let report = evict(
        &*store,
        &ns.subtree(),
        &EvictionPolicy::RecallBased(config),
        now,
    )
    .await
    .unwrap();
    assert_eq!(report.evicted, 3);
    assert_eq!(ids(&store, &ns).await, ["m3", "m4"]);
}

#[tokio::test]
async fn hybrid_runs_ttl_then_capacity() {
    let (store, ns) = seeded(6).await;
    let policy = EvictionPolicy::Hybrid {
        ttl_secs: Some(4 * 3600),
        max_items: Some(2),
        recall: None,
    };
    let report = evict(&*store, &ns.subtree(), &policy, t0() + Duration::hours(5))
        .await
        .unwrap();
    assert_eq!(report.expired, 1, "m0 is older than 4h");
    assert_eq!(report.evicted, 3);
    assert_eq!(ids(&store, &ns).await, ["m4", "m5"]);
}

#[tokio::test]
async fn invalid_policies_are_rejected() {
    let (store, ns) = seeded(1).await;
    for (policy, field) in [
        (EvictionPolicy::Ttl { ttl_secs: 0 }, "ttl_secs"),
        (EvictionPolicy::Capacity { max_items: 0 }, "max_items"),
        // Two capacities, one of which would be ignored.
        (
            EvictionPolicy::Hybrid {
                ttl_secs: None,
                max_items: Some(5),
                recall: Some(RecallBasedConfig::default()),
            },
            "max_items",
        ),
    ] {
        match evict(&*store, &ns.subtree(), &policy, t0()).await {
            Err(memory_core::MemoryError::InvalidInput { field: named, .. }) => {
                assert_eq!(named, field, "{policy:?}");
            }
            other => panic!("{policy:?}: {other:?}"),
        }
    }
    for events in [0, memory_retrieve::MAX_RECALL_BATCH + 1, usize::MAX] {
        let error = Memory::builder()
            .recall_batch(events)
            .build()
            .expect_err("a batch of no events, or of more than may wait");
        assert!(
            matches!(&error, memory_core::MemoryError::InvalidInput { field, .. } if field == "recall_batch"),
            "{events}: {error}"
        );
    }
    // The largest batch allowed records a recall without writing it yet.
    let most = Memory::builder()
        .recall_batch(memory_retrieve::MAX_RECALL_BATCH)
        .build()
        .unwrap();
    most.remember(&ns, "a batch as large as allowed")
        .await
        .unwrap();
    assert!(
        !most
            .recall(&ns.exact(), "batch")
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        ids(&store, &ns).await.len(),
        1,
        "nothing is lost on a rejected policy"
    );
}

#[tokio::test]
async fn decay_lowers_importance_and_forgets_below_threshold() {
    let store = Arc::new(InMemoryStore::new());
    let ns = Namespace::parse("d").unwrap();
    let high = MemoryItem::new(ns.clone(), "important")
        .unwrap()
        .with_id("high")
        .unwrap()
        .with_importance(0.8)
        .unwrap()
        .with_created_at(t0());
    let low = MemoryItem::new(ns.clone(), "trivial")
        .unwrap()
        .with_id("low")
        .unwrap()
        .with_importance(0.06)
        .unwrap()
        .with_created_at(t0());
    store.save(high).await.unwrap();
    store.save(low).await.unwrap();
    let config = DecayConfig {
        daily_rate: 0.1,
        min_threshold: 0.05,
        grace_period_days: 2,
    };
    let report = decay(
        &*store,
        &ns.subtree(),
        &config,
        t0() + Duration::days(1),
        true,
    )
    .await
    .unwrap();
    assert_eq!(
        report.decayed + report.evicted,
        0,
        "nothing decays in the grace period"
    );
    let report = decay(
        &*store,
        &ns.subtree(),
        &config,
        t0() + Duration::days(4),
        true,
    )
    .await
    .unwrap();
    assert_eq!(report.decayed, 1);
    assert_eq!(report.evicted, 1, "0.06 * 0.81 is under the threshold");
    let item = store.get(&ns, "high").await.unwrap().unwrap();
    assert!(
        (item.importance - 0.8 * 0.81).abs() < 1e-4,
        "{}",
        item.importance
    );
    let again = decay(
        &*store,
        &ns.subtree(),
        &config,
        t0() + Duration::days(4),
        true,
    )
    .await
    .unwrap();
    assert_eq!(again.decayed, 0, "decay is idempotent for the same time");
    store
        .record_recall(&ns, "high", 1.0, t0() + Duration::days(5))
        .await
        .unwrap();
    decay(
        &*store,
        &ns.subtree(),
        &config,
        t0() + Duration::days(6),
        true,
    )
    .await
    .unwrap();
    let item = store.get(&ns, "high").await.unwrap().unwrap();
    assert!(
        (item.importance - 0.8 * 0.81).abs() < 1e-4,
        "a recall restarts the grace period"
    );
}

mod properties {
    //! Eviction bounds: after any pass, a namespace holds at most its capacity, and what
    //! was evicted is exactly what the policy's order puts first.

    use std::sync::Arc;

    use std::collections::HashSet;

    use chrono::Duration;
    use memory_core::{
        EndReason, Ended, EvictionPolicy, MemoryFilter, MemoryItem, MemoryStore, Namespace,
        RecallBasedConfig,
    };
    use memory_inmem::InMemoryStore;
    use memory_retrieve::evict;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Memories that end earlier ones (as a new version or a consolidation summary
        /// does), some pinned, under a capacity: a pass deletes the oldest unpinned
        /// memories beyond the capacity and, transitively, the unpinned ended memories each
        /// names in `supersedes`, and nothing else, keeping those whose history holds a
        /// pinned memory; no ended memory, pinned or not, is left naming a successor that
        /// is gone.
        #[test]
        fn eviction_takes_the_history_it_ends(
            memories in proptest::collection::vec(
                (0i64..500, proptest::collection::vec(0usize..40, 0..4), 0u8..10),
                1..40,
            ),
            capacity in 1usize..30,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            runtime.block_on(async {
                let store = Arc::new(InMemoryStore::new());
                let ns = Namespace::parse("history").unwrap();
                let id = |i: usize| format!("m{i:03}");
                let mut items: Vec<MemoryItem> = Vec::new();
                for (i, (minute, ends, pin)) in memories.iter().enumerate() {
                    let mut item = MemoryItem::new(ns.clone(), format!("memory {i}")).unwrap()
                        .with_id(id(i)).unwrap()
                        .with_created_at(super::t0() + Duration::minutes(*minute))
                        .with_pinned(*pin == 0);
                    // It ends some earlier memories that are still current.
                    for earlier in ends.iter().filter(|earlier| **earlier < i) {
                        if items[*earlier].ended.is_none() {
                            items[*earlier].ended = Some(Ended {
                                at: super::t0(),
                                reason: EndReason::Consolidated { into: id(i) },
                            });
                            item.supersedes.push(id(*earlier));
                        }
                    }
                    items.push(item);
                }
                store.save_many(items.clone()).await.unwrap();
                // The model: the oldest unpinned beyond the capacity, each with its history
                // (the ended, unpinned memories whose line of successors reaches it before
                // another of them); one whose history ends a pinned memory is kept with
                // it, and so is one that a kept memory was ended into.
                let mut order: Vec<&MemoryItem> = items.iter().collect();
                order.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
                let excess = items.len().saturating_sub(capacity);
                let victims: HashSet<String> = order.iter()
                    .filter(|item| !item.is_pinned())
                    .take(excess)
                    .map(|item| item.id.clone())
                    .collect();
                let by_id = |id: &str| &items[id[1..].parse::<usize>().unwrap()];
                let successor = |item: &MemoryItem| match &item.ended {
                    Some(Ended { reason: EndReason::Consolidated { into }, .. }) => Some(into.clone()),
                    _ => None,
                };
                // The victim whose history each memory is.
                let tree = |item: &MemoryItem| -> Option<String> {
                    let mut at = item;
                    loop {
                        if victims.contains(&at.id) {
                            return Some(at.id.clone());
                        }
                        if at.is_pinned() {
                            return None;
                        }
                        at = by_id(&successor(at)?);
                    }
                };
                let mut kept: HashSet<String> = items.iter()
                    .filter(|item| item.is_pinned())
                    .filter_map(|item| tree(by_id(&successor(item)?)))
                    .collect();
                let mut grew = true;
                while grew {
                    grew = false;
                    for item in &items {
                        if tree(item).is_some_and(|root| kept.contains(&root))
                            && let Some(next) = successor(item).and_then(|next| tree(by_id(&next)))
                            && kept.insert(next)
                        {
                            grew = true;
                        }
                    }
                }
                let gone: HashSet<String> = items.iter()
                    .filter(|item| tree(item).is_some_and(|root| !kept.contains(&root)))
                    .map(|item| item.id.clone())
                    .collect();
                let report = evict(&*store, &ns.subtree(), &EvictionPolicy::Capacity { max_items: capacity }, super::t0()).await.unwrap();
                let left = store.list(&MemoryFilter::new(ns.exact())).await.unwrap();
                let mut expected: Vec<&str> = items.iter().map(|item| item.id.as_str()).filter(|id| !gone.contains(*id)).collect();
                expected.sort();
                let mut kept: Vec<&str> = left.iter().map(|item| item.id.as_str()).collect();
                kept.sort();
                assert_eq!(kept, expected);
                assert_eq!(report.evicted, gone.len());
                let ids: HashSet<&str> = kept.iter().copied().collect();
                for item in &left {
                    if let Some(Ended { reason: EndReason::Consolidated { into }, .. }) = &item.ended {
                        assert!(ids.contains(into.as_str()), "{} names {into}, which is gone", item.id);
                    }
                }
            });
        }

        #[test]
        fn passes_respect_capacity_and_order(
            times in proptest::collection::vec(0i64..1000, 1..60),
            recalls in proptest::collection::vec((0usize..60, 0u8..=10), 0..40),
            capacity in 1usize..30,
            by_value in any::<bool>(),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            runtime.block_on(async {
                let store = Arc::new(InMemoryStore::new());
                let ns = Namespace::parse("bounded").unwrap();
                let now = super::t0() + Duration::days(30);
                for (i, minute) in times.iter().enumerate() {
                    let item = MemoryItem::new(ns.clone(), format!("memory {i}")).unwrap()
                        .with_id(format!("m{i:03}")).unwrap()
                        .with_created_at(super::t0() + Duration::minutes(*minute));
                    store.save(item).await.unwrap();
                }
                for (target, score) in &recalls {
                    let id = format!("m{:03}", target % times.len());
                    store.record_recall(&ns, &id, f32::from(*score) / 10.0, now - Duration::hours(i64::from(*score))).await.unwrap();
                }
                let config = RecallBasedConfig { max_items: capacity, ..RecallBasedConfig::default() };
                let policy = if by_value { EvictionPolicy::RecallBased(config) } else { EvictionPolicy::Capacity { max_items: capacity } };
                // The expected survivors, from the policy's order computed independently.
                let mut all = store.list(&MemoryFilter::new(ns.exact())).await.unwrap();
                if by_value {
                    let mut valued = Vec::new();
                    for item in all.drain(..) {
                        let stats = store.recall_stats(&ns, &item.id).await.unwrap().unwrap_or_default();
                        valued.push((stats.value(now, &config), item));
                    }
                    valued.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.created_at.cmp(&b.1.created_at)).then_with(|| a.1.id.cmp(&b.1.id)));
                    all = valued.into_iter().map(|(_, item)| item).collect();
                }
                let evicted_count = all.len().saturating_sub(capacity);
                let mut expected: Vec<String> = all[evicted_count..].iter().map(|item| item.id.clone()).collect();
                expected.sort();
                let report = evict(&*store, &ns.subtree(), &policy, now).await.unwrap();
                let mut left: Vec<String> = store.list(&MemoryFilter::new(ns.exact())).await.unwrap().into_iter().map(|i| i.id).collect();
                left.sort();
                assert!(left.len() <= capacity, "capacity {capacity} holds {}", left.len());
                assert_eq!(report.evicted, evicted_count);
                assert_eq!(left, expected, "evicted in the policy's order");
            });
        }
    }
}

/// Decay configured on the builder runs in `maintain`: importance falls as the formula says
/// once the grace period is over, a recall reinforces it, and a memory that falls under the
/// threshold is forgotten.
#[tokio::test]
async fn decay_through_memory_maintain() {
    let clock = Arc::new(ManualClock::new("2024-01-01T00:00:00Z".parse().unwrap()));
    let config = DecayConfig {
        daily_rate: 0.1,
        min_threshold: 0.2,
        grace_period_days: 2,
    };
    let memory = Memory::builder()
        .clock(clock.clone())
        .decay(config)
        .build()
        .unwrap();
    let ns = Namespace::parse("decay").unwrap();
    let fading = memory
        .remember_with(Remember::new(ns.clone(), "a fading fact").importance(0.8))
        .await
        .unwrap()
        .id;
    let lasting = memory
        .remember_with(Remember::new(ns.clone(), "a lasting fact").importance(0.9))
        .await
        .unwrap()
        .id;

    // Within the grace period nothing changes.
    clock.advance(chrono::Duration::days(2));
    let report = memory.maintain(&ns.subtree()).await.unwrap();
    assert_eq!((report.decayed, report.evicted), (0, 0));

    // Five days past it: 0.8 × 0.9^5.
    clock.advance(chrono::Duration::days(5));
    let report = memory.maintain(&ns.subtree()).await.unwrap();
    assert_eq!((report.decayed, report.evicted), (2, 0));
    let item = memory.store().get(&ns, &fading).await.unwrap().unwrap();
    let expected = 0.8 * 0.9f64.powi(5);
    assert!(
        (f64::from(item.importance) - expected).abs() < 1e-5,
        "{}",
        item.importance
    );
    // Idempotent for a given time.
    let again = memory.maintain(&ns.subtree()).await.unwrap();
    assert_eq!(again.decayed, 0);

    // The lasting fact is accessed (reinforced) today; eleven more days take the fading one
    // under 0.2 (0.8 × 0.9^16 ≈ 0.15), and it is forgotten.
    let mut reinforced = memory.store().get(&ns, &lasting).await.unwrap().unwrap();
    reinforced.last_accessed = Some(clock.now());
    memory.store().update(reinforced).await.unwrap();
    clock.advance(chrono::Duration::days(11));
    let report = memory.maintain(&ns.subtree()).await.unwrap();
    assert_eq!(report.evicted, 1);
    assert!(memory.store().get(&ns, &fading).await.unwrap().is_none());
    let lasting = memory.store().get(&ns, &lasting).await.unwrap().unwrap();
    // Reinforced at day 7 from its decayed importance: 0.9 × 0.9^5, then 11 days with 2 of
    // grace: × 0.9^9.
    let expected = 0.9 * 0.9f64.powi(5) * 0.9f64.powi(9);
    assert!(
        (f64::from(lasting.importance) - expected).abs() < 1e-4,
        "{} vs {expected}",
        lasting.importance
    );
}

/// A memory decaying by `config`, on a manual clock at 2024-01-01.
fn decaying(config: DecayConfig) -> (Arc<ManualClock>, Memory) {
    let clock = Arc::new(ManualClock::new(t0()));
    let memory = Memory::builder()
        .clock(clock.clone())
        .decay(config)
        .build()
        .unwrap();
    (clock, memory)
}

/// An importance set by hand decays from then: a pass after the edit starts from the value
/// set, not from the base an earlier pass stored.
#[tokio::test]
async fn an_importance_set_by_hand_decays_from_then() {
    let (clock, memory) = decaying(DecayConfig::default());
    let ns = Namespace::parse("decay").unwrap();
    let id = memory
        .remember(&ns, "the passport is in the blue folder")
        .await
        .unwrap();
    clock.advance(Duration::days(30));
    memory.maintain(&ns.subtree()).await.unwrap();
    let decayed = memory.store().get(&ns, &id).await.unwrap().unwrap();
    assert!(decayed.importance < 0.45, "{}", decayed.importance);

    memory
        .update(
            &ns,
            &id,
            memory_retrieve::MemoryUpdate::new().importance(1.0),
        )
        .await
        .unwrap();
    clock.advance(Duration::days(1));
    memory.maintain(&ns.subtree()).await.unwrap();
    let item = memory.store().get(&ns, &id).await.unwrap().unwrap();
    assert!((item.importance - 1.0).abs() < 1e-6, "{}", item.importance);
    // Past the grace period it decays from 1.
    clock.advance(Duration::days(10));
    memory.maintain(&ns.subtree()).await.unwrap();
    let item = memory.store().get(&ns, &id).await.unwrap().unwrap();
    let expected = 0.99f64.powi(4);
    assert!(
        (f64::from(item.importance) - expected).abs() < 1e-4,
        "{} vs {expected}",
        item.importance
    );
}

/// A decay state a caller wrote into the metadata (the key is reserved, not refused) never
/// stops a pass: a base outside [0, 1] is read as its bound, and the other memories of the
/// scope decay and expire as before.
#[tokio::test]
async fn a_decay_state_written_by_a_caller_never_stops_maintenance() {
    let (clock, memory) = decaying(DecayConfig::default());
    let ns = Namespace::parse("decay").unwrap();
    let odd = memory
        .remember_with(
            Remember::new(ns.clone(), "hello there").metadata(serde_json::json!({
                "_decay": {"base": 5.0, "since": "2100-01-01T00:00:00Z"}
            })),
        )
        .await
        .unwrap()
        .id;
    let plain = memory.remember(&ns, "an ordinary note").await.unwrap();
    clock.advance(Duration::days(30));
    let report = memory.maintain(&ns.subtree()).await.unwrap();
    assert_eq!(report.decayed, 2, "{report:?}");
    let odd = memory.store().get(&ns, &odd).await.unwrap().unwrap();
    assert!((odd.importance - 1.0).abs() < 1e-6, "{}", odd.importance);
    let plain = memory.store().get(&ns, &plain).await.unwrap().unwrap();
    assert!(plain.importance < 0.5, "{}", plain.importance);
}

/// Scheduled maintenance expires what its policy says without anyone calling `maintain`,
/// reports each pass, and stops cleanly: no pass runs after `stop` returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_maintenance_runs_and_stops() {
    let clock = Arc::new(ManualClock::new("2024-01-01T00:00:00Z".parse().unwrap()));
    let memory = Arc::new(
        Memory::builder()
            .clock(clock.clone())
            .eviction(memory_core::EvictionConfig {
                policy: EvictionPolicy::Ttl { ttl_secs: 3_600 },
                check_interval: 1_000,
            })
            .build()
            .unwrap(),
    );
    let ns = Namespace::parse("scheduled").unwrap();
    for i in 0..5 {
        memory.remember(&ns, &format!("note {i}")).await.unwrap();
    }
    clock.advance(Duration::hours(2));
    // A pass every 100 ms: the first runs at once, and the watch keeps only the latest
    // report, so the wait must see the first before the second replaces it (at 5 ms, a
    // loaded machine saw the second pass's report, which expired nothing).
    let mut handle = memory.spawn_maintenance(std::time::Duration::from_millis(100), ns.subtree());
    let first = handle.wait_for(1).await.expect("a pass ran");
    assert_eq!(first.passes, 1, "the first pass's report");
    assert_eq!(first.report.map(|r| r.expired), Some(5));
    assert_eq!(memory.store().count(&ns.subtree()).await.unwrap(), 0);
    let later = handle.wait_for(3).await.expect("passes go on");
    assert!(later.passes >= 3);
    // `stop` returns once the task has ended (a pass under way finishes first), so the
    // memory is no longer shared with it.
    handle.stop().await;
    assert_eq!(Arc::strong_count(&memory), 1, "the task is gone");
}

/// Decay never deletes conversation messages: short-term memories are exempt, however old,
/// while long-term ones of the same age decay and are forgotten.
#[tokio::test]
async fn decay_spares_conversation_messages() {
    let clock = Arc::new(ManualClock::new("2024-01-01T00:00:00Z".parse().unwrap()));
    let memory = Memory::builder()
        .clock(clock.clone())
        .decay(DecayConfig {
            daily_rate: 0.5,
            min_threshold: 0.2,
            grace_period_days: 0,
        })
        .build()
        .unwrap();
    let session = Namespace::parse("user/session-1").unwrap();
    let conversation = memory
        .conversation(
            session.clone(),
            memory_retrieve::ConversationConfig::default(),
        )
        .await
        .unwrap();
    for i in 0..5 {
        conversation
            .add_message(memory_retrieve::Message::new(
                memory_retrieve::Role::User,
                format!("message {i}"),
            ))
            .await
            .unwrap();
    }
    memory
        .remember(&session, "a long-term note of the same age")
        .await
        .unwrap();
    clock.advance(Duration::days(30));
    let report = memory.maintain(&session.subtree()).await.unwrap();
    assert_eq!(report.evicted, 1, "the long-term note decayed away");
    assert_eq!(conversation.get_history().await.unwrap().len(), 5);
}

/// Memories pinned among the oldest or the least valuable are skipped without reading the
/// whole namespace (or each memory's statistics): a capacity pass reads pages from the
/// oldest, a recall-based pass asks the store's ranking for more. The victims are those of
/// the namespace without its pinned memories.
#[tokio::test]
async fn pinned_victims_are_skipped_without_reading_everything() {
    let ns = Namespace::parse("tenant").unwrap();
    let now = t0() + Duration::days(30);
    let seed = |store: Arc<Instrumented>| {
        let ns = ns.clone();
        async move {
            for i in 0..200 {
                let item = MemoryItem::new(ns.clone(), format!("memory number {i}"))
                    .unwrap()
                    .with_id(format!("m{i:03}"))
                    .unwrap()
                    .with_created_at(t0() + Duration::hours(i))
                    // The oldest 30 and every seventh one after them are pinned.
                    .with_pinned(i < 30 || i % 7 == 0);
                store.save(item).await.unwrap();
            }
            // Recalls make the newest memories the least valuable: the least valuable
            // unpinned ones are not the oldest.
            for i in 0..120 {
                store
                    .inner
                    .record_recall(&ns, &format!("m{i:03}"), 0.9, now)
                    .await
                    .unwrap();
            }
        }
    };
    let unpinned = |ids: Vec<String>| -> Vec<String> {
        ids.into_iter()
            .filter(|id| {
                let i: usize = id[1..].parse().unwrap();
                !(i < 30 || i.is_multiple_of(7))
            })
            .collect()
    };
    // By age: the 50 oldest unpinned go.
    let store = Arc::new(Instrumented::default());
    seed(Arc::clone(&store)).await;
    let before = ids(&store.inner, &ns).await;
    let policy = EvictionPolicy::Capacity { max_items: 150 };
    let report = evict(&*store, &ns.subtree(), &policy, now).await.unwrap();
    assert_eq!(report.evicted, 50);
    let gone: Vec<String> = unpinned(before.clone()).into_iter().take(50).collect();
    let left = ids(&store.inner, &ns).await;
    assert_eq!(
        left,
        before
            .iter()
            .filter(|id| !gone.contains(id))
            .cloned()
            .collect::<Vec<_>>()
    );
    assert_eq!(
        store.whole_listings(),
        0,
        "no listing read the whole namespace"
    );
    // By recall value: the 50 least valuable unpinned go, as the full ranking says.
    let store = Arc::new(Instrumented::default());
    seed(Arc::clone(&store)).await;
    let config = RecallBasedConfig {
        max_items: 150,
        ..RecallBasedConfig::default()
    };
    let expected: Vec<String> = eviction_order(&store.inner, &ns, &config, now)
        .await
        .unwrap()
        .into_iter()
        .map(|item| item.id)
        .collect();
    assert_eq!(expected.len(), 50);
    assert!(
        expected.iter().any(|id| id.as_str() >= "m120"),
        "the newest are among the least valuable: {expected:?}"
    );
    let report = evict(
        &*store,
        &ns.subtree(),
        &EvictionPolicy::RecallBased(config),
        now,
    )
    .await
    .unwrap();
    assert_eq!(report.evicted, 50);
    let left = ids(&store.inner, &ns).await;
    assert!(expected.iter().all(|id| !left.contains(id)), "{left:?}");
    assert_eq!(left.len(), 150);
    assert_eq!(
        store.whole_listings(),
        0,
        "no listing read the whole namespace"
    );
    assert_eq!(store.stats_reads(), 0);
}

/// A write dropped while its eviction pass waits on the store (a client gone, a timeout)
/// leaves the namespace to the next writes: they run their passes and keep it within its
/// capacity, as if the dropped pass had failed.
#[tokio::test]
async fn a_write_dropped_mid_pass_leaves_later_writes_their_passes() {
    let store = Arc::new(Instrumented::stalling_counts(1));
    let capacity = 5;
    let memory = Memory::builder()
        .store(store.clone())
        .eviction(memory_core::EvictionConfig {
            policy: EvictionPolicy::Capacity {
                max_items: capacity,
            },
            check_interval: 1_000,
        })
        .build()
        .unwrap();
    let ns = Namespace::parse("dropped").unwrap();
    // The first write's pass asks for the count, which never comes: the write is dropped.
    let first = memory.remember(&ns, "note zero");
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(50), first)
            .await
            .is_err(),
        "the pass waits on the stalled count"
    );
    for i in 1..=capacity + 10 {
        memory.remember(&ns, &format!("note {i}")).await.unwrap();
    }
    let left = store.inner.count(&ns.exact()).await.unwrap();
    assert!(
        left <= capacity,
        "{left} memories kept of at most {capacity}"
    );
    let report = memory.maintain(&ns.subtree()).await.unwrap();
    assert_eq!(
        report.failed_write_passes, 1,
        "the dropped pass counts as failed"
    );
}

/// A write's eviction pass ranks on the recalls still batched: a memory just recalled is not
/// taken for one never recalled (and evicted first, as the oldest on a tie).
#[tokio::test]
async fn a_write_pass_counts_the_recalls_not_yet_written() {
    let memory = Memory::builder()
        .eviction(memory_core::EvictionConfig {
            policy: EvictionPolicy::RecallBased(RecallBasedConfig {
                max_items: 3,
                ..RecallBasedConfig::default()
            }),
            check_interval: 100_000,
        })
        .recall_batch(64)
        .build()
        .unwrap();
    let ns = Namespace::parse("pending").unwrap();
    let recalled = memory
        .remember(&ns, "alpha apples are crisp")
        .await
        .unwrap();
    for text in ["bravo bananas", "charlie cherries"] {
        memory.remember(&ns, text).await.unwrap();
    }
    let found = memory.recall(&ns.exact(), "alpha apples").await.unwrap();
    assert_eq!(found.items[0].record.id(), recalled);
    memory.remember(&ns, "delta dates").await.unwrap();
    assert!(
        memory.store().get(&ns, &recalled).await.unwrap().is_some(),
        "the memory just recalled stays"
    );
    assert_eq!(memory.store().count(&ns.exact()).await.unwrap(), 3);
}

/// A batch counts its writes per namespace at once: one eviction pass for the batch,
/// which ends within the capacity, where each request counted alone ran a pass per
/// sixteenth of the capacity written.
#[tokio::test]
async fn a_batch_runs_one_pass_per_namespace() {
    let store = Arc::new(Instrumented::default());
    let memory = Memory::builder()
        .store(store.clone())
        .eviction(memory_core::EvictionConfig {
            policy: EvictionPolicy::Capacity { max_items: 160 },
            check_interval: 100_000,
        })
        .build()
        .unwrap();
    let ns = Namespace::parse("batch").unwrap();
    let other = Namespace::parse("other").unwrap();
    let first: Vec<Remember> = (0..160)
        .map(|n| Remember::new(ns.clone(), format!("entry number {n} of the first load")))
        .collect();
    memory.remember_many(first).await.unwrap();
    let (counted, listed) = (store.counts(), store.listings().len());
    let second: Vec<Remember> = (0..100)
        .flat_map(|n| {
            [
                Remember::new(ns.clone(), format!("entry number {n} of the second load")),
                Remember::new(other.clone(), format!("note {n} elsewhere")),
            ]
        })
        .collect();
    memory.remember_many(second).await.unwrap();
    // A pass counts its namespace first: one for each namespace written, the first pass of
    // `other` included.
    assert_eq!(store.counts() - counted, 2, "one pass per namespace");
    assert_eq!(
        store.listings().len() - listed,
        1,
        "one read of the victims"
    );
    assert_eq!(memory.store().count(&ns.exact()).await.unwrap(), 150);
    assert_eq!(memory.store().count(&other.exact()).await.unwrap(), 100);
}

/// A maintenance pass writes its decays, compressions and consolidations a batch at a time:
/// a few conditional writes (each one transaction and one sync on SQLite) for hundreds of
/// memories, not one per memory.
#[tokio::test]
async fn maintenance_writes_its_edits_a_batch_at_a_time() {
    const MEMORIES: usize = 600;
    let store = Arc::new(Instrumented::default());
    let ns = Namespace::parse("batched").unwrap();
    let sentence = |n: usize| {
        format!(
            "On day {n} the team met about topic{} and agreed on a plan. Nobody liked the \
             long agenda of item{} much. The notes went to the archive of project{} later. \
             Everyone went home early after lunch with the visitors from branch{}.",
            n % 37,
            n % 11,
            n % 13,
            n % 7
        )
    };
    let items: Vec<MemoryItem> = (0..MEMORIES)
        .map(|n| {
            MemoryItem::new(ns.clone(), sentence(n))
                .unwrap()
                .with_id(format!("m{n:04}"))
                .unwrap()
                .with_kind(if n % 2 == 0 {
                    memory_core::MemoryKind::Episodic
                } else {
                    memory_core::MemoryKind::LongTerm
                })
                .with_metadata(serde_json::json!({ "session": format!("s{}", n / 12) }))
                .unwrap()
                .with_created_at(t0() + Duration::minutes(n as i64))
        })
        .collect();
    store.inner.save_many(items).await.unwrap();
    let memory = Memory::builder()
        .store(store.clone() as Arc<dyn MemoryStore>)
        .clock(Arc::new(ManualClock::new(t0() + Duration::days(60))))
        .decay(DecayConfig::default())
        .compression(memory_retrieve::CompressionConfig {
            max_tokens: 24,
            ..memory_retrieve::CompressionConfig::default()
        })
        .consolidation(memory_retrieve::ConsolidationConfig::default())
        .build()
        .unwrap();
    let report = memory.maintain(&ns.subtree()).await.unwrap();
    assert_eq!(
        (
            report.decayed,
            report.compressed,
            report.consolidated,
            report.summaries
        ),
        (MEMORIES, MEMORIES, MEMORIES / 2, MEMORIES / 12),
        "{report:?}"
    );
    let writes = store.conditional_writes();
    assert_eq!(
        writes.iter().sum::<usize>(),
        2 * MEMORIES + MEMORIES / 2 + MEMORIES / 12,
        "every memory decayed, compressed and consolidated, and each summary, written once"
    );
    assert!(
        writes.len() <= 10,
        "{} conditional writes for {MEMORIES} memories, the first {:?}",
        writes.len(),
        &writes[..writes.len().min(12)]
    );
}

/// A memory the decay's edit would take past a limit (its metadata as large as allowed, and
/// the decay state added) is left as it is, and the rest of its batch decays: a batch is
/// checked whole before any of it is written, so the one edit would have refused them all,
/// at every pass.
#[tokio::test]
async fn an_edit_past_a_limit_leaves_its_batch_to_decay() {
    let (store, ns) = seeded(10).await;
    // The longest text a metadata value may hold.
    let fits = |len: usize| {
        memory_core::backend::validate_metadata(&serde_json::json!({ "blob": "x".repeat(len) }))
            .is_ok()
    };
    let (mut low, mut high) = (0, memory_core::MAX_METADATA_BYTES);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if fits(mid) { low = mid } else { high = mid - 1 }
    }
    let full = MemoryItem::new(ns.clone(), "memory number 99")
        .unwrap()
        .with_id("full")
        .unwrap()
        .with_metadata(serde_json::json!({ "blob": "x".repeat(low) }))
        .unwrap()
        .with_created_at(t0());
    store.save(full).await.unwrap();
    let memory = Memory::builder()
        .store(store.clone())
        .clock(Arc::new(ManualClock::new(t0() + Duration::days(30))))
        .decay(DecayConfig::default())
        .build()
        .unwrap();
    let report = memory
        .maintain(&ns.subtree())
        .await
        .expect("the pass goes on past the edit it cannot write");
    assert_eq!(report.decayed, 10, "{report:?}");
    let kept = store.get(&ns, "full").await.unwrap().expect("kept");
    assert!(kept.metadata.get("_decay").is_none(), "left as it was");
    let decayed = store.get(&ns, "m3").await.unwrap().expect("kept");
    assert!(
        decayed.metadata.get("_decay").is_some(),
        "{:?}",
        decayed.metadata
    );
}
