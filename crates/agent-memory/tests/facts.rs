//! Facts that change, through the `Memory` API, on every backend: duplicates merged, fact
//! keys superseding with history, conflicts flagged and ranked, supersede / retract /
//! forget, as-of recall, single-valued relations, and a model check of keyed facts.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_memory::prelude::*;
use agent_memory::{
    ConflictPolicy, DuplicatePolicy, EndReason, FactsConfig, KnowledgeGraphExt, ManualClock,
    MemoryBuilder, Signal,
};
use chrono::{DateTime, Duration, TimeZone, Utc};
use common::Backend;

fn day(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 1, 1, 12, 0, 0).unwrap() + Duration::days(n)
}

fn builder(backend: &Backend, clock: &Arc<ManualClock>) -> MemoryBuilder {
    Memory::builder()
        .store(Arc::clone(&backend.store))
        .knowledge(Arc::clone(&backend.knowledge))
        .graph(Arc::clone(&backend.graph))
        .clock(clock.clone())
}

fn memory_ids(result: &RetrievalResult) -> Vec<String> {
    result
        .items
        .iter()
        .filter_map(|scored| match &scored.record {
            RetrievalSource::Memory(item) => Some(item.id.clone()),
            _ => None,
        })
        .collect()
}

async fn count(backend: &Backend, ns: &Namespace) -> usize {
    backend.store.count(&ns.exact()).await.unwrap()
}

#[tokio::test]
async fn a_fact_key_supersedes_and_keeps_the_history() {
    for backend in common::backends("facts_keys").await {
        let clock = Arc::new(ManualClock::new(day(100)));
        let memory = builder(&backend, &clock).build().unwrap();
        let ns = Namespace::parse("user-1").unwrap();
        let name = backend.name;

        let paris = memory
            .remember_with(
                Remember::new(ns.clone(), "The user lives in Paris")
                    .fact_key("user.city")
                    .created_at(day(1)),
            )
            .await
            .unwrap();
        assert_eq!(paris.outcome, Outcome::Added, "{name}");
        let berlin = memory
            .remember_with(
                Remember::new(ns.clone(), "The user moved to Berlin")
                    .fact_key("User.City")
                    .created_at(day(10)),
            )
            .await
            .unwrap();
        assert_eq!(
            berlin.outcome,
            Outcome::Superseded {
                old: vec![paris.id.clone()]
            },
            "{name}"
        );

        // Default recall: Berlin only.
        let now = memory
            .recall(&ns.subtree(), "where does the user live")
            .await
            .unwrap();
        assert_eq!(memory_ids(&now), [berlin.id.as_str()], "{name}");
        // As of day 5: Paris only.
        let then = memory
            .recall_with(
                &ns.subtree(),
                "where does the user live",
                &RecallOptions::default().as_of(day(5)),
            )
            .await
            .unwrap();
        assert_eq!(memory_ids(&then), [paris.id.as_str()], "{name}");
        // Everything: both, Paris marked stale and ranked below Berlin.
        let all = memory
            .recall_with(
                &ns.subtree(),
                "where does the user live",
                &RecallOptions::default().view(RecallView::All),
            )
            .await
            .unwrap();
        assert_eq!(
            memory_ids(&all),
            [berlin.id.clone(), paris.id.clone()],
            "{name}"
        );
        assert!(
            all.items[1].breakdown.value(Signal::Stale).is_some(),
            "{name}"
        );
        assert!(
            all.items[0].breakdown.value(Signal::Stale).is_none(),
            "{name}"
        );

        // History: Paris then Berlin, Paris ended by Berlin where Berlin began.
        let history = memory.history(&ns, &paris.id).await.unwrap();
        let ids: Vec<&str> = history.iter().map(|item| item.id.as_str()).collect();
        assert_eq!(ids, [paris.id.as_str(), berlin.id.as_str()], "{name}");
        let ended = history[0].ended.as_ref().unwrap();
        assert_eq!(ended.superseded_by(), Some(berlin.id.as_str()), "{name}");
        assert_eq!(ended.at, day(10), "{name}");
        assert_eq!(history[0].valid_until, Some(day(10)), "{name}");
        assert_eq!(history[1].supersedes, [paris.id.as_str()], "{name}");
        assert_eq!(memory.history(&ns, &berlin.id).await.unwrap(), history);

        // A replayed older statement lands in history, not in front.
        let lyon = memory
            .remember_with(
                Remember::new(ns.clone(), "The user lived in Lyon")
                    .fact_key("user.city")
                    .created_at(day(0)),
            )
            .await
            .unwrap();
        assert_eq!(
            lyon.outcome,
            Outcome::Outdated {
                by: paris.id.clone()
            },
            "{name}"
        );
        let now = memory
            .recall(&ns.subtree(), "where does the user live")
            .await
            .unwrap();
        assert_eq!(memory_ids(&now), [berlin.id.as_str()], "{name}");

        // Forget leaves nothing: every version goes.
        assert!(memory.forget(&ns, &berlin.id).await.unwrap(), "{name}");
        assert_eq!(count(&backend, &ns).await, 0, "{name}");
        backend.cleanup().await;
    }
}

