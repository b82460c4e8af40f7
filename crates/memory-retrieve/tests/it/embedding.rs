//! The embedding channel (feature `embeddings`), with a toy provider: each word of a small
//! vocabulary points along its concept's axis, so "automobile" and "car" are the same
//! direction while sharing no keyword.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::{
    Channel, EmbeddingProvider, MemoryError, MemoryStore, Namespace, Result, RetrievalSource,
};
use memory_retrieve::{Memory, Retriever, RetrieverConfig, ScoreWeights, ScoringStrategy};

const CONCEPTS: [&[&str]; 4] = [
    &["car", "automobile", "truck", "drive"],
    &["pizza", "pasta", "meal", "dinner"],
    &["guitar", "song", "music"],
    &["rain", "sunny", "weather"],
];

#[derive(Debug)]
struct Concepts {
    /// Reported length; the vectors have 4 values whatever this says.
    dimension: usize,
}

#[async_trait]
impl EmbeddingProvider for Concepts {
    async fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let mut vector = vec![0.0; 4];
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            let word = word.to_lowercase();
            for (axis, words) in CONCEPTS.iter().enumerate() {
                if words.contains(&word.as_str()) {
                    vector[axis] += 1.0;
                }
            }
        }
        Ok(vector)
    }

    fn dimension(&self) -> usize {
        self.dimension
    }
}

fn memory_with_concepts() -> Memory {
    Memory::builder()
        .embedder(Arc::new(Concepts { dimension: 4 }))
        .build()
        .expect("a memory")
}

fn memory_source(item: &memory_core::ScoredItem) -> Option<&memory_core::MemoryItem> {
    match &item.record {
        RetrievalSource::Memory(memory) => Some(memory),
        _ => None,
    }
}

async fn remember_all(memory: &Memory, ns: &Namespace) -> Vec<String> {
    let mut ids = Vec::new();
    for text in [
        "I drive an old car to work",
        "We ate pizza last night",
        "She plays the guitar every evening",
        "Heavy rain is expected tomorrow",
    ] {
        ids.push(memory.remember(ns, text).await.expect("remembered"));
    }
    ids
}

#[tokio::test]
async fn a_synonym_is_found_by_similarity_alone() {
    let memory = memory_with_concepts();
    let ns = Namespace::parse("user/embedding").expect("a namespace");
    let ids = remember_all(&memory, &ns).await;
    let stored = memory
        .store()
        .get(&ns, &ids[0])
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(
        stored.embedding.as_deref(),
        Some(&[2.0, 0.0, 0.0, 0.0][..]),
        "remember stores the provider's embedding of the text ('drive' and 'car')"
    );
    let found = memory
        .recall(&ns.exact(), "automobile")
        .await
        .expect("recalled");
    let best = found.items.first().expect("a result");
    assert_eq!(
        memory_source(best).map(|m| m.id.as_str()),
        Some(ids[0].as_str())
    );
    assert_eq!(best.breakdown.channels, [Channel::Embedding]);
    let similarity = best
        .breakdown
        .value(memory_core::Signal::Embedding)
        .expect("an embedding signal");
    assert!((similarity - 1.0).abs() < 1e-6, "{similarity}");
    assert_eq!(
        best.breakdown.value(memory_core::Signal::Relevance),
        Some(0.0)
    );
    assert_eq!(
        found.items.len(),
        1,
        "memories orthogonal to the query (cosine 0) are not candidates: {:?}",
        found.items
    );
}

/// `min_similarity` keeps a memory that only shares part of the query's topic out of the
/// similarity search, and gives a keyword hit under it no `embedding` signal.
#[tokio::test]
async fn a_similarity_at_or_below_the_least_asked_counts_for_nothing() {
    let ns = Namespace::parse("user/least").expect("a namespace");
    let recall = |least: f32, query: &'static str| {
        let ns = ns.clone();
        async move {
            // The setting is checked when the memory is built.
            let memory = Memory::builder()
                .embedder(Arc::new(Concepts { dimension: 4 }))
                .retriever_config(RetrieverConfig {
                    min_similarity: least,
                    ..RetrieverConfig::default()
                })
                .build()?;
            // Cosines with "automobile": 1, then 1/sqrt(10) = 0.32, then 0.
            for (id, text) in [
                ("drive", "I drive an old car to work"),
                ("trip", "A car trip for pizza, pasta and dinner"),
                ("rain", "Heavy rain is expected tomorrow"),
            ] {
                memory
                    .remember_with(memory_retrieve::Remember::new(ns.clone(), text).id(id))
                    .await
                    .expect("remembered");
            }
            memory.recall(&ns.exact(), query).await
        }
    };
    let ids = |found: &memory_core::RetrievalResult| -> Vec<String> {
        found
            .items
            .iter()
            .filter_map(|item| memory_source(item).map(|m| m.id.clone()))
            .collect()
    };
    let any = recall(0.0, "automobile").await.expect("recalled");
    assert_eq!(ids(&any), ["drive", "trip"], "every positive cosine");
    let close = recall(0.5, "automobile").await.expect("recalled");
    assert_eq!(ids(&close), ["drive"], "only the cosine above 0.5");
    // "car" finds the trip by its word; its cosine (0.32) is under 0.5: no similarity.
    let by_word = recall(0.5, "car trip").await.expect("recalled");
    let trip = by_word
        .items
        .iter()
        .find(|item| memory_source(item).is_some_and(|m| m.id == "trip"))
        .expect("found by its words");
    assert_eq!(trip.breakdown.channels, [Channel::Memory]);
    assert!(
        trip.breakdown
            .value(memory_core::Signal::Embedding)
            .is_none_or(|v| v == 0.0),
        "{:?}",
        trip.breakdown
    );
    let error = recall(1.5, "automobile").await.expect_err("refused");
    assert!(
        matches!(&error, MemoryError::InvalidInput { field, .. } if field == "min_similarity"),
        "{error}"
    );
}

