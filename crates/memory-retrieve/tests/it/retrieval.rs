//! The retriever: channels, threshold, order, cut, fusion, filters.

use std::sync::Arc;

use memory_core::{
    Channel, GraphEntity, GraphRelation, KnowledgeGraph, KnowledgePage, KnowledgeStore,
    ManualClock, MemoryError, MemoryItem, MemoryKind, MemoryStore, Namespace, RetrievalSource,
    Signal,
};
use memory_graph::PetGraph;
use memory_inmem::{InMemoryKnowledgeStore, InMemoryStore};
use memory_retrieve::{
    Fusion, RecallFilter, RetrievalStrategy, Retriever, RetrieverConfig, ScoreWeights,
    ScoringStrategy,
};

struct Fixture {
    retriever: Retriever,
    ns: Namespace,
}

async fn fixture() -> Fixture {
    let ns = Namespace::parse("user-1").unwrap();
    let clock = Arc::new(ManualClock::new("2024-06-01T00:00:00Z".parse().unwrap()));
    let store = Arc::new(InMemoryStore::new());
    let pages = Arc::new(InMemoryKnowledgeStore::new());
    let graph = Arc::new(PetGraph::new());
    let at = |day: i64| clock.now_for_test(day);
    for (id, text, kind, day) in [
        (
            "m1",
            "LangGraph uses a StateGraph to manage agent state",
            MemoryKind::Semantic,
            1,
        ),
        (
            "m2",
            "The user asked about LangGraph checkpoints yesterday",
            MemoryKind::Episodic,
            30,
        ),
        (
            "m3",
            "The user likes hiking in the Alps",
            MemoryKind::Episodic,
            20,
        ),
        (
            "m4",
            "Short-term note about LangGraph",
            MemoryKind::ShortTerm,
            30,
        ),
    ] {
        let user = match id {
            "m1" => serde_json::json!({"user": "ann"}),
            "m2" => serde_json::json!({"user": "bob", "rating": 1}),
            _ => serde_json::json!({}),
        };
        let item = MemoryItem::new(ns.clone(), text)
            .unwrap()
            .with_id(id)
            .unwrap()
            .with_kind(kind)
            .with_created_at(at(day))
            .with_metadata(user)
            .unwrap();
        store.save(item).await.unwrap();
    }
    pages
        .add_page(
            KnowledgePage::new(ns.clone(), "p-lg", "LangGraph guide")
                .unwrap()
                .with_summary("How StateGraph works")
                .with_tags(["langgraph"])
                .unwrap(),
        )
        .await
        .unwrap();
    for (id, name, kind) in [
        ("lg", "LangGraph", "framework"),
        ("sg", "StateGraph", "concept"),
        ("py", "Python", "language"),
    ] {
        graph
            .add_entity(GraphEntity::new(ns.clone(), id, name, kind).unwrap())
            .await
            .unwrap();
    }
    graph
        .add_relation(GraphRelation::new(ns.clone(), "lg", "sg", "has_part", 1.0).unwrap())
        .await
        .unwrap();
    graph
        .add_relation(GraphRelation::new(ns.clone(), "sg", "py", "written_in", 0.5).unwrap())
        .await
        .unwrap();
    let retriever = Retriever::new(store)
        .with_knowledge(pages)
        .with_graph(graph)
        .with_clock(clock);
    Fixture { retriever, ns }
}

trait TestClock {
    fn now_for_test(&self, day: i64) -> chrono::DateTime<chrono::Utc>;
}

impl TestClock for ManualClock {
    fn now_for_test(&self, day: i64) -> chrono::DateTime<chrono::Utc> {
        "2024-05-01T00:00:00Z"
            .parse::<chrono::DateTime<chrono::Utc>>()
            .unwrap()
            + chrono::Duration::days(day)
    }
}

fn ids(result: &memory_core::RetrievalResult) -> Vec<&str> {
    result.items.iter().map(|item| item.record.id()).collect()
}

#[tokio::test]
async fn hybrid_uses_every_channel_and_explains() {
    let f = fixture().await;
    let result = f
        .retriever
        .retrieve(&f.ns.exact(), "How does LangGraph manage state?")
        .await
        .unwrap();
    let found = ids(&result);
    for id in ["m1", "m2", "p-lg", "lg"] {
        assert!(found.contains(&id), "{id} in {found:?}");
    }
    assert!(
        !found.contains(&"m4"),
        "short-term messages are left out by default"
    );
    assert!(
        !found.contains(&"m3"),
        "unrelated memories are not candidates"
    );
    assert!(
        result.items.windows(2).all(|w| w[0].score >= w[1].score),
        "sorted by score"
    );
    for item in &result.items {
        assert!((0.0..=1.0).contains(&item.score));
        let sum: f32 = item.breakdown.signals.iter().map(|s| s.contribution).sum();
        assert!(
            (sum - item.score).abs() < 1e-4,
            "contributions add up to the score"
        );
        assert!(!item.breakdown.channels.is_empty());
    }
    let sg = result
        .items
        .iter()
        .find(|i| i.record.id() == "sg")
        .expect("traversal reaches StateGraph");
    assert!(
        sg.breakdown.channels.contains(&Channel::GraphMatch)
            || sg.breakdown.channels.contains(&Channel::GraphTraversal)
    );
    let py = result
        .items
        .iter()
        .find(|i| i.record.id() == "py")
        .expect("traversal reaches py");
    {
        assert_eq!(py.breakdown.channels, [Channel::GraphTraversal]);
        assert!(
            py.breakdown.value(memory_core::Signal::Graph).unwrap()
                < sg.breakdown.value(memory_core::Signal::Graph).unwrap()
        );
    }
}

