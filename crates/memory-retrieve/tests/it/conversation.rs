//! Conversation memory: window, capacity eviction, compaction, persistence of order, on
//! the in-memory store and on SQLite.

use std::sync::Arc;

use memory_core::{Clock, ManualClock, MemoryStore, Namespace};
use memory_inmem::InMemoryStore;
use memory_retrieve::{
    CompactConfig, ConversationConfig, ConversationMemory, HistoryStrategy, Message, Role,
};

/// Every test runs on the in-memory store and on SQLite.
fn stores() -> Vec<Arc<dyn MemoryStore>> {
    let sqlite = memory_sqlite::SqliteBackend::open_in_memory().expect("sqlite");
    vec![
        Arc::new(InMemoryStore::new()),
        Arc::new(sqlite.memory_store().clone()),
    ]
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new("2024-05-01T10:00:00Z".parse().unwrap()))
}

async fn open(store: Arc<dyn MemoryStore>, config: ConversationConfig) -> ConversationMemory {
    let session = Namespace::parse("user-1/agent/session-1").unwrap();
    ConversationMemory::open_with_clock(store, session, config, clock())
        .await
        .unwrap()
}

fn contents(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.content.as_str()).collect()
}

#[tokio::test]
async fn sliding_window_keeps_system_and_last_turns() {
    for store in stores() {
        sliding_window_keeps_system_and_last_turns_on(store).await;
    }
}

async fn sliding_window_keeps_system_and_last_turns_on(store: Arc<dyn MemoryStore>) {
    let config = ConversationConfig {
        strategy: HistoryStrategy::SlidingWindow,
        max_turns: 2,
        max_messages: None,
        compact: None,
        promote_at: None,
    };
    let memory = open(store.clone(), config.clone()).await;
    memory
        .add_message(Message::new(Role::System, "be brief"))
        .await
        .unwrap();
    for turn in 0..4 {
        memory
            .add_message(Message::new(Role::User, format!("q{turn}")))
            .await
            .unwrap();
        memory
            .add_message(Message::new(Role::Assistant, format!("a{turn}")))
            .await
            .unwrap();
    }
    let history = memory.get_history().await.unwrap();
    assert_eq!(contents(&history), ["be brief", "q2", "a2", "q3", "a3"]);
    let full = ConversationConfig {
        strategy: HistoryStrategy::Full,
        ..config.clone()
    };
    let all = open(store.clone(), full).await.get_history().await.unwrap();
    assert_eq!(all.len(), 9, "full strategy returns everything");
    // Reopening continues the sequence, so order survives a restart.
    let reopened = open(store.clone(), config).await;
    reopened
        .add_message(Message::new(Role::User, "q4"))
        .await
        .unwrap();
    let history = reopened.get_history().await.unwrap();
    assert_eq!(contents(&history).last().copied(), Some("q4"));
}

#[tokio::test]
async fn capacity_evicts_whole_oldest_messages() {
    for store in stores() {
        capacity_evicts_whole_oldest_messages_on(store).await;
    }
}

async fn capacity_evicts_whole_oldest_messages_on(store: Arc<dyn MemoryStore>) {
    let config = ConversationConfig {
        strategy: HistoryStrategy::Full,
        max_turns: 10,
        max_messages: Some(3),
        compact: None,
        promote_at: None,
    };
    let memory = open(store.clone(), config).await;
    for i in 0..5 {
        memory
            .add_message(Message::new(Role::User, format!("m{i}")))
            .await
            .unwrap();
    }
    let history = memory.get_history().await.unwrap();
    assert_eq!(
        contents(&history),
        ["m2", "m3", "m4"],
        "the oldest whole messages are deleted"
    );
    assert_eq!(store.count(&memory.session().exact()).await.unwrap(), 3);
}

/// The window deletes messages only: a memory put in the session's namespace some other way
/// (a pinned fact) is neither shown in the history nor deleted; a message pinned since it
/// was written stays too.
#[tokio::test]
async fn the_window_leaves_what_is_not_a_message_and_what_is_pinned() {
    for store in stores() {
        the_window_leaves_what_is_not_a_message_and_what_is_pinned_on(store).await;
    }
}

