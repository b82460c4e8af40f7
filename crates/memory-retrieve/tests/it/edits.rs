//! Edits that race another writer: each is written only over the copy it read, so a write
//! made between an edit's read and its write is kept, not replaced.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use memory_core::{Clock, DecayConfig, MemoryError, MemoryItem, MemoryStore, Namespace, Result};
use memory_inmem::InMemoryStore;
use memory_retrieve::{CompressionConfig, Memory, MemoryUpdate, Summarizer, decay};

use crate::instrumented::Instrumented;

fn ns() -> Namespace {
    Namespace::parse("edits").unwrap()
}

/// A memory on an instrumented store, holding one memory; returns its id.
async fn one_memory() -> (Arc<Instrumented>, Memory, String) {
    let store = Arc::new(Instrumented::default());
    let memory = Memory::builder()
        .store(store.clone() as Arc<dyn MemoryStore>)
        .build()
        .unwrap();
    let id = memory
        .remember(&ns(), "The user plays the violin on Sundays")
        .await
        .unwrap();
    (store, memory, id)
}

async fn stored(store: &Instrumented, id: &str) -> MemoryItem {
    store.inner.get(&ns(), id).await.unwrap().unwrap()
}

#[tokio::test]
async fn an_update_keeps_a_pin_made_between_its_read_and_its_write() {
    let (store, memory, id) = one_memory().await;
    store
        .after_reads
        .push(&ns(), &id, |item| item.with_pinned(true));
    let updated = memory
        .update(
            &ns(),
            &id,
            MemoryUpdate::new().content("The user plays the cello on Sundays"),
        )
        .await
        .unwrap();
    let now = stored(&store, &id).await;
    assert_eq!(now, updated, "the update returns what is stored");
    assert_eq!(now.content, "The user plays the cello on Sundays");
    assert!(
        now.is_pinned(),
        "the pin made while the update was made is kept"
    );
}

#[tokio::test]
async fn a_pin_keeps_an_edit_made_between_its_read_and_its_write() {
    let (store, memory, id) = one_memory().await;
    store
        .after_reads
        .push(&ns(), &id, |item| item.with_tags(["music"]).unwrap());
    assert!(memory.pin(&ns(), &id, true).await.unwrap());
    let now = stored(&store, &id).await;
    assert!(now.is_pinned());
    assert_eq!(
        now.tags.len(),
        1,
        "the tags written while it was pinned are kept"
    );
}

#[tokio::test]
async fn a_compression_keeps_an_edit_made_between_its_read_and_its_write() {
    let (store, memory, id) = one_memory().await;
    store
        .after_reads
        .push(&ns(), &id, |item| item.with_importance(0.9).unwrap());
    assert!(
        memory
            .compress(&ns(), &id, "violin, Sundays")
            .await
            .unwrap()
    );
    let now = stored(&store, &id).await;
    assert_eq!(now.content, "violin, Sundays");
    assert_eq!(now.importance, 0.9, "the importance set meanwhile is kept");
}

/// Another writer that changes the memory before every write: the edit gives up with a
/// conflict, and writes nothing.
#[tokio::test]
async fn an_edit_that_never_finds_its_copy_stored_writes_nothing() {
    let (store, memory, id) = one_memory().await;
    for _ in 0..20 {
        store
            .after_reads
            .push(&ns(), &id, |item| item.with_importance(0.7).unwrap());
    }
    let error = memory
        .update(&ns(), &id, MemoryUpdate::new().content("Something else"))
        .await
        .unwrap_err();
    assert!(matches!(error, MemoryError::Conflict { .. }), "{error}");
    assert_eq!(
        stored(&store, &id).await.content,
        "The user plays the violin on Sundays"
    );
}

/// A decay pass writes each memory it lowers only over the copy it listed: a memory pinned
/// after the listing stays pinned, at its importance.
#[tokio::test]
async fn a_decay_pass_leaves_a_memory_pinned_after_its_listing() {
    let store = Instrumented::default();
    let t0: DateTime<Utc> = "2024-01-01T00:00:00Z".parse().unwrap();
    let item = MemoryItem::new(ns(), "an old memory that decays")
        .unwrap()
        .with_id("old")
        .unwrap()
        .with_importance(0.8)
        .unwrap()
        .with_created_at(t0);
    store.inner.save(item).await.unwrap();
    store
        .after_reads
        .push(&ns(), "old", |item| item.with_pinned(true));
    let config = DecayConfig {
        daily_rate: 0.1,
        min_threshold: 0.01,
        grace_period_days: 1,
    };
    let report = decay(
        &store,
        &ns().subtree(),
        &config,
        t0 + Duration::days(30),
        false,
    )
    .await
    .unwrap();
    assert_eq!(report.decayed, 0, "{report:?}");
    let now = stored(&store, "old").await;
    assert!(now.is_pinned(), "the pin made after the listing is kept");
    assert_eq!(now.importance, 0.8);
}

