//! Fuzz a whole recall with arbitrary query text over a dated conversation, in memory and on
//! SQLite, at a clock that moves with the input: every reading of the query runs (times,
//! speakers, the agent as addressee, placeholders, the head's reordering), and a recall
//! never panics, fails only with `InvalidInput`, returns at most the results asked for, each
//! scored in [0, 1], best first, and SQLite returns what the in-memory store returns.
#![no_main]

use std::sync::{Arc, OnceLock};

use agent_memory::retrieve::{Memory, RecallOptions, Role, Turn};
use agent_memory::sqlite::SqliteBackend;
use agent_memory::{ManualClock, MemoryError, Namespace};
use chrono::{DateTime, Duration, Utc};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    runtime: tokio::runtime::Runtime,
    /// The same conversation in memory, then on SQLite.
    memories: [Memory; 2],
    clock: Arc<ManualClock>,
    ns: Namespace,
    start: DateTime<Utc>,
}

/// Turns of two sessions a week apart: a user and an assistant, then two named people.
const TURNS: [(&str, Option<Role>, &str); 10] = [
    (
        "user",
        Some(Role::User),
        "I baked a chocolate cake for my friend's birthday",
    ),
    (
        "assistant",
        Some(Role::Assistant),
        "What a lovely gift! How did it turn out?",
    ),
    (
        "user",
        Some(Role::User),
        "Two weeks ago I went to a charity soccer tournament",
    ),
    (
        "assistant",
        Some(Role::Assistant),
        "You mentioned the tournament; did your team win?",
    ),
    (
        "user",
        Some(Role::User),
        "I own 3 guitars and a Korg B1 piano since 2021",
    ),
    (
        "Caroline",
        None,
        "I went to the LGBTQ support group yesterday",
    ),
    (
        "Melanie",
        None,
        "That's great! What's your favourite style of dance?",
    ),
    (
        "Caroline",
        None,
        "Contemporary is my top pick, every other week",
    ),
    (
        "Melanie",
        None,
        "Last Saturday I painted a sunrise at the lake",
    ),
    (
        "Caroline",
        None,
        "I'm researching adoption agencies on 8 May 2023",
    ),
];

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let start: DateTime<Utc> = "2023-05-01T10:00:00Z".parse().expect("date");
        let clock = Arc::new(ManualClock::new(start));
        let sqlite = SqliteBackend::open_in_memory().expect("sqlite");
        let memories = [
            Memory::builder().clock(clock.clone()).build(),
            Memory::builder()
                .stores(sqlite.stores())
                .clock(clock.clone())
                .build(),
        ]
        .map(|memory| memory.expect("memory"));
        let ns = Namespace::parse("fuzz").expect("namespace");
        runtime.block_on(async {
            for memory in &memories {
                remember_turns(memory, &ns, start).await;
            }
        });
        Fixture {
            runtime,
            memories,
            clock,
            ns,
            start,
        }
    })
}

/// Writes [`TURNS`] into `memory` through the dialogue API, each with its own id, so that
/// both stores hold the same ids.
async fn remember_turns(memory: &Memory, ns: &Namespace, start: DateTime<Utc>) {
    let mut dialogue = memory.dialogue(ns.clone());
    for (i, (speaker, role, text)) in TURNS.iter().enumerate() {
        let session = if i < 5 { "s1" } else { "s2" };
        let at = start + Duration::days(if i < 5 { 0 } else { 7 }) + Duration::minutes(i as i64);
        let mut turn = Turn::new(*speaker, *text)
            .id(format!("t{i}"))
            .session(session)
            .at(at);
        if let Some(role) = role {
            turn = turn.role(*role);
        }
        dialogue.add(turn).await.expect("turn");
    }
    memory.flush().await.expect("flush");
}

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let f = fixture();
    // From the first session to about three years after it.
    let days = i64::from(u16::from_le_bytes([head[0], head[1]])) % 1_100;
    f.clock.set(f.start + Duration::days(days));
    let max_results = usize::from(head[2] % 40) + 1;
    let query = String::from_utf8_lossy(rest);
    f.runtime.block_on(async {
        let options = RecallOptions::default().max_results(max_results);
        let mut outcomes = Vec::new();
        for memory in &f.memories {
            match memory.recall_with(&f.ns.exact(), &query, &options).await {
                Ok(found) => {
                    assert!(found.items.len() <= max_results, "{query:?}");
                    for pair in found.items.windows(2) {
                        assert!(pair[0].score >= pair[1].score, "{query:?}: not best first");
                    }
                    for item in &found.items {
                        assert!(
                            (0.0..=1.0).contains(&item.score),
                            "{query:?}: {}",
                            item.score
                        );
                    }
                    let ids: Vec<String> = found
                        .items
                        .iter()
                        .map(|item| item.record.id().to_owned())
                        .collect();
                    outcomes.push(Some(ids));
                }
                Err(MemoryError::InvalidInput { .. }) => outcomes.push(None),
                Err(other) => panic!("{query:?}: {other}"),
            }
        }
        assert_eq!(
            outcomes[0], outcomes[1],
            "in memory, then SQLite: {query:?}"
        );
        // The recall statistics this input recorded written on both stores before the next
        // input ranks with them: the in-memory store writes them as they come, SQLite's
        // batch waits for a task that a single-threaded runtime runs only when it idles.
        for memory in &f.memories {
            memory.flush().await.expect("flush");
        }
    });
});
