//! `Memory::reembed`: a store's memories embedded after the fact, when an embedder is added
//! or its model changes; concurrent edits and deletions are left as their writer left them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use memory_core::{
    EmbeddingProvider, MemoryError, MemoryKind, MemoryStore, Namespace, Result, RetrievalSource,
};
use memory_inmem::InMemoryStore;
use memory_retrieve::{Memory, Reembed, ReembedReport, Remember};

/// Vehicles, food, and a constant: "automobile" and "car" point the same way.
#[derive(Debug, Default)]
struct Topics {
    batches: AtomicUsize,
    texts: AtomicUsize,
}

fn topic_vector(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0, 0.0, 0.1];
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        match word.to_lowercase().as_str() {
            "car" | "automobile" | "truck" => vector[0] += 1.0,
            "pizza" | "meal" | "pasta" => vector[1] += 1.0,
            _ => {}
        }
    }
    vector
}

#[async_trait]
impl EmbeddingProvider for Topics {
    async fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(topic_vector(text))
    }

    async fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.texts.fetch_add(texts.len(), Ordering::Relaxed);
        Ok(texts.iter().map(|text| topic_vector(text)).collect())
    }

    fn dimension(&self) -> usize {
        3
    }
}

fn ns() -> Namespace {
    Namespace::parse("user/reembed").expect("a namespace")
}

fn with_embedder(store: &Arc<InMemoryStore>, embedder: Arc<dyn EmbeddingProvider>) -> Memory {
    Memory::builder()
        .store(store.clone())
        .embedder(embedder)
        .build()
        .expect("a memory")
}

/// `texts` remembered in [`ns`] by a memory without an embedder over `store`; their ids.
async fn remembered_without_embedder(store: &Arc<InMemoryStore>, texts: &[&str]) -> Vec<String> {
    let plain = Memory::builder()
        .store(store.clone())
        .build()
        .expect("a memory");
    let mut ids = Vec::new();
    for text in texts {
        ids.push(plain.remember(&ns(), text).await.expect("remembered"));
    }
    ids
}

fn first_memory_id(found: &memory_core::RetrievalResult) -> Option<String> {
    found.items.first().and_then(|item| match &item.record {
        RetrievalSource::Memory(memory) => Some(memory.id.clone()),
        _ => None,
    })
}

/// Memories remembered before the embedder was added are found by meaning once embedded.
#[tokio::test]
async fn memories_remembered_without_an_embedder_are_found_by_meaning_after() {
    let store = Arc::new(InMemoryStore::new());
    let plain = Memory::builder()
        .store(store.clone())
        .build()
        .expect("a memory");
    let car = plain
        .remember(&ns(), "I drive an old car to work")
        .await
        .expect("remembered");
    plain
        .remember(&ns(), "We ate pizza last night")
        .await
        .expect("remembered");
    plain
        .remember_with(Remember::new(ns(), "a message of the window").kind(MemoryKind::ShortTerm))
        .await
        .expect("remembered");

    let topics = Arc::new(Topics::default());
    let memory = with_embedder(&store, topics.clone());
    let before = memory
        .recall(&ns().exact(), "automobile")
        .await
        .expect("recalled");
    assert!(
        before.items.is_empty(),
        "no vectors yet: {:?}",
        before.items
    );

    let report = memory
        .reembed(&ns().subtree(), Reembed::Missing)
        .await
        .expect("embedded");
    assert_eq!(
        report,
        ReembedReport {
            examined: 2,
            embedded: 2,
            skipped: 0
        },
        "the conversation message is left out"
    );
    let stored = store.get(&ns(), &car).await.expect("read").expect("kept");
    assert_eq!(
        stored.embedding,
        Some(topic_vector("I drive an old car to work"))
    );
    let found = memory
        .recall(&ns().exact(), "automobile")
        .await
        .expect("recalled");
    assert_eq!(first_memory_id(&found), Some(car));

    // Nothing is missing any more; `All` embeds every one again.
    let again = memory
        .reembed(&ns().subtree(), Reembed::Missing)
        .await
        .expect("embedded");
    assert_eq!(again.embedded, 0);
    assert_eq!(again.examined, 2);
    let all = memory
        .reembed(&ns().subtree(), Reembed::All)
        .await
        .expect("embedded");
    assert_eq!(all.embedded, 2);
    assert_eq!(topics.texts.load(Ordering::Relaxed), 4);
}

