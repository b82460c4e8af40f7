//! Reconciliation at its edges: credibility between versions of a fact, merges that keep
//! what the repetition brings, a late statement beside ended versions, a batch against
//! one call at a time, the duplicate threshold read the same both ways.

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use memory_core::{
    Clock, DecayConfig, EndReason, EvictionConfig, EvictionPolicy, ManualClock, MemoryFilter,
    MemoryKind, MemoryStore, Namespace, TimeView,
};
use memory_retrieve::{FactsConfig, Memory, Outcome, Remember};

fn day(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap() + Duration::days(n)
}

fn ns() -> Namespace {
    Namespace::parse("u").unwrap()
}

fn at(clock: &Arc<ManualClock>) -> Memory {
    Memory::builder().clock(clock.clone()).build().unwrap()
}

/// The current versions of fact `key`, as (text, credibility), oldest first.
async fn current(memory: &Memory, key: &str, now: DateTime<Utc>) -> Vec<(String, f32)> {
    let mut filter = MemoryFilter::new(ns().exact()).with_view(TimeView::Current(now));
    filter.fact_key = Some(key.to_owned());
    let items = memory.store().list(&filter).await.unwrap();
    items
        .into_iter()
        .map(|item| (item.content, item.credibility))
        .collect()
}

fn city(text: &str) -> Remember {
    Remember::new(ns(), text).fact_key("user.city")
}

#[tokio::test]
async fn a_more_credible_restatement_settles_the_fact() {
    let clock = Arc::new(ManualClock::new(day(10)));
    let memory = at(&clock);
    memory
        .remember_with(city("The user lives in Paris"))
        .await
        .unwrap();
    clock.advance(Duration::days(1));
    memory
        .remember_with(city("The user lives in Berlin").credibility(0.3))
        .await
        .unwrap();
    assert_eq!(
        current(&memory, "user.city", clock.now()).await.len(),
        2,
        "flagged"
    );
    clock.advance(Duration::days(1));
    let again = memory
        .remember_with(city("The user lives in Berlin").credibility(1.0))
        .await
        .unwrap();
    assert!(
        matches!(again.outcome, Outcome::Superseded { .. }),
        "{again:?}"
    );
    assert_eq!(
        current(&memory, "user.city", clock.now()).await,
        [("The user lives in Berlin".to_owned(), 1.0)],
        "one current version"
    );
}

#[tokio::test]
async fn a_late_credible_statement_is_not_ended_by_a_less_credible_later_one() {
    for credible_first in [true, false] {
        let clock = Arc::new(ManualClock::new(day(10)));
        let memory = at(&clock);
        let paris = city("The user lives in Paris")
            .created_at(day(4))
            .credibility(1.0);
        let berlin = city("The user lives in Berlin")
            .created_at(day(5))
            .credibility(0.3);
        let order = if credible_first {
            [paris, berlin]
        } else {
            [berlin, paris]
        };
        for request in order {
            memory.remember_with(request).await.unwrap();
        }
        let now = current(&memory, "user.city", clock.now()).await;
        assert_eq!(
            now.len(),
            2,
            "both current, flagged, whatever the order: {now:?}"
        );
    }
}