/// A clock at the tests' start.
fn clock() -> Arc<memory_core::ManualClock> {
    Arc::new(memory_core::ManualClock::new(
        "2024-03-01T12:00:00Z".parse().unwrap(),
    ))
}

/// A memory on `store` that compresses memories older than a week with `summarizer`.
fn compressing(
    store: &Arc<InMemoryStore>,
    clock: &Arc<memory_core::ManualClock>,
    summarizer: Arc<dyn Summarizer>,
) -> Memory {
    Memory::builder()
        .store(store.clone() as Arc<dyn MemoryStore>)
        .clock(clock.clone())
        .compression_with(
            CompressionConfig {
                older_than_days: 7,
                max_tokens: 4,
            },
            summarizer,
        )
        .build()
        .unwrap()
}

/// A summarizer that pins the memory it is asked to summarise, as a user might while a
/// model writes the summary.
#[derive(Debug)]
struct PinsWhileSummarising(Arc<InMemoryStore>);

#[async_trait]
impl Summarizer for PinsWhileSummarising {
    async fn summarize(&self, _texts: &[&str], _max_tokens: usize) -> Result<String> {
        for item in self
            .0
            .list(&memory_core::MemoryFilter::new(ns().subtree()))
            .await?
        {
            let read_at = item.updated_at;
            self.0.save(item.with_pinned(true).revised(read_at)).await?;
        }
        Ok("a short summary".to_owned())
    }
}

#[tokio::test]
async fn a_memory_pinned_while_its_summary_is_written_is_not_compressed() {
    let store = Arc::new(InMemoryStore::new());
    let clock = clock();
    let memory = compressing(
        &store,
        &clock,
        Arc::new(PinsWhileSummarising(store.clone())),
    );
    let text = "We planned the trip to Lisbon in May. The flights were cheap on Tuesday, and \
        my sister will join us for the first week.";
    let id = memory.remember(&ns(), text).await.unwrap();
    clock.advance(Duration::days(30));
    let report = memory.maintain(&ns().subtree()).await.unwrap();
    assert_eq!(report.compressed, 0, "{report:?}");
    let now = store.get(&ns(), &id).await.unwrap().unwrap();
    assert!(
        now.is_pinned(),
        "the pin made while the summary was written is kept"
    );
    assert_eq!(now.content, text);
}

/// An edit read before a retraction and written after it keeps the retraction (it had
/// brought the memory back), and a retraction keeps an edit made while it was made.
#[tokio::test]
async fn an_edit_and_a_retraction_of_one_memory_both_hold() {
    let (store, memory, id) = one_memory().await;
    store.after_reads.push(&ns(), &id, |mut item| {
        item.ended = Some(memory_core::Ended {
            at: item.created_at,
            reason: memory_core::EndReason::Retracted {
                reason: "said in jest".to_owned(),
            },
        });
        item
    });
    memory
        .update(&ns(), &id, MemoryUpdate::new().importance(0.9))
        .await
        .unwrap();
    let now = stored(&store, &id).await;
    assert!(now.ended.is_some(), "the retraction made meanwhile is kept");
    assert_eq!(now.importance, 0.9);

    let (store, memory, id) = one_memory().await;
    store
        .after_reads
        .push(&ns(), &id, |item| item.with_tags(["music"]).unwrap());
    memory.retract(&ns(), &id, "no longer true").await.unwrap();
    let now = stored(&store, &id).await;
    assert!(now.ended.is_some());
    assert_eq!(now.tags.len(), 1, "the tags written meanwhile are kept");
}

/// A summarizer that has another process (a second `Memory` on the same store) supersede
/// the memory it is summarising with a new version.
#[derive(Debug)]
struct SupersedesWhileSummarising {
    other: Memory,
    ids: std::sync::Mutex<Option<(String, String)>>,
}

#[async_trait]
impl Summarizer for SupersedesWhileSummarising {
    async fn summarize(&self, _texts: &[&str], _max_tokens: usize) -> Result<String> {
        let ids = self.ids.lock().ok().and_then(|mut ids| ids.take());
        if let Some((old, new)) = ids {
            self.other.supersede(&ns(), &old, &new).await?;
        }
        Ok("a short summary".to_owned())
    }
}

