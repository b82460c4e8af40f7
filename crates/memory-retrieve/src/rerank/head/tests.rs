//! Tests of the head's reordering and of its readings.

use std::sync::Arc;

use memory_core::text::Analyzer;
use memory_core::{MemoryItem, Namespace, ScoreBreakdown};

use super::*;

fn scored(text: &str, score: f32, stale: bool) -> ScoredItem {
    let item = MemoryItem::new(Namespace::parse("t").unwrap(), text)
        .unwrap()
        .with_context("the turns around it");
    let mut breakdown = ScoreBreakdown::default();
    if stale {
        breakdown.signals.push(SignalScore {
            name: Signal::Stale,
            value: 0.5,
            contribution: -0.1,
        });
    }
    ScoredItem {
        record: RetrievalSource::Memory(Arc::new(item)),
        score,
        breakdown,
    }
}

fn texts(items: &[ScoredItem]) -> Vec<&str> {
    items
        .iter()
        .map(|item| match &item.record {
            RetrievalSource::Memory(item) => item.content.as_str(),
            _ => "",
        })
        .collect()
}

/// Each place's text and score.
fn placed(items: &[ScoredItem]) -> Vec<(String, f32)> {
    texts(items)
        .into_iter()
        .zip(items.iter().map(|item| item.score))
        .map(|(text, score)| (text.to_owned(), score))
        .collect()
}

/// The reordering as its documentation states it: the movable results sorted by
/// `(1 - weight) * score + weight * measure` (ties in their order) take the movable
/// places in order, each with its place's score; the others stay.
/// ... plus `bonus` for each movable result that states a number (every one read).
fn reordered_by_definition(
    terms: &[String],
    items: &[ScoredItem],
    depth: usize,
    weight: f32,
    bonus: f32,
) -> Vec<(String, f32)> {
    let depth = depth.min(items.len());
    let measures = term_scores_of(terms, &documents(&items[..depth]), &[]);
    let movable: Vec<usize> = (0..depth)
        .filter(|&at| items[at].breakdown.value(Signal::Stale).is_none())
        .collect();
    let gains = |at: usize| {
        if crate::answer::holds_number(texts(items)[at]) {
            bonus
        } else {
            0.0
        }
    };
    let key = |at: usize| (1.0 - weight) * items[at].score + weight * measures[at] + gains(at);
    let mut order = movable.clone();
    order.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
    let mut out = placed(items);
    if movable.len() >= 2 {
        for (&place, &moved) in movable.iter().zip(&order) {
            out[place].0 = texts(items)[moved].to_owned();
        }
    }
    out
}

#[test]
fn the_head_is_reordered_as_defined_for_any_depth_and_staleness() {
    let words = [
        "caroline", "adoption", "agency", "painted", "lake", "sunrise", "we", "hours", "3", "ten",
    ];
    let terms = Analyzer::default().query_terms("Caroline adoption agency painted sunrise");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below
    };
    for _ in 0..500 {
        let count = 1 + next(12) as usize;
        let mut items: Vec<ScoredItem> = (0..count)
            .map(|at| {
                let text: Vec<&str> = (0..1 + next(8))
                    .map(|_| words[next(words.len() as u64) as usize])
                    .collect();
                scored(&text.join(" "), 1.0 - at as f32 * 0.05, next(5) == 0)
            })
            .collect();
        let depth = next(14) as usize;
        let weight = [0.0, 0.3, 0.5, 1.0][next(4) as usize];
        // The bonus is read only where it could move a result: the order is the same.
        let bonus = [0.0, 0.02, 0.05, 0.1, 0.3][next(5) as usize];
        let expected = reordered_by_definition(&terms, &items, depth, weight, bonus);
        let order_by = HeadOrder {
            asks: Asks::Quantity,
            answer_bonus: bonus,
            ..HeadOrder::by_terms(depth, weight)
        };
        reorder_head(&terms, &mut items, order_by, &[]);
        assert_eq!(
            placed(&items),
            expected,
            "depth {depth}, weight {weight}, bonus {bonus}"
        );
    }
}

#[test]
fn the_head_is_reordered_and_keeps_its_scores() {
    let query = "Caroline adoption agency";
    let mut items = vec![
        scored("we talked for hours", 0.9, false),
        scored("Caroline called the adoption agency", 0.85, false),
        scored("Caroline said hello", 0.8, false),
        scored("the adoption agency Caroline chose", 0.7, false),
    ];
    reorder_head(
        &Analyzer::default().query_terms(query),
        &mut items,
        HeadOrder::by_terms(3, 0.5),
        &[],
    );
    assert_eq!(
        texts(&items),
        [
            "Caroline called the adoption agency",
            "Caroline said hello",
            "we talked for hours",
            "the adoption agency Caroline chose",
        ],
        "the head of three reordered, the fourth left where it was"
    );
    let scores: Vec<f32> = items.iter().map(|item| item.score).collect();
    assert_eq!(scores, [0.9, 0.85, 0.8, 0.7]);
    let first = &items[0].breakdown;
    assert!((first.contribution(Signal::Rerank).unwrap() - 0.05).abs() < 1e-6);
    assert!(items[3].breakdown.value(Signal::Rerank).is_none());
}