#[tokio::test]
async fn a_merge_keeps_the_repetitions_pin_and_importance() {
    let clock = Arc::new(ManualClock::new(day(0)));
    let memory = Memory::builder()
        .clock(clock.clone())
        .eviction(EvictionConfig {
            policy: EvictionPolicy::Capacity { max_items: 16 },
            check_interval: 1000,
        })
        .decay(DecayConfig {
            daily_rate: 0.1,
            min_threshold: 0.01,
            grace_period_days: 0,
        })
        .build()
        .unwrap();
    let first = memory
        .remember_with(Remember::new(ns(), "The team deploys on Tuesdays").importance(0.5))
        .await
        .unwrap();
    clock.advance(Duration::days(10));
    memory.maintain(&ns().subtree()).await.unwrap();
    let decayed = memory.store().get(&ns(), &first.id).await.unwrap().unwrap();
    assert!(decayed.importance < 0.2, "{}", decayed.importance);
    let merged = memory
        .remember_with(
            Remember::new(ns(), "The team deploys on Tuesdays")
                .importance(0.9)
                .pinned(),
        )
        .await
        .unwrap();
    assert_eq!(
        merged.outcome,
        Outcome::Merged {
            into: first.id.clone()
        }
    );
    memory.maintain(&ns().subtree()).await.unwrap();
    let kept = memory.store().get(&ns(), &first.id).await.unwrap().unwrap();
    assert!(kept.is_pinned(), "the repetition's pin is kept");
    assert!(
        (kept.importance - 0.9).abs() < 1e-6,
        "decay restarts from the merge's importance, not the old base: {}",
        kept.importance
    );
    for at in 0..40 {
        memory
            .remember(&ns(), &format!("filler note number {at} about zq{at}x"))
            .await
            .unwrap();
    }
    assert!(
        memory
            .store()
            .get(&ns(), &first.id)
            .await
            .unwrap()
            .is_some(),
        "pinned: never evicted"
    );
}

#[tokio::test]
async fn a_less_credible_newer_statement_does_not_rank_the_older_stale() {
    let clock = Arc::new(ManualClock::new(day(10)));
    let memory = at(&clock);
    memory
        .remember_with(city("The user lives in Paris").kind(MemoryKind::Semantic))
        .await
        .unwrap();
    clock.advance(Duration::days(1));
    memory
        .remember_with(
            city("The user lives in Berlin")
                .credibility(0.2)
                .kind(MemoryKind::Semantic),
        )
        .await
        .unwrap();
    let found = memory
        .recall(&ns().subtree(), "where does the user live")
        .await
        .unwrap();
    let stale: Vec<String> = found
        .items
        .iter()
        .filter(|item| {
            item.breakdown
                .signals
                .iter()
                .any(|signal| signal.name == memory_core::Signal::Stale)
        })
        .map(|item| item.record.text().to_string())
        .collect();
    assert!(
        !stale.iter().any(|text| text == "The user lives in Paris"),
        "the more credible statement is not ranked stale: {stale:?}"
    );
}

#[tokio::test]
async fn a_late_statement_leaves_a_retracted_version_as_it_was() {
    let clock = Arc::new(ManualClock::new(day(10)));
    let memory = at(&clock);
    let paris = memory
        .remember_with(city("The user lives in Paris").created_at(day(1)))
        .await
        .unwrap();
    memory
        .retract(&ns(), &paris.id, "was a typo")
        .await
        .unwrap();
    memory
        .remember_with(city("The user lives in Oslo").created_at(day(5)))
        .await
        .unwrap();
    memory
        .remember_with(city("The user lives in Rome").created_at(day(3)))
        .await
        .unwrap();
    let paris = memory.store().get(&ns(), &paris.id).await.unwrap().unwrap();
    assert!(
        matches!(
            paris.ended.map(|ended| ended.reason),
            Some(EndReason::Retracted { reason }) if reason == "was a typo"
        ),
        "the retraction and its reason stay"
    );
}

/// `requests` remembered in one batch, or one call at a time.
async fn remembered(
    memory: &Memory,
    requests: Vec<Remember>,
    batch: bool,
) -> Vec<memory_retrieve::Remembered> {
    if batch {
        return memory.remember_many(requests).await.unwrap();
    }
    let mut done = Vec::new();
    for request in requests {
        done.push(memory.remember_with(request).await.unwrap());
    }
    done
}