/// A supersession is a write like an edit: a compression made from a copy read before it
/// does not bring the superseded version back as current.
#[tokio::test]
async fn a_memory_superseded_while_its_summary_is_written_stays_superseded() {
    let store = Arc::new(InMemoryStore::new());
    let clock = clock();
    let summarizer = Arc::new(SupersedesWhileSummarising {
        other: Memory::builder()
            .store(store.clone() as Arc<dyn MemoryStore>)
            .clock(clock.clone())
            .build()
            .unwrap(),
        ids: std::sync::Mutex::new(None),
    });
    let memory = compressing(&store, &clock, summarizer.clone());
    let old = memory
        .remember(
            &ns(),
            "We planned the trip to Lisbon in May. The flights were cheap on Tuesday, and my \
             sister will join us for the first week.",
        )
        .await
        .unwrap();
    clock.advance(Duration::days(30));
    let new = memory
        .remember(&ns(), "The trip moved to Porto")
        .await
        .unwrap();
    *summarizer.ids.lock().unwrap() = Some((old.clone(), new));
    let report = memory.maintain(&ns().subtree()).await.unwrap();
    assert_eq!(report.compressed, 0, "{report:?}");
    let now = store.get(&ns(), &old).await.unwrap().unwrap();
    assert!(
        now.ended.is_some(),
        "the supersession made meanwhile is kept"
    );
}

/// An eviction pass deletes the memories it chose only if they are still as it read them:
/// one pinned after the listing stays.
#[tokio::test]
async fn a_memory_pinned_after_an_eviction_listing_stays() {
    let store = Instrumented::default();
    let t0: DateTime<Utc> = "2024-01-01T00:00:00Z".parse().unwrap();
    for i in 0..5 {
        let item = MemoryItem::new(ns(), format!("memory number {i}"))
            .unwrap()
            .with_id(format!("m{i}"))
            .unwrap()
            .with_created_at(t0 + Duration::hours(i));
        store.inner.save(item).await.unwrap();
    }
    store
        .after_reads
        .push(&ns(), "m0", |item| item.with_pinned(true));
    let policy = memory_core::EvictionPolicy::Capacity { max_items: 3 };
    memory_retrieve::evict(&store, &ns().subtree(), &policy, t0 + Duration::days(1))
        .await
        .unwrap();
    let oldest = stored(&store, "m0").await;
    assert!(oldest.is_pinned(), "the memory pinned meanwhile is kept");
}

/// A repetition merged into a memory edited while the merge was worked out keeps the edit:
/// the merge is written only over the copy it read, and worked out again.
#[tokio::test]
async fn a_merge_keeps_an_edit_made_while_it_was_worked_out() {
    let (store, memory, id) = one_memory().await;
    store
        .after_reads
        .push(&ns(), &id, |item| item.with_tags(["music"]).unwrap());
    let again = memory
        .remember(&ns(), "The user plays the violin on Sundays")
        .await
        .unwrap();
    assert_eq!(again, id, "merged into the stored memory");
    let now = stored(&store, &id).await;
    assert_eq!(now.tags.len(), 1, "the tags written meanwhile are kept");
    assert_eq!(now.access_count, 1, "and the merge counted");

    // The same through a batch.
    store
        .after_reads
        .push(&ns(), &id, |item| item.with_importance(0.9).unwrap());
    let done = memory
        .remember_many(vec![memory_retrieve::Remember::new(
            ns(),
            "the user plays the violin on Sundays",
        )])
        .await
        .unwrap();
    assert_eq!(done[0].id, id);
    let now = stored(&store, &id).await;
    assert_eq!(now.importance, 0.9, "the importance set meanwhile is kept");
    assert_eq!(now.access_count, 2);
}

/// A new version of a fact supersedes the stored one as it is when written: an edit made
/// to it while the new version was reconciled is kept, and it ends.
#[tokio::test]
async fn a_superseded_version_keeps_an_edit_made_while_it_was_superseded() {
    let store = Arc::new(Instrumented::default());
    let memory = Memory::builder()
        .store(store.clone() as Arc<dyn MemoryStore>)
        .build()
        .unwrap();
    let paris = memory
        .remember_with(
            memory_retrieve::Remember::new(ns(), "The user lives in Paris").fact_key("user.city"),
        )
        .await
        .unwrap()
        .id;
    // The first read (the search for rivals) changes nothing of it; the second (the listing
    // of the fact's versions) is followed by another writer's edit.
    store.after_reads.push(&ns(), "nobody", |item| item);
    store
        .after_reads
        .push(&ns(), &paris, |item| item.with_importance(0.9).unwrap());
    memory
        .remember_with(
            memory_retrieve::Remember::new(ns(), "The user lives in Berlin").fact_key("user.city"),
        )
        .await
        .unwrap();
    let now = stored(&store, &paris).await;
    assert!(now.ended.is_some(), "superseded");
    assert_eq!(now.importance, 0.9, "the importance set meanwhile is kept");
}

