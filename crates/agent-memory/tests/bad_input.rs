//! The bad-input catalogue: for each public entry point, a table of hostile or odd inputs and
//! the expected outcome: a clear `MemoryError` naming the problem, or a documented result.
//! Nothing panics, and nothing already stored is lost or changed. Runs on every backend: in
//! memory, SQLite and, when `AGENT_MEMORY_TEST_POSTGRES_URL` names a server,
//! PostgreSQL.
#![cfg(all(feature = "retrieve", feature = "sqlite"))]

mod common;

use agent_memory::prelude::*;
use agent_memory::retrieve::{
    Memory, RecallOptions, Remember, RetrieverConfig, ScoreWeights, ScoringStrategy,
};
use agent_memory::{Clock, MemoryFilter, Result};
use agent_memory::{EvictionConfig, EvictionPolicy, PageQuery, RecallBasedConfig, transfer};

type Backends = common::Backend;

/// Asserts `result` is `InvalidInput` whose field is (or, for a nested setting such as
/// `weights.relevance`, contains) `field`.
fn invalid<T: std::fmt::Debug>(case: &str, result: Result<T>, field: &str) {
    match result {
        Err(MemoryError::InvalidInput {
            field: named,
            problem,
        }) => {
            assert!(
                named.contains(field),
                "{case}: the error names {named:?} ({problem}), not {field}"
            )
        }
        other => panic!("{case}: expected InvalidInput naming {field}, got {other:?}"),
    }
}

async fn sentinel_is_intact(b: &Backends, memory: &Memory, ns: &Namespace) {
    let item = b
        .store
        .get(ns, "sentinel")
        .await
        .unwrap()
        .expect("sentinel memory survives");
    assert_eq!(
        item.content, "the sentinel memory about lighthouses",
        "{}",
        b.name
    );
    let found = memory.recall(&ns.exact(), "lighthouses").await.unwrap();
    assert!(
        found.items.iter().any(|i| i.record.id() == "sentinel"),
        "{}: sentinel still searchable",
        b.name
    );
    assert!(
        b.knowledge.get_page(ns, "page").await.unwrap().is_some(),
        "{}: page survives",
        b.name
    );
    assert!(
        b.graph.get_entity(ns, "a").await.unwrap().is_some(),
        "{}: entity survives",
        b.name
    );
    assert_eq!(
        b.graph.relations_of(ns, "a").await.unwrap().len(),
        1,
        "{}: relation survives",
        b.name
    );
}