/// A request kept apart (`Remember::keep_apart`) merges into no other, but a later one in
/// its words merges into it, in a batch as one call at a time: each id it names stays
/// its own.
#[tokio::test]
async fn a_request_kept_apart_is_merged_into_as_any_memory() {
    let mut outcomes = Vec::new();
    for batch in [false, true] {
        let memory = Memory::builder().build().unwrap();
        let requests = vec![
            Remember::new(ns(), "We adopted a puppy named Biscuit")
                .id("t1")
                .keep_apart(),
            Remember::new(ns(), "We adopted a puppy named Biscuit")
                .id("t2")
                .keep_apart(),
            Remember::new(ns(), "We adopted a puppy named Biscuit"),
        ];
        let done = remembered(&memory, requests, batch).await;
        let outcomes_of: Vec<Outcome> = done.into_iter().map(|r| r.outcome).collect();
        assert_eq!(outcomes_of[0], Outcome::Added, "batch {batch}");
        assert_eq!(outcomes_of[1], Outcome::Added, "batch {batch}");
        assert!(
            matches!(&outcomes_of[2], Outcome::Merged { .. }),
            "batch {batch}: {:?}",
            outcomes_of[2]
        );
        let count = memory.store().count(&ns().exact()).await.unwrap();
        outcomes.push((outcomes_of[2].clone(), count));
    }
    assert_eq!(outcomes[0], outcomes[1], "a batch as one call at a time");
    assert_eq!(outcomes[1].1, 2);
}

#[tokio::test]
async fn a_batch_does_not_merge_into_what_it_ended() {
    let mut outcomes = Vec::new();
    for batch in [false, true] {
        let clock = Arc::new(ManualClock::new(day(10)));
        let memory = at(&clock);
        memory
            .remember_with(city("The user lives in Paris").created_at(day(1)))
            .await
            .unwrap();
        let requests = vec![
            city("The user moved to Berlin"),
            Remember::new(ns(), "The user lives in Paris"),
        ];
        let done = remembered(&memory, requests, batch).await;
        let current = memory
            .store()
            .list(&MemoryFilter::new(ns().exact()).with_view(TimeView::Current(clock.now())))
            .await
            .unwrap();
        let mut texts: Vec<String> = current.into_iter().map(|item| item.content).collect();
        texts.sort();
        let kinds: Vec<bool> = done
            .iter()
            .map(|r| matches!(r.outcome, Outcome::Merged { .. }))
            .collect();
        outcomes.push((kinds, texts));
    }
    assert_eq!(outcomes[0], outcomes[1], "a batch as one call at a time");
    assert_eq!(
        outcomes[1].1,
        ["The user lives in Paris", "The user moved to Berlin"]
    );
}

#[tokio::test]
async fn the_duplicate_threshold_reads_alike_both_ways() {
    let mut merged = Vec::new();
    for (first, second) in [
        (
            "alpha bravo charlie delta echo",
            "alpha bravo charlie delta",
        ),
        (
            "alpha bravo charlie delta",
            "alpha bravo charlie delta echo",
        ),
    ] {
        let memory = Memory::builder()
            .facts(FactsConfig {
                duplicate_similarity: 0.8,
                ..FactsConfig::default()
            })
            .build()
            .unwrap();
        memory.remember(&ns(), first).await.unwrap();
        let second = memory
            .remember_with(Remember::new(ns(), second))
            .await
            .unwrap();
        merged.push(matches!(second.outcome, Outcome::Merged { .. }));
    }
    assert_eq!(
        merged,
        [true, true],
        "a similarity of 0.8 at a threshold of 0.8"
    );
}

#[tokio::test]
async fn a_summary_is_not_seen_as_of_a_time_before_its_consolidation() {
    let clock = Arc::new(ManualClock::new(day(100)));
    let memory = at(&clock);
    let mut ids = Vec::new();
    for (n, text) in [
        "We hiked the ridge trail above the lake",
        "The ridge trail was muddy after rain",
        "We saw eagles near the ridge summit",
    ]
    .into_iter()
    .enumerate()
    {
        let done = memory
            .remember_with(Remember::new(ns(), text).created_at(day(n as i64)))
            .await
            .unwrap();
        ids.push(done.id);
    }
    let summary = memory.consolidate(&ns(), &ids, 40).await.unwrap();
    let as_of = |at: DateTime<Utc>| {
        let memory = &memory;
        async move {
            let filter = MemoryFilter::new(ns().exact()).with_view(TimeView::AsOf(at));
            let mut seen: Vec<String> = memory
                .store()
                .list(&filter)
                .await
                .unwrap()
                .into_iter()
                .map(|item| item.id)
                .collect();
            seen.sort();
            seen
        }
    };
    let mut sources = ids.clone();
    sources.sort();
    assert_eq!(
        as_of(day(50)).await,
        sources,
        "the sources, not the summary beside them"
    );
    assert_eq!(
        as_of(day(150)).await,
        std::slice::from_ref(&summary),
        "the summary, after"
    );
    let current = memory
        .store()
        .list(&MemoryFilter::new(ns().exact()).with_view(TimeView::Current(clock.now())))
        .await
        .unwrap();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0].id, summary);
}