async fn the_window_leaves_what_is_not_a_message_and_what_is_pinned_on(
    store: Arc<dyn MemoryStore>,
) {
    let config = ConversationConfig {
        strategy: HistoryStrategy::Full,
        max_turns: 10,
        max_messages: Some(2),
        compact: None,
        promote_at: None,
    };
    let memory = open(store.clone(), config).await;
    let fact = memory_core::MemoryItem::new(memory.session().clone(), "allergic to peanuts")
        .unwrap()
        .with_id("fact")
        .unwrap()
        .with_metadata(serde_json::json!({ memory_core::PINNED_METADATA_KEY: true }))
        .unwrap();
    store.save(fact).await.unwrap();
    let first = memory
        .add_message(Message::new(Role::User, "m0"))
        .await
        .unwrap();
    let mut pinned = store.get(memory.session(), &first).await.unwrap().unwrap();
    pinned.metadata[memory_core::PINNED_METADATA_KEY] = serde_json::json!(true);
    store.update(pinned).await.unwrap();
    for i in 1..5 {
        memory
            .add_message(Message::new(Role::User, format!("m{i}")))
            .await
            .unwrap();
    }
    assert!(
        store.get(memory.session(), "fact").await.unwrap().is_some(),
        "the pinned fact stays"
    );
    // The fact and the pinned message stay and count toward the window's two: the newest
    // message is the one beside them.
    let history = memory.get_history().await.unwrap();
    assert_eq!(
        contents(&history),
        ["m0", "m4"],
        "the pinned message and the newest, not the fact"
    );
}

#[tokio::test]
async fn compaction_replaces_old_tool_results_only() {
    for store in stores() {
        compaction_replaces_old_tool_results_only_on(store).await;
    }
}

async fn compaction_replaces_old_tool_results_only_on(store: Arc<dyn MemoryStore>) {
    let compact = CompactConfig {
        context_window: 200,
        reserved_tokens: 50,
        keep_recent: 1,
    };
    let config = ConversationConfig {
        strategy: HistoryStrategy::Full,
        max_turns: 10,
        max_messages: None,
        compact: Some(compact),
        promote_at: None,
    };
    let memory = open(store, config).await;
    memory
        .add_message(Message::new(Role::User, "run the tools"))
        .await
        .unwrap();
    let big = "x".repeat(400); // about 100 tokens each
    memory
        .add_message(Message::tool_result("call-1", big.clone()))
        .await
        .unwrap();
    let history = memory.get_history().await.unwrap();
    assert!(!history[1].compacted, "under budget nothing is compacted");
    memory
        .add_message(Message::tool_result("call-2", big.clone()))
        .await
        .unwrap();
    let history = memory.get_history().await.unwrap();
    assert!(
        history[1].compacted,
        "the old tool result is compacted once over budget"
    );
    assert!(
        history[1]
            .content
            .starts_with("[tool result compacted: 400 characters")
    );
    assert_eq!(
        history[1].tool_call_id.as_deref(),
        Some("call-1"),
        "the call id survives"
    );
    assert!(
        !history[2].compacted && history[2].content == big,
        "keep_recent results stay whole"
    );
    assert_eq!(
        history[0].content, "run the tools",
        "non-tool messages are never compacted"
    );
    assert!(memory.estimated_tokens().await.unwrap() <= 150);
}

/// Compaction measures the history the strategy returns (the window), not every message
/// stored: a window within budget loses no tool result, however long the session behind it.
/// A result no longer than its placeholder is never replaced.
#[tokio::test]
async fn compaction_measures_the_window_and_spares_short_results() {
    for store in stores() {
        let config = ConversationConfig {
            strategy: HistoryStrategy::SlidingWindow,
            max_turns: 2,
            max_messages: None,
            compact: Some(CompactConfig {
                context_window: 1_600,
                reserved_tokens: 100,
                keep_recent: 0,
            }),
            promote_at: None,
        };
        let memory = open(store.clone(), config.clone()).await;
        let long = "y".repeat(400); // about 100 tokens each
        for at in 0..60 {
            memory
                .add_message(Message::new(Role::User, format!("{at} {long}")))
                .await
                .unwrap();
        }
        memory
            .add_message(Message::tool_result("call-1", "42"))
            .await
            .unwrap();
        memory
            .add_message(Message::tool_result("call-2", "z".repeat(200)))
            .await
            .unwrap();
        let history = memory.get_history().await.unwrap();
        assert!(memory.estimated_tokens().await.unwrap() <= 1_500);
        assert!(
            history.iter().all(|message| !message.compacted),
            "{history:?}"
        );
        assert_eq!(memory.compact().await.unwrap(), 0);
        // Over budget within the window: the long result goes, the short one stays.
        let tight = ConversationConfig {
            compact: Some(CompactConfig {
                context_window: 200,
                reserved_tokens: 100,
                keep_recent: 0,
            }),
            ..config
        };
        let memory = open(store, tight).await;
        assert_eq!(memory.compact().await.unwrap(), 1);
        let history = memory.get_history().await.unwrap();
        let tools: Vec<(&str, bool)> = history
            .iter()
            .filter(|message| message.role == Role::Tool)
            .map(|message| {
                (
                    message.tool_call_id.as_deref().unwrap_or_default(),
                    message.compacted,
                )
            })
            .collect();
        assert_eq!(tools, [("call-1", false), ("call-2", true)]);
    }
}

