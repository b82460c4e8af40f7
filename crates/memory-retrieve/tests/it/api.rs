//! The high-level Memory API.

use std::sync::Arc;

use chrono::Duration;
use memory_core::{
    EvictionConfig, EvictionPolicy, ManualClock, MemoryError, MemoryFilter, MemoryKind, Namespace,
    RetrievalSource,
};
use memory_retrieve::{ConversationConfig, Message, Role};
use memory_retrieve::{
    Memory, RecallOptions, Remember, RetrieverConfig, ScoreWeights, ScoringStrategy,
};

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new("2024-03-01T12:00:00Z".parse().unwrap()))
}

fn memory_ids(result: &memory_core::RetrievalResult) -> Vec<String> {
    result
        .items
        .iter()
        .filter_map(|i| match &i.record {
            RetrievalSource::Memory(item) => Some(item.id.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn remember_recall_forget() {
    let memory = Memory::builder().clock(clock()).build().unwrap();
    let user = Namespace::parse("user-1").unwrap();
    let rust = memory
        .remember_with(
            Remember::new(user.clone(), "用户喜欢 Rust 编程语言")
                .kind(MemoryKind::LongTerm)
                .importance(0.9),
        )
        .await
        .unwrap()
        .id;
    let engineer = memory
        .remember_with(Remember::new(user.clone(), "用户是软件工程师").kind(MemoryKind::Semantic))
        .await
        .unwrap()
        .id;
    memory.remember(&user, "上次讨论了异步编程").await.unwrap();
    let found = memory.recall(&user.subtree(), "编程").await.unwrap();
    let ids = memory_ids(&found);
    assert!(ids.contains(&rust), "{ids:?}");
    assert!(!ids.contains(&engineer), "no shared word, not returned");
    assert!(memory.forget(&user, &rust).await.unwrap());
    let found = memory.recall(&user.subtree(), "Rust 编程").await.unwrap();
    assert!(
        !memory_ids(&found).contains(&rust),
        "a forgotten memory never comes back"
    );
    let removed = memory
        .forget_matching(&MemoryFilter::new(user.exact()).with_kinds([MemoryKind::Semantic]))
        .await
        .unwrap();
    assert_eq!(removed, 1);
    assert_eq!(memory.stats(&user.subtree()).await.unwrap().total, 1);
}

#[tokio::test]
async fn namespaces_are_isolated() {
    let memory = Memory::in_memory();
    let alice = Namespace::parse("alice").unwrap();
    let bob = Namespace::parse("bob").unwrap();
    memory
        .remember(&alice, "alice's bank pin is 1234")
        .await
        .unwrap();
    memory
        .remember(&bob, "bob likes bank holidays")
        .await
        .unwrap();
    let found = memory.recall(&bob.subtree(), "bank pin").await.unwrap();
    assert!(found.items.iter().all(|i| i.record.namespace() == &bob));
    assert_eq!(found.items.len(), 1);
    let context = memory
        .recall_context(&bob.subtree(), "bank pin", 500)
        .await
        .unwrap();
    assert!(
        !context.contains("1234"),
        "context never leaks another tenant: {context}"
    );
}

#[tokio::test]
async fn recall_feedback_feeds_statistics() {
    let memory = Memory::builder().recall_batch(1000).build().unwrap();
    let ns = Namespace::parse("u").unwrap();
    let id = memory
        .remember(&ns, "the user drinks green tea")
        .await
        .unwrap();
    for _ in 0..3 {
        memory.recall(&ns.exact(), "green tea").await.unwrap();
    }
    assert_eq!(
        memory
            .store()
            .recall_stats(&ns, &id)
            .await
            .unwrap()
            .unwrap()
            .recall_count,
        0,
        "batched, not yet written"
    );
    memory.flush().await.unwrap();
    let stats = memory
        .store()
        .recall_stats(&ns, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stats.recall_count, 3);
    assert!(stats.mean_score() > 0.0);
    assert_eq!(
        memory
            .store()
            .get(&ns, &id)
            .await
            .unwrap()
            .unwrap()
            .access_count,
        3
    );
}

#[tokio::test]
async fn writes_trigger_eviction_every_interval() {
    let eviction = EvictionConfig {
        policy: EvictionPolicy::Capacity { max_items: 3 },
        check_interval: 2,
    };
    let memory = Memory::builder().eviction(eviction).build().unwrap();
    let ns = Namespace::parse("u").unwrap();
    let at: chrono::DateTime<chrono::Utc> = "2024-01-01T00:00:00Z".parse().unwrap();
    for i in 0..6 {
        memory
            .remember_with(
                Remember::new(ns.clone(), format!("fact {i}"))
                    .created_at(at + Duration::minutes(i)),
            )
            .await
            .unwrap();
    }
    let stats = memory.stats(&ns.subtree()).await.unwrap();
    assert_eq!(stats.total, 3, "the sixth write ran a pass");
    assert_eq!(stats.capacity_use, Some(1.0));
}

#[tokio::test]
async fn maintain_reports_ttl() {
    let clock = clock();
    let eviction = EvictionConfig {
        policy: EvictionPolicy::Ttl { ttl_secs: 3600 },
        check_interval: 1000,
    };
    let memory = Memory::builder()
        .clock(clock.clone())
        .eviction(eviction)
        .build()
        .unwrap();
    let ns = Namespace::parse("u").unwrap();
    memory.remember(&ns, "old").await.unwrap();
    clock.advance(Duration::hours(2));
    memory.remember(&ns, "new").await.unwrap();
    let report = memory.maintain(&ns.subtree()).await.unwrap();
    assert_eq!(report.expired, 1);
    assert_eq!(memory.stats(&ns.subtree()).await.unwrap().total, 1);
}

#[tokio::test]
async fn builder_rejects_bad_weights() {
    let bad = RetrieverConfig {
        scoring: ScoringStrategy::Hybrid(ScoreWeights {
            recency: f32::NAN,
            ..ScoreWeights::default()
        }),
        ..RetrieverConfig::default()
    };
    assert!(matches!(
        Memory::builder().retriever_config(bad).build().unwrap_err(),
        MemoryError::InvalidInput { .. }
    ));
    let bad = EvictionConfig {
        policy: EvictionPolicy::None,
        check_interval: 0,
    };
    assert!(matches!(
        Memory::builder().eviction(bad).build().unwrap_err(),
        MemoryError::InvalidInput { .. }
    ));
}

#[tokio::test]
async fn context_within_budget_and_conversation_reachable() {
    let memory = Memory::in_memory();
    let ns = Namespace::parse("u").unwrap();
    for i in 0..20 {
        memory
            .remember(
                &ns,
                &format!("programming fact number {i} about Rust ownership and borrowing"),
            )
            .await
            .unwrap();
    }
    let context = memory
        .recall_context(&ns.subtree(), "Rust programming", 60)
        .await
        .unwrap();
    assert!(context.starts_with("Relevant memories:"));
    assert!(
        memory_retrieve::estimate_tokens(&context) <= 60,
        "{context}"
    );
    let lines = context.lines().count();
    assert!(
        (2..21).contains(&lines),
        "the budget leaves some out: {lines}"
    );
    let options = RecallOptions::default().max_results(3);
    assert_eq!(
        memory
            .recall_with(&ns.subtree(), "Rust", &options)
            .await
            .unwrap()
            .items
            .len(),
        3
    );
    let chat = memory
        .conversation(
            ns.child("session-1").unwrap(),
            ConversationConfig::default(),
        )
        .await
        .unwrap();
    chat.add_message(Message::new(Role::User, "hello about Rust"))
        .await
        .unwrap();
    assert_eq!(chat.get_history().await.unwrap().len(), 1);
    let found = memory.recall(&ns.subtree(), "hello").await.unwrap();
    assert!(
        found.items.is_empty(),
        "conversation messages are short-term and left out of recall by default"
    );
}

/// An entity's attributes reach the prompt with it, in key order.
#[tokio::test]
async fn context_shows_an_entitys_attributes() {
    let memory = Memory::in_memory();
    let ns = Namespace::parse("u").unwrap();
    let ana = memory_core::GraphEntity::new(ns.clone(), "ana", "Ana Lima", "person")
        .unwrap()
        .with_attributes(serde_json::json!({"city": "Lisbon", "born": 1990, "langs": ["pt"]}))
        .unwrap();
    memory.graph().add_entity(ana).await.unwrap();
    let context = memory
        .recall_context(&ns.subtree(), "Ana Lima", 200)
        .await
        .unwrap();
    assert!(
        context.contains("- [person] Ana Lima (born: 1990; city: Lisbon; langs: [\"pt\"])"),
        "{context}"
    );
    // Long attributes are cut, so the entity still fits.
    let long = memory_core::GraphEntity::new(ns.clone(), "ana", "Ana Lima", "person")
        .unwrap()
        .with_attributes(serde_json::json!({"notes": "word ".repeat(2_000)}))
        .unwrap();
    memory.graph().update_entity(long).await.unwrap();
    let context = memory
        .recall_context(&ns.subtree(), "Ana Lima", 200)
        .await
        .unwrap();
    let line = context
        .lines()
        .find(|line| line.starts_with("- [person] Ana Lima (notes: word word"))
        .unwrap_or_else(|| panic!("{context}"));
    assert!(line.ends_with("…)") && line.chars().count() < 200, "{line}");
}

/// A session's turns are read no further than the budget can show: `turns` may be any
/// number.
#[tokio::test]
async fn the_session_is_read_as_far_as_the_budget_shows() {
    let store = Arc::new(crate::instrumented::Instrumented::default());
    let memory = Memory::builder()
        .store(store.clone() as Arc<dyn memory_core::MemoryStore>)
        .build()
        .unwrap();
    let session = Namespace::parse("u/chat").unwrap();
    let chat = memory
        .conversation(session.clone(), ConversationConfig::default())
        .await
        .unwrap();
    for at in 0..50 {
        chat.add_message(Message::new(Role::User, format!("turn {at}")))
            .await
            .unwrap();
    }
    let before = store.listings().len();
    let context = memory
        .recall_context_in(&session, usize::MAX, &session.subtree(), "turn", 12)
        .await
        .unwrap();
    assert!(context.contains("turn 49"), "{context}");
    let limits: Vec<Option<usize>> = store.listings()[before..]
        .iter()
        .map(|(limit, _)| *limit)
        .collect();
    assert_eq!(limits, [Some(7)], "12 tokens show at most 7 lines");
}

/// The related entities' lines are whole and stay under their entity, whatever the budget:
/// a header that does not fit ends the section (its relations would read as the entity's
/// above), and a header cut to fit is left out.
#[tokio::test]
async fn related_lines_are_whole_and_under_their_entity() {
    use memory_core::{GraphEntity, GraphRelation};
    let memory = Memory::in_memory();
    let ns = Namespace::parse("u").unwrap();
    let graph = memory.graph();
    for entity in [
        GraphEntity::new(ns.clone(), "a", "Ana Lima", "person")
            .unwrap()
            .with_description("Portuguese software engineer in Lisbon"),
        GraphEntity::new(ns.clone(), "b", "Bruno", "person")
            .unwrap()
            .with_description("巴西的音乐家，住在圣保罗，喜欢爵士乐和古典音乐"),
        GraphEntity::new(ns.clone(), "c", "Carla", "person").unwrap(),
    ] {
        graph.add_entity(entity).await.unwrap();
    }
    for (from, to, kind) in [
        ("a", "b", "knows"),
        ("a", "c", "knows"),
        ("b", "c", "married_to"),
    ] {
        graph
            .add_relation(GraphRelation::new(ns.clone(), from, to, kind, 1.0).unwrap())
            .await
            .unwrap();
    }
    let header = "[person] Ana Lima: Portuguese software engineer in Lisbon";
    let mut related = 0;
    for budget in 20..160 {
        let context = memory
            .recall_context(&ns.subtree(), "Ana Lima", budget)
            .await
            .unwrap();
        assert!(
            memory_retrieve::estimate_tokens(&context) <= budget,
            "{context}"
        );
        let Some((_, section)) = context.split_once("Related:\n") else {
            continue;
        };
        related += 1;
        let lines: Vec<&str> = section.lines().collect();
        assert_eq!(lines[0], header, "budget {budget}: {context}");
        if section.contains("married_to") {
            assert!(
                lines.iter().any(|line| line.starts_with("[person] Bruno")),
                "budget {budget}: Bruno's relation without Bruno: {context}"
            );
        }
    }
    assert!(related > 0, "the section is shown at some budget");
}

/// A message as long as content may be is promoted, without the role before its text.
#[tokio::test]
async fn a_message_at_the_content_limit_is_promoted() {
    use memory_core::MemoryStore;
    let memory = Memory::in_memory();
    let session = Namespace::parse("u/chat").unwrap();
    let long = "x".repeat(memory_core::DEFAULT_MAX_CONTENT_BYTES);
    let message = memory_core::MemoryItem::new(session.clone(), long.clone())
        .unwrap()
        .with_kind(MemoryKind::ShortTerm);
    let id = message.id.clone();
    memory.store().save(message).await.unwrap();
    let promoted = memory.promote(&session, &id, 0.9).await.unwrap().unwrap();
    let long_term = memory_retrieve::promoted_namespace(&session).unwrap();
    let copy = memory
        .store()
        .get(&long_term, &promoted)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(copy.content, long);
}

/// A header cut between graphemes (short of the bound) is told from a whole one, and left
/// out.
#[tokio::test]
async fn a_header_cut_between_graphemes_is_left_out() {
    use memory_core::{GraphEntity, GraphRelation};
    let memory = Memory::in_memory();
    let ns = Namespace::parse("u").unwrap();
    let accented = "e\u{301}".repeat(40);
    let ana = GraphEntity::new(ns.clone(), "a", "Ana Lima", "person")
        .unwrap()
        .with_description(accented.clone());
    let header = memory_core::context_header(&ana);
    memory.graph().add_entity(ana).await.unwrap();
    let bob = GraphEntity::new(ns.clone(), "b", "Bob", "person").unwrap();
    memory.graph().add_entity(bob).await.unwrap();
    let knows = GraphRelation::new(ns.clone(), "a", "b", "knows", 1.0).unwrap();
    memory.graph().add_relation(knows).await.unwrap();
    let mut shown = 0;
    for budget in 20..120 {
        let context = memory
            .recall_context(&ns.subtree(), "Ana Lima", budget)
            .await
            .unwrap();
        if let Some((_, section)) = context.split_once("Related:\n") {
            shown += 1;
            assert_eq!(
                section.lines().next(),
                Some(header.as_str()),
                "budget {budget}"
            );
        }
    }
    assert!(shown > 0, "the section is shown once the header fits");
}

/// A per-call option overrides its one setting; the memory's other settings stay.
#[tokio::test]
async fn recall_options_override_field_by_field() {
    let weights = ScoreWeights {
        relevance: 0.9,
        recency: 0.1,
        ..ScoreWeights::default()
    };
    let config = RetrieverConfig {
        strategy: memory_retrieve::RetrievalStrategy::KnowledgeOnly,
        scoring: ScoringStrategy::Hybrid(weights),
        min_score: 0.0,
        ..RetrieverConfig::default()
    };
    let merged = RecallOptions::default().max_results(3).apply_to(&config);
    assert_eq!(merged.max_results, 3);
    assert_eq!(merged.scoring, config.scoring, "scoring kept");
    assert_eq!(merged.strategy, config.strategy, "strategy kept");
    assert_eq!(merged.min_score, 0.0);
    let merged = RecallOptions::default()
        .min_score(0.5)
        .graph_depth(1)
        .apply_to(&config);
    assert_eq!((merged.min_score, merged.graph_depth), (0.5, 1));
    assert_eq!(merged.max_results, config.max_results);

    // Through a Memory: a knowledge-only memory stays knowledge-only when a call sets
    // only the result count.
    let memory = Memory::builder().retriever_config(config).build().unwrap();
    let ns = Namespace::parse("user").unwrap();
    memory.remember(&ns, "tea in the morning").await.unwrap();
    let found = memory
        .recall_with(&ns.exact(), "tea", &RecallOptions::default().max_results(5))
        .await
        .unwrap();
    assert!(
        memory_ids(&found).is_empty(),
        "no memory channel: {found:?}"
    );
    let found = memory
        .recall_with(
            &ns.exact(),
            "tea",
            &RecallOptions::default().strategy(memory_retrieve::RetrievalStrategy::Hybrid),
        )
        .await
        .unwrap();
    assert_eq!(memory_ids(&found).len(), 1);
}

/// Statistics read the scope a page at a time and count every memory of it: more than one
/// page, in two namespaces, several kinds, memories sharing a creation time.
#[tokio::test]
async fn stats_count_a_scope_of_several_pages() {
    let sqlite = memory_sqlite::SqliteBackend::open_in_memory().unwrap();
    let stores: [Arc<dyn memory_core::MemoryStore>; 2] = [
        Arc::new(memory_inmem::InMemoryStore::new()),
        Arc::new(sqlite.memory_store().clone()),
    ];
    for store in stores {
        let memory = Memory::builder()
            .store(store.clone())
            .clock(clock())
            .facts(memory_retrieve::FactsConfig::off())
            .build()
            .unwrap();
        let parent = Namespace::parse("stats").unwrap();
        let child = Namespace::parse("stats/child").unwrap();
        let requests: Vec<Remember> = (0..2_345)
            .map(|n| {
                let ns = if n % 3 == 0 { &child } else { &parent };
                let kind = if n % 5 == 0 {
                    memory_core::MemoryKind::Semantic
                } else {
                    memory_core::MemoryKind::Episodic
                };
                Remember::new(ns.clone(), format!("note {n}")).kind(kind)
            })
            .collect();
        memory.remember_many(requests).await.unwrap();
        let stats = memory.stats(&parent.subtree()).await.unwrap();
        assert_eq!(stats.total, 2_345);
        assert_eq!(stats.per_namespace.get("stats/child"), Some(&782));
        assert_eq!(stats.per_namespace.get("stats"), Some(&1_563));
        assert_eq!(
            stats.per_kind.get(&memory_core::MemoryKind::Semantic),
            Some(&469)
        );
        assert_eq!(memory.stats(&child.exact()).await.unwrap().total, 782);
    }
}

/// Settings in days may be any `u32`: one past what a time can count back to (about 290,000
/// years) means nothing is that old. Each of these made `maintain` panic.
#[tokio::test]
async fn maintenance_settings_of_any_number_of_days_do_not_panic() {
    let clock = clock();
    let memory = Memory::builder()
        .clock(clock.clone())
        .knowledge(Arc::new(memory_inmem::InMemoryKnowledgeStore::new()))
        .compression(memory_retrieve::CompressionConfig {
            older_than_days: u32::MAX,
            max_tokens: 4,
        })
        .consolidation(memory_retrieve::ConsolidationConfig {
            older_than_days: u32::MAX,
            min_group: 2,
            ..memory_retrieve::ConsolidationConfig::default()
        })
        .knowledge_policy(memory_retrieve::KnowledgePolicy {
            page_ttl_days: Some(u32::MAX),
            entity_ttl_days: Some(u32::MAX),
            ..memory_retrieve::KnowledgePolicy::default()
        })
        .build()
        .unwrap();
    let ns = Namespace::parse("days").unwrap();
    for text in [
        "We planned the trip to Lisbon in May. The flights were cheap on Tuesday.",
        "My sister will join us for the first week. We still need a hotel near the river.",
    ] {
        memory.remember(&ns, text).await.unwrap();
    }
    clock.advance(Duration::days(400));
    let report = memory.maintain(&ns.subtree()).await.unwrap();
    assert_eq!(
        (report.compressed, report.consolidated),
        (0, 0),
        "{report:?}"
    );
    assert_eq!(memory.stats(&ns.subtree()).await.unwrap().total, 2);
}

/// Compression keeps the original: the compressed text is what search finds and recall
/// shows, the original comes back on request, and stats count it. Maintenance compresses
/// stale long memories (not fresh, short, pinned ones) with the extractive summarizer.
#[tokio::test]
async fn compression_keeps_originals() {
    let sqlite = memory_sqlite::SqliteBackend::open_in_memory().unwrap();
    let stores: [Arc<dyn memory_core::MemoryStore>; 2] = [
        Arc::new(memory_inmem::InMemoryStore::new()),
        Arc::new(sqlite.memory_store().clone()),
    ];
    for store in stores {
        let clock = clock();
        let memory = Memory::builder()
            .store(store.clone())
            .clock(clock.clone())
            .compression(memory_retrieve::CompressionConfig {
                older_than_days: 10,
                max_tokens: 16,
            })
            // The same text is stored several times on purpose: no duplicate merging.
            .facts(memory_retrieve::FactsConfig::off())
            .build()
            .unwrap();
        let ns = Namespace::parse("compress").unwrap();
        let long = "We planned the trip to Lisbon in May. The flights were cheap on Tuesday. \
            My sister will join us for the first week. We still need a hotel near the river. \
            The weather should be warm and dry.";
        let id = memory.remember(&ns, long).await.unwrap();
        assert!(
            memory
                .compress(&ns, &id, "Lisbon trip in May")
                .await
                .unwrap()
        );
        let item = store.get(&ns, &id).await.unwrap().unwrap();
        assert_eq!(item.content, "Lisbon trip in May");
        assert_eq!(item.original(), long);
        assert!(item.is_compressed());
        let found = memory.recall(&ns.exact(), "Lisbon").await.unwrap();
        assert_eq!(memory_ids(&found), std::slice::from_ref(&id));
        let found = memory.recall(&ns.exact(), "hotel river").await.unwrap();
        assert!(
            memory_ids(&found).is_empty(),
            "the original is not searched"
        );
        let stats = memory.stats(&ns.subtree()).await.unwrap();
        assert_eq!((stats.compressed, stats.compression_rate), (1, 1.0));
        assert!(!memory.compress(&ns, "missing", "x").await.unwrap());

        // Maintenance: a stale long memory is compressed within the budget; a pinned one and
        // a short one are not; a fresh one waits.
        let stale = memory.remember(&ns, long).await.unwrap();
        let pinned = memory
            .remember_with(Remember::new(ns.clone(), long).pinned())
            .await
            .unwrap()
            .id;
        let short = memory.remember(&ns, "a short note").await.unwrap();
        clock.advance(Duration::days(11));
        let fresh = memory.remember(&ns, long).await.unwrap();
        let report = memory.maintain(&ns.subtree()).await.unwrap();
        assert_eq!(report.compressed, 1);
        let item = store.get(&ns, &stale).await.unwrap().unwrap();
        assert!(item.is_compressed());
        assert!(
            memory_retrieve::estimate_tokens(&item.content) <= 16,
            "{}",
            item.content
        );
        assert!(
            item.content
                .split(". ")
                .all(|piece| long.contains(piece.trim_end_matches('.')))
        );
        for untouched in [&pinned, &short, &fresh] {
            let item = store.get(&ns, untouched).await.unwrap().unwrap();
            assert!(!item.is_compressed(), "{untouched}");
        }
    }
}

/// The short-term layer: the last turns of a session lead the context, in order and without
/// a search, the newest kept when the budget is short; a promoted message becomes a
/// long-term memory that recall finds.
#[tokio::test]
async fn recent_turns_lead_the_context_and_promotion_reaches_recall() {
    let memory = Memory::builder().clock(clock()).build().unwrap();
    let session = Namespace::parse("user-7/session-1").unwrap();
    let conversation = memory
        .conversation(session.clone(), ConversationConfig::default())
        .await
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..10 {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        ids.push(
            conversation
                .add_message(Message::new(role, format!("turn {i} about gardening")))
                .await
                .unwrap(),
        );
    }
    memory
        .remember(&session, "the user grows tomatoes")
        .await
        .unwrap();
    let context = memory
        .recall_context_in(&session, 4, &session.subtree(), "tomatoes", 200)
        .await
        .unwrap();
    let lines: Vec<&str> = context.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "Recent conversation:",
            "- user: turn 6 about gardening",
            "- assistant: turn 7 about gardening",
            "- user: turn 8 about gardening",
            "- assistant: turn 9 about gardening",
        ]
    );
    assert!(
        context.contains("Relevant memories:\n- the user grows tomatoes"),
        "{context}"
    );
    assert!(memory_retrieve::estimate_tokens(&context) <= 200);
    // A short budget keeps the newest turns.
    let short = memory
        .recall_context_in(&session, 4, &session.subtree(), "tomatoes", 18)
        .await
        .unwrap();
    assert!(
        short.contains("turn 9") && !short.contains("turn 6"),
        "{short}"
    );
    assert!(memory_retrieve::estimate_tokens(&short) <= 18);

    // Short-term messages stay out of recall until promoted.
    let found = memory
        .recall(&session.exact(), "turn 3 gardening")
        .await
        .unwrap();
    assert!(
        found
            .items
            .iter()
            .all(|i| !i.record.text().contains("turn 3"))
    );
    let promoted = memory
        .promote(&session, &ids[3], 0.8)
        .await
        .unwrap()
        .unwrap();
    let found = memory
        .recall(&session.subtree(), "turn 3 gardening")
        .await
        .unwrap();
    assert_eq!(found.items[0].record.id(), promoted);
    assert_eq!(
        found.items[0].record.namespace(),
        &memory_retrieve::promoted_namespace(&session).unwrap()
    );
    assert!(
        found.items[0]
            .record
            .text()
            .starts_with("assistant: turn 3")
    );
    assert_eq!(
        memory.promote(&session, "missing", 0.5).await.unwrap(),
        None
    );
}

/// A store that writes a batch of recall statistics cheaply (the in-memory one) gets it
/// written by the call that fills the batch: on a current-thread runtime a write spawned as
/// a task would not have run yet when `record` returns.
#[tokio::test]
async fn a_cheap_store_records_recalls_in_line() {
    use memory_core::{MemoryItem, MemoryStore, RecallEvent, RecallStats};
    use memory_retrieve::RecallRecorder;
    let store = Arc::new(memory_inmem::InMemoryStore::new());
    assert!(store.records_recalls_inline());
    let namespace = Namespace::parse("feedback").unwrap();
    let item = MemoryItem::new(namespace.clone(), "green tea").unwrap();
    let id = item.id.clone();
    store.save(item).await.unwrap();
    let recorder = RecallRecorder::new(Arc::clone(&store) as Arc<dyn MemoryStore>, 2);
    let event = || RecallEvent {
        namespace: namespace.clone(),
        id: id.clone(),
        score: 0.5,
        at: chrono::Utc::now(),
    };
    let count = |stats: Option<RecallStats>| stats.map(|s| s.recall_count);
    recorder.record(vec![event()]).await.unwrap();
    assert_eq!(
        count(store.recall_stats(&namespace, &id).await.unwrap()),
        Some(0),
        "a batch that is not full waits"
    );
    recorder.record(vec![event()]).await.unwrap();
    assert_eq!(
        count(store.recall_stats(&namespace, &id).await.unwrap()),
        Some(1),
        "the batch is written before record returns; the events that filled it start the next"
    );
    recorder.record(vec![event(), event()]).await.unwrap();
    assert_eq!(
        count(store.recall_stats(&namespace, &id).await.unwrap()),
        Some(2)
    );
    recorder.flush().await.unwrap();
    assert_eq!(
        count(store.recall_stats(&namespace, &id).await.unwrap()),
        Some(4),
        "nothing is lost"
    );
    // A batch size of 1 writes each recall's events at once.
    let at_once = RecallRecorder::new(Arc::clone(&store) as Arc<dyn MemoryStore>, 1);
    at_once.record(vec![event()]).await.unwrap();
    assert_eq!(
        count(store.recall_stats(&namespace, &id).await.unwrap()),
        Some(5)
    );
}

/// A batch of recall statistics written in the background that fails is reported by the
/// next flush, though its task finished, and was let go, before a later batch started.
#[tokio::test]
async fn a_failed_background_write_is_reported_by_flush() {
    use memory_core::{MemoryItem, MemoryStore, RecallEvent};
    use memory_retrieve::RecallRecorder;
    let store = Arc::new(crate::instrumented::Instrumented::failing_recall_writes_for_good(1));
    assert!(!store.records_recalls_inline(), "written by a task");
    let namespace = Namespace::parse("feedback").unwrap();
    let item = MemoryItem::new(namespace.clone(), "green tea").unwrap();
    let id = item.id.clone();
    store.save(item).await.unwrap();
    let recorder = RecallRecorder::new(Arc::clone(&store) as Arc<dyn MemoryStore>, 1);
    let event = || RecallEvent {
        namespace: namespace.clone(),
        id: id.clone(),
        score: 0.5,
        at: chrono::Utc::now(),
    };
    recorder.record(vec![event()]).await.unwrap();
    // On this current-thread runtime the failing write runs to its end here.
    tokio::task::yield_now().await;
    recorder.record(vec![event()]).await.unwrap();
    let error = recorder.flush().await.expect_err("the first batch failed");
    assert!(matches!(error, MemoryError::Storage { .. }), "{error}");
    let stats = store.recall_stats(&namespace, &id).await.unwrap().unwrap();
    assert_eq!(stats.recall_count, 1, "the second batch was written");
    assert_eq!(store.recall_writes(), 2, "a full disk is not tried again");
    recorder.record(vec![event()]).await.unwrap();
    recorder.flush().await.expect("a failure is reported once");
}

/// The memory and the recorder of the retry tests: a store whose recall writes time out
/// `failing` times, one memory in it, and a recorder writing each recall's events at once.
async fn recording_through_timeouts(
    failing: usize,
) -> (
    Arc<crate::instrumented::Instrumented>,
    memory_retrieve::RecallRecorder,
    memory_core::RecallEvent,
) {
    use memory_core::{MemoryItem, MemoryStore, RecallEvent};
    let store = Arc::new(crate::instrumented::Instrumented::failing_recall_writes(
        failing,
    ));
    let namespace = Namespace::parse("feedback").unwrap();
    let item = MemoryItem::new(namespace.clone(), "green tea").unwrap();
    let event = RecallEvent {
        namespace,
        id: item.id.clone(),
        score: 0.5,
        at: chrono::Utc::now(),
    };
    store.save(item).await.unwrap();
    let recorder =
        memory_retrieve::RecallRecorder::new(Arc::clone(&store) as Arc<dyn MemoryStore>, 1);
    (store, recorder, event)
}

/// A background write that times out twice (the backend restarting) is tried again until
/// it goes through, and counts its recall once.
#[tokio::test]
async fn a_background_write_that_fails_for_a_while_is_written() {
    use memory_core::MemoryStore;
    let (store, recorder, event) = recording_through_timeouts(2).await;
    recorder.record(vec![event.clone()]).await.unwrap();
    recorder.flush().await.expect("the third try went through");
    assert_eq!(store.recall_writes(), 3);
    let stats = store
        .recall_stats(&event.namespace, &event.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stats.recall_count, 1);
}

/// A background write that keeps timing out is given up after three retries, and the
/// flush reports its timeout.
#[tokio::test]
async fn a_background_write_is_given_up_after_three_retries() {
    use memory_core::MemoryStore;
    let (store, recorder, event) = recording_through_timeouts(usize::MAX).await;
    recorder.record(vec![event.clone()]).await.unwrap();
    let error = recorder.flush().await.expect_err("every try timed out");
    assert!(matches!(error, MemoryError::Timeout(_)), "{error}");
    assert_eq!(store.recall_writes(), 4, "the first try and three more");
    let stats = store
        .recall_stats(&event.namespace, &event.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stats.recall_count, 0);
}

/// A serialized config (a Python dict, the command line's configuration file) keeps the
/// defaults of the fields it leaves out and is refused for a field that is no setting.
#[test]
fn a_serialized_retriever_config_refuses_unknown_fields() {
    let config: RetrieverConfig =
        serde_json::from_value(serde_json::json!({"drop_time_words": true})).unwrap();
    assert!(config.drop_time_words);
    assert_eq!(
        config,
        RetrieverConfig {
            drop_time_words: true,
            ..RetrieverConfig::default()
        }
    );
    let error =
        serde_json::from_value::<RetrieverConfig>(serde_json::json!({"drop_time_word": true}))
            .unwrap_err();
    assert!(error.to_string().contains("drop_time_word"), "{error}");
    // The answer bonus is still read under its earlier name, which read quantities only.
    for name in ["head_answer_bonus", "head_quantity_bonus"] {
        let config: RetrieverConfig =
            serde_json::from_value(serde_json::json!({ name: 0.3 })).unwrap();
        assert_eq!(config.head_answer_bonus, 0.3, "{name}");
    }
}

/// A statistics write that failed in the background does not stop a maintenance pass: the
/// pass reports it and still expires and evicts.
#[tokio::test]
async fn maintenance_goes_on_past_a_failed_statistics_write() {
    use memory_core::{EvictionConfig, EvictionPolicy, MemoryStore};
    let store = Arc::new(crate::instrumented::Instrumented::failing_recall_writes_for_good(1));
    let memory = memory_retrieve::Memory::builder()
        .store(Arc::clone(&store) as Arc<dyn MemoryStore>)
        .recall_batch(1)
        .eviction(EvictionConfig {
            policy: EvictionPolicy::Capacity { max_items: 2 },
            check_interval: 1_000,
        })
        .build()
        .unwrap();
    let namespace = Namespace::parse("upkeep").unwrap();
    for text in ["green tea", "black tea", "white tea"] {
        store
            .save(memory_core::MemoryItem::new(namespace.clone(), text).unwrap())
            .await
            .unwrap();
    }
    memory.recall(&namespace.exact(), "tea").await.unwrap();
    tokio::task::yield_now().await;
    let report = memory.maintain(&namespace.exact()).await.unwrap();
    assert_eq!(report.failed_statistics_writes, 1, "{report:?}");
    assert_eq!(report.evicted, 1, "{report:?}");
    assert_eq!(store.count(&namespace.exact()).await.unwrap(), 2);
}

/// A flush writes the pages' accesses though the memories' batch fails: both are tried, and
/// the failure is still reported.
#[tokio::test]
async fn a_flush_writes_page_accesses_though_memory_statistics_fail() {
    use memory_core::{KnowledgePage, MemoryStore};
    let store = Arc::new(crate::instrumented::Instrumented::failing_recall_writes_for_good(1));
    let memory = memory_retrieve::Memory::builder()
        .store(Arc::clone(&store) as Arc<dyn MemoryStore>)
        .recall_batch(1000)
        .build()
        .unwrap();
    let namespace = Namespace::parse("flush").unwrap();
    memory
        .remember(&namespace, "the user drinks green tea")
        .await
        .unwrap();
    memory
        .knowledge()
        .add_page(
            KnowledgePage::new(namespace.clone(), "tea", "Green tea")
                .unwrap()
                .with_summary("How the user brews green tea"),
        )
        .await
        .unwrap();
    let found = memory
        .recall(&namespace.exact(), "green tea")
        .await
        .unwrap();
    assert!(
        found.items.iter().any(|hit| hit.record.id() == "tea"),
        "the page is recalled"
    );
    assert!(memory.flush().await.is_err(), "the memories' batch failed");
    let page = memory
        .knowledge()
        .get_page(&namespace, "tea")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(page.access_count, 1, "the page's access is written");
}

/// Pinned memories alone over the capacity: the unpinned ones still go, but a write does not
/// read the whole namespace each time (four passes a write, each listing every memory, did).
#[tokio::test]
async fn pinned_memories_over_the_capacity_do_not_cost_every_write_a_pass() {
    use memory_core::{EvictionConfig, EvictionPolicy, MemoryStore, PINNED_METADATA_KEY};
    let store = Arc::new(crate::instrumented::Instrumented::default());
    let memory = memory_retrieve::Memory::builder()
        .store(Arc::clone(&store) as Arc<dyn MemoryStore>)
        .eviction(EvictionConfig {
            policy: EvictionPolicy::Capacity { max_items: 10 },
            check_interval: 100_000,
        })
        .build()
        .unwrap();
    let namespace = Namespace::parse("pinned").unwrap();
    for n in 0..200 {
        let item = memory_core::MemoryItem::new(namespace.clone(), format!("pinned fact {n}"))
            .unwrap()
            .with_metadata(serde_json::json!({ PINNED_METADATA_KEY: true }))
            .unwrap();
        store.inner.save(item).await.unwrap();
    }
    for n in 0..64 {
        memory
            .remember(&namespace, &format!("passing remark {n}"))
            .await
            .unwrap();
    }
    let read: usize = store.lists.lock().unwrap().iter().map(|(_, n)| n).sum();
    let left = store.inner.count(&namespace.exact()).await.unwrap();
    assert!(
        left <= 200 + 200 / 16 + 1,
        "the unpinned still go: {left} left"
    );
    assert!(
        read <= 8 * 213,
        "{read} memories read by listings for 64 writes"
    );
}

/// A summarizer during whose call a memory is forgotten.
#[derive(Debug)]
struct ForgettingSummarizer {
    store: Arc<memory_inmem::InMemoryStore>,
    namespace: Namespace,
    forget: &'static str,
}

#[async_trait::async_trait]
impl memory_retrieve::Summarizer for ForgettingSummarizer {
    async fn summarize(&self, texts: &[&str], _max_tokens: usize) -> memory_core::Result<String> {
        use memory_core::MemoryStore;
        self.store.delete(&self.namespace, self.forget).await?;
        Ok(texts
            .first()
            .map_or("", |text| text.get(..20).unwrap_or(text))
            .to_owned())
    }
}

/// A source forgotten while its consolidation's summary is written is not written back (a
/// save is an upsert): the consolidation fails as for a missing source, and writes nothing.
#[tokio::test]
async fn a_source_forgotten_during_its_consolidation_stays_forgotten() {
    use memory_core::MemoryStore;
    let store = Arc::new(memory_inmem::InMemoryStore::new());
    let namespace = Namespace::parse("fold").unwrap();
    let memory = Memory::builder()
        .store(Arc::clone(&store) as Arc<dyn MemoryStore>)
        .compression_with(
            memory_retrieve::CompressionConfig::default(),
            Arc::new(ForgettingSummarizer {
                store: Arc::clone(&store),
                namespace: namespace.clone(),
                forget: "b",
            }),
        )
        .build()
        .unwrap();
    for (id, text) in [
        ("a", "the user went hiking"),
        ("b", "the user went swimming"),
    ] {
        memory
            .remember_with(memory_retrieve::Remember::new(namespace.clone(), text).id(id))
            .await
            .unwrap();
    }
    let error = memory
        .consolidate(&namespace, &["a".to_owned(), "b".to_owned()], 50)
        .await
        .unwrap_err();
    assert!(
        matches!(error, memory_core::MemoryError::NotFound { .. }),
        "{error:?}"
    );
    assert!(
        store.get(&namespace, "b").await.unwrap().is_none(),
        "b stays forgotten"
    );
    let a = store.get(&namespace, "a").await.unwrap().unwrap();
    assert!(a.ended.is_none(), "a is not ended");
    assert_eq!(
        store.count(&namespace.exact()).await.unwrap(),
        1,
        "no summary"
    );
}

/// A flush tries the pending batch again when it fails for a reason that may pass (a
/// timeout), as a background write does: the batch is out of the buffer once taken.
#[tokio::test]
async fn a_flush_tries_a_timed_out_batch_again() {
    use memory_core::MemoryStore;
    let (store, memory, namespace, id) = recalled_with_a_timed_out_write("retry").await;
    memory.flush().await.unwrap();
    let stats = store.inner.recall_stats(&namespace, &id).await.unwrap();
    assert_eq!(stats.map(|stats| stats.recall_count), Some(1));
}

/// A memory forgotten while its summary was written is skipped by maintenance's compression,
/// not an error that stops the pass (and the maintenance after it).
#[tokio::test]
async fn a_memory_forgotten_during_its_compression_is_skipped() {
    use memory_core::MemoryStore;
    let store = Arc::new(memory_inmem::InMemoryStore::new());
    let namespace = Namespace::parse("compress").unwrap();
    let clock = clock();
    let memory = Memory::builder()
        .store(Arc::clone(&store) as Arc<dyn MemoryStore>)
        .clock(clock.clone())
        .compression_with(
            memory_retrieve::CompressionConfig {
                older_than_days: 10,
                max_tokens: 8,
            },
            Arc::new(ForgettingSummarizer {
                store: Arc::clone(&store),
                namespace: namespace.clone(),
                forget: "a",
            }),
        )
        .facts(memory_retrieve::FactsConfig::off())
        .build()
        .unwrap();
    for id in ["a", "b"] {
        memory
            .remember_with(
                memory_retrieve::Remember::new(namespace.clone(), "a long memory. ".repeat(40))
                    .id(id),
            )
            .await
            .unwrap();
    }
    clock.advance(Duration::days(11));
    let report = memory.maintain(&namespace.subtree()).await.unwrap();
    assert_eq!(report.compressed, 1, "{report:?}");
    assert!(store.get(&namespace, "a").await.unwrap().is_none());
}

/// Compression reads the old memories a page at a time, not a scope's whole history at once,
/// and compresses every page.
#[tokio::test]
async fn compression_reads_a_page_at_a_time() {
    use memory_core::{Clock, MemoryStore};
    let store = Arc::new(crate::instrumented::Instrumented::default());
    let namespace = Namespace::parse("pages").unwrap();
    let clock = clock();
    let memory = Memory::builder()
        .store(Arc::clone(&store) as Arc<dyn MemoryStore>)
        .clock(clock.clone())
        .compression_with(
            memory_retrieve::CompressionConfig {
                older_than_days: 10,
                max_tokens: 8,
            },
            Arc::new(LimitedSummarizer { refuse: "\u{0}" }),
        )
        .facts(memory_retrieve::FactsConfig::off())
        .build()
        .unwrap();
    let items: Vec<memory_core::MemoryItem> = (0..300)
        .map(|at| {
            memory_core::MemoryItem::new(namespace.clone(), format!("memory {at}. ").repeat(20))
                .unwrap()
                .with_created_at(clock.now())
        })
        .collect();
    store.save_many(items).await.unwrap();
    clock.advance(Duration::days(11));
    let before = store.listings().len();
    let report = memory.maintain(&namespace.subtree()).await.unwrap();
    assert_eq!(report.compressed, 300, "{report:?}");
    let pages: Vec<(Option<usize>, usize)> = store.listings()[before..]
        .iter()
        .filter(|(limit, _)| *limit == Some(256))
        .copied()
        .collect();
    assert_eq!(pages, [(Some(256), 256), (Some(256), 44)]);
}

/// A summarizer that cannot summarize a text holding `refuse` within its limit.
#[derive(Debug)]
struct LimitedSummarizer {
    refuse: &'static str,
}

#[async_trait::async_trait]
impl memory_retrieve::Summarizer for LimitedSummarizer {
    async fn summarize(&self, texts: &[&str], _max_tokens: usize) -> memory_core::Result<String> {
        if texts.iter().any(|text| text.contains(self.refuse)) {
            return Err(memory_core::MemoryError::LimitExceeded(
                "the answer was cut at its token limit".to_owned(),
            ));
        }
        Ok("short".to_owned())
    }
}

/// A memory the summarizer cannot summarize within its limit stays whole, and maintenance
/// goes on to the others (it stopped at the same memory at every pass).
#[tokio::test]
async fn a_summary_over_its_limit_leaves_its_memory_whole() {
    let clock = clock();
    let memory = Memory::builder()
        .clock(clock.clone())
        .compression_with(
            memory_retrieve::CompressionConfig {
                older_than_days: 10,
                max_tokens: 8,
            },
            Arc::new(LimitedSummarizer { refuse: "lisbon" }),
        )
        .facts(memory_retrieve::FactsConfig::off())
        .build()
        .unwrap();
    let namespace = Namespace::parse("limited").unwrap();
    for (id, text) in [
        ("a", "a long note about lisbon. "),
        ("b", "a long note about porto. "),
    ] {
        memory
            .remember_with(
                memory_retrieve::Remember::new(namespace.clone(), text.repeat(40)).id(id),
            )
            .await
            .unwrap();
    }
    clock.advance(Duration::days(11));
    let report = memory.maintain(&namespace.subtree()).await.unwrap();
    assert_eq!(report.compressed, 1, "{report:?}");
    let whole = memory.store().get(&namespace, "a").await.unwrap().unwrap();
    assert!(!whole.is_compressed());
}

/// A flush whose caller stops waiting (a request's deadline) does not lose the batch it
/// took: it is written in the background all the same.
#[tokio::test]
async fn a_flush_given_up_on_still_writes_its_batch() {
    use memory_core::MemoryStore;
    let (store, memory, namespace, id) = recalled_with_a_timed_out_write("given-up").await;
    // The first write times out and is retried 50 ms later: the flush is dropped before.
    let waited = tokio::time::timeout(std::time::Duration::from_millis(5), memory.flush()).await;
    assert!(waited.is_err(), "the flush was given up on");
    memory.flush().await.unwrap();
    let stats = store.inner.recall_stats(&namespace, &id).await.unwrap();
    assert_eq!(stats.map(|stats| stats.recall_count), Some(1));
}

/// A memory remembered and recalled once in `namespace`, on a store whose first write of
/// recall statistics times out, the recall's event still batched (a batch of 1,000).
async fn recalled_with_a_timed_out_write(
    namespace: &str,
) -> (
    Arc<crate::instrumented::Instrumented>,
    Memory,
    Namespace,
    String,
) {
    use memory_core::MemoryStore;
    let store = Arc::new(crate::instrumented::Instrumented::failing_recall_writes(1));
    let memory = Memory::builder()
        .store(Arc::clone(&store) as Arc<dyn MemoryStore>)
        .recall_batch(1000)
        .build()
        .unwrap();
    let namespace = Namespace::parse(namespace).unwrap();
    let id = memory
        .remember(&namespace, "the user drinks green tea")
        .await
        .unwrap();
    memory
        .recall(&namespace.exact(), "green tea")
        .await
        .unwrap();
    (store, memory, namespace, id)
}

/// Stats tell how many memories recall returned and with what mean relevance, and count
/// every entity of a graph larger than one page of them.
#[tokio::test]
async fn stats_tell_what_recall_found_and_count_every_entity() {
    let memory = Memory::builder().clock(clock()).build().unwrap();
    let ns = Namespace::parse("stats").unwrap();
    for text in [
        "The user plays the violin on Sundays",
        "The user's violin teacher lives in Lisbon",
        "Groceries to buy: milk and bread",
    ] {
        memory.remember(&ns, text).await.unwrap();
    }
    let before = memory.stats(&ns.subtree()).await.unwrap();
    assert_eq!((before.recalled, before.mean_recall_score), (0, None));
    let found = memory.recall(&ns.subtree(), "violin").await.unwrap();
    let scores: Vec<f64> = found
        .items
        .iter()
        .map(|item| f64::from(item.score))
        .collect();
    assert_eq!(scores.len(), 2, "{found:?}");
    let stats = memory.stats(&ns.subtree()).await.unwrap();
    assert_eq!(stats.recalled, 2);
    let mean = scores.iter().sum::<f64>() / 2.0;
    let told = stats.mean_recall_score.expect("a mean after a recall");
    assert!((told - mean).abs() < 1e-6, "{told} against {mean}");

    for i in 0..1_005 {
        memory
            .graph()
            .add_entity(
                memory_core::GraphEntity::new(
                    ns.clone(),
                    format!("e{i:04}"),
                    format!("E{i}"),
                    "thing",
                )
                .unwrap(),
            )
            .await
            .unwrap();
    }
    assert_eq!(memory.stats(&ns.subtree()).await.unwrap().entities, 1_005);
}