/// Forgetting a memory consolidated into a summary deletes the summary too (it holds the
/// memory's text), and not the summary's other sources or their facts: they come back, and
/// a keyed one whose fact has a newer version since is ended by that version. Before, the
/// walk went from the summary to every source and every version of their fact keys, so
/// forgetting a hike deleted where the user lives now.
#[tokio::test]
async fn forget_stops_at_a_summary_and_brings_its_other_sources_back() {
    for backend in common::backends("facts_forget_summary").await {
        let clock = Arc::new(ManualClock::new(day(100)));
        let memory = builder(&backend, &clock).build().unwrap();
        let ns = Namespace::parse("forget-summary").unwrap();
        let name = backend.name;
        let remember = |text: &str, key: Option<&str>, at: i64| {
            let mut request = Remember::new(ns.clone(), text).created_at(day(at));
            if let Some(key) = key {
                request = request.fact_key(key);
            }
            let memory = &memory;
            async move { memory.remember_with(request).await.unwrap().id }
        };
        let paris = remember("The user lives in Paris", Some("user.city"), 1).await;
        let hike = remember("We hiked the ridge trail above the lake", None, 2).await;
        let eagles = remember("We saw two eagles near the summit", None, 3).await;
        let acme = remember("The user works at Acme", Some("user.job"), 4).await;
        let summary = memory
            .consolidate(
                &ns,
                &[paris.clone(), hike.clone(), eagles.clone(), acme.clone()],
                50,
            )
            .await
            .unwrap();
        clock.advance(Duration::days(1));
        let lisbon = remember("The user lives in Lisbon", Some("user.city"), 101).await;
        // Told late: it held before the job in the summary, which comes back ending it.
        let globex = remember("The user worked at Globex", Some("user.job"), 0).await;

        assert!(memory.forget(&ns, &hike).await.unwrap(), "{name}");
        let get = |id: &str| {
            let store = Arc::clone(&backend.store);
            let (ns, id) = (ns.clone(), id.to_owned());
            async move { store.get(&ns, &id).await.unwrap() }
        };
        assert_eq!(get(&hike).await, None, "{name}");
        assert_eq!(
            get(&summary).await,
            None,
            "{name}: the summary holds its text"
        );
        let lisbon_item = get(&lisbon).await.expect("the current city stays");
        assert_eq!(lisbon_item.ended, None, "{name}");
        let eagles_item = get(&eagles).await.expect("another source stays");
        assert_eq!(eagles_item.ended, None, "{name}: current again");
        let paris_item = get(&paris).await.expect("an older version stays");
        assert_eq!(
            paris_item
                .ended
                .as_ref()
                .and_then(|ended| ended.superseded_by()),
            Some(lisbon.as_str()),
            "{name}: ended by the version written since"
        );
        assert_eq!(
            get(&acme).await.expect("a keyed source stays").ended,
            None,
            "{name}"
        );
        let globex_item = get(&globex).await.expect("the earlier job stays");
        assert_eq!(
            globex_item
                .ended
                .as_ref()
                .and_then(|ended| ended.superseded_by()),
            Some(acme.as_str()),
            "{name}: the later start holds"
        );
        // Recall finds the current versions only.
        let found = memory_ids(&memory.recall(&ns.subtree(), "user lives").await.unwrap());
        assert_eq!(found.first(), Some(&lisbon), "{name}");
        assert!(!found.contains(&paris), "{name}");
        let found = memory.recall(&ns.subtree(), "eagles summit").await.unwrap();
        assert_eq!(memory_ids(&found), [eagles.as_str()], "{name}");
        let found = memory_ids(&memory.recall(&ns.subtree(), "user works").await.unwrap());
        assert_eq!(found.first(), Some(&acme), "{name}");
        assert!(!found.contains(&globex), "{name}");
        assert_eq!(count(&backend, &ns).await, 5, "{name}");
        backend.cleanup().await;
    }
}

