//! Dialogue ingest: turns dated and attributed, neighbours as context within a session, the
//! role weight in ranking (lifted by a question about the agent's own words), the speakers a
//! question names, and bad input refused with nothing stored; on the in-memory store and on
//! SQLite.

use std::sync::Arc;

use memory_core::{MemoryError, MemoryStore, Namespace, RetrievalSource};
use memory_inmem::InMemoryStore;
use memory_retrieve::{FactsConfig, Memory, RetrieverConfig, Role, Turn};

use crate::instrumented::Instrumented;

fn stores() -> Vec<Arc<dyn MemoryStore>> {
    let sqlite = memory_sqlite::SqliteBackend::open_in_memory().expect("sqlite");
    vec![
        Arc::new(InMemoryStore::new()),
        Arc::new(sqlite.memory_store().clone()),
    ]
}

fn memory(store: Arc<dyn MemoryStore>, config: RetrieverConfig) -> Memory {
    Memory::builder()
        .store(store)
        .facts(FactsConfig::off())
        .retriever_config(config)
        .build()
        .expect("memory")
}

fn at(day: u32) -> chrono::DateTime<chrono::Utc> {
    format!("2023-05-{day:02}T12:00:00Z").parse().expect("time")
}

fn ids(result: &memory_core::RetrievalResult) -> Vec<String> {
    result
        .items
        .iter()
        .filter_map(|item| match &item.record {
            RetrievalSource::Memory(memory) => Some(memory.id.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn turns_are_dated_attributed_and_lent_their_neighbours() {
    for store in stores() {
        let memory = memory(store, RetrieverConfig::default());
        let namespace = Namespace::parse("chat/alice").unwrap();
        let mut dialogue = memory.dialogue(namespace.clone());
        let turns = [
            ("a", "Caroline", "How long have you two been married?", "1"),
            ("b", "Melanie", "Five years this June!", "1"),
            ("c", "Caroline", "Congratulations, that is wonderful.", "1"),
            ("d", "Melanie", "Guess what I painted yesterday.", "2"),
        ];
        for (id, speaker, text, session) in turns {
            dialogue
                .add(Turn::new(speaker, text).id(id).session(session).at(at(8)))
                .await
                .unwrap();
        }
        let get = |id: &'static str| {
            let memory = &memory;
            let namespace = namespace.clone();
            async move {
                memory
                    .store()
                    .get(&namespace, id)
                    .await
                    .unwrap()
                    .expect("stored")
            }
        };
        let b = get("b").await;
        assert_eq!(b.content, "[8 May 2023] Melanie: Five years this June!");
        assert_eq!(b.metadata["speaker"], "Melanie");
        assert_eq!(b.metadata["session"], "1");
        // The turn before and the turn after, in that order.
        assert_eq!(
            b.context(),
            "Caroline: How long have you two been married?\nCaroline: Congratulations, that is wonderful."
        );
        // The first turn has only the one after it; the last of a session only the one before.
        assert_eq!(get("a").await.context(), "Melanie: Five years this June!");
        assert_eq!(get("c").await.context(), "Melanie: Five years this June!");
        // A new session starts without context.
        assert_eq!(get("d").await.context(), "");

        // The answer is found through the question it answers.
        let found = memory
            .recall(&namespace.exact(), "how long married")
            .await
            .unwrap();
        let ranked = ids(&found);
        assert!(ranked.contains(&"b".to_owned()), "{ranked:?}");
        // ... but the question, which holds the words, ranks first.
        assert_eq!(ranked.first().map(String::as_str), Some("a"));
    }
}

#[tokio::test]
async fn an_assistant_reply_counts_less_than_the_user_statement_it_restates() {
    for (weight, want_first) in [(1.0f32, "reply"), (0.5, "statement")] {
        for store in stores() {
            let mut config = RetrieverConfig::default();
            config.role_weights.insert("assistant".into(), weight);
            let memory = memory(store, config);
            let namespace = Namespace::parse("chat/bob").unwrap();
            adoption(&memory, &namespace).await;
            let reply = memory.store().get(&namespace, "reply").await.unwrap();
            assert_eq!(reply.expect("stored").metadata["role"], "assistant");
            let found = memory
                .recall(&namespace.exact(), "adopted rescue greyhound")
                .await
                .unwrap();
            assert_eq!(
                ids(&found).first().map(String::as_str),
                Some(want_first),
                "assistant weight {weight}"
            );
        }
    }
}

/// A greyhound's adoption told by the user, and restated at length by the assistant.
async fn adoption(memory: &Memory, namespace: &Namespace) {
    exchange(
        memory,
        namespace,
        ("statement", "I adopted a rescue greyhound named Pixel."),
        (
            "reply",
            "Congratulations on adopting Pixel! A rescue greyhound adopted from a shelter \
             needs time: a greyhound adopted as a rescue is often shy.",
        ),
    )
    .await;
}

/// A user's turn and the assistant's reply, each `(id, text)`, at the same time.
async fn exchange(
    memory: &Memory,
    namespace: &Namespace,
    (user_id, user): (&str, &str),
    (reply_id, reply): (&str, &str),
) {
    let mut dialogue = memory.dialogue(namespace.clone());
    dialogue
        .add(
            Turn::new("user", user)
                .role(Role::User)
                .id(user_id)
                .at(at(1)),
        )
        .await
        .unwrap();
    dialogue
        .add(
            Turn::new("assistant", reply)
                .role(Role::Assistant)
                .id(reply_id)
                .at(at(1)),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_question_about_what_the_agent_said_weighs_no_role_less() {
    for (read, about_agent_first) in [(true, "reply"), (false, "statement")] {
        for store in stores() {
            let mut config = RetrieverConfig::default();
            config.role_weights.insert("assistant".into(), 0.5);
            config.role_weights_about_agent.clear();
            config.read_addressee = read;
            let memory = memory(store, config);
            let namespace = Namespace::parse("chat/bob").unwrap();
            adoption(&memory, &namespace).await;
            let scope = namespace.exact();
            for (query, want) in [
                ("adopted rescue greyhound", "statement"),
                (
                    "What did I say about the adopted rescue greyhound?",
                    "statement",
                ),
                (
                    "What did you say about the adopted rescue greyhound?",
                    about_agent_first,
                ),
                (
                    "Can you remind me about the adopted rescue greyhound?",
                    about_agent_first,
                ),
            ] {
                let found = memory.recall(&scope, query).await.unwrap();
                assert_eq!(
                    ids(&found).first().map(String::as_str),
                    Some(want),
                    "{query:?}, reading the addressee: {read}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_question_about_what_the_agent_said_weighs_the_users_request_less() {
    // The user's request holds the question's words as the reply does, in fewer words.
    let weighed = |user: Option<f32>| {
        let mut config = RetrieverConfig::default();
        config.role_weights_about_agent.clear();
        if let Some(weight) = user {
            config
                .role_weights_about_agent
                .insert("user".into(), weight);
        }
        config
    };
    for (config, about_agent_first) in [
        (weighed(None), "request"),
        (weighed(Some(0.45)), "haiku"),
        (RetrieverConfig::default(), "haiku"),
    ] {
        for store in stores() {
            let memory = memory(store, config.clone());
            let namespace = Namespace::parse("chat/ann").unwrap();
            exchange(
                &memory,
                &namespace,
                (
                    "request",
                    "Write a haiku about autumn leaves for my mother.",
                ),
                (
                    "haiku",
                    "Here is a haiku for your mother: crimson leaves drift down, the autumn \
                     wind hums softly, a warm cup of tea.",
                ),
            )
            .await;
            let scope = namespace.exact();
            for (query, want) in [
                ("the haiku about autumn leaves", "request"),
                (
                    "Can you remind me of the haiku you wrote about autumn leaves?",
                    about_agent_first,
                ),
            ] {
                let found = memory.recall(&scope, query).await.unwrap();
                assert_eq!(
                    ids(&found).first().map(String::as_str),
                    Some(want),
                    "{query:?}, weights about the agent {:?}",
                    config.role_weights_about_agent
                );
            }
        }
    }
}

#[tokio::test]
async fn a_question_asking_when_ranks_the_turn_that_names_a_time_first() {
    // "Attended" is not "go": only the time it names can lift the turn above the other.
    for (bonus, first) in [(0.0f32, "again"), (0.1, "attended")] {
        for store in stores() {
            let config = RetrieverConfig {
                head_answer_bonus: bonus,
                ..RetrieverConfig::default()
            };
            let memory = memory(store, config);
            let namespace = Namespace::parse("chat/ann").unwrap();
            let mut dialogue = memory.dialogue(namespace.clone());
            for (id, text) in [
                ("attended", "I attended a support group yesterday."),
                (
                    "again",
                    "The support group was so good, the support group again!",
                ),
            ] {
                dialogue
                    .add(Turn::new("Ann", text).id(id).session("s").at(at(5)))
                    .await
                    .unwrap();
            }
            let found = memory
                .recall(&namespace.exact(), "When did Ann go to the support group?")
                .await
                .unwrap();
            assert_eq!(
                ids(&found).first().map(String::as_str),
                Some(first),
                "answer bonus {bonus}: {:?}",
                ids(&found)
            );
        }
    }
}

#[tokio::test]
async fn a_reply_to_a_question_in_the_querys_words_ranks_first() {
    // A bonus large enough to decide this small example; the default is smaller.
    for (bonus, reply_first) in [(0.0f32, false), (0.3, true)] {
        for store in stores() {
            let config = RetrieverConfig {
                head_reply_bonus: bonus,
                other_speaker_factor: 1.0,
                ..RetrieverConfig::default()
            };
            let memory = memory(store, config);
            let namespace = Namespace::parse("chat/jon").unwrap();
            let mut dialogue = memory.dialogue(namespace.clone());
            for (id, speaker, text) in [
                (
                    "intro",
                    "Jon",
                    "Dance has been my passion since I was a kid, every style of dance.",
                ),
                (
                    "ask",
                    "Gina",
                    "Cool! So which style of dance is your favorite?",
                ),
                (
                    "reply",
                    "Jon",
                    "Contemporary dance is my top pick, so expressive!",
                ),
            ] {
                // A caller's value under the key is not taken for the dialogue's own.
                let metadata = serde_json::json!({ "context_before": 5 });
                dialogue
                    .add(
                        Turn::new(speaker, text)
                            .id(id)
                            .session("s")
                            .at(at(3))
                            .metadata(metadata),
                    )
                    .await
                    .unwrap();
            }
            // The reply records where the question before it ends in its context.
            let reply = memory.store().get(&namespace, "reply").await.unwrap();
            let reply = reply.expect("stored");
            let before = reply.metadata[memory_retrieve::CONTEXT_BEFORE_METADATA_KEY]
                .as_u64()
                .expect("the length of the turn before");
            assert_eq!(
                &reply.context()[..usize::try_from(before).unwrap()],
                "Gina: Cool! So which style of dance is your favorite?"
            );
            let intro = memory.store().get(&namespace, "intro").await.unwrap();
            assert!(
                intro.expect("stored").metadata[memory_retrieve::CONTEXT_BEFORE_METADATA_KEY]
                    .is_null(),
                "the first turn of a session has no turn before it"
            );
            let found = memory
                .recall(&namespace.exact(), "What is Jon's favorite style of dance?")
                .await
                .unwrap();
            let ranked = ids(&found);
            assert_eq!(
                ranked.first().map(String::as_str) == Some("reply"),
                reply_first,
                "reply bonus {bonus}: {ranked:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_question_naming_a_speaker_ranks_that_speakers_turns_first() {
    for (factor, named_first) in [(1.0f32, "caroline"), (0.5, "melanie")] {
        for store in stores() {
            let config = RetrieverConfig {
                other_speaker_factor: factor,
                ..RetrieverConfig::default()
            };
            let memory = memory(store, config);
            let namespace = Namespace::parse("chat/friends").unwrap();
            let mut dialogue = memory.dialogue(namespace.clone());
            // In sessions of their own, so neither lends the other its words as context.
            for (id, speaker, text, session) in [
                (
                    "caroline",
                    "Caroline",
                    "The pride parade was great, we painted banners for the pride parade.",
                    "1",
                ),
                (
                    "melanie",
                    "Melanie",
                    "I painted a banner for the parade.",
                    "2",
                ),
            ] {
                dialogue
                    .add(Turn::new(speaker, text).id(id).session(session).at(at(3)))
                    .await
                    .unwrap();
            }
            let scope = namespace.exact();
            for (query, want) in [
                ("What did Melanie paint for the pride parade?", named_first),
                // Naming both speakers, or neither, favours no one.
                (
                    "What did Melanie and Caroline paint for the pride parade?",
                    "caroline",
                ),
                ("What was painted for the pride parade?", "caroline"),
            ] {
                let found = memory.recall(&scope, query).await.unwrap();
                assert_eq!(
                    ids(&found).first().map(String::as_str),
                    Some(want),
                    "{query:?}, factor {factor}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_turn_found_through_its_neighbours_alone_weighs_less() {
    // The relevance of each turn, by id, for a question; and the order.
    async fn recall(
        store: Arc<dyn MemoryStore>,
        factor: f32,
    ) -> (Vec<String>, std::collections::HashMap<String, f32>) {
        let config = RetrieverConfig {
            context_only_factor: factor,
            ..RetrieverConfig::default()
        };
        let memory = memory(store, config);
        let namespace = Namespace::parse("chat/records").unwrap();
        let mut dialogue = memory.dialogue(namespace.clone());
        for (id, speaker, text, session) in [
            (
                "list",
                "Ann",
                "Rare vinyl records fetch the most at the fair.",
                "1",
            ),
            // Found through its neighbour's words alone.
            ("beside", "Bob", "Do those shops buy them back later?", "1"),
            ("mine", "Ann", "My uncle left me his old vinyl player.", "2"),
        ] {
            dialogue
                .add(Turn::new(speaker, text).id(id).session(session).at(at(3)))
                .await
                .unwrap();
        }
        let found = memory
            .recall(&namespace.exact(), "Which rare vinyl records?")
            .await
            .unwrap();
        let relevance = found
            .items
            .iter()
            .filter_map(|item| match &item.record {
                RetrievalSource::Memory(memory) => Some((
                    memory.id.clone(),
                    item.breakdown
                        .value(memory_core::Signal::Relevance)
                        .unwrap_or_default(),
                )),
                _ => None,
            })
            .collect();
        (ids(&found), relevance)
    }
    let mut orders = Vec::new();
    for (one, two) in stores().into_iter().zip(stores()) {
        let (order_off, off) = recall(one, 1.0).await;
        let (order_on, on) = recall(two, 0.25).await;
        // Only the turn whose own words hold none of the question's terms is lowered, by
        // the factor; the others keep their relevance.
        assert!(
            (on["beside"] - 0.25 * off["beside"]).abs() < 1e-4,
            "{off:?} {on:?}"
        );
        assert!((on["list"] - off["list"]).abs() < 1e-6, "{off:?} {on:?}");
        assert!((on["mine"] - off["mine"]).abs() < 1e-6, "{off:?} {on:?}");
        assert_eq!(order_on.first().map(String::as_str), Some("list"));
        orders.push((order_off, order_on));
    }
    // The in-memory store answers from its index, SQLite from the text: the same rankings.
    assert_eq!(orders[0], orders[1]);
    // Off, the turn found through its neighbour outranks the one that says "vinyl" itself.
    let (off, on) = &orders[0];
    let place = |order: &[String], id: &str| order.iter().position(|at| at == id);
    assert!(place(off, "beside") < place(off, "mine"), "{off:?}");
    assert!(place(on, "mine") < place(on, "beside"), "{on:?}");
}

/// Long replies holding every word of the question, each in its own session; a user's
/// short turn holding two of them, ranked below the replies by the search and above them
/// once they are weighed; unrelated turns between.
async fn replies_above_a_statement(memory: &Memory, namespace: &Namespace) {
    let mut dialogue = memory.dialogue(namespace.clone());
    let reply = "A rescue greyhound adopted from a shelter: a greyhound adopted as a rescue \
                 needs a quiet home, and an adopted rescue greyhound sleeps a lot.";
    let mut turns: Vec<(String, Role, String, u32)> = (1..=6)
        .map(|day| {
            (
                format!("reply{day}"),
                Role::Assistant,
                reply.to_owned(),
                day,
            )
        })
        .collect();
    turns.extend((0..8).map(|n| {
        let text = format!("The weather was mild and sunny on day {n}.");
        (format!("filler{n}"), Role::User, text, 10 + n)
    }));
    let statement = "Pixel, my greyhound, was adopted in March.".to_owned();
    turns.push(("statement".into(), Role::User, statement, 25));
    for (id, role, text, day) in turns {
        let speaker = if role == Role::User {
            "user"
        } else {
            "assistant"
        };
        dialogue
            .add(
                Turn::new(speaker, text)
                    .role(role)
                    .session(id.clone())
                    .id(id)
                    .at(at(day)),
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn the_role_weights_choose_the_candidates_from_a_deeper_search() {
    let config = |depth: usize| RetrieverConfig {
        role_search_depth: depth,
        candidates_per_channel: 4,
        max_results: 4,
        role_weights: [("assistant".to_owned(), 0.3)].into(),
        ..RetrieverConfig::default()
    };
    let counted = Arc::new(Instrumented::default());
    let sqlite = memory_sqlite::SqliteBackend::open_in_memory().expect("sqlite");
    let backends: [(Arc<dyn MemoryStore>, Option<&Instrumented>); 2] = [
        (counted.clone(), Some(&counted)),
        (Arc::new(sqlite.memory_store().clone()), None),
    ];
    for (store, counted) in backends {
        let namespace = Namespace::parse("chat/dana").unwrap();
        replies_above_a_statement(&memory(store.clone(), config(1)), &namespace).await;
        let mut found = Vec::new();
        for depth in [1, 2] {
            let memory = memory(store.clone(), config(depth));
            if let Some(counted) = counted {
                counted.searches.lock().unwrap().clear();
            }
            let result = memory
                .recall(&namespace.exact(), "adopted rescue greyhound")
                .await
                .unwrap();
            found.push((ids(&result), counted.map(Instrumented::searches)));
        }
        // The search's four best are replies; the user's turn is no candidate.
        let (shallow, searches) = &found[0];
        assert!(!shallow.contains(&"statement".to_owned()), "{shallow:?}");
        // Asked for twice as many, weighed, the user's turn is kept, and ranks first.
        let (deep, deeper_searches) = &found[1];
        assert_eq!(
            deep.first().map(String::as_str),
            Some("statement"),
            "{deep:?}"
        );
        if counted.is_some() {
            assert_eq!(searches.as_deref(), Some(&[4][..]));
            assert_eq!(deeper_searches.as_deref(), Some(&[4, 8][..]));
        }
    }
}

#[tokio::test]
async fn memories_without_a_weighed_role_cost_one_search() {
    let store = Arc::new(Instrumented::default());
    let namespace = Namespace::parse("chat/erin").unwrap();
    let memory = memory(
        store.clone(),
        RetrieverConfig {
            candidates_per_channel: 4,
            max_results: 4,
            ..RetrieverConfig::default()
        },
    );
    let mut dialogue = memory.dialogue(namespace.clone());
    for (n, speaker) in ["Caroline", "Melanie", "Caroline", "Melanie"]
        .iter()
        .enumerate()
    {
        let text = format!("A greyhound adopted from the rescue, number {n}.");
        dialogue
            .add(
                Turn::new(*speaker, text)
                    .id(format!("t{n}"))
                    .at(at(1 + n as u32)),
            )
            .await
            .unwrap();
    }
    store.searches.lock().unwrap().clear();
    let found = memory
        .recall(&namespace.exact(), "adopted rescue greyhound")
        .await
        .unwrap();
    assert!(!ids(&found).is_empty());
    assert_eq!(store.searches(), vec![4]);
}

#[test]
fn the_context_only_factor_is_validated() {
    for factor in [0.0, -0.5, 1.5, f32::NAN, f32::INFINITY] {
        let config = RetrieverConfig {
            context_only_factor: factor,
            ..RetrieverConfig::default()
        };
        assert_eq!(
            config.validate().unwrap_err().field(),
            Some("context_only_factor"),
            "{factor}"
        );
    }
}

#[test]
fn the_other_speaker_factor_is_validated() {
    for factor in [0.0, -0.5, 1.5, f32::NAN, f32::INFINITY] {
        let config = RetrieverConfig {
            other_speaker_factor: factor,
            ..RetrieverConfig::default()
        };
        assert_eq!(
            config.validate().unwrap_err().field(),
            Some("other_speaker_factor"),
            "{factor}"
        );
    }
}

#[tokio::test]
async fn bad_turns_are_refused_and_nothing_is_stored() {
    for store in stores() {
        let memory = memory(store, RetrieverConfig::default());
        let namespace = Namespace::parse("chat/carol").unwrap();
        let mut dialogue = memory.dialogue(namespace.clone());
        let cases = [
            (Turn::new("x".repeat(300), "hello"), "speaker"),
            (
                Turn::new("user", "hello").session("s".repeat(300)),
                "session",
            ),
            (Turn::new("user", "   "), "text"),
            (Turn::new("user\n", "hello"), "speaker"),
            (Turn::new("us\u{7}er", "hello"), "speaker"),
            // The text with its date and speaker is past the content limit: named as the
            // turn's text, not as the memory's content.
            (Turn::new("user", "x".repeat(1 << 20)), "text"),
            (
                Turn::new("user", "hello").metadata(serde_json::json!([1, 2])),
                "metadata",
            ),
        ];
        for (turn, field) in cases {
            let error = dialogue.add(turn).await.expect_err(field);
            assert!(
                matches!(&error, MemoryError::InvalidInput { .. }),
                "{error:?}"
            );
            assert_eq!(error.field(), Some(field));
        }
        assert_eq!(memory.store().count(&namespace.exact()).await.unwrap(), 0);
        // A neighbour longer than a context may be is cut, not refused.
        let long = "word ".repeat(20_000);
        dialogue
            .add(Turn::new("user", long).id("long"))
            .await
            .unwrap();
        dialogue
            .add(Turn::new("assistant", "short").id("short"))
            .await
            .unwrap();
        let short = memory.store().get(&namespace, "short").await.unwrap();
        assert_eq!(
            short.expect("stored").context().len(),
            memory_core::MAX_CONTEXT_BYTES
        );
    }
}

/// A turn given an id is an event of its own: a reply said twice in one session ("Yes!")
/// is stored twice, each under its id, with the reconciliation of duplicates on (the
/// default). Turns without ids are reconciled as any memory: a turn sent again merges.
#[tokio::test]
async fn turns_with_ids_are_kept_even_in_the_same_words() {
    for store in stores() {
        let memory = Memory::builder().store(store).build().expect("memory");
        let namespace = Namespace::parse("chat/dave").unwrap();
        let mut dialogue = memory.dialogue(namespace.clone());
        let turns = [
            ("t1", "Mel", "Ready to go to the lake house?"),
            ("t2", "Caroline", "Yes!"),
            ("t3", "Mel", "Ready to go to the lake house?"),
            ("t4", "Caroline", "Yes!"),
        ];
        for (id, speaker, text) in turns {
            let remembered = dialogue
                .add(Turn::new(speaker, text).id(id).session("1").at(at(8)))
                .await
                .unwrap();
            assert_eq!(remembered.id, id);
            assert_eq!(remembered.outcome, memory_retrieve::Outcome::Added);
        }
        for (id, _, _) in turns {
            assert!(
                memory.store().get(&namespace, id).await.unwrap().is_some(),
                "{id}"
            );
        }
        // Without ids, the same turn sent again is the same turn.
        let mut again = memory.dialogue(Namespace::parse("chat/erin").unwrap());
        let first = again
            .add(Turn::new("Mel", "We adopted a puppy named Biscuit.").at(at(9)))
            .await
            .unwrap();
        let mut resent = memory.dialogue(Namespace::parse("chat/erin").unwrap());
        let second = resent
            .add(Turn::new("Mel", "We adopted a puppy named Biscuit.").at(at(9)))
            .await
            .unwrap();
        assert_eq!(
            second.outcome,
            memory_retrieve::Outcome::Merged { into: first.id }
        );
    }
}

/// A turn sent again under the id of the turn just before it takes that turn's place: it is
/// not its own neighbour, and it keeps the context the turn it replaces had.
#[tokio::test]
async fn a_turn_replacing_the_one_before_it_is_not_its_own_context() {
    for store in stores() {
        let memory = memory(store, RetrieverConfig::default());
        let namespace = Namespace::parse("chat/frank").unwrap();
        let mut dialogue = memory.dialogue(namespace.clone());
        dialogue
            .add(Turn::new("A", "where shall we meet?").id("t0").at(at(8)))
            .await
            .unwrap();
        dialogue
            .add(Turn::new("B", "first thing said").id("t1").at(at(8)))
            .await
            .unwrap();
        dialogue
            .add(Turn::new("B", "second thing said").id("t1").at(at(8)))
            .await
            .unwrap();
        let t1 = memory.store().get(&namespace, "t1").await.unwrap().unwrap();
        assert_eq!(t1.content, "[8 May 2023] B: second thing said");
        assert_eq!(t1.context(), "A: where shall we meet?");
        assert_eq!(
            t1.metadata["context_before"],
            "A: where shall we meet?".len()
        );
        // The turn before it is lent the new version in place of the first, and the next
        // turn is lent to the replaced one.
        let t0 = memory.store().get(&namespace, "t0").await.unwrap().unwrap();
        assert_eq!(t0.context(), "B: second thing said");
        dialogue
            .add(Turn::new("A", "at the station").id("t2").at(at(8)))
            .await
            .unwrap();
        let t1 = memory.store().get(&namespace, "t1").await.unwrap().unwrap();
        assert_eq!(t1.context(), "A: where shall we meet?\nA: at the station");
    }
}

#[test]
fn role_weights_are_validated() {
    let mut config = RetrieverConfig::default();
    config.role_weights.insert("assistant".into(), 1.5);
    assert_eq!(config.validate().unwrap_err().field(), Some("role_weights"));
    let mut config = RetrieverConfig::default();
    config.role_weights.insert(String::new(), 0.5);
    assert_eq!(config.validate().unwrap_err().field(), Some("role_weights"));
    let mut config = RetrieverConfig::default();
    config.role_weights.insert("tool".into(), f32::NAN);
    assert_eq!(config.validate().unwrap_err().field(), Some("role_weights"));
    for bad in [-0.1, 1.5, f32::INFINITY] {
        let mut config = RetrieverConfig::default();
        config.role_weights_about_agent.insert("user".into(), bad);
        assert_eq!(
            config.validate().unwrap_err().field(),
            Some("role_weights_about_agent")
        );
    }
    let mut config = RetrieverConfig::default();
    config.role_weights_about_agent.insert("x".repeat(65), 0.5);
    assert_eq!(
        config.validate().unwrap_err().field(),
        Some("role_weights_about_agent")
    );
    let config = RetrieverConfig {
        role_weights_about_agent: (0..=memory_retrieve::MAX_WEIGHTED_ROLES)
            .map(|role| (format!("role{role}"), 0.5))
            .collect(),
        ..RetrieverConfig::default()
    };
    assert_eq!(
        config.validate().unwrap_err().field(),
        Some("role_weights_about_agent")
    );
}

#[tokio::test]
async fn the_head_goes_to_the_turn_that_holds_the_words_before_the_cut() {
    let turns = [
        (
            "Caroline",
            "I went to a support group yesterday and it was powerful.",
        ),
        (
            "Melanie",
            "That sounds wonderful! What happened at the support group?",
        ),
        (
            "Caroline",
            "People shared their stories. I felt so accepted there.",
        ),
        (
            "Melanie",
            "I painted a lake sunrise last year, it is special to me.",
        ),
        (
            "Caroline",
            "Is that your own painting? The sunrise colours are lovely.",
        ),
        (
            "Melanie",
            "Yes! Painting helps me relax after work with the kids.",
        ),
    ];
    let query = "When did Melanie paint a sunrise?";
    for store in stores() {
        let namespace = Namespace::parse("chat/head").unwrap();
        let mut found = Vec::new();
        for (head, max_results) in [(0, 5), (3, 5), (3, 1)] {
            let config = RetrieverConfig {
                head_rerank_depth: head,
                max_results,
                // The question names Melanie: left on, that alone would rank her turn first.
                other_speaker_factor: 1.0,
                // Her reply to "Is that your own painting?" would rise to second place.
                head_reply_bonus: 0.0,
                ..RetrieverConfig::default()
            };
            // One clock for the three runs, so that recency scores them alike.
            let memory = Memory::builder()
                .store(Arc::clone(&store))
                .facts(FactsConfig::off())
                .retriever_config(config)
                .clock(Arc::new(memory_core::ManualClock::new(at(9))))
                .build()
                .expect("memory");
            memory.store().clear(&namespace.subtree()).await.unwrap();
            let mut dialogue = memory.dialogue(namespace.clone());
            for (place, (speaker, text)) in turns.iter().enumerate() {
                let turn = Turn::new(*speaker, *text)
                    .id(format!("t{place}"))
                    .at(at(1))
                    .session("1");
                dialogue.add(turn).await.unwrap();
            }
            found.push(memory.recall(&namespace.exact(), query).await.unwrap());
        }
        let [plain, head, one] = [&found[0], &found[1], &found[2]];
        // The search puts the reply that holds the words through its context first; the
        // head goes to the statement that holds them itself, even when one result is asked.
        assert_eq!(ids(plain)[..2], ["t4".to_owned(), "t3".to_owned()]);
        assert_eq!(ids(head)[..2], ["t3".to_owned(), "t4".to_owned()]);
        assert_eq!(ids(one), ["t3".to_owned()]);
        // The places keep their scores; the swap is the rerank signal.
        let scores = |result: &memory_core::RetrievalResult| {
            result
                .items
                .iter()
                .map(|item| item.score)
                .collect::<Vec<_>>()
        };
        assert_eq!(scores(plain), scores(head));
        let moved = head.items[0]
            .breakdown
            .contribution(memory_core::Signal::Rerank)
            .unwrap();
        assert!(moved > 0.0, "{moved}");
    }
}

/// A turn or a request is checked as it will be written, without writing: the dialogue's
/// date makes a text at the content limit too long, a context or a source over its own
/// limit is refused by name, and metadata near its limit leaves room for a context.
#[tokio::test]
async fn turns_and_requests_are_checked_as_they_will_be_written() {
    let memory = Memory::builder().build().unwrap();
    let ns = Namespace::parse("checked").unwrap();
    let dialogue = memory.dialogue(ns.clone());
    let limit = memory_core::DEFAULT_MAX_CONTENT_BYTES;
    let fits_alone = Turn::new("a", "x".repeat(limit - 3));
    let error = dialogue.check(&fits_alone).unwrap_err();
    assert!(
        matches!(&error, MemoryError::InvalidInput { field, .. } if field == "text"),
        "{error}"
    );
    dialogue.check(&Turn::new("a", "hello")).unwrap();
    let error = dialogue
        .check(&Turn::new("a", "hello").session("s".repeat(1_000)))
        .unwrap_err();
    assert!(
        matches!(&error, MemoryError::InvalidInput { field, .. } if field == "session"),
        "{error}"
    );

    let request = |ns: &Namespace| memory_retrieve::Remember::new(ns.clone(), "a note");
    for (bad, field) in [
        (request(&ns).context("c".repeat(70_000)), "context"),
        (request(&ns).source("s".repeat(5_000)), "source"),
    ] {
        let error = memory.check(&bad).unwrap_err();
        assert!(
            matches!(&error, MemoryError::InvalidInput { field: named, .. } if named == field),
            "{error}"
        );
        let error = memory.remember_with(bad).await.unwrap_err();
        assert!(error.to_string().contains(field), "{error}");
    }
    let near = request(&ns)
        .metadata(serde_json::json!({"notes": "m".repeat(250 * 1024)}))
        .context("c".repeat(60 * 1024));
    memory.check(&near).unwrap();
    memory.remember_with(near).await.unwrap();
    assert_eq!(memory.store().count(&ns.exact()).await.unwrap(), 1);
}