/// A vector of another length (another model's) counts as missing; memories outside the
/// scope are not touched; many memories go in batches.
#[tokio::test]
async fn vectors_of_another_length_are_replaced_in_batches_within_the_scope() {
    let store = Arc::new(InMemoryStore::new());
    let plain = Memory::builder()
        .store(store.clone())
        .build()
        .expect("a memory");
    let other = Namespace::parse("user/elsewhere").expect("a namespace");
    let item = memory_core::MemoryItem::new(ns(), "a truck in the yard")
        .and_then(|item| item.with_embedding(vec![1.0; 5]))
        .expect("an item");
    let old_model = item.id.clone();
    store.save(item).await.expect("saved");
    for n in 0..130 {
        plain
            .remember(&ns(), &format!("note number {n} about pasta"))
            .await
            .expect("remembered");
    }
    let outside = plain
        .remember(&other, "a car outside the scope")
        .await
        .expect("remembered");

    let topics = Arc::new(Topics::default());
    let memory = with_embedder(&store, topics.clone());
    let report = memory
        .reembed(&ns().exact(), Reembed::Missing)
        .await
        .expect("embedded");
    assert_eq!(report.embedded, 131);
    assert_eq!(
        topics.batches.load(Ordering::Relaxed),
        3,
        "64 texts per batch"
    );

    // The progress after each batch, then at the end.
    let mut seen = Vec::new();
    let again = memory
        .reembed_with_progress(&ns().exact(), Reembed::All, |report| {
            seen.push(report.embedded);
        })
        .await
        .expect("embedded");
    assert_eq!(seen, [64, 128, 131, 131]);
    assert_eq!(again.embedded, 131);
    let replaced = store
        .get(&ns(), &old_model)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(
        replaced.embedding,
        Some(topic_vector("a truck in the yard"))
    );
    let untouched = store
        .get(&other, &outside)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(untouched.embedding, None);
}

/// Without an embedder there is nothing to embed with: refused by name.
#[tokio::test]
async fn a_memory_without_an_embedder_refuses_by_name() {
    let memory = Memory::in_memory();
    let error = memory
        .reembed(&ns().subtree(), Reembed::Missing)
        .await
        .expect_err("no embedder");
    assert_eq!(error.field(), Some("embedder"), "{error}");
}

/// An embedder that edits and deletes memories while it computes: the edited memory keeps
/// its new text (and gets no vector of the old one), the deleted one stays deleted.
#[derive(Debug)]
struct Meddling {
    store: Arc<InMemoryStore>,
    ids: Mutex<Option<(String, String)>>,
}

#[async_trait]
impl EmbeddingProvider for Meddling {
    async fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(topic_vector(text))
    }

    async fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let taken = self.ids.lock().expect("not poisoned").take();
        if let Some((edited, deleted)) = taken {
            let mut item = self
                .store
                .get(&ns(), &edited)
                .await?
                .ok_or_else(|| MemoryError::not_found("memory", ns(), &edited))?;
            item.content = "We ate pasta instead".to_owned();
            self.store.update(item).await?;
            self.store.delete(&ns(), &deleted).await?;
        }
        Ok(texts.iter().map(|text| topic_vector(text)).collect())
    }

    fn dimension(&self) -> usize {
        3
    }
}

#[tokio::test]
async fn a_memory_edited_or_deleted_meanwhile_is_left_as_its_writer_left_it() {
    let store = Arc::new(InMemoryStore::new());
    let ids = remembered_without_embedder(
        &store,
        &[
            "I drive an old car",
            "We ate pizza last night",
            "a truck went by",
        ],
    )
    .await;
    let [car, edited, deleted] = <[String; 3]>::try_from(ids).expect("three ids");
    let memory = with_embedder(
        &store,
        Arc::new(Meddling {
            store: store.clone(),
            ids: Mutex::new(Some((edited.clone(), deleted.clone()))),
        }),
    );
    let report = memory
        .reembed(&ns().subtree(), Reembed::Missing)
        .await
        .expect("embedded");
    assert_eq!(report.examined, 3);
    assert_eq!(report.embedded, 1);
    assert_eq!(report.skipped, 2);
    let kept = store
        .get(&ns(), &edited)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(kept.content, "We ate pasta instead");
    assert_eq!(kept.embedding, None, "no vector of the old text");
    assert!(store.get(&ns(), &deleted).await.expect("read").is_none());
    let embedded = store.get(&ns(), &car).await.expect("read").expect("kept");
    assert!(embedded.embedding.is_some());
}

