//! Tests of reading a question's time expressions against a clock.

use super::*;

/// Thursday 9 March 2023, 15:47.
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2023, 3, 9, 15, 47, 0).unwrap()
}

fn date(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
}

/// The window of `query` as (first day, last day) it covers.
fn days_of(query: &str) -> Option<(NaiveDate, NaiveDate)> {
    time_window(query, now()).map(|w| (w.from.date_naive(), w.until.date_naive()))
}

fn ymd(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

#[test]
fn named_days_before_today() {
    assert_eq!(
        days_of("what did I eat yesterday?"),
        Some((ymd(2023, 3, 8), ymd(2023, 3, 8)))
    );
    assert_eq!(
        days_of("What did I say today"),
        Some((ymd(2023, 3, 9), ymd(2023, 3, 9)))
    );
    assert_eq!(
        days_of("the day before yesterday"),
        Some((ymd(2023, 3, 7), ymd(2023, 3, 7)))
    );
    // The latest Saturday before Thursday the 9th is the 4th, a day either side.
    assert_eq!(
        days_of("I received a piece of jewelry last Saturday from whom?"),
        Some((ymd(2023, 3, 3), ymd(2023, 3, 5)))
    );
    // "last Thursday" on a Thursday is a week ago.
    assert_eq!(
        days_of("last thursday"),
        Some((ymd(2023, 3, 1), ymd(2023, 3, 3)))
    );
    assert_eq!(
        days_of("last weekend"),
        Some((ymd(2023, 3, 3), ymd(2023, 3, 6)))
    );
    // The calendar week before this one (27 Feb to 5 Mar), a day either side.
    assert_eq!(
        days_of("last week"),
        Some((ymd(2023, 2, 26), ymd(2023, 3, 6)))
    );
    assert_eq!(
        days_of("LAST MONTH"),
        Some((ymd(2023, 1, 29), ymd(2023, 3, 3)))
    );
    assert_eq!(
        days_of("last year"),
        Some((ymd(2021, 12, 25), ymd(2023, 1, 7)))
    );
}

#[test]
fn counted_spans_back_from_now() {
    // Five days, with half a day and a quarter of the span on each side.
    let (from, until) = days_of("what did I do 5 days ago").unwrap();
    assert_eq!((from, until), (ymd(2023, 3, 2), ymd(2023, 3, 6)));
    let (from, until) = days_of("a couple of days ago").unwrap();
    assert!(from <= ymd(2023, 3, 7) && until >= ymd(2023, 3, 7) && until < ymd(2023, 3, 9));
    let (from, until) = days_of("two weeks ago").unwrap();
    assert!(from <= ymd(2023, 2, 23) && until >= ymd(2023, 2, 23));
    assert!(until < ymd(2023, 3, 9), "{until}");
    assert!(days_of("a few months ago").is_some());
    assert!(days_of("4 years ago").is_some());
}

#[test]
fn spans_up_to_now() {
    let window = time_window("in the past month", now()).unwrap();
    assert_eq!(window.until, now());
    assert_eq!(window.from.date_naive(), ymd(2023, 2, 6));
    let window = time_window("over the last two weeks", now()).unwrap();
    assert_eq!(window.from.date_naive(), ymd(2023, 2, 22));
    assert_eq!(
        time_window("this week", now()).unwrap().from,
        date(2023, 3, 6)
    );
    assert_eq!(
        time_window("this month", now()).unwrap().from,
        date(2023, 3, 1)
    );
    // "in/over/during/within the last month" is the span up to now, as "the past month" is,
    // not the calendar month before this one ("last month" alone).
    for query in [
        "over the last month",
        "in the last month",
        "during the last month",
        "within the last month",
    ] {
        let window = time_window(query, now()).unwrap();
        assert_eq!(window.until, now(), "{query}");
        assert_eq!(window.from.date_naive(), ymd(2023, 2, 6), "{query}");
    }
    let window = time_window("during the last week", now()).unwrap();
    assert_eq!(
        (window.from.date_naive(), window.until),
        (ymd(2023, 3, 1), now())
    );
    assert_eq!(
        days_of("last month"),
        Some((ymd(2023, 1, 29), ymd(2023, 3, 3))),
        "February, three days either side"
    );
    // A period that is no span ("the last weekend") keeps its calendar reading.
    assert_eq!(
        days_of("during the last weekend"),
        Some((ymd(2023, 3, 3), ymd(2023, 3, 6)))
    );
}

#[test]
fn a_date_after_now_names_no_time() {
    // The window is widened a day around a date: tomorrow's had reached back into today.
    for query in [
        "What is planned on 10 March 2023?",
        "on 2023-03-10",
        "March 10th, 2023",
        "in April 2023",
        "in 2024",
        "since 12 March 2023",
    ] {
        assert_eq!(time_window(query, now()), None, "{query:?}");
        assert!(!names_a_time(query, now()), "{query:?}");
    }
    // Today and the days before still do.
    assert!(time_window("on 9 March 2023", now()).is_some());
    assert!(time_window("in March 2023", now()).is_some());
    assert!(time_window("in 2023", now()).is_some());
}

#[test]
fn dates() {
    assert_eq!(
        days_of("on 2022-12-08"),
        Some((ymd(2022, 12, 7), ymd(2022, 12, 9)))
    );
    assert_eq!(
        days_of("What book did Tim finish on 8th December, 2022?"),
        Some((ymd(2022, 12, 7), ymd(2022, 12, 9)))
    );
    assert_eq!(
        days_of("on December 8th 2022"),
        Some((ymd(2022, 12, 7), ymd(2022, 12, 9)))
    );
    // Without a year: the last 8 December, last year's.
    assert_eq!(
        days_of("on Dec 8"),
        Some((ymd(2022, 12, 7), ymd(2022, 12, 9)))
    );
    // The last 29 February is that of the last leap year: 2020, asked in 2023 or in
    // January 2024; 2024 once it has come; 2096 in 2103 (2100 has none).
    let window = |query: &str, asked: DateTime<Utc>| {
        time_window(query, asked).map(|w| (w.from.date_naive(), w.until.date_naive()))
    };
    assert_eq!(
        days_of("what did I do on February 29?"),
        Some((ymd(2020, 2, 28), ymd(2020, 3, 1)))
    );
    assert_eq!(
        window("on Feb 29", date(2024, 1, 15)),
        Some((ymd(2020, 2, 28), ymd(2020, 3, 1)))
    );
    assert_eq!(
        window("on Feb 29", date(2024, 3, 2)),
        Some((ymd(2024, 2, 28), ymd(2024, 3, 1)))
    );
    assert_eq!(
        window("on 29 February", date(2103, 6, 1)),
        Some((ymd(2096, 2, 28), ymd(2096, 3, 1)))
    );
    assert_eq!(
        days_of("in June 2022"),
        Some((ymd(2022, 5, 31), ymd(2022, 7, 1)))
    );
    // A month alone after "in": the last June that has begun.
    assert_eq!(
        days_of("the first BBQ in June"),
        Some((ymd(2022, 5, 31), ymd(2022, 7, 1)))
    );
    assert_eq!(
        days_of("in January and March"),
        Some((ymd(2022, 12, 31), ymd(2023, 3, 9)))
    );
    assert_eq!(
        days_of("during 2021"),
        Some((ymd(2020, 12, 25), ymd(2022, 1, 7)))
    );
    // From a date until now, or no time at all before one.
    assert_eq!(
        days_of("since 2021"),
        Some((ymd(2020, 12, 25), ymd(2023, 3, 9)))
    );
    assert_eq!(
        days_of("after 2 March"),
        Some((ymd(2023, 3, 1), ymd(2023, 3, 9)))
    );
    assert_eq!(days_of("before 2 March"), None);
    assert_eq!(
        days_of("What did I buy before 2 March, last week?").map(|w| w.0),
        Some(ymd(2023, 2, 26))
    );
    // Several times: the window covers them all.
    assert_eq!(
        days_of("between 2022-08-11 and 2022-08-15"),
        Some((ymd(2022, 8, 10), ymd(2022, 8, 16)))
    );
}

/// Every expression read starts from a cue, a number or a month's name, so a query
/// without one is passed over before its words are read.
#[test]
fn queries_without_a_cue_are_passed_over() {
    for query in [
        "what did I eat yesterday?",
        "The day before YESTERDAY",
        "5 days ago",
        "a couple of weeks ago",
        "last Saturday",
        "in the past month",
        "This week",
        "on 2022-12-08",
        "in June",
        "December 8th",
        "since March",
        "Sept 3",
    ] {
        assert!(may_name_a_time(query), "{query:?}");
        assert!(time_window(query, now()).is_some(), "{query:?}");
    }
    for query in [
        "Where does Ava live?",
        "what is my favourite food",
        "",
        "über straße",
    ] {
        assert!(!may_name_a_time(query), "{query:?}");
    }
}

#[test]
fn words_that_name_no_time() {
    for query in [
        "Where does Ava live?",
        "I may go there",
        "Can you help me? It may rain",
        "in may",
        "a march for peace",
        "What is the order of airlines I flew with before today?",
        "the last time I went hiking",
        "at last",
        "What did I plan for next week?",
        "tomorrow",
        "recently",
        "2023 was a good year",
        "3 apples",
        "I ran 5 km in 20 minutes",
        "",
    ] {
        assert_eq!(time_window(query, now()), None, "{query:?}");
    }
}

#[test]
fn windows_end_by_now_and_far_clocks_read_nothing() {
    // A date after now names no time of a memory.
    assert_eq!(time_window("on 2024-01-01", now()), None);
    // Part of a window after now is cut.
    assert_eq!(time_window("this year", now()).unwrap().until, now());
    let far = Utc.with_ymd_and_hms(9500, 1, 1, 0, 0, 0).unwrap();
    assert_eq!(time_window("yesterday", far), None);
    assert_eq!(
        time_window("1000 years ago", now()).map(|w| w.until < now()),
        Some(true)
    );
    // Only the first words of a long query are read.
    let long = format!("{} yesterday", "word ".repeat(MAX_WORDS));
    assert_eq!(time_window(&long, now()), None);
}

#[test]
fn times_named_by_their_distance_from_now_are_found_with_their_words() {
    let rest = |query: &str| {
        let read = read_time(query, now()).unwrap();
        assert_eq!(Some(read.window), time_window(query, now()));
        TimeRead::blanked(query, read.relative.iter().map(|(_, words)| words))
    };
    assert_eq!(
        rest("What did I buy last Saturday?"),
        "What did I buy              ?"
    );
    assert_eq!(
        rest("Who called two weeks ago?"),
        "Who called              ?"
    );
    assert_eq!(
        rest("yesterday, and the day before yesterday"),
        "         , and                         "
    );
    assert_eq!(
        rest("What did I do in the past month?"),
        "What did I do                  ?"
    );
    // Curly quotes and accents keep the offsets on character boundaries.
    assert_eq!(
        rest("Où était “Zoë” last week?"),
        "Où était “Zoë”          ?"
    );
    // Dates, and spans from a date, name no time by its distance from now.
    for query in [
        "What happened on 8 March 2023?",
        "since February",
        "in June 2022",
    ] {
        let read = read_time(query, now()).unwrap();
        assert!(read.relative.is_empty(), "{query:?}");
    }
    // A time wholly after now, or none, is not read.
    assert_eq!(read_time("What is planned for next week?", now()), None);
    assert_eq!(read_time("What did I buy?", now()), None);
    // Each expression's own window: "last Saturday" and "yesterday" are two days.
    let read = read_time("last Saturday or yesterday", now()).unwrap();
    assert_eq!(read.relative.len(), 2);
    assert!(
        read.relative[0]
            .0
            .contains(date(2023, 3, 4) + Duration::hours(12))
    );
    assert!(
        read.relative[1]
            .0
            .contains(date(2023, 3, 8) + Duration::hours(12))
    );
    assert!(
        !read.relative[1]
            .0
            .contains(date(2023, 3, 4) + Duration::hours(12))
    );
}

#[test]
fn a_day_named_right_after_a_relative_time_anchors_it() {
    // Now is Thursday 9 March 2023. The Friday before 27 January 2023 is the 20th.
    let window = time_window("What did I finish last Friday on 27 January 2023?", now()).unwrap();
    assert!(window.contains(date(2023, 1, 20) + Duration::hours(12)));
    assert!(window.contains(date(2023, 1, 27) + Duration::hours(12)));
    // Not the Friday before now (3 March).
    assert!(!window.contains(date(2023, 3, 3) + Duration::hours(12)));
    // "last weekend before April 10" and "last week, as mentioned on 6 February".
    let window = time_window(
        "What did I do last weekend before February 13, 2023?",
        now(),
    )
    .unwrap();
    assert!(window.contains(date(2023, 2, 11) + Duration::hours(12)));
    assert!(!window.contains(date(2023, 3, 4) + Duration::hours(12)));
    let window = time_window("my issue last week, as mentioned on 6 February 2023", now()).unwrap();
    assert!(window.contains(date(2023, 1, 31) + Duration::hours(12)));
    assert!(!window.contains(date(2023, 3, 2) + Duration::hours(12)));
    // A day after "and" is another time: yesterday counts from now.
    let window = time_window("What did I do yesterday and on 6 February 2023?", now()).unwrap();
    assert!(window.contains(date(2023, 3, 8) + Duration::hours(12)));
    // A month is no anchor.
    let window = time_window("last Friday in February 2023", now()).unwrap();
    assert!(window.contains(date(2023, 3, 3) + Duration::hours(12)));
}

#[test]
fn an_anchored_relative_time_is_not_read_as_distance_from_now() {
    // It quotes what was said on the day that anchors it: its words stay in the search.
    for query in [
        "What did I finish last Friday on 27 January 2023?",
        "What did I do last weekend before February 13, 2023?",
        "my issue last week, as mentioned on 6 February 2023",
    ] {
        let read = read_time(query, now()).unwrap();
        assert!(read.relative.is_empty(), "{query:?}: {:?}", read.relative);
    }
    // Beside an unanchored one, only that one is listed.
    let query = "What did I do yesterday and last Friday on 27 January 2023?";
    let read = read_time(query, now()).unwrap();
    assert_eq!(read.relative.len(), 1, "{:?}", read.relative);
    assert_eq!(&query[read.relative[0].1.clone()], "yesterday");
}

#[test]
fn a_text_names_a_time_exactly_when_reading_it_finds_one() {
    let fixed = [
        "I went to the support group yesterday.",
        "We met last Saturday at the park",
        "It was two weeks ago, on a rainy day",
        "a couple of days ago I baked a cake",
        "In 2022 we moved; in March we left.",
        "on 8 May 2023 and again on May 10th",
        "the day before yesterday",
        "We will go next week, or tomorrow",
        "May I ask you something? Maybe in May.",
        "I ran 5 miles and 3 laps",
        "since March I've been running",
        "before June",
        "Café crème yesterday, déjà vu",
        "",
        "plain words only",
    ];
    // Generated texts: words drawn from those that make and unmake times.
    let vocabulary = [
        "last",
        "week",
        "ago",
        "two",
        "days",
        "a",
        "couple",
        "of",
        "May",
        "may",
        "8",
        "2023",
        "in",
        "the",
        "past",
        "month",
        "since",
        "March",
        "yesterday",
        "today",
        "next",
        "I",
        "went",
        "Saturday",
        "this",
        "weekend",
        "before",
        "after",
        "June",
        "10th",
        "café",
    ];
    let mut state = 0x2545_f491_u32;
    let generated: Vec<String> = (0..2000)
        .map(|_| {
            let mut words = Vec::new();
            for _ in 0..(state % 9) {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                words.push(vocabulary[state as usize % vocabulary.len()]);
            }
            state = state.wrapping_add(0x9e37_79b9);
            words.join(" ")
        })
        .collect();
    for text in fixed
        .iter()
        .copied()
        .chain(generated.iter().map(String::as_str))
    {
        assert_eq!(
            names_a_time(text, now()),
            read_time(text, now()).is_some(),
            "{text:?}"
        );
    }
    assert!(names_a_time("yesterday", now()));
    assert!(!names_a_time("tomorrow", now()));
}

#[test]
fn the_words_that_mark_a_time_are_read_in_any_case() {
    for marks in [
        "ago",
        "AGO",
        "Yesterday",
        "May",
        "sept",
        "DECEMBER",
        "2023",
        "10th",
        "x1",
    ] {
        assert!(marks_a_time(marks), "{marks}");
    }
    for not in [
        "",
        "a",
        "agog",
        "mayday",
        "septembers",
        "week",
        "Monday",
        "café",
        "ÄGO",
    ] {
        assert!(!marks_a_time(not), "{not}");
    }
}