#[tokio::test]
async fn strategies_pick_channels() {
    let f = fixture().await;
    let query = "LangGraph StateGraph";
    let run = |strategy| {
        let config = RetrieverConfig {
            strategy,
            ..RetrieverConfig::default()
        };
        let retriever = f.retriever.clone();
        let scope = f.ns.exact();
        async move {
            retriever
                .retrieve_with(&scope, query, &RecallFilter::default(), &config)
                .await
                .unwrap()
        }
    };
    let kinds = |result: &memory_core::RetrievalResult| -> Vec<&'static str> {
        result
            .items
            .iter()
            .map(|i| match i.record {
                RetrievalSource::Memory(_) => "memory",
                RetrievalSource::KnowledgePage(_) => "page",
                RetrievalSource::GraphEntity(_) => "entity",
            })
            .collect()
    };
    let memories = kinds(&run(RetrievalStrategy::MemoryOnly).await);
    assert!(!memories.is_empty(), "memory_only finds the memories");
    assert!(memories.iter().all(|k| *k == "memory"), "{memories:?}");
    assert_eq!(
        kinds(&run(RetrievalStrategy::KnowledgeOnly).await),
        ["page"]
    );
    let graph = run(RetrievalStrategy::GraphOnly).await;
    assert!(!graph.items.is_empty() && kinds(&graph).iter().all(|k| *k == "entity"));
}

#[tokio::test]
async fn threshold_sort_and_cut() {
    let f = fixture().await;
    let all = f
        .retriever
        .retrieve(&f.ns.exact(), "LangGraph StateGraph state")
        .await
        .unwrap();
    assert!(all.items.len() >= 4);
    let cut = RetrieverConfig {
        max_results: 2,
        ..RetrieverConfig::default()
    };
    let top2 = f
        .retriever
        .retrieve_with(
            &f.ns.exact(),
            "LangGraph StateGraph state",
            &RecallFilter::default(),
            &cut,
        )
        .await
        .unwrap();
    assert_eq!(
        ids(&top2),
        ids(&all)[..2],
        "max_results cuts the same ranking"
    );
    assert_eq!(
        top2.total_found, all.total_found,
        "total_found counts candidates before the cut"
    );
    let third = all.items[2].score;
    let strict = RetrieverConfig {
        min_score: third + 1e-6,
        ..RetrieverConfig::default()
    };
    let high = f
        .retriever
        .retrieve_with(
            &f.ns.exact(),
            "LangGraph StateGraph state",
            &RecallFilter::default(),
            &strict,
        )
        .await
        .unwrap();
    assert!(
        high.items.iter().all(|i| i.score >= third + 1e-6),
        "min_score drops low scores"
    );
    assert_eq!(
        high.items.len(),
        all.items.iter().filter(|i| i.score > third).count()
    );
    let blank = f.retriever.retrieve(&f.ns.exact(), "   ").await.unwrap();
    assert!(blank.items.is_empty(), "a blank query returns nothing");
}

#[tokio::test]
async fn filters_apply_in_every_channel() {
    let f = fixture().await;
    let episodic = RecallFilter {
        kinds: vec![MemoryKind::Episodic],
        ..RecallFilter::default()
    };
    let result = f
        .retriever
        .retrieve_with(&f.ns.exact(), "LangGraph", &episodic, f.retriever.config())
        .await
        .unwrap();
    assert_eq!(
        ids(&result),
        ["m2"],
        "only episodic memories; pages and entities are semantic"
    );
    let since: chrono::DateTime<chrono::Utc> = "2024-05-15T00:00:00Z".parse().unwrap();
    let recent = RecallFilter {
        since: Some(since),
        ..RecallFilter::default()
    };
    let result = f
        .retriever
        .retrieve_with(&f.ns.exact(), "LangGraph", &recent, f.retriever.config())
        .await
        .unwrap();
    let found = ids(&result);
    assert!(
        found.contains(&"m2") && !found.contains(&"m1"),
        "time range on memories: {found:?}"
    );
    assert!(
        !found.contains(&"lg"),
        "entities carry no time, so a time range leaves them out"
    );
    let other = Namespace::parse("user-2").unwrap();
    let result = f
        .retriever
        .retrieve(&other.exact(), "LangGraph")
        .await
        .unwrap();
    assert!(result.items.is_empty(), "another namespace sees nothing");
}