/// A failing embedder stops the pass and writes nothing of its batch.
#[derive(Debug)]
struct Broken;

#[async_trait]
impl EmbeddingProvider for Broken {
    async fn embed(&self, _text: &str) -> Result<Vec<f32>> {
        Err(MemoryError::Unavailable {
            message: "model down".to_owned(),
            source: None,
        })
    }

    fn dimension(&self) -> usize {
        3
    }
}

#[tokio::test]
async fn a_failing_embedder_writes_nothing() {
    let store = Arc::new(InMemoryStore::new());
    let car = remembered_without_embedder(&store, &["I drive an old car"])
        .await
        .remove(0);
    let memory = with_embedder(&store, Arc::new(Broken));
    let error = memory
        .reembed(&ns().subtree(), Reembed::All)
        .await
        .expect_err("the model is down");
    assert!(matches!(error, MemoryError::Unavailable { .. }), "{error}");
    let stored = store.get(&ns(), &car).await.expect("read").expect("kept");
    assert_eq!(stored.embedding, None);
}

/// However many memories a namespace holds, a pass lists them a page at a time, and every
/// one is embedded once, many of them sharing a creation time.
#[tokio::test]
async fn a_large_namespace_is_listed_a_page_at_a_time() {
    let store = Arc::new(crate::instrumented::Instrumented::default());
    let at = chrono::Utc::now();
    let items: Vec<memory_core::MemoryItem> = (0..600)
        .map(|n| {
            memory_core::MemoryItem::new(ns(), format!("note {n} about a car"))
                // Ten memories at each time: the pages split runs of equal times.
                .map(|item| item.with_created_at(at + chrono::Duration::seconds(n / 10)))
                .expect("an item")
        })
        .collect();
    store.save_many(items).await.expect("saved");
    let topics = Arc::new(Topics::default());
    let memory = Memory::builder()
        .store(store.clone())
        .embedder(topics.clone())
        .build()
        .expect("a memory");
    let report = memory
        .reembed(&ns().exact(), Reembed::Missing)
        .await
        .expect("embedded");
    assert_eq!(
        report,
        ReembedReport {
            examined: 600,
            embedded: 600,
            skipped: 0
        }
    );
    assert_eq!(topics.texts.load(Ordering::Relaxed), 600, "each text once");
    let lists = store.listings();
    assert!(
        lists
            .iter()
            .all(|(limit, len)| limit.is_some_and(|limit| limit <= 256 && *len <= limit)),
        "every listing is a page: {lists:?}"
    );
    assert_eq!(
        lists.iter().map(|(_, len)| len).sum::<usize>(),
        600,
        "the pages cover the namespace once: {lists:?}"
    );
    let listed = store
        .inner
        .list(&memory_core::MemoryFilter::new(ns().exact()))
        .await
        .expect("listed");
    assert!(listed.iter().all(|item| item.embedding.is_some()));
}

/// A pass writes each batch of vectors at once (one transaction on SQLite, not one per
/// memory), each memory only over the copy it embedded.
#[tokio::test]
async fn a_pass_writes_each_batch_at_once() {
    const MEMORIES: usize = 200;
    let store = Arc::new(crate::instrumented::Instrumented::default());
    let items: Vec<memory_core::MemoryItem> = (0..MEMORIES)
        .map(|n| {
            memory_core::MemoryItem::new(ns(), format!("trip {n} by car"))
                .and_then(|item| item.with_id(format!("m{n:03}")))
                .expect("an item")
        })
        .collect();
    store.inner.save_many(items).await.expect("stored");
    let memory = Memory::builder()
        .store(store.clone() as Arc<dyn MemoryStore>)
        .embedder(Arc::new(Topics::default()))
        .build()
        .expect("a memory");
    let report = memory
        .reembed(&ns().subtree(), Reembed::Missing)
        .await
        .expect("embedded");
    assert_eq!(report.embedded, MEMORIES, "{report:?}");
    let writes = store.conditional_writes();
    assert_eq!(writes.iter().sum::<usize>(), MEMORIES, "{writes:?}");
    assert!(
        writes.len() <= MEMORIES.div_ceil(64),
        "{} writes for {MEMORIES} memories",
        writes.len()
    );
    let stored = store
        .inner
        .get(&ns(), "m007")
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(stored.embedding, Some(topic_vector("trip 7 by car")));
}