/// The asking factor as defined: the text split after each `.`, `!` and `?`, the
/// pieces of at least two bytes once trimmed of ASCII white space are sentences, those
/// ending in `?` ask.
fn asking_by_definition(text: &str, factor: f32) -> f32 {
    let pieces: Vec<&str> = text
        .split_inclusive(['.', '!', '?'])
        .map(|piece| piece.trim_matches(|c: char| c.is_ascii_whitespace()))
        .filter(|piece| piece.len() > 1)
        .collect();
    let asked = pieces.iter().filter(|piece| piece.ends_with('?')).count();
    if asked == 0 {
        return 1.0;
    }
    1.0 - (1.0 - factor) * asked as f32 / pieces.len() as f32
}

#[test]
fn the_asking_factor_counts_the_sentences_that_ask() {
    let cases = [
        ("Half of them are women.", 1.0),
        ("Are there any women on her team?", 0.5),
        ("That's great! Are there any women on her team?", 0.75),
        ("[8 May 2023] Ann: Really?! Tell me more. Why? How?", 0.625),
        ("", 1.0),
        ("?", 1.0),
        ("... ? !", 1.0),
        ("Dr. Patel? Yes", 1.0 - 0.5 / 3.0),
        ("Ça va? Très bien, merci.", 0.75),
    ];
    for (text, expected) in cases {
        let factor = asking_factor(text, 0.5);
        assert!((factor - expected).abs() < 1e-6, "{text:?}: {factor}");
        assert_eq!(factor, asking_by_definition(text, 0.5), "{text:?}");
    }
    assert_eq!(asking_factor("Why not?", 1.0), 1.0, "1 turns it off");
    // Any text, bytes of every kind around the stops.
    let alphabet = [
        "a", "é", " ", "\n", ".", "?", "!", "漢", "b?", "...", "\t", "\u{a0}",
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let text: String = (0..seed % 24)
            .map(|at| alphabet[((seed >> (at % 60)) % alphabet.len() as u64) as usize])
            .collect();
        assert_eq!(
            asking_factor(&text, 0.75),
            asking_by_definition(&text, 0.75),
            "{text:?}"
        );
    }
}

#[test]
fn a_question_yields_the_head_to_the_statement_it_repeats() {
    let query = "women on her team";
    let terms = Analyzer::default().query_terms(query);
    let head = || {
        vec![
            scored("Are there any women on her team?", 0.9, false),
            scored("Half of her team are women.", 0.88, false),
        ]
    };
    let mut items = head();
    reorder_head(&terms, &mut items, HeadOrder::by_terms(3, 0.5), &[]);
    assert_eq!(
        texts(&items)[0],
        "Are there any women on her team?",
        "without the factor the question keeps the first place"
    );
    let mut items = head();
    let asking = HeadOrder {
        question_factor: 0.75,
        ..HeadOrder::by_terms(3, 0.5)
    };
    reorder_head(&terms, &mut items, asking, &[]);
    assert_eq!(texts(&items)[0], "Half of her team are women.");
    let scores: Vec<f32> = items.iter().map(|item| item.score).collect();
    assert_eq!(scores, [0.9, 0.88], "the scores stay with the places");
}

#[test]
fn a_number_lifts_a_result_of_the_head_by_its_bonus() {
    let terms = Analyzer::default().query_terms("how many women are on her team");
    let head = || {
        vec![
            scored("[1 May 2023] Ann: I like the women on her team", 0.9, false),
            scored(
                "[1 May 2023] Ann: her team has 10 people, half women",
                0.89,
                false,
            ),
        ]
    };
    let mut items = head();
    reorder_head(&terms, &mut items, HeadOrder::by_terms(3, 0.5), &[]);
    assert!(
        texts(&items)[0].contains("I like"),
        "no bonus: the order stands"
    );
    let with_numbers = HeadOrder {
        asks: Asks::Quantity,
        answer_bonus: 0.1,
        ..HeadOrder::by_terms(3, 0.5)
    };
    let mut items = head();
    let asking_a_time = HeadOrder {
        asks: Asks::Time,
        ..with_numbers
    };
    reorder_head(&terms, &mut items, asking_a_time, &[]);
    assert!(texts(&items)[0].contains("I like"), "a number is no time");
    let mut items = head();
    reorder_head(&terms, &mut items, with_numbers, &[]);
    assert!(
        texts(&items)[0].contains("10 people"),
        "{:?}",
        texts(&items)
    );
    let scores: Vec<f32> = items.iter().map(|item| item.score).collect();
    assert_eq!(scores, [0.9, 0.89]);
}