/// A memory pinned while an eviction pass chose it stays with the history it ends, and the
/// pass still deletes its other victims: no version is left naming a successor that is
/// gone, and none of a pinned memory's history is deleted.
#[tokio::test]
async fn a_memory_pinned_during_eviction_keeps_its_history() {
    let store = Arc::new(Instrumented::default());
    let clock = clock();
    let memory = Memory::builder()
        .store(store.clone() as Arc<dyn MemoryStore>)
        .clock(clock.clone())
        .build()
        .unwrap();
    let remember = |text: &'static str, key: Option<&'static str>, importance: f32| {
        let memory = &memory;
        async move {
            let mut request = memory_retrieve::Remember::new(ns(), text).importance(importance);
            if let Some(key) = key {
                request = request.fact_key(key);
            }
            memory.remember_with(request).await.unwrap().id
        }
    };
    // By value, the victims are the two memories of low importance (and one more); the
    // version Berlin superseded is worth keeping alone, but goes with Berlin as history.
    let paris = remember("The user lives in Paris", Some("user.city"), 1.0).await;
    clock.advance(Duration::hours(1));
    let berlin = remember("The user lives in Berlin", Some("user.city"), 0.1).await;
    clock.advance(Duration::hours(1));
    let other = remember("The user drinks green tea", None, 0.1).await;
    clock.advance(Duration::hours(1));
    for text in [
        "a newer memory about boats",
        "a newer one about trains",
        "one about planes",
    ] {
        remember(text, None, 0.9).await;
    }
    store
        .after_reads
        .push(&ns(), &berlin, |item| item.with_pinned(true));
    let policy = memory_core::EvictionPolicy::ValueBased(memory_core::ValueBasedConfig {
        max_items: 3,
        ..memory_core::ValueBasedConfig::default()
    });
    memory_retrieve::evict(&*store, &ns().subtree(), &policy, clock.now())
        .await
        .unwrap();
    assert!(
        stored(&store, &berlin).await.is_pinned(),
        "pinned meanwhile, kept"
    );
    assert!(
        store.inner.get(&ns(), &paris).await.unwrap().is_some(),
        "its history kept with it"
    );
    assert!(
        store.inner.get(&ns(), &other).await.unwrap().is_none(),
        "the pass's other victim deleted"
    );
}

/// A conversation's window deletes the oldest messages only as it read them: one pinned
/// while the window chose it stays.
#[tokio::test]
async fn a_message_pinned_while_the_window_chose_it_stays() {
    let store = Arc::new(Instrumented::default());
    let memory = Memory::builder()
        .store(store.clone() as Arc<dyn MemoryStore>)
        .build()
        .unwrap();
    let session = Namespace::parse("edits/chat").unwrap();
    let chat = memory
        .conversation(
            session.clone(),
            memory_retrieve::ConversationConfig {
                max_messages: Some(3),
                ..memory_retrieve::ConversationConfig::default()
            },
        )
        .await
        .unwrap();
    let mut ids = Vec::new();
    for text in ["first", "second", "third"] {
        ids.push(
            chat.add_message(memory_retrieve::Message::new(
                memory_retrieve::Role::User,
                text,
            ))
            .await
            .unwrap(),
        );
    }
    // A fourth memory in the session's namespace takes it over its size.
    store
        .inner
        .save(MemoryItem::new(session.clone(), "a note kept beside the chat").unwrap())
        .await
        .unwrap();
    store
        .after_reads
        .push(&session, &ids[0], |item| item.with_pinned(true));
    assert_eq!(chat.evict().await.unwrap(), 0);
    let first = store.inner.get(&session, &ids[0]).await.unwrap().unwrap();
    assert!(first.is_pinned(), "pinned meanwhile, kept");
}

/// `forget_matching` in a namespace where other writes keep changing one of its matches
/// (every deletion of several memories at once refused) forgets each match on its own: the
/// busy memory does not hold the others back.
#[tokio::test]
async fn forget_matching_in_a_busy_namespace_forgets_each_match() {
    let store = Arc::new(Instrumented::refusing_group_deletes());
    let memory = Memory::builder()
        .store(store.clone() as Arc<dyn MemoryStore>)
        .build()
        .unwrap();
    for text in [
        "pears are green",
        "quinces are yellow",
        "kites fly in the wind",
    ] {
        memory.remember(&ns(), text).await.unwrap();
    }
    let forgotten = memory
        .forget_matching(&memory_core::MemoryFilter::new(ns().exact()))
        .await
        .unwrap();
    assert_eq!(forgotten, 3);
    assert_eq!(store.inner.count(&ns().exact()).await.unwrap(), 0);
}