/// A fact with more versions than `history` reads shows the latest: the current one is
/// there, asked from the first version too.
#[tokio::test]
async fn the_history_of_a_long_fact_keeps_its_latest_versions() {
    let clock = Arc::new(ManualClock::new(day(10)));
    let memory = at(&clock);
    let total = memory_retrieve::MAX_HISTORY + 5;
    let mut first = None;
    let mut last = None;
    for n in 0..total {
        clock.advance(Duration::minutes(1));
        let id = memory
            .remember_with(city(&format!("The user lives in city number {n}")))
            .await
            .unwrap()
            .id;
        first.get_or_insert(id.clone());
        last = Some(id);
    }
    let (first, last) = (first.unwrap(), last.unwrap());
    let history = memory.history(&ns(), &first).await.unwrap();
    assert_eq!(history.len(), memory_retrieve::MAX_HISTORY);
    assert_eq!(
        history.last().map(|item| item.id.as_str()),
        Some(last.as_str())
    );
    assert!(history.last().is_some_and(|item| item.ended.is_none()));
    // Statements recorded late about earlier times are the latest recorded, not current:
    // the current version stays in the history.
    let mut late = None;
    for n in 0..memory_retrieve::MAX_HISTORY {
        clock.advance(Duration::minutes(1));
        let valid_from = day(1) + Duration::minutes(i64::try_from(n).unwrap());
        let id = memory
            .remember_with(
                city(&format!("The user once lived in town number {n}"))
                    .valid(Some(valid_from), None),
            )
            .await
            .unwrap()
            .id;
        late = Some(id);
    }
    let history = memory.history(&ns(), &late.unwrap()).await.unwrap();
    assert!(
        history
            .iter()
            .any(|item| item.id == last && item.ended.is_none()),
        "the current version is in the history"
    );
}

/// `supersede` refuses an ended memory as the successor (the fact would be left with no
/// current version), and writes nothing.
#[tokio::test]
async fn an_ended_memory_replaces_nothing() {
    let memory = Memory::builder().facts(FactsConfig::off()).build().unwrap();
    let old = memory
        .remember(&ns(), "the office is in Lisbon")
        .await
        .unwrap();
    let new = memory
        .remember(&ns(), "the office is in Porto")
        .await
        .unwrap();
    memory.retract(&ns(), &new, "asked").await.unwrap();
    let error = memory.supersede(&ns(), &old, &new).await.unwrap_err();
    assert_eq!(error.field(), Some("new"), "{error}");
    let kept = memory.store().get(&ns(), &old).await.unwrap().unwrap();
    assert!(kept.ended.is_none(), "a refused supersede ends nothing");
}