#[test]
fn a_time_lifts_a_result_of_the_head_when_the_question_asks_when() {
    let terms = Analyzer::default().query_terms("when did Ann go to the support group");
    let head = || {
        vec![
            scored(
                "[8 May 2023] Ann: the support group was great, Ann here",
                0.9,
                false,
            ),
            scored(
                "[8 May 2023] Ann: I attended a support group yesterday",
                0.89,
                false,
            ),
        ]
    };
    let at_time = |asks| HeadOrder {
        asks,
        answer_bonus: 0.1,
        ..HeadOrder::by_terms(3, 0.5)
    };
    for (asks, first) in [
        (Asks::Nothing, "was great"),
        (Asks::Quantity, "was great"),
        (Asks::Time, "yesterday"),
    ] {
        let mut items = head();
        reorder_head(&terms, &mut items, at_time(asks), &[]);
        assert!(
            texts(&items)[0].contains(first),
            "{asks:?}: {:?}",
            texts(&items)
        );
        let scores: Vec<f32> = items.iter().map(|item| item.score).collect();
        assert_eq!(scores, [0.9, 0.89], "the scores stay with the places");
    }
}

#[test]
fn a_reply_is_read_from_the_turn_before_it_in_its_context() {
    let terms = Analyzer::default().query_terms("what is Jon's favorite style of dance");
    let starts = super::super::TermStarts::of(&terms);
    let turn = |context: &str, before: serde_json::Value| {
        let mut item = MemoryItem::new(Namespace::parse("t").unwrap(), "Contemporary!")
            .unwrap()
            .with_context(context);
        // The context is kept in the metadata too: the length goes beside it.
        if let Some(metadata) = item.metadata.as_object_mut() {
            metadata.insert(crate::CONTEXT_BEFORE_METADATA_KEY.to_owned(), before);
        }
        item
    };
    let asked = "Gina: Cool! Which style of dance is your favorite?";
    let next = "\nJon: and yours?";
    let length = serde_json::json!(asked.len());
    assert!(replies_to_query(
        &turn(&format!("{asked}{next}"), length.clone()),
        &terms,
        &starts
    ));
    // The question after it, a statement before it, a question in other words, a length
    // past the context or inside a character, or none: no reply.
    let cases = [
        (
            format!("Gina: I love dance.{next} Which style of dance?"),
            serde_json::json!(19),
        ),
        ("Gina: How was your trip?".to_owned(), serde_json::json!(24)),
        (asked.to_owned(), serde_json::json!(asked.len() + 1)),
        ("é?".to_owned(), serde_json::json!(1)),
        (asked.to_owned(), serde_json::Value::Null),
        (asked.to_owned(), serde_json::json!("many")),
    ];
    for (context, before) in cases {
        assert!(
            !replies_to_query(&turn(&context, before.clone()), &terms, &starts),
            "{context:?} {before}"
        );
    }
}

#[test]
fn a_memory_without_context_keeps_its_place_in_the_head() {
    let query = "Caroline adoption agency";
    let plain = |text: &str, score: f32| {
        let item = MemoryItem::new(Namespace::parse("t").unwrap(), text).unwrap();
        ScoredItem {
            record: RetrievalSource::Memory(Arc::new(item)),
            score,
            breakdown: ScoreBreakdown::default(),
        }
    };
    let mut items = vec![
        plain("we talked for hours", 0.9),
        plain("Caroline called the adoption agency", 0.85),
    ];
    reorder_head(
        &Analyzer::default().query_terms(query),
        &mut items,
        HeadOrder::by_terms(3, 0.5),
        &[],
    );
    assert_eq!(
        texts(&items),
        ["we talked for hours", "Caroline called the adoption agency"]
    );
    assert!(items[0].breakdown.value(Signal::Rerank).is_none());
}

#[test]
fn a_stale_result_keeps_its_place_in_the_head() {
    let query = "where does the user live";
    let mut items = vec![
        scored("the user moved to Berlin", 0.5, false),
        scored("the user lives in Paris", 0.49, true),
        scored("nothing here", 0.48, false),
        scored("the user loves to live well", 0.47, false),
    ];
    reorder_head(
        &Analyzer::default().query_terms(query),
        &mut items,
        HeadOrder::by_terms(4, 1.0),
        &[],
    );
    let order = texts(&items);
    assert_eq!(order[1], "the user lives in Paris");
    assert!(items[1].breakdown.value(Signal::Rerank).is_none());
    assert_eq!(order[0], "the user loves to live well");
    let mut moved = order.clone();
    moved.sort_unstable();
    assert_eq!(moved.len(), 4);
}