#[tokio::test]
async fn a_memory_found_by_both_channels_carries_both() {
    let memory = memory_with_concepts();
    let ns = Namespace::parse("user/both").expect("a namespace");
    let ids = remember_all(&memory, &ns).await;
    assert_car_found_by_both(&memory, &ns, &ids[0]).await;
}

/// "my car" finds `id` first, by its keyword and by similarity, with both signals.
async fn assert_car_found_by_both(memory: &Memory, ns: &Namespace, id: &str) {
    let found = memory
        .recall(&ns.exact(), "my car")
        .await
        .expect("recalled");
    let best = found.items.first().expect("a result");
    assert_eq!(memory_source(best).map(|m| m.id.as_str()), Some(id));
    assert_eq!(
        best.breakdown.channels,
        [Channel::Memory, Channel::Embedding]
    );
    assert!(
        best.breakdown
            .value(memory_core::Signal::Relevance)
            .is_some_and(|v| v > 0.0)
    );
    assert!(
        best.breakdown
            .value(memory_core::Signal::Embedding)
            .is_some_and(|v| v > 0.99),
        "{:?}",
        best.breakdown
    );
}

#[tokio::test]
async fn a_provider_breaking_its_dimension_is_refused_and_nothing_is_stored() {
    let memory = Memory::builder()
        .embedder(Arc::new(Concepts { dimension: 8 }))
        .build()
        .expect("a memory");
    let ns = Namespace::parse("user/broken").expect("a namespace");
    let error = memory
        .remember(&ns, "I drive a car")
        .await
        .expect_err("a vector of the wrong length");
    assert!(
        matches!(error, MemoryError::InvalidInput { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("dimension"), "{error}");
    assert_eq!(memory.store().count(&ns.exact()).await.expect("counted"), 0);
}

#[tokio::test]
async fn the_retriever_switches_default_weights_only() {
    let store: Arc<dyn MemoryStore> = Arc::new(memory_inmem::InMemoryStore::new());
    let provider = || Arc::new(Concepts { dimension: 4 });
    let default = Retriever::new(Arc::clone(&store)).with_embedder(provider());
    assert_eq!(
        default.config().scoring,
        ScoringStrategy::Hybrid(ScoreWeights::with_embeddings())
    );
    let chosen = RetrieverConfig {
        scoring: ScoringStrategy::Relevance,
        ..RetrieverConfig::default()
    };
    let kept = Retriever::new(store)
        .with_config(chosen.clone())
        .expect("a valid config")
        .with_embedder(provider());
    assert_eq!(kept.config(), &chosen);
}

#[tokio::test]
async fn dialogue_turns_keep_their_embeddings_for_both_channels() {
    let memory = memory_with_concepts();
    let ns = Namespace::parse("user/dialogue").expect("a namespace");
    let mut dialogue = memory.dialogue(ns.clone());
    let mut ids = Vec::new();
    for (speaker, text) in [
        ("user", "I drive an old car to work"),
        ("assistant", "That sounds like a long commute"),
        ("user", "We ate pizza last night"),
    ] {
        let turn = memory_retrieve::Turn::new(speaker, text).session("s1");
        ids.push(dialogue.add(turn).await.expect("added").id);
    }
    // The first turn's context was updated with the turn after it: its embedding stays.
    let stored = memory
        .store()
        .get(&ns, &ids[0])
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(stored.embedding.as_deref(), Some(&[2.0, 0.0, 0.0, 0.0][..]));
    assert_car_found_by_both(&memory, &ns, &ids[0]).await;
}

#[tokio::test]
async fn embedding_of_gives_the_vector_remember_stores() {
    let memory = memory_with_concepts();
    let ns = Namespace::parse("embedding-of").unwrap();
    let id = memory.remember(&ns, "I drive a truck").await.unwrap();
    let stored = memory.store().get(&ns, &id).await.unwrap().unwrap();
    assert_eq!(
        memory.embedding_of("I drive a truck").await.unwrap(),
        stored.embedding
    );
    assert_eq!(
        memory
            .embeddings_of(&["pizza for dinner", "a sunny day"])
            .await
            .unwrap(),
        Some(vec![vec![0.0, 2.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, 1.0]])
    );
    let broken = Memory::builder()
        .embedder(Arc::new(Concepts { dimension: 3 }))
        .build()
        .unwrap();
    assert!(matches!(
        broken.embedding_of("a car").await,
        Err(MemoryError::InvalidInput { ref field, .. }) if field == "embedding"
    ));
    let plain = Memory::builder().build().unwrap();
    assert_eq!(plain.embedding_of("a car").await.unwrap(), None);
    assert_eq!(plain.embeddings_of(&["a car"]).await.unwrap(), None);
}

/// A model with distinct query and document forms: a stored text lies along the axis of
/// what it tells ("kitten"), a query along the axis of what it asks about ("cat"), so a
/// query embedded as a stored text points nowhere near the memory it asks for.
#[derive(Debug)]
struct QueryForm;

fn axis(found: bool) -> Vec<f32> {
    if found {
        vec![1.0, 0.0]
    } else {
        vec![0.0, 1.0]
    }
}

#[async_trait]
impl EmbeddingProvider for QueryForm {
    async fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(axis(text.contains("kitten")))
    }

    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        Ok(axis(query.contains("cat")))
    }

    fn dimension(&self) -> usize {
        2
    }
}