#[tokio::test]
async fn a_less_credible_source_never_supersedes() {
    for backend in common::backends("facts_credibility").await {
        let clock = Arc::new(ManualClock::new(day(100)));
        let memory = builder(&backend, &clock).build().unwrap();
        let ns = Namespace::parse("user-2").unwrap();
        let name = backend.name;
        let told = memory
            .remember_with(
                Remember::new(ns.clone(), "The user works at Acme")
                    .fact_key("user.employer")
                    .created_at(day(1)),
            )
            .await
            .unwrap();
        let rumour = memory
            .remember_with(
                Remember::new(ns.clone(), "The user works at Globex")
                    .fact_key("user.employer")
                    .credibility(0.3)
                    .created_at(day(2)),
            )
            .await
            .unwrap();
        assert_eq!(rumour.outcome, Outcome::Added, "{name}");
        assert_eq!(rumour.conflicts.len(), 1, "{name}");
        assert_eq!(rumour.conflicts[0].id, told.id, "{name}");
        let stored = backend.store.get(&ns, &told.id).await.unwrap().unwrap();
        assert!(
            stored.ended.is_none(),
            "{name}: the credible fact stays current"
        );
        let report = memory.maintain(&ns.subtree()).await.unwrap();
        assert_eq!(report.conflicts_found, 1, "{name}");
        backend.cleanup().await;
    }
}

#[tokio::test]
async fn duplicates_merge_reject_or_stay_by_policy() {
    for backend in common::backends("facts_duplicates").await {
        let clock = Arc::new(ManualClock::new(day(100)));
        let name = backend.name;
        let memory = builder(&backend, &clock).build().unwrap();
        let ns = Namespace::parse("dup/merge").unwrap();
        let first = memory
            .remember_with(
                Remember::new(ns.clone(), "The user likes green tea")
                    .tags(["drinks"])
                    .importance(0.4)
                    .created_at(day(1)),
            )
            .await
            .unwrap();
        let again = memory
            .remember_with(
                Remember::new(ns.clone(), "the user LIKES green tea!")
                    .tags(["preferences"])
                    .importance(0.8)
                    .created_at(day(3)),
            )
            .await
            .unwrap();
        assert_eq!(
            again.outcome,
            Outcome::Merged {
                into: first.id.clone()
            },
            "{name}"
        );
        assert_eq!(again.id, first.id, "{name}");
        assert_eq!(count(&backend, &ns).await, 1, "{name}");
        let merged = backend.store.get(&ns, &first.id).await.unwrap().unwrap();
        assert_eq!(merged.access_count, 1, "{name}");
        assert_eq!(merged.importance, 0.8, "{name}");
        let tags: Vec<&str> = merged.tags.iter().map(|tag| tag.as_str()).collect();
        assert_eq!(tags, ["drinks", "preferences"], "{name}");
        assert_eq!(merged.updated_at, day(3), "{name}");
        assert_eq!(merged.created_at, day(1), "{name}");
        // A changed value is not a duplicate.
        let other = memory
            .remember_with(Remember::new(ns.clone(), "The user likes black tea"))
            .await
            .unwrap();
        assert_eq!(other.outcome, Outcome::Added, "{name}");
        // Nor is its negation, with the typographic apostrophe as with the straight one.
        for (at, negated) in [
            "The user doesn’t like green tea",
            "The user doesn't like green tea",
        ]
        .into_iter()
        .enumerate()
        {
            let ns = Namespace::parse(&format!("dup/negated-{at}")).unwrap();
            memory
                .remember(&ns, "The user likes green tea")
                .await
                .unwrap();
            let told = memory
                .remember_with(Remember::new(ns.clone(), negated))
                .await
                .unwrap();
            assert_eq!(told.outcome, Outcome::Added, "{name}: {negated}");
            assert_eq!(count(&backend, &ns).await, 2, "{name}: {negated}");
        }
        // A threshold near zero takes nearly every text for a duplicate, and sizes nothing
        // by it.
        let loose = builder(&backend, &clock)
            .facts(FactsConfig {
                duplicate_similarity: 1e-12,
                ..FactsConfig::default()
            })
            .build()
            .unwrap();
        let ns = Namespace::parse("dup/loose").unwrap();
        loose
            .remember(&ns, "The user likes green tea")
            .await
            .unwrap();
        let merged = loose
            .remember_with(Remember::new(ns.clone(), "The user likes green tea a lot"))
            .await
            .unwrap();
        assert!(
            matches!(merged.outcome, Outcome::Merged { .. }),
            "{name}: {merged:?}"
        );

        let strict = builder(&backend, &clock)
            .facts(FactsConfig {
                duplicates: DuplicatePolicy::Reject,
                ..FactsConfig::default()
            })
            .build()
            .unwrap();
        let ns = Namespace::parse("dup/reject").unwrap();
        strict
            .remember(&ns, "The user likes green tea")
            .await
            .unwrap();
        let refused = strict.remember(&ns, "The user likes green tea").await;
        assert!(
            matches!(refused, Err(MemoryError::AlreadyExists(_))),
            "{name}: {refused:?}"
        );
        assert_eq!(count(&backend, &ns).await, 1, "{name}");

        let keep = builder(&backend, &clock)
            .facts(FactsConfig::off())
            .build()
            .unwrap();
        let ns = Namespace::parse("dup/keep").unwrap();
        keep.remember(&ns, "The user likes green tea")
            .await
            .unwrap();
        keep.remember(&ns, "The user likes green tea")
            .await
            .unwrap();
        assert_eq!(count(&backend, &ns).await, 2, "{name}");

        // Conversation messages are events: never merged.
        let chat = Namespace::parse("dup/chat").unwrap();
        for _ in 0..2 {
            memory
                .remember_with(Remember::new(chat.clone(), "Thanks!").kind(MemoryKind::ShortTerm))
                .await
                .unwrap();
        }
        assert_eq!(count(&backend, &chat).await, 2, "{name}");
        backend.cleanup().await;
    }
}