/// The documented size and shape limits, on every entry point that writes a memory or a
/// page: each is refused with `InvalidInput` naming the field, and the largest accepted
/// value is stored and read back.
async fn limits_hold(b: &Backends, memory: &Memory, ns: &Namespace) {
    use agent_memory::{MAX_CONTEXT_BYTES, MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_TAGS};

    // Built by hand: `json!` would serialise the inner value again at every level.
    fn nested(depth: usize) -> serde_json::Value {
        let mut value = serde_json::json!({"leaf": 1});
        for _ in 1..depth {
            let mut level = serde_json::Map::new();
            level.insert("next".to_owned(), value);
            value = serde_json::Value::Object(level);
        }
        value
    }
    // Nesting: the deepest accepted metadata reads back on every backend; deeper is refused
    // (10,000 levels too, without overflowing the stack).
    let deepest = memory
        .remember_with(
            Remember::new(ns.clone(), "deep metadata").metadata(nested(MAX_METADATA_DEPTH)),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: deepest metadata: {e}", b.name))
        .id;
    let read = b.store.get(ns, &deepest).await.unwrap().unwrap();
    assert_eq!(read.metadata, nested(MAX_METADATA_DEPTH), "{}", b.name);
    b.store
        .list(&MemoryFilter::new(ns.subtree()))
        .await
        .unwrap();
    memory.forget(ns, &deepest).await.unwrap();
    for depth in [MAX_METADATA_DEPTH + 1, 128, 1_000] {
        invalid(
            "deep metadata",
            memory
                .remember_with(Remember::new(ns.clone(), "x").metadata(nested(depth)))
                .await,
            "metadata",
        );
        let mut item = MemoryItem::new(ns.clone(), "x").unwrap();
        item.metadata = nested(depth);
        invalid("deep metadata, store", b.store.save(item).await, "metadata");
    }
    // So deep that dropping it recursively would overflow this thread's stack: refused and
    // released without recursion.
    invalid(
        "metadata 100,000 levels deep",
        memory
            .remember_with(Remember::new(ns.clone(), "x").metadata(nested(100_000)))
            .await,
        "metadata",
    );
    // An entity's and a relation's attributes: the deepest read back on every backend;
    // deeper, larger or holding NUL refused by name, 100,000 levels released without
    // recursion.
    let deep = GraphEntity::new(ns.clone(), "deep", "Deep", "thing")
        .and_then(|entity| entity.with_attributes(nested(MAX_METADATA_DEPTH)))
        .unwrap_or_else(|e| panic!("{}: deepest attributes: {e}", b.name));
    b.graph.add_entity(deep).await.unwrap();
    let link = GraphRelation::new(ns.clone(), "deep", "deep", "self", 1.0)
        .and_then(|relation| relation.with_attributes(nested(MAX_METADATA_DEPTH)))
        .unwrap_or_else(|e| panic!("{}: deepest relation attributes: {e}", b.name));
    b.graph.add_relation(link).await.unwrap();
    let read = b.graph.get_entity(ns, "deep").await.unwrap().unwrap();
    assert_eq!(
        serde_json::Value::Object(read.attributes),
        nested(MAX_METADATA_DEPTH),
        "{}",
        b.name
    );
    let relations = b.graph.relations_of(ns, "deep").await.unwrap();
    assert_eq!(
        relations
            .first()
            .map(|relation| serde_json::Value::Object(relation.attributes.clone())),
        Some(nested(MAX_METADATA_DEPTH)),
        "{}",
        b.name
    );
    b.graph.remove_entity(ns, "deep").await.unwrap();
    let entity = || GraphEntity::new(ns.clone(), "refused", "Refused", "thing").unwrap();
    for (case, attributes) in [
        ("deep attributes", nested(MAX_METADATA_DEPTH + 1)),
        ("attributes 100,000 levels deep", nested(100_000)),
        (
            "large attributes",
            serde_json::json!({ "blob": "x".repeat(MAX_METADATA_BYTES + 1) }),
        ),
        ("NUL in attributes", serde_json::json!({"k": "a\0b"})),
        ("attributes that are not an object", serde_json::json!([1])),
    ] {
        invalid(case, entity().with_attributes(attributes), "attributes");
    }
    assert!(b.graph.get_entity(ns, "refused").await.unwrap().is_none());
    // Sizes.
    let big = serde_json::json!({ "blob": "x".repeat(MAX_METADATA_BYTES + 1) });
    invalid(
        "large metadata",
        memory
            .remember_with(Remember::new(ns.clone(), "x").metadata(big))
            .await,
        "metadata",
    );
    invalid(
        "NUL in metadata",
        memory
            .remember_with(
                Remember::new(ns.clone(), "x").metadata(serde_json::json!({"k": "a\0b"})),
            )
            .await,
        "metadata",
    );
    invalid(
        "large context",
        memory
            .remember_with(
                Remember::new(ns.clone(), "x").context("y".repeat(MAX_CONTEXT_BYTES + 1)),
            )
            .await,
        "context",
    );
    let tags: Vec<String> = (0..=MAX_TAGS).map(|i| format!("tag-{i}")).collect();
    invalid(
        "too many tags",
        memory
            .remember_with(Remember::new(ns.clone(), "x").tags(tags.clone()))
            .await,
        "tags",
    );
    let many: Vec<String> = (0..10_000).map(|i| format!("tag-{i}")).collect();
    invalid(
        "10,000 tags",
        memory
            .remember_with(Remember::new(ns.clone(), "x").tags(many))
            .await,
        "tags",
    );
    let page = KnowledgePage::new(ns.clone(), "tagged", "Tagged").unwrap();
    invalid(
        "too many page tags",
        page.with_tags(tags.iter().map(String::as_str)),
        "tags",
    );
    let mut page = KnowledgePage::new(ns.clone(), "tagged", "Tagged").unwrap();
    page.tags = (0..=MAX_TAGS)
        .map(|i| Tag::new(&format!("t{i}")).unwrap())
        .collect();
    invalid(
        "too many page tags, store",
        b.knowledge.add_page(page).await,
        "tags",
    );
    // A negative zero weight is stored as 0.0 everywhere (SQLite cannot keep the sign).
    let mut signed = MemoryItem::new(ns.clone(), "negative zero weights")
        .unwrap()
        .with_id("negative-zero")
        .unwrap();
    signed.importance = -0.0;
    signed.credibility = -0.0;
    b.store.save(signed).await.unwrap();
    let read = b.store.get(ns, "negative-zero").await.unwrap().unwrap();
    assert_eq!(
        (read.importance.to_bits(), read.credibility.to_bits()),
        (0, 0),
        "{}: -0.0 reads back as 0.0",
        b.name
    );
    memory.forget(ns, "negative-zero").await.unwrap();
    // Times every backend can store.
    let far = chrono::DateTime::parse_from_rfc3339("3000-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    invalid(
        "year 3000",
        memory
            .remember_with(Remember::new(ns.clone(), "x").created_at(far))
            .await,
        "created_at",
    );
}

#[tokio::test]
async fn every_entry_point_rejects_or_handles_bad_input() {
    for b in common::backends("bad_input").await {
        let memory = Memory::builder()
            .store(b.store.clone())
            .knowledge(b.knowledge.clone())
            .graph(b.graph.clone())
            .build()
            .unwrap();
        let ns = Namespace::parse("tenant/agent").unwrap();
        memory
            .remember_with(
                Remember::new(ns.clone(), "the sentinel memory about lighthouses").id("sentinel"),
            )
            .await
            .unwrap();
        b.knowledge
            .add_page(KnowledgePage::new(ns.clone(), "page", "Lighthouse keeping").unwrap())
            .await
            .unwrap();
        b.graph
            .add_entity(GraphEntity::new(ns.clone(), "a", "Alpha", "thing").unwrap())
            .await
            .unwrap();
        b.graph
            .add_entity(GraphEntity::new(ns.clone(), "b", "Beta", "thing").unwrap())
            .await
            .unwrap();
        b.graph
            .add_relation(GraphRelation::new(ns.clone(), "a", "b", "links", 0.5).unwrap())
            .await
            .unwrap();

        // Text: empty, blank, oversized are rejected; control characters, mixed scripts and
        // emoji are stored and searchable.
        invalid("empty text", memory.remember(&ns, "").await, "content");
        invalid(
            "whitespace text",
            memory.remember(&ns, " \n\t ").await,
            "content",
        );
        let ten_mb = "x".repeat(10 * 1024 * 1024);
        invalid("10 MB text", memory.remember(&ns, &ten_mb).await, "content");
        // NUL cannot be stored by PostgreSQL, so no backend accepts it.
        invalid(
            "NUL in text",
            memory.remember(&ns, "nul \0 text").await,
            "content",
        );
        for odd in [
            "bell \u{7} text",
            "mixed Ελληνικά русский 中文 עברית",
            "emoji 🙂🚀 only 👩‍👩‍👧",
            "\u{202e}right to left",
            "日本語のテキスト",
        ] {
            let id = memory
                .remember(&ns, odd)
                .await
                .unwrap_or_else(|e| panic!("{}: {odd:?}: {e}", b.name));
            assert_eq!(
                b.store.get(&ns, &id).await.unwrap().unwrap().content,
                odd,
                "{}: stored as given",
                b.name
            );
            memory
                .recall(&ns.exact(), odd)
                .await
                .unwrap_or_else(|e| panic!("{}: recall {odd:?}: {e}", b.name));
        }
        let found = memory.recall(&ns.exact(), "中文").await.unwrap();
        assert!(
            !found.items.is_empty(),
            "{}: mixed-script memory found by its Chinese",
            b.name
        );

        limits_hold(&b, &memory, &ns).await;

        // Namespaces.
        for bad in ["a//b", "a b", "ünï", "x\ny"] {
            invalid(bad, Namespace::parse(bad), "namespace");
        }
        invalid(
            "root namespace",
            memory.remember(&Namespace::root(), "x").await,
            "namespace",
        );

        // Numbers: NaN and infinite weights and scores, out of range.
        for value in [f32::NAN, f32::INFINITY, -1.0, 1.5] {
            invalid(
                "importance",
                memory
                    .remember_with(Remember::new(ns.clone(), "x").importance(value))
                    .await,
                "importance",
            );
            invalid(
                "relation weight",
                GraphRelation::new(ns.clone(), "a", "b", "r", value),
                "weight",
            );
            let weights = ScoreWeights {
                relevance: if value > 1.0 { f32::NAN } else { value },
                ..ScoreWeights::default()
            };
            let options = RecallOptions::default().scoring(ScoringStrategy::Hybrid(weights));
            invalid(
                "score weight",
                memory.recall_with(&ns.exact(), "x", &options).await,
                "weights",
            );
        }
        let mut relation = GraphRelation::new(ns.clone(), "a", "b", "r", 0.5).unwrap();
        relation.weight = f32::NAN;
        invalid(
            "NaN weight written directly",
            b.graph.add_relation(relation).await,
            "weight",
        );
        // Recall scores are clamped, NaN counts as 0 (documented on RecallStats::record).
        b.store
            .record_recall(&ns, "sentinel", f32::NAN, agent_memory::SystemClock.now())
            .await
            .unwrap();
        b.store
            .record_recall(
                &ns,
                "sentinel",
                f32::INFINITY,
                agent_memory::SystemClock.now(),
            )
            .await
            .unwrap();
        let stats = b
            .store
            .recall_stats(&ns, "sentinel")
            .await
            .unwrap()
            .unwrap();
        // NaN counts as 0 and infinity as 1: two recalls, a total of exactly 1.
        assert_eq!(
            (stats.recall_count, stats.total_score),
            (2, 1.0),
            "{}: {stats:?}",
            b.name
        );

        // Zero TTL and capacity (negative values do not type-check: they are unsigned).
        for policy in [
            EvictionPolicy::Ttl { ttl_secs: 0 },
            EvictionPolicy::Capacity { max_items: 0 },
            EvictionPolicy::RecallBased(RecallBasedConfig {
                max_items: 0,
                ..RecallBasedConfig::default()
            }),
        ] {
            let result = Memory::builder()
                .eviction(EvictionConfig {
                    policy,
                    check_interval: 1,
                })
                .build();
            assert!(
                matches!(result, Err(MemoryError::InvalidInput { .. })),
                "{}: zero ttl/capacity",
                b.name
            );
        }

        // Depth: 0 reaches nothing, 1,000,000 is clamped to MAX_TRAVERSAL_DEPTH.
        assert!(b.graph.get_related(&ns, "a", 0).await.unwrap().is_empty());
        assert_eq!(
            b.graph
                .get_related(&ns, "a", 1_000_000)
                .await
                .unwrap()
                .len(),
            1
        );
        invalid(
            "graph depth",
            RetrieverConfig {
                graph_depth: 1_000_000,
                ..RetrieverConfig::default()
            }
            .validate(),
            "graph_depth",
        );

        // Unknown ids: reads are empty, deletes report false, updates are NotFound.
        assert_eq!(b.store.get(&ns, "nope").await.unwrap(), None);
        assert!(!memory.forget(&ns, "nope").await.unwrap());
        let ghost = MemoryItem::new(ns.clone(), "ghost")
            .unwrap()
            .with_id("nope")
            .unwrap();
        assert!(
            matches!(
                b.store.update(ghost).await,
                Err(MemoryError::NotFound { .. })
            ),
            "{}",
            b.name
        );
        assert!(matches!(
            b.graph.set_entity_tags(&ns, "nope", vec![]).await,
            Err(MemoryError::NotFound { .. })
        ));
        assert!(matches!(
            b.graph.get_related(&ns, "nope", 2).await,
            Err(MemoryError::NotFound { .. })
        ));
        assert!(!b.knowledge.delete_page(&ns, "nope").await.unwrap());

        // Bad and duplicate ids.
        invalid(
            "empty id",
            memory
                .remember_with(Remember::new(ns.clone(), "x").id(""))
                .await,
            "id",
        );
        invalid(
            "control id",
            memory
                .remember_with(Remember::new(ns.clone(), "x").id("a\nb"))
                .await,
            "id",
        );
        let duplicate_page = KnowledgePage::new(ns.clone(), "page", "Other title").unwrap();
        assert!(matches!(
            b.knowledge.add_page(duplicate_page).await,
            Err(MemoryError::AlreadyExists(_))
        ));
        let duplicate_entity = GraphEntity::new(ns.clone(), "a", "Other", "thing").unwrap();
        assert!(matches!(
            b.graph.add_entity(duplicate_entity).await,
            Err(MemoryError::AlreadyExists(_))
        ));

        // Relations to missing entities.
        let dangling = GraphRelation::new(ns.clone(), "a", "missing", "r", 0.5).unwrap();
        assert!(
            matches!(
                b.graph.add_relation(dangling).await,
                Err(MemoryError::NotFound { .. })
            ),
            "{}",
            b.name
        );

        // Queries: hostile syntax, huge, blank.
        for query in [
            "AND OR NEAR( \"unbalanced",
            "title:x*",
            "a & b | !c",
            "\\\"'; DROP TABLE memories; --",
            "   ",
            "",
        ] {
            memory
                .recall(&ns.exact(), query)
                .await
                .unwrap_or_else(|e| panic!("{}: {query:?}: {e}", b.name));
            b.knowledge
                .search(&PageQuery::new(ns.exact(), query, 5))
                .await
                .unwrap();
        }
        // A long query within the limit is searched with its first distinct terms.
        let long_query: String = (0..2_000).map(|i| format!("w{i} ")).collect();
        assert!(long_query.len() > 8 * 1024);
        memory
            .recall(&ns.exact(), &long_query)
            .await
            .unwrap_or_else(|e| panic!("{}: long query: {e}", b.name));
        invalid(
            "huge query",
            memory.recall(&ns.exact(), &"word ".repeat(100_000)).await,
            "query",
        );
        invalid(
            "zero results",
            memory
                .recall_with(&ns.exact(), "x", &RecallOptions::default().max_results(0))
                .await,
            "max_results",
        );
        invalid(
            "too many results",
            memory
                .recall_with(
                    &ns.exact(),
                    "x",
                    &RecallOptions::default().max_results(1_000_000),
                )
                .await,
            "max_results",
        );
        // Metadata conditions: at most 32, keys of 1 to 256 bytes.
        let many = (0..=agent_memory::retrieve::MAX_METADATA_CONDITIONS)
            .fold(RecallOptions::default(), |options, n| {
                options.metadata(format!("k{n}"), serde_json::json!(n))
            });
        let long_key = "k".repeat(agent_memory::retrieve::MAX_METADATA_KEY_BYTES + 1);
        for (case, options) in [
            ("too many metadata conditions", many),
            (
                "empty metadata key",
                RecallOptions::default().metadata("", serde_json::json!(1)),
            ),
            (
                "long metadata key",
                RecallOptions::default().metadata(long_key, serde_json::json!(1)),
            ),
        ] {
            invalid(
                case,
                memory.recall_with(&ns.exact(), "x", &options).await,
                "metadata",
            );
        }
        // The least similarity that counts is in [0, 1].
        for least in [f32::NAN, -0.1, 1.5, f32::INFINITY] {
            invalid(
                "min_similarity",
                Memory::builder()
                    .store(b.store.clone())
                    .retriever_config(RetrieverConfig {
                        min_similarity: least,
                        ..RetrieverConfig::default()
                    })
                    .build(),
                "min_similarity",
            );
        }

        // Malformed JSONL imports are rejected whole, naming the line; nothing is written.
        let before = b.store.count(&ns.subtree()).await.unwrap();
        for input in [
            "not json at all\n",
            "{\"format\":\"agent-memory-jsonl\",\"version\":99}\n",
            "{\"format\":\"agent-memory-jsonl\",\"version\":1}\n{\"type\":\"memory\",\"record\":{\"broken\":true}}\n",
            "{\"format\":\"agent-memory-jsonl\",\"version\":1}\n\u{0}\u{1}\n",
        ] {
            let mut reader = std::io::Cursor::new(input.as_bytes().to_vec());
            let result = transfer::import_jsonl(
                &mut reader,
                Some(&*b.store),
                Some(&*b.knowledge),
                Some(&*b.graph),
            )
            .await;
            assert!(
                matches!(
                    result,
                    Err(MemoryError::Serialization { .. }) | Err(MemoryError::InvalidInput { .. })
                ),
                "{}: malformed JSONL {input:?} gives a clear error, got {result:?}",
                b.name
            );
        }
        assert_eq!(
            b.store.count(&ns.subtree()).await.unwrap(),
            before,
            "{}: failed imports write nothing",
            b.name
        );

        facts_and_dialogue_hold(&b, &memory, &ns).await;

        sentinel_is_intact(&b, &memory, &ns).await;
        b.cleanup().await;
    }
}

/// The changing-facts and dialogue entry points: fact keys, validity, credibility, explicit
/// supersede and retract, dialogue turns and role weights. Each refusal names its field and
/// stores nothing.
async fn facts_and_dialogue_hold(b: &Backends, memory: &Memory, ns: &Namespace) {
    use agent_memory::retrieve::Turn;
    use agent_memory::{MAX_FACT_KEY_LEN, MAX_REASON_LEN};

    let before = b.store.count(&ns.subtree()).await.unwrap();
    let long_key = "k".repeat(MAX_FACT_KEY_LEN + 1);
    for key in ["", "   ", long_key.as_str()] {
        invalid(
            "fact key",
            memory
                .remember_with(Remember::new(ns.clone(), "the user lives in Paris").fact_key(key))
                .await,
            "fact_key",
        );
    }
    let (early, late) = (
        "2024-01-01T00:00:00Z".parse().unwrap(),
        "2025-01-01T00:00:00Z".parse().unwrap(),
    );
    invalid(
        "validity ends before it starts",
        memory
            .remember_with(Remember::new(ns.clone(), "a fact").valid(Some(late), Some(early)))
            .await,
        "valid",
    );
    for credibility in [f32::NAN, -0.5, 2.0] {
        invalid(
            "credibility",
            memory
                .remember_with(Remember::new(ns.clone(), "a fact").credibility(credibility))
                .await,
            "credibility",
        );
    }
    invalid(
        "supersede itself",
        memory.supersede(ns, "sentinel", "sentinel").await,
        "new",
    );
    assert!(
        matches!(
            memory.supersede(ns, "no-such-memory", "sentinel").await,
            Err(MemoryError::NotFound { .. })
        ),
        "{}: superseding a missing memory is NotFound",
        b.name
    );
    invalid(
        "retract reason",
        memory
            .retract(ns, "sentinel", &"r".repeat(MAX_REASON_LEN + 1))
            .await,
        "reason",
    );
    let mut dialogue = memory.dialogue(ns.clone());
    for (turn, field) in [
        (Turn::new("x".repeat(1000), "hello"), "speaker"),
        (
            Turn::new("user", "hello").session("s".repeat(1000)),
            "session",
        ),
        (Turn::new("user", " \n "), "text"),
        (
            Turn::new("user", "hello").metadata(serde_json::json!("flat")),
            "metadata",
        ),
        (Turn::new("user", "nul \0 text"), "text"),
    ] {
        invalid("dialogue turn", dialogue.add(turn).await, field);
    }
    for weight in [f32::NAN, -0.1, 1.5] {
        let mut config = RetrieverConfig::default();
        config.role_weights.insert("assistant".into(), weight);
        invalid(
            "role weight",
            Memory::builder()
                .store(b.store.clone())
                .retriever_config(config)
                .build(),
            "role_weights",
        );
        let mut config = RetrieverConfig::default();
        config
            .role_weights_about_agent
            .insert("user".into(), weight);
        invalid(
            "role weight about the agent",
            Memory::builder()
                .store(b.store.clone())
                .retriever_config(config)
                .build(),
            "role_weights_about_agent",
        );
    }
    // The role search depth is 1 to MAX_ROLE_SEARCH_DEPTH: refused by name when the memory is
    // built and when a recall is given it.
    for depth in [
        0,
        agent_memory::retrieve::MAX_ROLE_SEARCH_DEPTH + 1,
        usize::MAX,
    ] {
        let config = RetrieverConfig {
            role_search_depth: depth,
            ..RetrieverConfig::default()
        };
        invalid(
            "role search depth",
            Memory::builder()
                .store(b.store.clone())
                .retriever_config(config.clone())
                .build(),
            "role_search_depth",
        );
        invalid(
            "role search depth",
            memory
                .retriever()
                .retrieve_with(
                    &ns.subtree(),
                    "what did I adopt?",
                    &Default::default(),
                    &config,
                )
                .await,
            "role_search_depth",
        );
    }
    // Each factor that lowers a score is in (0, 1]: refused by name when the memory is built
    // and when a recall is given it.
    type WithFactor = fn(f32) -> RetrieverConfig;
    let factors: [(&str, &str, WithFactor); 4] = [
        ("other_speaker_factor", "what did Melanie paint", |factor| {
            RetrieverConfig {
                other_speaker_factor: factor,
                ..RetrieverConfig::default()
            }
        }),
        (
            "outside_time_factor",
            "what did I say yesterday",
            |factor| RetrieverConfig {
                outside_time_factor: factor,
                ..RetrieverConfig::default()
            },
        ),
        ("context_only_factor", "which rare records?", |factor| {
            RetrieverConfig {
                context_only_factor: factor,
                ..RetrieverConfig::default()
            }
        }),
        ("head_question_factor", "did you ask me?", |factor| {
            RetrieverConfig {
                head_question_factor: factor,
                ..RetrieverConfig::default()
            }
        }),
    ];
    for (field, query, config_with) in factors {
        for factor in [f32::NAN, 0.0, -0.5, 1.5, f32::INFINITY] {
            let config = config_with(factor);
            invalid(
                field,
                Memory::builder()
                    .store(b.store.clone())
                    .retriever_config(config.clone())
                    .build(),
                field,
            );
            invalid(
                field,
                memory
                    .retriever()
                    .retrieve_with(&ns.subtree(), query, &Default::default(), &config)
                    .await,
                field,
            );
        }
    }
    // The head's bonuses are in [0, 1]: refused by name when a recall is given them.
    type WithBonus = fn(f32) -> RetrieverConfig;
    let bonuses: [(&str, WithBonus); 2] = [
        ("head_answer_bonus", |bonus| RetrieverConfig {
            head_answer_bonus: bonus,
            ..RetrieverConfig::default()
        }),
        ("head_reply_bonus", |bonus| RetrieverConfig {
            head_reply_bonus: bonus,
            ..RetrieverConfig::default()
        }),
    ];
    for (field, config_with) in bonuses {
        for (bonus, query) in [
            (f32::NAN, "how many?"),
            (-0.1, "when?"),
            (1.5, "how many?"),
            (f32::INFINITY, "anything"),
        ] {
            invalid(
                field,
                memory
                    .retriever()
                    .retrieve_with(
                        &ns.subtree(),
                        query,
                        &Default::default(),
                        &config_with(bonus),
                    )
                    .await,
                field,
            );
        }
    }
    let heads = [
        (101, 0.5),
        (3, f32::NAN),
        (3, -0.1),
        (3, 1.5),
        (3, f32::INFINITY),
    ];
    for (depth, weight) in heads {
        let config = RetrieverConfig {
            head_rerank_depth: depth,
            head_rerank_weight: weight,
            ..RetrieverConfig::default()
        };
        let field = if depth > 100 {
            "head_rerank_depth"
        } else {
            "head_rerank_weight"
        };
        invalid(
            "head reordering",
            Memory::builder()
                .store(b.store.clone())
                .retriever_config(config.clone())
                .build(),
            field,
        );
        invalid(
            "head reordering in a recall",
            memory
                .retriever()
                .retrieve_with(&ns.subtree(), "anything", &Default::default(), &config)
                .await,
            field,
        );
    }
    assert_eq!(
        b.store.count(&ns.subtree()).await.unwrap(),
        before,
        "{}: refused facts and turns write nothing",
        b.name
    );
}