/// Stored texts are embedded in the document form (`embed`), a recall's query in the query
/// form (`embed_query`).
#[tokio::test]
async fn a_query_is_embedded_in_its_own_form() {
    let memory = Memory::builder()
        .embedder(Arc::new(QueryForm))
        .build()
        .expect("a memory");
    let ns = Namespace::parse("user/query-form").expect("a namespace");
    let kitten = memory
        .remember(&ns, "I adopted a kitten in May")
        .await
        .expect("remembered");
    memory
        .remember(&ns, "The weather was fine")
        .await
        .expect("remembered");
    let stored = memory.store().get(&ns, &kitten).await.expect("read");
    assert_eq!(
        stored.and_then(|item| item.embedding),
        Some(vec![1.0, 0.0]),
        "the stored text in the document form"
    );
    assert_eq!(
        memory.embedding_of("which cat").await.expect("embedded"),
        Some(vec![0.0, 1.0]),
        "embedding_of gives the document form"
    );
    let found = memory
        .recall(&ns.exact(), "which cat do I have")
        .await
        .expect("recalled");
    let best = found.items.first().expect("found by the query form");
    assert_eq!(
        memory_source(best).map(|m| m.id.as_str()),
        Some(kitten.as_str())
    );
    assert_eq!(best.breakdown.channels, [Channel::Embedding]);
}

/// [`Concepts`] that fails while `down` is set, as a service that stopped answering.
#[derive(Debug, Default)]
struct Flaky {
    down: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl EmbeddingProvider for Flaky {
    async fn embed(&self, text: &str) -> Result<Vec<f32>> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(MemoryError::Unavailable {
                message: "embeddings: down".to_owned(),
                source: None,
            });
        }
        Concepts { dimension: 4 }.embed(text).await
    }

    fn dimension(&self) -> usize {
        4
    }
}

/// The vectors are an optional channel: a recall while the embedder fails still finds what
/// its words find, and finds by meaning again once the embedder is back.
#[tokio::test]
async fn a_failing_embedder_leaves_the_recall_to_the_keywords() {
    let flaky = Arc::new(Flaky::default());
    let memory = Memory::builder()
        .embedder(flaky.clone())
        .build()
        .expect("a memory");
    let ns = Namespace::parse("user/flaky").expect("a namespace");
    let ids = remember_all(&memory, &ns).await;
    flaky.down.store(true, std::sync::atomic::Ordering::SeqCst);
    let found = memory
        .recall(&ns.exact(), "my car")
        .await
        .expect("recalled by its words");
    let best = found.items.first().expect("a result");
    assert_eq!(memory_source(best).map(|m| m.id.as_str()), Some(&*ids[0]));
    assert_eq!(best.breakdown.channels, [Channel::Memory]);
    let by_meaning = memory
        .recall(&ns.exact(), "automobile")
        .await
        .expect("recalled");
    assert!(by_meaning.items.is_empty(), "no word of it is stored");
    flaky.down.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_car_found_by_both(&memory, &ns, &ids[0]).await;
}