#[tokio::test]
async fn conflicts_without_keys_are_flagged_ranked_and_settled_by_policy() {
    for backend in common::backends("facts_conflicts").await {
        let clock = Arc::new(ManualClock::new(day(100)));
        let name = backend.name;
        let memory = builder(&backend, &clock).build().unwrap();
        let ns = Namespace::parse("conflict/flag").unwrap();
        let old = memory
            .remember_with(
                Remember::new(ns.clone(), "The team standup is at 9am every day")
                    .created_at(day(1)),
            )
            .await
            .unwrap();
        let new = memory
            .remember_with(
                Remember::new(ns.clone(), "The team standup is at 10am every day")
                    .created_at(day(5)),
            )
            .await
            .unwrap();
        assert_eq!(new.outcome, Outcome::Added, "{name}");
        assert_eq!(new.conflicts.len(), 1, "{name}");
        assert_eq!(new.conflicts[0].id, old.id, "{name}");
        // The older one was the better match for "9am", yet ranks below the newer one.
        let found = memory
            .recall(&ns.subtree(), "when is the team standup 9am")
            .await
            .unwrap();
        assert_eq!(
            memory_ids(&found),
            [new.id.clone(), old.id.clone()],
            "{name}"
        );
        // The factor it took: the stale factor, or less when it was put under its rival.
        let stale = found.items[1].breakdown.value(Signal::Stale).unwrap_or(1.0);
        assert!(
            stale > 0.0 && stale <= agent_memory::retrieve::STALE_FACTOR,
            "{name}: {stale}"
        );
        let pairs = memory.conflicts(&ns.subtree()).await.unwrap();
        assert_eq!(pairs.len(), 1, "{name}");
        assert_eq!(
            (pairs[0].older.as_str(), pairs[0].newer.as_str()),
            (old.id.as_str(), new.id.as_str())
        );
        assert_eq!(
            memory
                .maintain(&ns.subtree())
                .await
                .unwrap()
                .conflicts_found,
            1
        );

        let settle = builder(&backend, &clock)
            .facts(FactsConfig {
                conflicts: ConflictPolicy::SupersedeOlder,
                ..FactsConfig::default()
            })
            .build()
            .unwrap();
        let ns = Namespace::parse("conflict/supersede").unwrap();
        let old = settle
            .remember_with(Remember::new(ns.clone(), "Alice lives in Paris").created_at(day(1)))
            .await
            .unwrap();
        let new = settle
            .remember_with(Remember::new(ns.clone(), "Alice lives in Berlin").created_at(day(2)))
            .await
            .unwrap();
        assert_eq!(
            new.outcome,
            Outcome::Superseded {
                old: vec![old.id.clone()]
            },
            "{name}"
        );
        let found = settle
            .recall(&ns.subtree(), "where does Alice live")
            .await
            .unwrap();
        assert_eq!(memory_ids(&found), [new.id.as_str()], "{name}");

        let strict = builder(&backend, &clock)
            .facts(FactsConfig {
                conflicts: ConflictPolicy::Reject,
                ..FactsConfig::default()
            })
            .build()
            .unwrap();
        let ns = Namespace::parse("conflict/reject").unwrap();
        strict.remember(&ns, "Bob does not eat meat").await.unwrap();
        let refused = strict.remember(&ns, "Bob eats meat").await;
        assert!(
            matches!(refused, Err(MemoryError::Conflict { .. })),
            "{name}: {refused:?}"
        );
        assert_eq!(
            count(&backend, &ns).await,
            1,
            "{name}: nothing half-written"
        );
        backend.cleanup().await;
    }
}