/// A metadata condition keeps the memories whose metadata holds it, compared as JSON, and
/// leaves out pages and entities, which carry no metadata; a bad condition is refused by
/// name.
#[tokio::test]
async fn a_metadata_filter_keeps_the_memories_that_hold_it() {
    let f = fixture().await;
    let recall = |filter: RecallFilter| {
        let f = &f;
        async move {
            f.retriever
                .retrieve_with(&f.ns.exact(), "LangGraph", &filter, f.retriever.config())
                .await
        }
    };
    let everything = recall(RecallFilter::default()).await.unwrap();
    let found = ids(&everything);
    for id in ["m1", "m2", "p-lg", "lg"] {
        assert!(found.contains(&id), "unfiltered: {found:?}");
    }
    let user = |name: &str| RecallFilter::default().with_metadata("user", name.into());
    assert_eq!(ids(&recall(user("ann")).await.unwrap()), ["m1"]);
    assert_eq!(ids(&recall(user("bob")).await.unwrap()), ["m2"]);
    let both = user("bob").with_metadata("rating", serde_json::json!(1));
    assert_eq!(ids(&recall(both).await.unwrap()), ["m2"]);
    for unmatched in [
        user("bob").with_metadata("rating", serde_json::json!("1")),
        user("bob").with_metadata("absent", serde_json::json!(null)),
        user("carol"),
    ] {
        let result = recall(unmatched.clone()).await.unwrap();
        assert!(result.items.is_empty(), "{unmatched:?}: {:?}", ids(&result));
    }
    let many = (0..=memory_retrieve::MAX_METADATA_CONDITIONS)
        .fold(RecallFilter::default(), |filter, n| {
            filter.with_metadata(format!("k{n}"), serde_json::json!(n))
        });
    let too_long = "k".repeat(memory_retrieve::MAX_METADATA_KEY_BYTES + 1);
    for bad in [
        many,
        user("ann").with_metadata("", serde_json::json!(1)),
        user("ann").with_metadata(too_long, serde_json::json!(1)),
    ] {
        let error = recall(bad).await.unwrap_err();
        assert!(
            matches!(&error, MemoryError::InvalidInput { field, .. } if field == "metadata"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn reciprocal_rank_fusion() {
    let f = fixture().await;
    let config = RetrieverConfig {
        fusion: Fusion::ReciprocalRank { k: 60.0 },
        min_score: 0.0,
        ..RetrieverConfig::default()
    };
    let result = f
        .retriever
        .retrieve_with(
            &f.ns.exact(),
            "LangGraph",
            &RecallFilter::default(),
            &config,
        )
        .await
        .unwrap();
    assert!(!result.items.is_empty());
    for item in &result.items {
        let rrf = item
            .breakdown
            .value(memory_core::Signal::Rrf)
            .expect("rrf signal");
        assert!((rrf - item.score).abs() < 1e-6);
        assert!((0.0..=1.0).contains(&item.score));
    }
    let firsts: Vec<f32> = result
        .items
        .iter()
        .filter(|i| i.breakdown.channels.len() == 1)
        .map(|i| i.score)
        .collect();
    assert!(
        firsts.iter().any(|s| (s - 1.0 / 3.0).abs() < 1e-4),
        "a channel's first hit scores 1/channels: {firsts:?}"
    );
}

#[tokio::test]
async fn invalid_settings_are_rejected() {
    let f = fixture().await;
    for weights in [
        ScoreWeights {
            relevance: f32::NAN,
            ..ScoreWeights::default()
        },
        ScoreWeights {
            graph: -1.0,
            ..ScoreWeights::default()
        },
        ScoreWeights {
            overlap: f32::INFINITY,
            ..ScoreWeights::default()
        },
    ] {
        let config = RetrieverConfig {
            scoring: ScoringStrategy::Hybrid(weights),
            ..RetrieverConfig::default()
        };
        let error = f
            .retriever
            .retrieve_with(&f.ns.exact(), "x", &RecallFilter::default(), &config)
            .await
            .unwrap_err();
        assert!(
            matches!(error, MemoryError::InvalidInput { field: ref m, .. } if m.starts_with("weights.")),
            "{error}"
        );
    }
    for config in [
        RetrieverConfig {
            min_score: 1.5,
            ..RetrieverConfig::default()
        },
        RetrieverConfig {
            min_score: f32::NAN,
            ..RetrieverConfig::default()
        },
        RetrieverConfig {
            max_results: 0,
            ..RetrieverConfig::default()
        },
        RetrieverConfig {
            graph_depth: 1_000_000,
            ..RetrieverConfig::default()
        },
    ] {
        assert!(matches!(
            f.retriever.clone().with_config(config).unwrap_err(),
            MemoryError::InvalidInput { .. }
        ));
    }
    let huge = "word ".repeat(10_000);
    let error = f
        .retriever
        .retrieve(&f.ns.exact(), &huge)
        .await
        .unwrap_err();
    assert!(
        matches!(error, MemoryError::InvalidInput { field: ref m, .. } if m.starts_with("query"))
    );
}

#[tokio::test]
async fn conversation_context_lends_relevance_to_neighbours() {
    let store = Arc::new(InMemoryStore::new());
    let ns = Namespace::parse("chat").unwrap();
    let t0: chrono::DateTime<chrono::Utc> = "2024-01-01T00:00:00Z".parse().unwrap();
    for (i, text) in [
        "unrelated opening line about weather",
        "How long have you been married?",
        "Five years already, time flies!",
        "another unrelated line about lunch",
    ]
    .iter()
    .enumerate()
    {
        let item = MemoryItem::new(ns.clone(), *text)
            .unwrap()
            .with_id(format!("t{i}"))
            .unwrap()
            .with_created_at(t0 + chrono::Duration::seconds(30 * i as i64));
        store.save(item).await.unwrap();
    }
    let weights = ScoreWeights {
        relevance: 1.0,
        context: 0.5,
        ..ScoringStrategy::Relevance.weights()
    };
    let config = RetrieverConfig {
        scoring: ScoringStrategy::Hybrid(weights),
        min_score: 0.0,
        ..RetrieverConfig::default()
    };
    let retriever = Retriever::new(store).with_config(config).unwrap();
    let result = retriever
        .retrieve(&ns.exact(), "how long married")
        .await
        .unwrap();
    assert_eq!(
        ids(&result),
        ["t1", "t2", "t0"],
        "the answer after the question comes next, then the line before"
    );
    let answer = &result.items[1];
    assert_eq!(answer.breakdown.channels, [Channel::Context]);
    assert!(
        (answer
            .breakdown
            .value(memory_core::Signal::Context)
            .unwrap()
            - 1.0)
            .abs()
            < 1e-6
    );
    assert!((answer.score - 1.0 / 3.0).abs() < 1e-5);
    let before = &result.items[2];
    assert!(
        (before
            .breakdown
            .value(memory_core::Signal::Context)
            .unwrap()
            - 0.5)
            .abs()
            < 1e-6,
        "the line before gets half"
    );
    let none = RetrieverConfig {
        context_window: 0,
        ..retriever.config().clone()
    };
    let result = retriever
        .retrieve_with(
            &ns.exact(),
            "how long married",
            &RecallFilter::default(),
            &none,
        )
        .await
        .unwrap();
    assert_eq!(ids(&result), ["t1"], "window 0 turns context off");
    // A recall's time range holds for the neighbours too: those made outside it are no
    // results, whatever lends them relevance.
    let within = RecallFilter {
        since: Some(t0 + chrono::Duration::seconds(20)),
        until: Some(t0 + chrono::Duration::seconds(40)),
        ..RecallFilter::default()
    };
    let result = retriever
        .retrieve_with(&ns.exact(), "how long married", &within, retriever.config())
        .await
        .unwrap();
    assert_eq!(ids(&result), ["t1"], "t0 and t2 are outside the range");
    let from_the_question = RecallFilter {
        since: Some(t0 + chrono::Duration::seconds(20)),
        ..RecallFilter::default()
    };
    let result = retriever
        .retrieve_with(
            &ns.exact(),
            "how long married",
            &from_the_question,
            retriever.config(),
        )
        .await
        .unwrap();
    assert_eq!(ids(&result), ["t1", "t2"], "t0 is before the range");
}

/// A question naming a time ("a couple of days ago") ranks the memories made then above
/// better keyword matches made before it, marks the others with the `time` factor, finds
/// a memory made then that the keyword search alone would have cut, and reads no time with
/// a factor of 1.
#[tokio::test]
async fn a_query_naming_a_time_ranks_what_was_said_then_first() {
    let ns = Namespace::parse("user-9").unwrap();
    let now: chrono::DateTime<chrono::Utc> = "2024-06-10T12:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let store = Arc::new(InMemoryStore::new());
    let day = |days: i64| now - chrono::Duration::days(days);
    save_dated(
        &store,
        &ns,
        now,
        &[
            (
                "old",
                "I cooked pasta for my friend and cooked it well",
                MemoryKind::Episodic,
                40,
            ),
            (
                "older",
                "I cooked a roast for my friend's party",
                MemoryKind::Episodic,
                60,
            ),
            (
                "recent",
                "I cooked a curry for my friend",
                MemoryKind::Episodic,
                2,
            ),
        ],
    )
    .await;
    let retriever = Retriever::new(store.clone()).with_clock(clock.clone());
    let query = "What did I cook for my friend a couple of days ago?";
    let config = RetrieverConfig::default();
    let found = retrieve(&retriever, &ns, query, &RecallFilter::default(), &config).await;
    assert_eq!(ids(&found)[0], "recent");
    let old = found
        .items
        .iter()
        .find(|item| item.record.id() == "old")
        .unwrap();
    assert_eq!(
        old.breakdown.value(Signal::Time),
        Some(config.outside_time_factor)
    );
    assert!(old.breakdown.contribution(Signal::Time).unwrap() < 0.0);
    assert!(found.items[0].breakdown.value(Signal::Time).is_none());

    // Without the reading of times, the best keyword match comes first.
    let off = RetrieverConfig {
        outside_time_factor: 1.0,
        ..RetrieverConfig::default()
    };
    let found = retrieve(&retriever, &ns, query, &RecallFilter::default(), &off).await;
    assert_eq!(ids(&found)[0], "old");
    assert!(
        found
            .items
            .iter()
            .all(|item| item.breakdown.value(Signal::Time).is_none())
    );

    // One candidate per channel (a recall of one result, no head reordering): the keyword
    // search keeps only its best, the search of the time named finds the memory made then.
    let narrow = RetrieverConfig {
        candidates_per_channel: 1,
        max_results: 1,
        head_rerank_depth: 0,
        ..RetrieverConfig::default()
    };
    assert_eq!(narrow.candidates_for(1), 1);
    let found = retrieve(&retriever, &ns, query, &RecallFilter::default(), &narrow).await;
    assert_eq!(ids(&found), ["recent"]);
    let found = retrieve(
        &retriever,
        &ns,
        query,
        &RecallFilter::default(),
        &RetrieverConfig {
            outside_time_factor: 1.0,
            ..narrow
        },
    )
    .await;
    assert_eq!(ids(&found), ["old"]);

    // A filter that ends before the time named leaves nothing to search there.
    let filter = RecallFilter {
        until: Some(day(30)),
        ..RecallFilter::default()
    };
    let found = retrieve(&retriever, &ns, query, &filter, &config).await;
    assert_eq!(ids(&found)[0], "old");

    // An invalid factor is refused by name.
    let bad = RetrieverConfig {
        outside_time_factor: 0.0,
        ..RetrieverConfig::default()
    };
    let error = retriever
        .retrieve_with(&ns.exact(), query, &RecallFilter::default(), &bad)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("outside_time_factor"), "{error}");
}

/// Under reciprocal rank fusion, a memory that only the search of the time named found
/// ranks after every keyword candidate in its channel, not at its place in that search: a
/// weaker memory made then does not outrank a stronger one the keyword search also found.
#[tokio::test]
async fn a_memory_found_only_in_the_time_named_ranks_after_the_keyword_candidates() {
    let ns = Namespace::parse("user-9").unwrap();
    let now: chrono::DateTime<chrono::Utc> = "2024-06-10T12:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let store = Arc::new(InMemoryStore::new());
    save_dated(
        &store,
        &ns,
        now,
        &[
            (
                "old1",
                "I cooked pasta for my friend and cooked it well",
                MemoryKind::Episodic,
                40,
            ),
            (
                "old2",
                "I cooked a roast for my friend and cooked it twice",
                MemoryKind::Episodic,
                50,
            ),
            (
                "old3",
                "I cooked soup for my friend and cooked bread",
                MemoryKind::Episodic,
                60,
            ),
            (
                "curry",
                "I cooked a curry for my friend",
                MemoryKind::Episodic,
                2,
            ),
            ("visit", "my friend came over", MemoryKind::Episodic, 2),
        ],
    )
    .await;
    let retriever = Retriever::new(store.clone()).with_clock(clock.clone());
    let query = "What did I cook for my friend a couple of days ago?";
    // Four keyword candidates: the three old memories and the curry; the visit, which
    // holds one query word, only the search of the time named finds (second there).
    let config = RetrieverConfig {
        fusion: Fusion::ReciprocalRank { k: 60.0 },
        candidates_per_channel: 4,
        max_results: 4,
        head_rerank_depth: 0,
        min_score: 0.0,
        ..RetrieverConfig::default()
    };
    let found = retrieve(&retriever, &ns, query, &RecallFilter::default(), &config).await;
    let ranked = ids(&found);
    let at = |id: &str| ranked.iter().position(|found| *found == id);
    assert!(
        at("curry") < at("visit") && at("visit").is_some(),
        "the curry matches more and was found by both searches: {ranked:?}"
    );
}

/// With `drop_time_words`, a question naming a time by its distance from now ("last
/// Saturday") leaves those words out of its search when memories were made then: a memory
/// made that day comes before an older one that says "last Saturday" of another week. When
/// no memory was made then, the words are searched as written and the older one, which
/// quotes them, still comes first. Off (the default), a memory holding the expression as
/// written, as the older one does, matches its words.
#[tokio::test]
async fn dropping_time_words_searches_the_time_named_as_a_time() {
    // A Monday: last Saturday was two days ago.
    let now: chrono::DateTime<chrono::Utc> = "2024-06-10T12:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let store = Arc::new(InMemoryStore::new());
    let ns = Namespace::parse("user-10").unwrap();
    save_dated(
        &store,
        &ns,
        now,
        &[
            (
                "quoted",
                "Last Saturday I purchased a red lamp at the market",
                MemoryKind::Episodic,
                30,
            ),
            (
                "then",
                "I purchased new running shoes at the mall today",
                MemoryKind::Episodic,
                2,
            ),
        ],
    )
    .await;
    // Nothing was said last Saturday here.
    let quiet = Namespace::parse("user-11").unwrap();
    save_dated(
        &store,
        &quiet,
        now,
        &[
            (
                "quoted",
                "Last Saturday I purchased a red lamp at the market",
                MemoryKind::Episodic,
                30,
            ),
            ("plain", "I purchased a kettle", MemoryKind::Episodic, 45),
        ],
    )
    .await;
    let retriever = Retriever::new(store.clone()).with_clock(clock);
    let query = "What did I purchase last Saturday?";
    let on = RetrieverConfig {
        drop_time_words: true,
        ..RetrieverConfig::default()
    };
    let off = RetrieverConfig::default();
    assert!(!off.drop_time_words);
    let all = RecallFilter::default();

    assert_eq!(
        ids(&retrieve(&retriever, &ns, query, &all, &off).await)[0],
        "quoted"
    );
    assert_eq!(
        ids(&retrieve(&retriever, &ns, query, &all, &on).await)[0],
        "then"
    );
    // A filter that ends before that Saturday leaves no memory made then: words kept.
    let before = RecallFilter {
        until: Some(now - chrono::Duration::days(20)),
        ..RecallFilter::default()
    };
    assert_eq!(
        ids(&retrieve(&retriever, &ns, query, &before, &on).await),
        ["quoted"]
    );

    assert_eq!(
        ids(&retrieve(&retriever, &quiet, query, &all, &on).await)[0],
        "quoted"
    );
    // The same store with the words left out would rank the shorter match first.
    assert_eq!(
        ids(&retrieve(&retriever, &quiet, "What did I purchase?", &all, &on).await)[0],
        "plain"
    );
}

/// By default the words of a time named by its distance from now count only for a memory
/// holding the expression as written: "three weeks ago" does not match a question about
/// "two weeks ago", while a memory quoting the question's "last weekend" months later is
/// still found by it (which leaving the words out, `drop_time_words`, loses). Turned off,
/// every memory holding the words matches them.
#[tokio::test]
async fn time_words_count_only_as_the_expression_they_are() {
    // A Monday.
    let now: chrono::DateTime<chrono::Utc> = "2024-06-10T12:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let store = Arc::new(InMemoryStore::new());
    let weeks = Namespace::parse("weeks").unwrap();
    save_dated(
        &store,
        &weeks,
        now,
        &[
            (
                "then",
                "I will play in the charity soccer tournament today",
                MemoryKind::Episodic,
                14,
            ),
            (
                "other",
                "I bought a necklace exactly three weeks ago, weeks ago now",
                MemoryKind::Episodic,
                14,
            ),
        ],
    )
    .await;
    let quote = Namespace::parse("quote").unwrap();
    save_dated(
        &store,
        &quote,
        now,
        &[
            (
                "quoted",
                "Last weekend I volunteered at a career fair at a local school",
                MemoryKind::Episodic,
                120,
            ),
            (
                "recent",
                "I volunteer at the animal shelter",
                MemoryKind::Episodic,
                1,
            ),
        ],
    )
    .await;
    let retriever = Retriever::new(store.clone()).with_clock(clock);
    let all = RecallFilter::default();
    let phrase = RetrieverConfig::default();
    assert!(phrase.time_words_as_phrase && !phrase.drop_time_words);
    let words = RetrieverConfig {
        time_words_as_phrase: false,
        ..RetrieverConfig::default()
    };
    let dropped = RetrieverConfig {
        drop_time_words: true,
        ..RetrieverConfig::default()
    };
    let first = |found: memory_core::RetrievalResult| ids(&found)[0].to_owned();

    let asked = "I mentioned that I played in an event two weeks ago. What was the event?";
    assert_eq!(
        first(retrieve(&retriever, &weeks, asked, &all, &phrase).await),
        "then"
    );
    assert_eq!(
        first(retrieve(&retriever, &weeks, asked, &all, &words).await),
        "other"
    );
    assert_eq!(
        first(retrieve(&retriever, &weeks, asked, &all, &dropped).await),
        "then"
    );

    let quoting = "What event did I volunteer at last weekend?";
    assert_eq!(
        first(retrieve(&retriever, &quote, quoting, &all, &phrase).await),
        "quoted"
    );
    assert_eq!(
        first(retrieve(&retriever, &quote, quoting, &all, &words).await),
        "quoted"
    );
    assert_eq!(
        first(retrieve(&retriever, &quote, quoting, &all, &dropped).await),
        "recent"
    );
}

/// Of two facts answering a question about the same person, the newer comes first, even
/// worded differently and with no conflict flagged: the older is marked stale with the
/// newer as its rival. Another person with the same first name, episodic memories and
/// a query naming nobody with too few shared words are left in relevance order, and the
/// option turns it off.
#[tokio::test]
async fn the_newer_of_two_facts_answering_a_question_comes_first() {
    let ns = Namespace::parse("facts").unwrap();
    let now: chrono::DateTime<chrono::Utc> = "2024-06-10T12:00:00Z".parse().unwrap();
    let store = Arc::new(InMemoryStore::new());
    let day = |days: i64| now - chrono::Duration::days(days);
    save_dated(
        &store,
        &ns,
        now,
        &[
            (
                "berlin",
                "Ava Novak lives in Berlin, she lives there",
                MemoryKind::Semantic,
                300,
            ),
            (
                "lisbon",
                "Ava Novak moved to the city of Lisbon",
                MemoryKind::Semantic,
                100,
            ),
            (
                "lee",
                "Ava Lee lives in the city of Oslo",
                MemoryKind::Semantic,
                10,
            ),
            (
                "said",
                "Ava Novak said she lives in a nice city",
                MemoryKind::Episodic,
                5,
            ),
            (
                "born",
                "Ava Novak was born in 1983",
                MemoryKind::Semantic,
                1,
            ),
        ],
    )
    .await;
    let retriever = Retriever::new(store.clone()).with_clock(Arc::new(ManualClock::new(now)));
    let rank = |result: &memory_core::RetrievalResult, id: &str| {
        ids(result).iter().position(|found| *found == id).unwrap()
    };
    let query = "Where does Ava Novak live, in which city?";
    let found = retrieve(
        &retriever,
        &ns,
        query,
        &RecallFilter::default(),
        &RetrieverConfig::default(),
    )
    .await;
    assert!(
        rank(&found, "lisbon") < rank(&found, "berlin"),
        "{:?}",
        ids(&found)
    );
    let berlin = &found.items[rank(&found, "berlin")];
    assert_eq!(
        berlin.breakdown.value(Signal::Stale),
        Some(memory_retrieve::STALE_FACTOR)
    );
    // Another Ava, an episode and a fact holding no other word of the question are not
    // rivals of anything.
    for id in ["lisbon", "lee", "said"] {
        let item = &found.items[rank(&found, id)];
        assert!(item.breakdown.value(Signal::Stale).is_none(), "{id}");
    }

    let off = RetrieverConfig {
        newer_facts_first: false,
        ..RetrieverConfig::default()
    };
    let found = retrieve(&retriever, &ns, query, &RecallFilter::default(), &off).await;
    assert!(
        rank(&found, "berlin") < rank(&found, "lisbon"),
        "{:?}",
        ids(&found)
    );
    assert!(
        found
            .items
            .iter()
            .all(|item| item.breakdown.value(Signal::Stale).is_none())
    );

    // As of a time before the move, only Berlin was known: nothing to rank it below.
    let filter = RecallFilter {
        view: memory_retrieve::RecallView::AsOf(day(200)),
        ..RecallFilter::default()
    };
    let found = retrieve(&retriever, &ns, query, &filter, &RetrieverConfig::default()).await;
    assert_eq!(ids(&found)[0], "berlin");
    assert!(found.items[0].breakdown.value(Signal::Stale).is_none());

    // A question naming nobody: facts sharing a word of it and holding two are rivals;
    // one holding a single word of it is not.
    let user = Namespace::parse("user").unwrap();
    save_dated(
        &store,
        &user,
        now,
        &[
            (
                "paris",
                "The user lives in Paris: the user lives well",
                MemoryKind::Semantic,
                50,
            ),
            (
                "rome",
                "The user now lives in Rome",
                MemoryKind::Semantic,
                20,
            ),
            ("car", "The user bought a car", MemoryKind::Semantic, 10),
        ],
    )
    .await;
    let found = retrieve(
        &retriever,
        &user,
        "where does the user live",
        &RecallFilter::default(),
        &RetrieverConfig::default(),
    )
    .await;
    assert_eq!(ids(&found)[..2], ["rome", "paris"]);
    let car = &found.items[rank(&found, "car")];
    assert!(car.breakdown.value(Signal::Stale).is_none());
    let found = retrieve(
        &retriever,
        &user,
        "where does the user live",
        &RecallFilter::default(),
        &off,
    )
    .await;
    assert_eq!(ids(&found)[..2], ["paris", "rome"]);
}

/// Saves `(id, text, kind, days before now)` memories in `ns`.
async fn save_dated(
    store: &InMemoryStore,
    ns: &Namespace,
    now: chrono::DateTime<chrono::Utc>,
    memories: &[(&str, &str, MemoryKind, i64)],
) {
    for (id, text, kind, days) in memories {
        let item = MemoryItem::new(ns.clone(), *text)
            .unwrap()
            .with_id(*id)
            .unwrap()
            .with_kind(*kind)
            .with_created_at(now - chrono::Duration::days(*days));
        store.save(item).await.unwrap();
    }
}

/// One recall of `query` in `ns` alone.
async fn retrieve(
    retriever: &Retriever,
    ns: &Namespace,
    query: &str,
    filter: &RecallFilter,
    config: &RetrieverConfig,
) -> memory_core::RetrievalResult {
    retriever
        .retrieve_with(&ns.exact(), query, filter, config)
        .await
        .unwrap()
}

/// A recall asks each channel for twice the results it returns (at least 10), no more
/// than `candidates_per_channel` but never fewer than the results it returns: the
/// candidates fused (`total_found`) follow the results asked for, and a recall asking for
/// more results than `candidates_per_channel` returns as many as match.
#[tokio::test]
async fn channels_contribute_candidates_for_the_results_asked() {
    let ns = Namespace::parse("many").unwrap();
    let store = Arc::new(InMemoryStore::new());
    for i in 0..60 {
        let item = MemoryItem::new(ns.clone(), format!("note {i} about the garden shed"))
            .unwrap()
            .with_id(format!("m{i:02}"))
            .unwrap();
        store.save(item).await.unwrap();
    }
    let retriever = Retriever::new(store.clone());
    let config = |max_results: usize| RetrieverConfig {
        max_results,
        min_score: 0.0,
        ..RetrieverConfig::default()
    };
    for (max_results, candidates) in [(1, 10), (5, 10), (12, 24), (20, 30), (50, 50), (100, 100)] {
        assert_eq!(config(max_results).candidates_for(max_results), candidates);
        let found = retrieve(
            &retriever,
            &ns,
            "garden shed",
            &RecallFilter::default(),
            &config(max_results),
        )
        .await;
        // Sixty memories match: a channel asked for 100 candidates finds those 60.
        assert_eq!(
            found.total_found,
            candidates.min(60),
            "{max_results} results"
        );
        assert_eq!(found.items.len(), max_results.min(60));
    }
    let narrow = RetrieverConfig {
        candidates_per_channel: 3,
        ..config(5)
    };
    assert_eq!(narrow.candidates_for(5), 5);
    assert_eq!(narrow.candidates_for(2), 3);
    let found = retrieve(
        &retriever,
        &ns,
        "garden shed",
        &RecallFilter::default(),
        &narrow,
    )
    .await;
    assert_eq!(found.total_found, 5);
    assert_eq!(found.items.len(), 5);
}

/// An indefinite pronoun in a question ("something", "anyone") stands for what it asks
/// about: it is not searched, so a memory that merely says it does not outrank the one that
/// answers. A query of nothing but such words still searches them.
#[tokio::test]
async fn a_question_s_placeholder_words_are_not_searched() {
    let ns = Namespace::parse("placeholders").unwrap();
    let store = Arc::new(InMemoryStore::new());
    let now = chrono::Utc::now();
    save_dated(
        &store,
        &ns,
        now,
        &[
            (
                "stew",
                "Yesterday evening I cooked a big pot of stew for the neighbours next door",
                MemoryKind::Episodic,
                1,
            ),
            (
                "smell",
                "Something, something smells nice",
                MemoryKind::Episodic,
                1,
            ),
            ("hello", "Someone said hello", MemoryKind::Episodic, 1),
        ],
    )
    .await;
    let retriever = Retriever::new(store.clone());
    let config = RetrieverConfig::default();
    let found = retrieve(
        &retriever,
        &ns,
        "Did I cook something for anyone?",
        &RecallFilter::default(),
        &config,
    )
    .await;
    assert_eq!(
        ids(&found),
        ["stew"],
        "only the memory holding a word of the question"
    );
    let found = retrieve(
        &retriever,
        &ns,
        "something?",
        &RecallFilter::default(),
        &config,
    )
    .await;
    assert_eq!(ids(&found), ["smell"]);
}

mod properties {
    //! What every recall keeps, whatever the memories and the query.

    use std::collections::HashSet;

    use memory_core::{Namespace, RetrievalSource};
    use memory_retrieve::{Memory, RecallOptions, Remember};
    use proptest::prelude::*;

    const WORDS: [&str; 12] = [
        "garden",
        "tomato",
        "Lisbon",
        "piano",
        "lesson",
        "sister",
        "bought",
        "yesterday",
        "green",
        "tea",
        "the",
        "2023",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        /// Memories of a few words in three namespaces (one nested), and a query of a few
        /// words or none: a recall over a scope returns only memories of that scope that
        /// are stored, each once, at most the results asked for, best first, each score
        /// finite and in [0, 1].
        #[test]
        fn every_recall_stays_in_scope_sorted_and_bounded(
            memories in proptest::collection::vec(
                (0usize..3, proptest::collection::vec(0usize..WORDS.len(), 1..6)),
                1..40,
            ),
            query in proptest::collection::vec(0usize..WORDS.len(), 0..4),
            scope_at in 0usize..3,
            exact in any::<bool>(),
            max_results in 1usize..12,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            runtime.block_on(async {
                let spaces = ["home", "home/kitchen", "work"]
                    .map(|name| Namespace::parse(name).unwrap());
                let memory = Memory::in_memory();
                for (at, words) in &memories {
                    let text: Vec<&str> = words.iter().map(|w| WORDS[*w]).collect();
                    memory
                        .remember_with(Remember::new(spaces[*at].clone(), text.join(" ")))
                        .await
                        .unwrap();
                }
                let scope = if exact {
                    spaces[scope_at].exact()
                } else {
                    spaces[scope_at].subtree()
                };
                let query: Vec<&str> = query.iter().map(|w| WORDS[*w]).collect();
                let options = RecallOptions::default().max_results(max_results);
                let result = memory
                    .recall_with(&scope, &query.join(" "), &options)
                    .await
                    .unwrap();
                assert!(result.items.len() <= max_results, "{}", result.items.len());
                let mut seen = HashSet::new();
                for pair in result.items.windows(2) {
                    assert!(pair[0].score >= pair[1].score, "best first");
                }
                for item in &result.items {
                    assert!(
                        item.score.is_finite() && (0.0..=1.0).contains(&item.score),
                        "score {}",
                        item.score
                    );
                    let RetrievalSource::Memory(found) = &item.record else {
                        panic!("only memories were stored: {:?}", item.record);
                    };
                    assert!(scope.contains(&found.namespace), "{} outside {scope:?}", found.namespace);
                    assert!(seen.insert((found.namespace.clone(), found.id.clone())), "each once");
                    let stored = memory.store().get(&found.namespace, &found.id).await.unwrap();
                    assert_eq!(stored.map(|item| item.content), Some(found.content.clone()));
                }
            });
        }
    }
}

/// A result's contributions add up to its score when penalties apply: a retracted memory
/// made before the time the query names carries the time's factor and staleness's, each
/// what it took away, under weighted fusion and under reciprocal rank fusion alike.
#[tokio::test]
async fn contributions_add_up_under_the_time_and_stale_penalties() {
    let now: chrono::DateTime<chrono::Utc> = "2024-06-01T12:00:00Z".parse().unwrap();
    let ns = Namespace::parse("cook").unwrap();
    for fusion in [Fusion::Weighted, Fusion::ReciprocalRank { k: 60.0 }] {
        let memory = memory_retrieve::Memory::builder()
            .clock(Arc::new(ManualClock::new(now)))
            .build()
            .unwrap();
        let old = memory
            .remember_with(
                memory_retrieve::Remember::new(ns.clone(), "I cooked pasta for my friend")
                    .created_at(now - chrono::Duration::days(40)),
            )
            .await
            .unwrap();
        memory
            .remember_with(
                memory_retrieve::Remember::new(ns.clone(), "I cooked risotto for my friend Ana")
                    .created_at(now - chrono::Duration::days(2)),
            )
            .await
            .unwrap();
        memory
            .retract(&ns, &old.id, "never happened")
            .await
            .unwrap();
        let found = memory
            .recall_with(
                &ns.exact(),
                "What did I cook for my friend a couple of days ago?",
                &memory_retrieve::RecallOptions::default()
                    .view(memory_retrieve::RecallView::All)
                    .fusion(fusion),
            )
            .await
            .unwrap();
        let retracted = found
            .items
            .iter()
            .find(|item| item.record.id() == old.id)
            .unwrap_or_else(|| panic!("{fusion:?}: the retracted memory is listed"));
        assert!(
            retracted.breakdown.value(Signal::Time).is_some(),
            "{fusion:?}"
        );
        assert!(
            retracted.breakdown.value(Signal::Stale).is_some(),
            "{fusion:?}"
        );
        for item in &found.items {
            let sum: f32 = item.breakdown.signals.iter().map(|s| s.contribution).sum();
            assert!(
                (sum - item.score).abs() < 1e-5,
                "{fusion:?} {}: {sum} against {}: {:?}",
                item.record.id(),
                item.score,
                item.breakdown.signals
            );
        }
    }
}

/// The score threshold holds after a stale memory is put under the newer one that replaced
/// it: lowered below the threshold, it is not returned.
#[tokio::test]
async fn the_threshold_holds_for_a_stale_memory_put_under_its_rival() {
    let ns = Namespace::parse("city").unwrap();
    let memory = memory_retrieve::Memory::in_memory();
    let old = memory.remember(&ns, "Paris Paris Paris").await.unwrap();
    let new = memory
        .remember(
            &ns,
            "After many years the user moved away from Paris to live in Berlin with their \
             family, close to the river, the old market, the parks and the new office where \
             they work on weekdays and sometimes on weekends too",
        )
        .await
        .unwrap();
    memory.supersede(&ns, &old, &new).await.unwrap();
    let options = memory_retrieve::RecallOptions::default()
        .view(memory_retrieve::RecallView::All)
        .scoring(ScoringStrategy::Relevance)
        .min_score(0.0);
    let found = memory
        .recall_with(&ns.exact(), "Paris", &options)
        .await
        .unwrap();
    assert_eq!(
        ids(&found),
        [new.as_str(), old.as_str()],
        "the stale one under its rival"
    );
    let rival = found.items[0].score;
    assert!(
        found.items[1].breakdown.value(Signal::Stale).unwrap_or(1.0) < 0.5,
        "put under its rival, past the stale factor: {:?}",
        found.items[1].breakdown
    );
    let found = memory
        .recall_with(&ns.exact(), "Paris", &options.clone().min_score(rival))
        .await
        .unwrap();
    assert_eq!(
        ids(&found),
        [new.as_str()],
        "the stale one fell under the threshold"
    );
}

/// The ids of a recall's results, in order.
fn result_ids(found: &memory_core::RetrievalResult) -> Vec<String> {
    found
        .items
        .iter()
        .map(|item| item.record.id().to_owned())
        .collect()
}

/// A recall's time range is applied to pages before their cut, not after: the best page in
/// range is found though better pages outside it fill the candidates.
#[tokio::test]
async fn a_page_time_range_is_applied_before_the_cut() {
    use chrono::TimeZone;
    let memory = memory_retrieve::Memory::in_memory();
    let ns = Namespace::parse("wiki").unwrap();
    for at in 0..40 {
        let page =
            memory_core::KnowledgePage::new(ns.clone(), format!("a{at:02}"), "rust notes").unwrap();
        memory.knowledge().add_page(page).await.unwrap();
    }
    let old = chrono::Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0).unwrap();
    let page = memory_core::KnowledgePage::new(ns.clone(), "zz", "rust notes")
        .unwrap()
        .with_created_at(old);
    memory.knowledge().add_page(page).await.unwrap();
    let mut options = memory_retrieve::RecallOptions::default()
        .strategy(memory_retrieve::RetrievalStrategy::KnowledgeOnly)
        .max_results(5)
        .min_score(0.0);
    options.filter.until = Some(chrono::Utc.with_ymd_and_hms(2021, 1, 1, 0, 0, 0).unwrap());
    let found = memory
        .recall_with(&ns.exact(), "rust", &options)
        .await
        .unwrap();
    assert_eq!(result_ids(&found), ["zz"]);
}

/// A recall's tags are asked of the entities before their cut, and of the memories the
/// graph links to before theirs.
#[tokio::test]
async fn an_entity_tag_filter_is_applied_before_the_cut() {
    let memory = memory_retrieve::Memory::in_memory();
    let ns = Namespace::parse("g").unwrap();
    for at in 0..40 {
        let entity = GraphEntity::new(
            ns.clone(),
            format!("rust-{at:02}"),
            format!("Rust {at}"),
            "x",
        )
        .unwrap();
        memory.graph().add_entity(entity).await.unwrap();
    }
    let tagged = GraphEntity::new(ns.clone(), "zz", "Rust zz", "x")
        .unwrap()
        .with_tags(["lang"])
        .unwrap();
    memory.graph().add_entity(tagged).await.unwrap();
    let mut options = memory_retrieve::RecallOptions::default()
        .strategy(memory_retrieve::RetrievalStrategy::GraphOnly)
        .max_results(5)
        .min_score(0.0);
    options.filter.tags = vec![memory_core::Tag::new("lang").unwrap()];
    let found = memory
        .recall_with(&ns.exact(), "rust", &options)
        .await
        .unwrap();
    assert_eq!(result_ids(&found), ["zz"]);
}

/// A recall as of a time walks the graph as it was then.
#[tokio::test]
async fn a_recall_as_of_a_time_walks_the_graph_as_it_was() {
    use chrono::TimeZone;
    let memory = memory_retrieve::Memory::in_memory();
    let ns = Namespace::parse("g").unwrap();
    for (id, name) in [("alice", "Alice"), ("paris", "Paris"), ("berlin", "Berlin")] {
        let entity = GraphEntity::new(ns.clone(), id, name, "person").unwrap();
        memory.graph().add_entity(entity).await.unwrap();
    }
    let year = |y| Some(chrono::Utc.with_ymd_and_hms(y, 1, 1, 0, 0, 0).unwrap());
    for (to, from, until) in [
        ("paris", year(2010), year(2020)),
        ("berlin", year(2020), None),
    ] {
        let relation = memory_core::GraphRelation::new(ns.clone(), "alice", to, "lives_in", 1.0)
            .unwrap()
            .with_validity(from, until)
            .unwrap();
        memory.graph().add_relation(relation).await.unwrap();
    }
    let options = memory_retrieve::RecallOptions::default()
        .strategy(memory_retrieve::RetrievalStrategy::GraphOnly)
        .graph_depth(1)
        .min_score(0.0);
    let then = memory
        .recall_with(
            &ns.exact(),
            "alice",
            &options.clone().as_of(year(2015).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(result_ids(&then), ["alice", "paris"]);
    let now = memory
        .recall_with(&ns.exact(), "alice", &options)
        .await
        .unwrap();
    assert_eq!(result_ids(&now), ["alice", "berlin"]);
}