/// A consolidation's summary is embedded as a remembered memory is: its sources, found by
/// meaning, leave recall for it, and it is found by meaning in their place.
#[tokio::test]
async fn a_summary_is_found_by_meaning_as_its_sources_were() {
    let memory = memory_with_concepts();
    let ns = Namespace::parse("user/summary").expect("a namespace");
    let ids = remember_all(&memory, &ns).await;
    let before = memory
        .recall(&ns.exact(), "automobile")
        .await
        .expect("recalled");
    assert_eq!(
        before
            .items
            .first()
            .and_then(memory_source)
            .map(|m| m.id.as_str()),
        Some(&*ids[0])
    );
    let summary = memory
        .consolidate(&ns, &ids[..2], 50)
        .await
        .expect("consolidated");
    let stored = memory
        .store()
        .get(&ns, &summary)
        .await
        .expect("read")
        .expect("the summary");
    assert_eq!(
        stored.embedding,
        memory
            .embedding_of(&stored.content)
            .await
            .expect("embedded"),
        "the summary carries its own text's vector"
    );
    let after = memory
        .recall(&ns.exact(), "automobile")
        .await
        .expect("recalled");
    let best = after.items.first().expect("found by meaning");
    assert_eq!(memory_source(best).map(|m| m.id.as_str()), Some(&*summary));
    assert_eq!(best.breakdown.channels, [Channel::Embedding]);
}

/// A repetition merged into a memory stored without a vector, or with one of another
/// model's length, gives it the vector just made for the same words.
#[tokio::test]
async fn a_merge_gives_a_memory_without_a_usable_vector_the_new_one() {
    let memory = memory_with_concepts();
    let ns = Namespace::parse("user/merge-vector").expect("a namespace");
    for (id, stored) in [("none", None), ("other-model", Some(vec![1.0, 0.0]))] {
        let mut item =
            memory_core::MemoryItem::new(ns.clone(), format!("I drive an old car to work ({id})"))
                .expect("an item")
                .with_id(id)
                .expect("an id");
        item.embedding = stored;
        memory.store().save(item).await.expect("saved");
        let remembered = memory
            .remember_with(memory_retrieve::Remember::new(
                ns.clone(),
                format!("I drive an old car to work ({id})"),
            ))
            .await
            .expect("remembered");
        assert_eq!(remembered.id, id, "{remembered:?}");
        let merged = memory
            .store()
            .get(&ns, id)
            .await
            .expect("read")
            .expect("kept");
        assert_eq!(
            merged.embedding,
            memory
                .embedding_of(&merged.content)
                .await
                .expect("embedded"),
            "{id}"
        );
    }
}

/// A maintenance pass whose embedder is down still consolidates (and goes on to the rest of
/// maintenance): the summary is written without its vector, found by its words until a
/// `reembed` gives it one. A consolidation a caller asks for fails with the embedder.
#[tokio::test]
async fn maintenance_consolidates_while_the_embedder_is_down() {
    let flaky = Arc::new(Flaky::default());
    let clock = Arc::new(memory_core::ManualClock::new(
        chrono::Utc::now() - chrono::Duration::days(60),
    ));
    let memory = Memory::builder()
        .embedder(flaky.clone())
        .clock(clock.clone())
        .consolidation(memory_retrieve::ConsolidationConfig {
            min_group: 2,
            ..memory_retrieve::ConsolidationConfig::default()
        })
        .build()
        .expect("a memory");
    let ns = Namespace::parse("user/maintained").expect("a namespace");
    let mut ids = Vec::new();
    for text in [
        "I drive an old car to work",
        "We ate pizza last night",
        "She plays the guitar every evening",
        "Heavy rain is expected tomorrow",
    ] {
        let done = memory
            .remember_with(
                memory_retrieve::Remember::new(ns.clone(), text)
                    .kind(memory_core::MemoryKind::Episodic)
                    .metadata(serde_json::json!({"session": "s1"})),
            )
            .await
            .expect("remembered");
        ids.push(done.id);
    }
    clock.advance(chrono::Duration::days(60));
    flaky.down.store(true, std::sync::atomic::Ordering::SeqCst);
    let error = memory
        .consolidate(&ns, &ids[..2], 50)
        .await
        .expect_err("asked for, it fails with the embedder");
    assert!(
        matches!(error, MemoryError::Unavailable { .. }),
        "{error:?}"
    );
    let report = memory.maintain(&ns.subtree()).await.expect("maintained");
    assert_eq!(
        (report.consolidated, report.summaries),
        (4, 1),
        "{report:?}"
    );
    let found = memory
        .recall(&ns.exact(), "guitar")
        .await
        .expect("recalled by its words");
    let summary = found
        .items
        .first()
        .and_then(memory_source)
        .expect("the summary");
    assert_eq!(summary.embedding, None);
    assert!(summary.content.contains("guitar"), "{}", summary.content);
}