/// A keyed statement repeating a memory without its key is that fact's new version, not a
/// duplicate: merged into the keyless memory, it left the key two current versions (the
/// merged memory, given the key, and the version it should have ended). Alone and in a
/// batch.
#[tokio::test]
async fn a_keyed_restatement_of_a_keyless_memory_settles_its_key() {
    for backend in common::backends("facts_keyed_restatement").await {
        let clock = Arc::new(ManualClock::new(day(100)));
        let name = backend.name;
        let memory = builder(&backend, &clock).build().unwrap();
        let current = |ns: Namespace| {
            let store = Arc::clone(&backend.store);
            async move {
                let mut filter = agent_memory::MemoryFilter::new(ns.exact())
                    .with_view(agent_memory::TimeView::Current(day(1000)))
                    .with_fact_key("user.city")
                    .unwrap();
                filter.limit = None;
                let live = store.list(&filter).await.unwrap();
                live.into_iter()
                    .map(|item| item.content)
                    .collect::<Vec<_>>()
            }
        };
        let ns = Namespace::parse("restated/one").unwrap();
        memory
            .remember_with(Remember::new(ns.clone(), "The user lives in Paris").created_at(day(1)))
            .await
            .unwrap();
        for (at, city) in [(2, "Berlin"), (3, "Paris")] {
            memory
                .remember_with(
                    Remember::new(ns.clone(), format!("The user lives in {city}"))
                        .fact_key("user.city")
                        .created_at(day(at)),
                )
                .await
                .unwrap();
        }
        assert_eq!(
            current(ns.clone()).await,
            ["The user lives in Paris"],
            "{name}"
        );

        let ns = Namespace::parse("restated/batch").unwrap();
        memory
            .remember_with(
                Remember::new(ns.clone(), "The user lives in Berlin")
                    .fact_key("user.city")
                    .created_at(day(2)),
            )
            .await
            .unwrap();
        memory
            .remember_many(vec![
                Remember::new(ns.clone(), "The user lives in Paris").created_at(day(1)),
                Remember::new(ns.clone(), "The user lives in Paris")
                    .fact_key("user.city")
                    .created_at(day(3)),
            ])
            .await
            .unwrap();
        assert_eq!(
            current(ns).await,
            ["The user lives in Paris"],
            "{name}: batch"
        );
        backend.cleanup().await;
    }
}

/// A keyed fact is replaced by its key, not by inference: newer statements without its key
/// that share its words ("Ava Novak's sister lives in Oslo") or that the detector flags
/// against it ("Ava Novak lives in Oslo") do not rank it stale, though the flag stays
/// listed. Without the key, the newer of the flagged pair comes first.
#[tokio::test]
async fn a_keyed_fact_is_replaced_by_its_key_not_by_inference() {
    for backend in common::backends("facts_keyed_inference").await {
        let clock = Arc::new(ManualClock::new(day(100)));
        let name = backend.name;
        let memory = builder(&backend, &clock).build().unwrap();
        let ns = Namespace::parse("keyed").unwrap();
        let keyed = memory
            .remember_with(
                Remember::new(ns.clone(), "Ava Novak lives in Berlin")
                    .fact_key("ava_novak.city")
                    .kind(MemoryKind::Semantic)
                    .created_at(day(1)),
            )
            .await
            .unwrap();
        let sister = memory
            .remember_with(
                Remember::new(ns.clone(), "Ava Novak's sister lives in Oslo")
                    .kind(MemoryKind::Semantic)
                    .created_at(day(5)),
            )
            .await
            .unwrap();
        let question = "Where does Ava Novak live, in which city?";
        let found = memory.recall(&ns.subtree(), question).await.unwrap();
        assert_eq!(
            memory_ids(&found),
            [keyed.id.clone(), sister.id.clone()],
            "{name}"
        );
        assert!(
            found.items[0].breakdown.value(Signal::Stale).is_none(),
            "{name}"
        );

        let flagged = memory
            .remember_with(
                Remember::new(ns.clone(), "Ava Novak lives in Oslo")
                    .kind(MemoryKind::Semantic)
                    .created_at(day(6)),
            )
            .await
            .unwrap();
        assert!(
            flagged
                .conflicts
                .iter()
                .any(|conflict| conflict.id == keyed.id),
            "{name}: {flagged:?}"
        );
        let pairs = memory.conflicts(&ns.subtree()).await.unwrap();
        assert!(
            pairs
                .iter()
                .any(|pair| (pair.older.as_str(), pair.newer.as_str())
                    == (keyed.id.as_str(), flagged.id.as_str())),
            "{name}: {pairs:?}"
        );
        let found = memory.recall(&ns.subtree(), question).await.unwrap();
        let keyed_found = found
            .items
            .iter()
            .find(|item| matches!(&item.record, RetrievalSource::Memory(m) if m.id == keyed.id))
            .unwrap();
        assert!(
            keyed_found.breakdown.value(Signal::Stale).is_none(),
            "{name}"
        );
        // The same two statements without the key: the newer comes first.
        let plain = Namespace::parse("plain").unwrap();
        for (text, at) in [
            ("Ava Novak lives in Berlin", 1),
            ("Ava Novak lives in Oslo", 6),
        ] {
            memory
                .remember_with(
                    Remember::new(plain.clone(), text)
                        .id(format!("plain-{at}"))
                        .kind(MemoryKind::Semantic)
                        .created_at(day(at)),
                )
                .await
                .unwrap();
        }
        let found = memory.recall(&plain.subtree(), question).await.unwrap();
        assert_eq!(memory_ids(&found), ["plain-6", "plain-1"], "{name}");
        backend.cleanup().await;
    }
}

