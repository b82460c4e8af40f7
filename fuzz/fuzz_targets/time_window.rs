//! Fuzz the reading of the time a query names (`time_window`): never panic, whatever the
//! text and the clock, and a window read starts no later than it ends and than now.
#![no_main]

use agent_memory::retrieve::time_window;
use chrono::{DateTime, Utc};
use libfuzzer_sys::fuzz_target;

/// Expressions the reader knows, mixed into the input so that the fuzzer reaches the code
/// behind them (numbers, months and weekdays it then varies around them).
const KNOWN: [&str; 24] = [
    "3 days ago",
    "a couple of weeks ago",
    "two months ago",
    "yesterday",
    "the day before yesterday",
    "today",
    "last Saturday",
    "last weekend",
    "last week",
    "last month",
    "last year",
    "this week",
    "in the past two weeks",
    "over the last month",
    "since March",
    "after 8 May",
    "before June",
    "2023-12-08",
    "8 December 2023",
    "December 8th, 2023",
    "in June",
    "in January and March",
    "in 2022",
    "last Friday on 27 January 2023",
];

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<6>() else {
        return;
    };
    // A clock anywhere in the years a record may carry (1677 to 2262).
    let seconds = i64::from(u32::from_le_bytes([head[0], head[1], head[2], head[3]]));
    let span = 9_214_000_000_i64; // about 292 years
    let seconds = seconds * 3 % span - span / 2;
    let Some(now) = DateTime::<Utc>::from_timestamp(seconds, 0) else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let before = KNOWN[usize::from(head[4]) % KNOWN.len()];
    let after = KNOWN[usize::from(head[5]) % KNOWN.len()];
    for query in [
        text.to_string(),
        format!("{before} {text}"),
        format!("{text} {after}"),
        format!("What did I do {before}, {text} and {after}?"),
    ] {
        if let Some(window) = time_window(&query, now) {
            assert!(
                window.from <= window.until,
                "{query:?} at {now}: {window:?}"
            );
            assert!(window.from <= now, "{query:?} at {now}: {window:?}");
        }
    }
});