#[tokio::test]
async fn bad_config_is_rejected() {
    for store in stores() {
        bad_config_is_rejected_on(store).await;
    }
}

async fn bad_config_is_rejected_on(store: Arc<dyn MemoryStore>) {
    let session = Namespace::parse("s").unwrap();
    let bad = [
        ConversationConfig {
            max_turns: 0,
            ..Default::default()
        },
        ConversationConfig {
            max_messages: Some(0),
            ..Default::default()
        },
        ConversationConfig {
            promote_at: Some(1.5),
            ..Default::default()
        },
        ConversationConfig {
            compact: Some(CompactConfig {
                context_window: 10,
                reserved_tokens: 10,
                keep_recent: 1,
            }),
            ..Default::default()
        },
    ];
    for config in bad {
        let result = ConversationMemory::open(store.clone(), session.clone(), config).await;
        assert!(matches!(
            result,
            Err(memory_core::MemoryError::InvalidInput { .. })
        ));
    }
    let empty = ConversationMemory::open(store, session, ConversationConfig::default())
        .await
        .unwrap();
    assert!(
        empty
            .add_message(Message::new(Role::User, "  "))
            .await
            .is_err()
    );
    assert!(empty.get_history().await.unwrap().is_empty());
}

/// Past a thousand messages under a clock that does not move (a burst of tool calls), the
/// history stays in the order written, capacity evicts the oldest, and a reopened
/// conversation continues after the newest message instead of overwriting it.
#[tokio::test]
async fn order_holds_past_a_thousand_messages_at_one_instant() {
    for store in stores() {
        order_holds_past_a_thousand_messages_at_one_instant_on(store).await;
    }
}

async fn order_holds_past_a_thousand_messages_at_one_instant_on(store: Arc<dyn MemoryStore>) {
    let config = ConversationConfig {
        strategy: HistoryStrategy::Full,
        max_turns: 10,
        max_messages: Some(1_500),
        compact: None,
        promote_at: None,
    };
    let memory = open(store.clone(), config.clone()).await;
    for i in 0..1_200 {
        memory
            .add_message(Message::new(Role::User, format!("m{i}")))
            .await
            .unwrap();
    }
    let expected: Vec<String> = (0..1_200).map(|i| format!("m{i}")).collect();
    let history = memory.get_history().await.unwrap();
    assert_eq!(contents(&history), expected);

    // A reopen continues after m1199.
    let reopened = open(store.clone(), config).await;
    for i in 1_200..1_600 {
        reopened
            .add_message(Message::new(Role::User, format!("m{i}")))
            .await
            .unwrap();
    }
    let history = reopened.get_history().await.unwrap();
    let expected: Vec<String> = (100..1_600).map(|i| format!("m{i}")).collect();
    assert_eq!(
        contents(&history),
        expected,
        "capacity evicted the 100 oldest, in order"
    );
    assert_eq!(reopened.clear().await.unwrap(), 1_500);
    assert!(reopened.get_history().await.unwrap().is_empty());
}

/// Two handles open on one session each keep every message they add: both read the same
/// next sequence number when they open, and their messages do not share an id.
#[tokio::test]
async fn two_handles_on_one_session_lose_no_message() {
    for store in stores() {
        let config = ConversationConfig {
            strategy: HistoryStrategy::Full,
            ..Default::default()
        };
        let first = open(store.clone(), config.clone()).await;
        let second = open(store.clone(), config.clone()).await;
        let a = first
            .add_message(Message::new(Role::User, "from A"))
            .await
            .unwrap();
        let b = second
            .add_message(Message::new(Role::User, "from B"))
            .await
            .unwrap();
        assert_ne!(a, b);
        let history = open(store.clone(), config)
            .await
            .get_history()
            .await
            .unwrap();
        let mut said = contents(&history);
        said.sort_unstable();
        assert_eq!(said, ["from A", "from B"]);
    }
}