#[tokio::test]
async fn supersede_and_retract_explicitly_with_clear_errors() {
    for backend in common::backends("facts_explicit").await {
        let clock = Arc::new(ManualClock::new(day(20)));
        let name = backend.name;
        let memory = builder(&backend, &clock)
            .facts(FactsConfig::off())
            .build()
            .unwrap();
        let ns = Namespace::parse("explicit").unwrap();
        let a = memory
            .remember_with(
                Remember::new(ns.clone(), "The launch is planned for March").created_at(day(1)),
            )
            .await
            .unwrap()
            .id;
        let b = memory
            .remember_with(
                Remember::new(ns.clone(), "The launch slipped to June").created_at(day(5)),
            )
            .await
            .unwrap()
            .id;
        memory.supersede(&ns, &a, &b).await.unwrap();
        let history = memory.history(&ns, &b).await.unwrap();
        let ids: Vec<&str> = history.iter().map(|item| item.id.as_str()).collect();
        assert_eq!(ids, [a.as_str(), b.as_str()], "{name}");
        for (result, field) in [
            (memory.supersede(&ns, &a, &a).await, "new"),
            (memory.supersede(&ns, &a, &b).await, "old"),
        ] {
            match result {
                Err(MemoryError::InvalidInput { field: got, .. }) => assert_eq!(got, field),
                other => panic!("{name}: {other:?}"),
            }
        }
        assert!(matches!(
            memory.supersede(&ns, "missing", &b).await,
            Err(MemoryError::NotFound { .. })
        ));

        memory
            .retract(&ns, &b, "the launch was cancelled")
            .await
            .unwrap();
        let retracted = backend.store.get(&ns, &b).await.unwrap().unwrap();
        let ended = retracted.ended.unwrap();
        assert_eq!(ended.at, day(20), "{name}");
        assert_eq!(
            ended.reason,
            EndReason::Retracted {
                reason: "the launch was cancelled".into()
            }
        );
        let found = memory.recall(&ns.subtree(), "launch").await.unwrap();
        assert!(
            memory_ids(&found).is_empty(),
            "{name}: {:?}",
            memory_ids(&found)
        );
        let long = "x".repeat(agent_memory::MAX_REASON_LEN + 1);
        let c = memory.remember(&ns, "Another fact").await.unwrap();
        match memory.retract(&ns, &c, &long).await {
            Err(MemoryError::InvalidInput { field, .. }) => assert_eq!(field, "reason"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(
            backend
                .store
                .get(&ns, &c)
                .await
                .unwrap()
                .unwrap()
                .ended
                .is_none()
        );
        backend.cleanup().await;
    }
}

#[tokio::test]
async fn single_valued_relations_close_the_old_value() {
    for backend in common::backends("facts_relations").await {
        let clock = Arc::new(ManualClock::new(day(10)));
        let name = backend.name;
        let memory = builder(&backend, &clock)
            .single_valued_relations(["lives_in"])
            .build()
            .unwrap();
        let ns = Namespace::parse("graph").unwrap();
        for (id, kind) in [
            ("ann", "person"),
            ("paris", "city"),
            ("berlin", "city"),
            ("rust", "topic"),
        ] {
            memory
                .graph()
                .add_entity(GraphEntity::new(ns.clone(), id, id, kind).unwrap())
                .await
                .unwrap();
        }
        let lives = |city: &str, from: i64| {
            GraphRelation::new(ns.clone(), "ann", city, "lives_in", 1.0)
                .unwrap()
                .with_validity(Some(day(from)), None)
                .unwrap()
        };
        assert!(memory.relate(lives("paris", 1)).await.unwrap().is_empty());
        // Not single-valued: stays beside the others.
        memory
            .relate(GraphRelation::new(ns.clone(), "ann", "rust", "likes", 1.0).unwrap())
            .await
            .unwrap();
        let closed = memory.relate(lives("berlin", 5)).await.unwrap();
        assert_eq!(closed.len(), 1, "{name}");
        assert_eq!(closed[0].target_id, "paris");
        assert_eq!(closed[0].valid_until, Some(day(5)));
        let graph = memory.graph();
        let mut now: Vec<String> = graph
            .get_related(&ns, "ann", 1)
            .await
            .unwrap()
            .into_iter()
            .map(|scored| scored.entity.id.clone())
            .collect();
        now.sort();
        assert_eq!(now, ["berlin", "rust"], "{name}");
        let mut then: Vec<String> = graph
            .related_as_of(&ns, "ann", 1, day(3))
            .await
            .unwrap()
            .into_iter()
            .map(|scored| scored.entity.id.clone())
            .collect();
        then.sort();
        assert_eq!(then, ["paris", "rust"], "{name}");
        let context = graph.context_for_agent(&ns, "ann", 1, 1000).await.unwrap();
        assert!(context.contains("lives_in --> berlin"), "{name}: {context}");
        assert!(!context.contains("--> paris"), "{name}: {context}");
        // A relation that starts before the current one it would close is refused.
        let early = memory.relate(lives("paris", 2)).await;
        assert!(
            matches!(early, Err(MemoryError::InvalidInput { ref field, .. }) if field == "valid_from"),
            "{name}: {early:?}"
        );
        backend.cleanup().await;
    }
}

/// Keyed statements written in random order and at random times: the current version,
/// the history and every as-of answer agree with a model.
#[tokio::test]
async fn keyed_facts_agree_with_a_model() {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    let cases: Vec<Vec<(usize, i64)>> = (0..6)
        .map(|_| {
            let ops = 4 + next(12) as usize;
            let mut used = std::collections::HashSet::new();
            (0..ops)
                .filter_map(|_| {
                    let key = next(3) as usize;
                    let at = next(60) as i64;
                    used.insert((key, at)).then_some((key, at))
                })
                .collect()
        })
        .collect();
    for backend in common::backends("facts_model").await {
        let name = backend.name;
        let clock = Arc::new(ManualClock::new(day(1000)));
        let memory = builder(&backend, &clock).build().unwrap();
        for (case, ops) in cases.iter().enumerate() {
            let ns = Namespace::parse(&format!("model/case-{case}")).unwrap();
            // key -> (time, id) of every statement
            let mut model: BTreeMap<usize, Vec<(i64, String)>> = BTreeMap::new();
            for (n, &(key, at)) in ops.iter().enumerate() {
                let text = format!("subject{key} has value v{n}x{at}");
                let done = memory
                    .remember_with(
                        Remember::new(ns.clone(), text)
                            .fact_key(format!("subject{key}.value"))
                            .created_at(day(at)),
                    )
                    .await
                    .unwrap();
                model.entry(key).or_default().push((at, done.id));
            }
            for (key, versions) in &mut model {
                versions.sort();
                let current = &versions.last().unwrap().1;
                let mut filter = agent_memory::MemoryFilter::new(ns.exact())
                    .with_view(agent_memory::TimeView::Current(day(1000)))
                    .with_fact_key(&format!("subject{key}.value"))
                    .unwrap();
                filter.limit = None;
                let live = backend.store.list(&filter).await.unwrap();
                let live: Vec<&str> = live.iter().map(|item| item.id.as_str()).collect();
                assert_eq!(live, [current.as_str()], "{name} case {case} key {key}");
                let history = memory.history(&ns, current).await.unwrap();
                let got: Vec<&str> = history.iter().map(|item| item.id.as_str()).collect();
                let want: Vec<&str> = versions.iter().map(|(_, id)| id.as_str()).collect();
                assert_eq!(got, want, "{name} case {case} key {key}: history");
                for probe in 0..62 {
                    let held = versions
                        .iter()
                        .rev()
                        .find(|(at, _)| *at <= probe)
                        .map(|(_, id)| id.as_str());
                    let view = agent_memory::TimeView::AsOf(day(probe));
                    let filter = agent_memory::MemoryFilter::new(ns.exact())
                        .with_view(view)
                        .with_fact_key(&format!("subject{key}.value"))
                        .unwrap();
                    let then = backend.store.list(&filter).await.unwrap();
                    let then: Vec<&str> = then.iter().map(|item| item.id.as_str()).collect();
                    assert_eq!(
                        then,
                        held.into_iter().collect::<Vec<_>>(),
                        "{name} case {case} key {key} as of day {probe}"
                    );
                }
            }
        }
        backend.cleanup().await;
    }
}

/// Maintenance folds an old session's episodes into one summary that links its sources;
/// the sources leave default recall and stay in the history; explicit consolidation checks
/// its input.
#[tokio::test]
async fn old_sessions_are_consolidated_into_linked_summaries() {
    for backend in common::backends("facts_consolidate").await {
        let clock = Arc::new(ManualClock::new(day(100)));
        let name = backend.name;
        let memory = builder(&backend, &clock)
            .consolidation(agent_memory::retrieve::ConsolidationConfig {
                min_group: 3,
                max_tokens: 24,
                ..Default::default()
            })
            .build()
            .unwrap();
        let ns = Namespace::parse("consolidate").unwrap();
        let texts = [
            "We hiked the ridge trail above the lake on Saturday.",
            "The ridge trail was muddy after the rain.",
            "We saw two eagles near the summit cairn.",
            "Lunch was sandwiches at the summit hut.",
        ];
        let mut sources = Vec::new();
        for (n, text) in texts.iter().enumerate() {
            let done = memory
                .remember_with(
                    Remember::new(ns.clone(), *text)
                        .metadata(serde_json::json!({"session": "hike"}))
                        .tags([format!("t{n}")])
                        .importance(0.3 + n as f32 / 10.0)
                        .created_at(day(n as i64)),
                )
                .await
                .unwrap();
            sources.push(done.id);
        }
        let small = memory
            .remember_with(
                Remember::new(ns.clone(), "Booked a dentist appointment.")
                    .metadata(serde_json::json!({"session": "errands"}))
                    .created_at(day(2)),
            )
            .await
            .unwrap()
            .id;
        let report = memory.maintain(&ns.subtree()).await.unwrap();
        assert_eq!((report.consolidated, report.summaries), (4, 1), "{name}");
        let all = backend
            .store
            .list(&agent_memory::MemoryFilter::new(ns.exact()))
            .await
            .unwrap();
        let summary = all
            .iter()
            .find(|item| !item.supersedes.is_empty())
            .expect("a summary");
        assert_eq!(summary.supersedes, sources, "{name}");
        assert_eq!(summary.kind, MemoryKind::LongTerm, "{name}");
        assert!((summary.importance - 0.6).abs() < 1e-6, "{name}");
        assert_eq!(summary.tags.len(), 4, "{name}");
        assert!(
            agent_memory::retrieve::estimate_tokens(&summary.content) <= 24,
            "{name}: {}",
            summary.content
        );
        for item in all.iter().filter(|item| sources.contains(&item.id)) {
            let ended = item.ended.as_ref().expect("ended");
            assert_eq!(
                ended.reason,
                EndReason::Consolidated {
                    into: summary.id.clone()
                },
                "{name}"
            );
        }
        let small_item = all.iter().find(|item| item.id == small).unwrap();
        assert!(small_item.ended.is_none(), "{name}: a small group stays");
        let found = memory
            .recall(&ns.subtree(), "ridge trail summit")
            .await
            .unwrap();
        assert_eq!(memory_ids(&found), [summary.id.as_str()], "{name}");
        let everything = memory
            .recall_with(
                &ns.subtree(),
                "ridge trail summit",
                &RecallOptions::default().view(RecallView::All),
            )
            .await
            .unwrap();
        assert_eq!(memory_ids(&everything).len(), 5, "{name}");
        assert_eq!(memory_ids(&everything)[0], summary.id, "{name}");
        let history = memory.history(&ns, &sources[0]).await.unwrap();
        assert_eq!(history.len(), 5, "{name}");
        // A second pass has nothing left to fold.
        let again = memory.maintain(&ns.subtree()).await.unwrap();
        assert_eq!((again.consolidated, again.summaries), (0, 0), "{name}");

        for (ids, field) in [
            (vec![small.clone()], "ids"),
            (vec![small.clone(), small.clone()], "ids"),
            (vec![small.clone(), sources[0].clone()], "ids"),
        ] {
            match memory.consolidate(&ns, &ids, 50).await {
                Err(MemoryError::InvalidInput { field: got, .. }) => assert_eq!(got, field),
                other => panic!("{name}: {ids:?}: {other:?}"),
            }
        }
        assert!(matches!(
            memory
                .consolidate(&ns, &[small.clone(), "missing".to_owned()], 50)
                .await,
            Err(MemoryError::NotFound { .. })
        ));
        backend.cleanup().await;
    }
}