/// `supersede` links a successor to at most `MAX_FACT_LINKS` predecessors: one more would
/// push the first out of the successor's links while it still names the successor, and
/// forgetting the successor would then leave it naming nothing. Refused, nothing written.
#[tokio::test]
async fn a_successor_links_a_bounded_number_of_predecessors() {
    let memory = Memory::builder().facts(FactsConfig::off()).build().unwrap();
    let new = memory
        .remember(&ns(), "the one that replaces them all")
        .await
        .unwrap();
    for i in 0..=memory_core::MAX_FACT_LINKS {
        let old = memory
            .remember(&ns(), &format!("version number {i} of the fact"))
            .await
            .unwrap();
        let result = memory.supersede(&ns(), &old, &new).await;
        if i < memory_core::MAX_FACT_LINKS {
            result.unwrap();
            continue;
        }
        let error = result.unwrap_err();
        assert_eq!(error.field(), Some("new"), "{error}");
        let refused = memory.store().get(&ns(), &old).await.unwrap().unwrap();
        assert!(refused.ended.is_none(), "a refused supersede ends nothing");
    }
    // Forgetting the successor takes every predecessor it links with it: none is left
    // naming a successor that is gone.
    assert!(memory.forget(&ns(), &new).await.unwrap());
    let left = memory
        .store()
        .list(&MemoryFilter::new(ns().exact()))
        .await
        .unwrap();
    assert!(
        left.iter().all(|item| item.ended.is_none()),
        "{:?}",
        left.iter()
            .filter(|item| item.ended.is_some())
            .map(|item| &item.id)
            .collect::<Vec<_>>()
    );
}

/// A summary keeps what all its sources say of themselves alike (the session a pass groups
/// by, a user), so a listing filtered by it finds the summary in their place; what differs
/// between them, and the library's own keys, stay with the sources.
#[tokio::test]
async fn a_summary_keeps_the_metadata_its_sources_share() {
    let clock = Arc::new(ManualClock::new(day(100)));
    let memory = at(&clock);
    let mut ids = Vec::new();
    for (n, (text, speaker)) in [
        ("We hiked the ridge trail above the lake", "Ana"),
        ("The ridge trail was muddy after rain", "Ben"),
        ("We saw eagles near the ridge summit", "Ana"),
    ]
    .into_iter()
    .enumerate()
    {
        let done = memory
            .remember_with(
                Remember::new(ns(), text)
                    .created_at(day(n as i64))
                    .context("on the trip")
                    .metadata(serde_json::json!({
                        "session": "trip-1",
                        "speaker": speaker,
                        "user": {"id": 7},
                    })),
            )
            .await
            .unwrap();
        ids.push(done.id);
    }
    let summary = memory.consolidate(&ns(), &ids, 40).await.unwrap();
    let stored = memory.store().get(&ns(), &summary).await.unwrap().unwrap();
    assert_eq!(
        stored.metadata,
        serde_json::json!({
            "session": "trip-1",
            "user": {"id": 7},
            "consolidated_from": 3,
        })
    );
    let filter = MemoryFilter::new(ns().exact())
        .with_view(TimeView::Current(day(100)))
        .with_metadata("session", serde_json::json!("trip-1"));
    let listed: Vec<String> = memory
        .store()
        .list(&filter)
        .await
        .unwrap()
        .into_iter()
        .map(|item| item.id)
        .collect();
    assert_eq!(listed, [summary], "the session's memory now");
}

/// A retracted version leaves the fact without a current version (the one it replaced
/// stays ended); the earlier value remembered again is current again, in its own words.
#[tokio::test]
async fn a_value_remembered_again_after_a_retraction_is_current() {
    let clock = Arc::new(ManualClock::new(day(10)));
    let memory = at(&clock);
    let say = |text: &'static str, on: i64| {
        Remember::new(ns(), text)
            .fact_key("ava.city")
            .created_at(day(on))
    };
    memory
        .remember_with(say("Ava lives in Paris", 1))
        .await
        .unwrap();
    let oslo = memory
        .remember_with(say("Ava lives in Oslo", 2))
        .await
        .unwrap();
    memory.retract(&ns(), &oslo.id, "a mistake").await.unwrap();
    assert!(current(&memory, "ava.city", day(10)).await.is_empty());
    memory
        .remember_with(say("Ava lives in Paris", 3))
        .await
        .unwrap();
    let now: Vec<String> = current(&memory, "ava.city", day(10))
        .await
        .into_iter()
        .map(|(text, _)| text)
        .collect();
    assert_eq!(now, ["Ava lives in Paris"]);
}