/// A message added with an importance at or above `promote_at` is kept as a long-term
/// memory too, which outlives the conversation's capacity and is found by recall; an
/// unimportant one is not; a bad importance is refused and stores nothing.
#[tokio::test]
async fn important_messages_are_promoted() {
    for store in stores() {
        important_messages_are_promoted_on(store).await;
    }
}

async fn important_messages_are_promoted_on(store: Arc<dyn MemoryStore>) {
    let memory = memory_retrieve::Memory::builder()
        .store(store.clone())
        .build()
        .unwrap();
    let session = Namespace::parse("user-1/agent/session-1").unwrap();
    let config = ConversationConfig {
        max_messages: Some(2),
        promote_at: Some(0.8),
        ..Default::default()
    };
    let chat = memory.conversation(session.clone(), config).await.unwrap();
    let kept = chat
        .add_message(
            Message::new(Role::User, "My daughter is allergic to peanuts").with_importance(0.9),
        )
        .await
        .unwrap();
    chat.add_message(Message::new(Role::User, "What a lovely morning").with_importance(0.2))
        .await
        .unwrap();
    chat.add_message(Message::new(Role::Assistant, "Indeed it is"))
        .await
        .unwrap();
    // The capacity dropped the important message from the conversation...
    let history = chat.get_history().await.unwrap();
    assert_eq!(
        contents(&history),
        ["What a lovely morning", "Indeed it is"]
    );
    assert_eq!(history[0].importance, Some(0.2));
    // ...but its long-term copy stays and recall finds it.
    let long_term = memory_retrieve::promoted_namespace(&session).unwrap();
    let promoted = store
        .get(&long_term, &format!("promoted-{kept}"))
        .await
        .unwrap()
        .expect("promoted copy");
    assert_eq!(promoted.kind, memory_core::MemoryKind::Episodic);
    assert_eq!(promoted.importance, 0.9);
    let found = memory
        .recall(&session.subtree(), "peanut allergy")
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1);
    assert_eq!(found.items[0].record.id(), promoted.id);
    let before = store.count(&session.exact()).await.unwrap();
    let refused = chat
        .add_message(Message::new(Role::User, "x").with_importance(f32::NAN))
        .await;
    assert!(
        matches!(refused, Err(memory_core::MemoryError::InvalidInput { ref field, .. }) if field == "importance")
    );
    assert_eq!(store.count(&session.exact()).await.unwrap(), before);
}

fn compacting(keep_recent: usize) -> ConversationConfig {
    ConversationConfig {
        strategy: HistoryStrategy::Full,
        max_turns: 10,
        max_messages: None,
        compact: Some(CompactConfig {
            context_window: 100,
            reserved_tokens: 10,
            keep_recent,
        }),
        promote_at: None,
    }
}

#[tokio::test]
async fn a_pinned_tool_result_is_not_compacted() {
    for store in stores() {
        let memory = open(store.clone(), compacting(1)).await;
        let output = "important output ".repeat(10);
        let id = memory
            .add_message(Message::tool_result("call-1", output.clone()))
            .await
            .unwrap();
        let mut pinned = store.get(memory.session(), &id).await.unwrap().unwrap();
        pinned.metadata[memory_core::PINNED_METADATA_KEY] = serde_json::json!(true);
        store.update(pinned).await.unwrap();
        memory
            .add_message(Message::tool_result("call-2", output.clone()))
            .await
            .unwrap();
        memory
            .add_message(Message::new(Role::User, "x".repeat(400)))
            .await
            .unwrap();
        memory.compact().await.unwrap();
        let kept = store.get(memory.session(), &id).await.unwrap().unwrap();
        assert_eq!(kept.content, output, "only forget changes a pinned memory");
        assert!(kept.is_pinned());
    }
}

#[tokio::test]
async fn a_memory_dated_later_does_not_move_the_messages_stamps() {
    for store in stores() {
        let session = Namespace::parse("user-1/agent/session-1").unwrap();
        let later = "2099-01-01T00:00:00Z".parse().unwrap();
        let appointment = memory_core::MemoryItem::new(session.clone(), "dentist appointment")
            .unwrap()
            .with_created_at(later);
        store.save(appointment).await.unwrap();
        let memory = open(store.clone(), ConversationConfig::default()).await;
        let id = memory
            .add_message(Message::new(Role::User, "hello"))
            .await
            .unwrap();
        let message = store.get(&session, &id).await.unwrap().unwrap();
        assert_eq!(
            message.created_at,
            clock().now(),
            "stamped by the clock, not after the appointment"
        );
    }
}

#[tokio::test]
async fn an_add_reads_the_session_for_compaction_only_when_it_may_be_due() {
    let store = Arc::new(crate::instrumented::Instrumented::default());
    let memory = open(store.clone(), compacting(1)).await;
    let reads = |store: &crate::instrumented::Instrumented| store.whole_listings();
    memory
        .add_message(Message::new(Role::User, "first"))
        .await
        .unwrap();
    let first = reads(&store);
    assert_eq!(first, 1, "the first add reads the session once");
    // Short messages under the budget: no read.
    for at in 0..20 {
        memory
            .add_message(Message::new(Role::User, format!("message {at}")))
            .await
            .unwrap();
    }
    assert_eq!(reads(&store), first, "under budget an add reads nothing");
    // Over budget without a new tool result: nothing new to compact, no read.
    memory
        .add_message(Message::new(Role::User, "y".repeat(400)))
        .await
        .unwrap();
    assert_eq!(reads(&store), first);
    // Tool results over budget: each may make an older one compactable, and is read for.
    memory
        .add_message(Message::tool_result("call-1", "z".repeat(200)))
        .await
        .unwrap();
    memory
        .add_message(Message::tool_result("call-2", "z".repeat(200)))
        .await
        .unwrap();
    assert_eq!(reads(&store), first + 2);
    let history = memory.get_history().await.unwrap();
    let tools: Vec<bool> = history
        .iter()
        .filter(|message| message.role == Role::Tool)
        .map(|message| message.compacted)
        .collect();
    assert_eq!(
        tools,
        [true, false],
        "the older result compacted, keep_recent kept"
    );
}

/// Promotion is checked where it can fail: a session too deep for its promoted namespace is
/// refused when opened (it had refused every important message), and a message too long for
/// the role before its text is promoted without it.
#[tokio::test]
async fn promotion_fails_at_open_or_not_at_all() {
    let store: Arc<dyn MemoryStore> = Arc::new(InMemoryStore::new());
    let config = ConversationConfig {
        promote_at: Some(0.5),
        ..ConversationConfig::default()
    };
    let deepest = Namespace::from_segments((0..16).map(|at| format!("s{at}"))).unwrap();
    let refused = ConversationMemory::open_with_clock(
        store.clone(),
        deepest.clone(),
        config.clone(),
        clock(),
    )
    .await
    .expect_err("refused at open");
    assert!(
        matches!(refused, memory_core::MemoryError::InvalidInput { .. }),
        "{refused}"
    );
    let unpromoted = ConversationConfig {
        promote_at: None,
        ..config.clone()
    };
    assert!(
        ConversationMemory::open_with_clock(store.clone(), deepest, unpromoted, clock())
            .await
            .is_ok()
    );
    let memory = open(store.clone(), config).await;
    let long = "x".repeat(memory_core::DEFAULT_MAX_CONTENT_BYTES);
    let id = memory
        .add_message(Message::new(Role::User, long.clone()).with_importance(0.9))
        .await
        .unwrap();
    let long_term = memory_retrieve::promoted_namespace(memory.session()).unwrap();
    let copy = store
        .get(&long_term, &format!("promoted-{id}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(copy.content, long);
}

/// A handle that finds the history within budget still compacts the tool results it left
/// once plain messages take the history over (a handle opened on a session that already
/// holds tool results, as after a restart).
#[tokio::test]
async fn tool_results_left_within_budget_are_compacted_once_over_it() {
    for store in stores() {
        let config = ConversationConfig {
            compact: Some(CompactConfig {
                context_window: 100,
                reserved_tokens: 10,
                keep_recent: 1,
            }),
            ..compacting(1)
        };
        let first = open(store.clone(), config.clone()).await;
        first
            .add_message(Message::tool_result("call-1", "a".repeat(160)))
            .await
            .unwrap();
        first
            .add_message(Message::tool_result("call-2", "b".repeat(20)))
            .await
            .unwrap();
        drop(first);
        let second = open(store.clone(), config).await;
        second
            .add_message(Message::new(Role::User, "hi"))
            .await
            .unwrap();
        second
            .add_message(Message::new(Role::User, "c".repeat(200)))
            .await
            .unwrap();
        let history = second.get_history().await.unwrap();
        assert!(
            history[0].compacted,
            "the older result is compacted once the history is over budget"
        );
        assert_eq!(second.compact().await.unwrap(), 0, "nothing was left to do");
    }
}
