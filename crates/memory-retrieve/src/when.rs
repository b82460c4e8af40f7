//! The time a query names ([`time_window`]): a recall whose query names a time searches
//! that time as well, and ranks memories made before it lower (see
//! [`RetrieverConfig::outside_time_factor`](crate::RetrieverConfig::outside_time_factor)).

use chrono::{DateTime, Datelike, Duration, Months, NaiveDate, TimeZone, Utc, Weekday};

/// A span of time a query names: memories made from `from` until `until` (both included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindow {
    /// The start.
    pub from: DateTime<Utc>,
    /// The end.
    pub until: DateTime<Utc>,
}

impl TimeWindow {
    /// Whether `at` lies in the window.
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.from <= at && at <= self.until
    }

    /// The smallest window holding both.
    fn hull(self, other: Self) -> Self {
        Self {
            from: self.from.min(other.from),
            until: self.until.max(other.until),
        }
    }

    /// The window no later than `now` (a window wholly after it is `None`).
    fn until_now(self, now: DateTime<Utc>) -> Option<Self> {
        (self.from <= now).then(|| Self {
            from: self.from,
            until: self.until.min(now),
        })
    }
}

/// The longest query read, in words: a time is named in a question, not in a document.
const MAX_WORDS: usize = 256;

/// The time `query` names, relative to `now`; `None` when it names none.
///
/// The reading is deterministic and English only. It knows dates (`2023-12-08`, `8 December
/// 2023`, `December 8th, 2023`, `June 2023`, `in June`, `in January and March`, `in 2022`),
/// counted spans back from now (`3 days ago`, `a couple of weeks ago`, `two months ago`),
/// the named days and periods before now (`yesterday`, `the day before yesterday`,
/// `today`, `last Saturday`, `last weekend`, `last week`, `last month`, `last year`), and
/// the recent past up to now (`this week`, `this month`, `in the past two weeks`, `over the
/// last month`), and from a date until now (`since March`, `after 8 May`; `before June`
/// names no time of its own); a relative time followed within a few words by the day it
/// counts from ("last Friday on 27 January 2023", "last weekend before 13 February") counts
/// from that day. Expressions about the future (`tomorrow`, `next week`) and vague ones
/// (`recently`, `a while ago`) name no time; neither does a time after `now`. When a query
/// names several times, the window covers them all. Each window is a little wider than the
/// expression says: people round ("two weeks ago" may be twelve days). Only the first 256
/// words are read.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use memory_retrieve::time_window;
///
/// let now = Utc.with_ymd_and_hms(2023, 3, 9, 15, 0, 0).unwrap(); // a Thursday
/// let window = time_window("What did I buy last Saturday?", now).unwrap();
/// assert!(window.contains(Utc.with_ymd_and_hms(2023, 3, 4, 12, 0, 0).unwrap()));
/// assert!(!window.contains(Utc.with_ymd_and_hms(2023, 2, 25, 12, 0, 0).unwrap()));
/// assert_eq!(time_window("What did I plan for next week?", now), None);
/// ```
pub fn time_window(query: &str, now: DateTime<Utc>) -> Option<TimeWindow> {
    read_time(query, now).map(|read| read.window)
}

/// The time a query names ([`time_window`]), and where it names a time by its distance
/// from now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TimeRead {
    /// Every time named, as one window.
    pub(crate) window: TimeWindow,
    /// Each expression naming a time by its distance from now ("last Saturday", "two weeks
    /// ago", "yesterday"; not "8 May 2023" or "since June"): its own window, and the bytes
    /// of the query it spans. One anchored by a day ("last weekend before April 10") counts
    /// from that day, not from now, and is not listed: it quotes what was said that day.
    pub(crate) relative: Vec<(TimeWindow, std::ops::Range<usize>)>,
}

impl TimeRead {
    /// `query` with the bytes of `ranges` (whole words) blanked out.
    pub(crate) fn blanked<'r>(
        query: &str,
        ranges: impl IntoIterator<Item = &'r std::ops::Range<usize>>,
    ) -> String {
        let mut rest = query.to_owned();
        for range in ranges {
            if let Some(part) = rest.get(range.clone()) {
                let spaces = " ".repeat(part.len());
                rest.replace_range(range.clone(), &spaces);
            }
        }
        rest
    }
}

/// [`time_window`], with the expressions that name a time by its distance from now.
pub(crate) fn read_time(query: &str, now: DateTime<Utc>) -> Option<TimeRead> {
    // Every window lies within about a thousand years of now: far from chrono's limits.
    if !(1000..=9000).contains(&now.year()) || !may_name_a_time(query) {
        return None;
    }
    let words = words(query);
    let mut found: Option<TimeWindow> = None;
    let mut relative = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let (window, used) = read_at(&words, at, now);
        let used = used.max(1);
        if let Some(window) = window.and_then(|window| window.until_now(now)) {
            let relative_to_now = is_relative(&words, at, now);
            // "last Friday on 23 January": the Friday before that day, not before now.
            let anchor = relative_to_now
                .then(|| anchored(&words, at, used, now))
                .flatten();
            let window = anchor.unwrap_or(window);
            found = Some(found.map_or(window, |found| found.hull(window)));
            // An anchored expression quotes what was said on the day that anchors it, so a
            // memory of that day holds its words: it is not listed as relative to now.
            if relative_to_now && anchor.is_none() {
                let last = &words[words.len().min(at + used) - 1];
                relative.push((window, words[at].start..last.end));
            }
        }
        at += used;
    }
    Some(TimeRead {
        window: found?,
        relative,
    })
}

/// Whether `text` names a time up to `now` (what [`read_time`] would find a window for),
/// read only until the first one is found.
pub(crate) fn names_a_time(text: &str, now: DateTime<Utc>) -> bool {
    if !(1000..=9000).contains(&now.year()) || !may_name_a_time(text) {
        return false;
    }
    let words = words(text);
    let mut at = 0;
    while at < words.len() {
        let (window, used) = read_at(&words, at, now);
        if window.and_then(|window| window.until_now(now)).is_some() {
            return true;
        }
        at += used.max(1);
    }
    false
}

/// How far past a relative expression a day that anchors it may begin, in words: "last
/// week, as mentioned on 6 November".
const ANCHOR_REACH: usize = 4;

/// The window of the relative expression at `words[at..at + used]` read from the day named
/// right after it ("last Friday on 23 January 2022", "last weekend before April 10"), when
/// one is: the expression counts from that day, not from now. A day after "and" or "or"
/// is another time ("yesterday and on 8 May").
fn anchored(words: &[Word], at: usize, used: usize, now: DateTime<Utc>) -> Option<TimeWindow> {
    let after = at + used;
    let day = (after..words.len().min(after + ANCHOR_REACH))
        .take_while(|&next| !matches!(words[next].lower.as_ref(), "and" | "or"))
        .find_map(|next| {
            let (window, _) = date_at(words, next, now)?;
            // A single day (the reading widens it by a day on each side), not a month.
            (window.until - window.from < Duration::days(4))
                .then(|| window.from + Duration::days(1) + Duration::hours(12))
        })?;
    read_at(words, at, day).0?.until_now(now)
}

/// Whether the expression at `words[at]` names a time by its distance from now, not by a
/// date.
fn is_relative(words: &[Word], at: usize, now: DateTime<Utc>) -> bool {
    !matches!(
        words[at].lower.as_ref(),
        "since" | "after" | "before" | "until" | "till"
    ) && date_expression_at(words, at, now).is_none()
}

/// Whether `word` (lowercase ASCII) is a cue of a time: every time expression read here
/// holds one (besides a number or a month), so most questions hold none and are passed
/// over without reading their words.
fn is_cue(word: &[u8]) -> bool {
    matches!(
        word,
        b"ago"
            | b"today"
            | b"tonight"
            | b"yesterday"
            | b"this"
            | b"last"
            | b"past"
            | b"since"
            | b"after"
            | b"before"
            | b"until"
    )
}

/// Whether `query` can name a time: one of its first [`MAX_WORDS`] words holds a digit, or
/// is a cue or a month's name. No allocation.
fn may_name_a_time(query: &str) -> bool {
    query
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '/'))
        .filter(|word| !word.is_empty())
        .take(MAX_WORDS)
        .any(marks_a_time)
}

/// Whether `word` is one that every expression of a time holds: a digit, a cue ("ago",
/// "last", "yesterday") or a month's name.
fn marks_a_time(word: &str) -> bool {
    if word.bytes().any(|b| b.is_ascii_digit()) {
        return true;
    }
    // Cues and months are 3 to 9 ASCII letters: compared once lowercased on the stack.
    let bytes = word.as_bytes();
    if !(3..=9).contains(&bytes.len()) {
        return false;
    }
    let mut lower = [0u8; 9];
    let lower = &mut lower[..bytes.len()];
    for (to, from) in lower.iter_mut().zip(bytes) {
        *to = from.to_ascii_lowercase();
    }
    is_cue(lower) || month_of(lower).is_some()
}

/// One word of a query: lowercased, whether it was written with a capital, and where it
/// lies in the query (byte offsets).
#[derive(Debug)]
struct Word<'a> {
    /// The word in lower case: borrowed from the text when it already is.
    lower: std::borrow::Cow<'a, str>,
    capital: bool,
    start: usize,
    end: usize,
}

fn words(query: &str) -> Vec<Word<'_>> {
    query
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '/'))
        .filter(|word| !word.is_empty())
        .take(MAX_WORDS)
        .map(|word| {
            // `word` is a part of `query`: its offset is the distance between the two.
            let start = word.as_ptr().addr() - query.as_ptr().addr();
            Word {
                lower: if word.chars().any(char::is_uppercase) {
                    std::borrow::Cow::Owned(word.to_lowercase())
                } else {
                    std::borrow::Cow::Borrowed(word)
                },
                capital: word.chars().next().is_some_and(char::is_uppercase),
                start,
                end: start + word.len(),
            }
        })
        .collect()
}

/// The window of the expression starting at `words[at]`, and how many words it took.
fn read_at(words: &[Word], at: usize, now: DateTime<Utc>) -> (Option<TimeWindow>, usize) {
    let word = |offset: usize| words.get(at + offset).map(|word| word.lower.as_ref());
    let today = day_start(now);
    match word(0) {
        // "before today" is all of the past: no time.
        Some("today" | "tonight")
            if !(at > 0 && matches!(words[at - 1].lower.as_ref(), "before" | "until")) =>
        {
            return (Some(days(today, 0, 1)), 1);
        }
        Some("yesterday") => return (Some(days(today - Duration::days(1), 0, 1)), 1),
        Some("the")
            if word(1) == Some("day")
                && word(2) == Some("before")
                && word(3) == Some("yesterday") =>
        {
            return (Some(days(today - Duration::days(2), 0, 1)), 4);
        }
        Some("this") => {
            let start = match word(1) {
                Some("morning" | "afternoon" | "evening") => Some(today),
                Some("week") => Some(week_start(today)),
                Some("weekend") => Some(week_start(today) + Duration::days(5)),
                Some("month") => Some(month_start(today)),
                Some("year") => Some(year_start(today)),
                _ => None,
            };
            if let Some(start) = start {
                return (Some(span(start, now)), 2);
            }
        }
        // "since March", "after 8 May": from then until now. "before June": no time of
        // its own (everything earlier), so the date is passed over.
        Some(relation @ ("since" | "after" | "before" | "until" | "till")) => {
            if let Some((window, used)) = date_expression_at(words, at + 1, now) {
                let window = window
                    .filter(|_| matches!(relation, "since" | "after"))
                    .map(|window| TimeWindow {
                        from: window.from,
                        until: now,
                    });
                return (window, used + 1);
            }
        }
        Some("last" | "past") => {
            if let Some(read) = last(words, at, now) {
                return read;
            }
        }
        Some("in" | "over" | "during" | "within") => {
            // "in the past month", "over the last two weeks": the span up to now, not the
            // calendar month or week before this one ("last month" alone).
            if word(1) == Some("the")
                && matches!(word(2), Some("past" | "last"))
                && let Some((window, used)) = span_back(words, at + 2, now)
            {
                return (window, used + 2);
            }
        }
        _ => {}
    }
    if let Some((count, used)) = count_at(words, at)
        && let Some(unit) = word(used).and_then(Unit::of)
        && word(used + 1) == Some("ago")
    {
        return (Some(ago(now, count, unit)), used + 2);
    }
    if let Some((window, used)) = date_expression_at(words, at, now) {
        return (window, used);
    }
    (None, 1)
}

/// `last ...` / `past ...` at `words[at]`: a named day or period before this one, or the
/// span up to now ("the past two weeks").
fn last(words: &[Word], at: usize, now: DateTime<Utc>) -> Option<(Option<TimeWindow>, usize)> {
    let word = |offset: usize| words.get(at + offset).map(|word| word.lower.as_ref());
    let today = day_start(now);
    let calendar = word(0) == Some("last");
    if calendar {
        if let Some(day) = word(1).and_then(weekday) {
            // The latest such day before today.
            let back =
                (today.weekday().num_days_from_monday() + 7 - day.num_days_from_monday() - 1) % 7
                    + 1;
            return Some((Some(days(today - Duration::days(i64::from(back)), 1, 1)), 2));
        }
        let period = match word(1) {
            Some("night") => Some(days(today - Duration::days(1), 0, 1)),
            Some("weekend") => {
                // The latest Saturday and Sunday before today.
                let back = (today.weekday().num_days_from_monday() + 7 - 5 - 1) % 7 + 1;
                let saturday = today - Duration::days(i64::from(back));
                Some(days(saturday, 1, 2))
            }
            Some("week") => {
                let start = week_start(today) - Duration::days(7);
                Some(days(start, 1, 7))
            }
            Some("month") => {
                let end = month_start(today);
                let start = end.checked_sub_months(Months::new(1))?;
                Some(widen(start, end, Duration::days(3)))
            }
            Some("year") => {
                let end = year_start(today);
                let start = end.checked_sub_months(Months::new(12))?;
                Some(widen(start, end, Duration::days(7)))
            }
            _ => None,
        };
        if let Some(period) = period {
            return Some((Some(period), 2));
        }
    }
    span_back(words, at, now)
}

/// `last ...` / `past ...` at `words[at]` read as the span up to now: "the past week", "the
/// last three days", "over the last month".
fn span_back(words: &[Word], at: usize, now: DateTime<Utc>) -> Option<(Option<TimeWindow>, usize)> {
    let word = |offset: usize| words.get(at + offset).map(|word| word.lower.as_ref());
    let (count, used) = match count_at(words, at + 1) {
        Some((count, used)) => (count, used),
        None => (1.0, 0),
    };
    let unit = word(1 + used).and_then(Unit::of)?;
    let start = now - unit.times(count);
    Some((Some(span(start - Duration::days(1), now)), 2 + used))
}

/// A unit of a counted span.
#[derive(Clone, Copy, Debug)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

impl Unit {
    fn of(word: &str) -> Option<Self> {
        match word {
            "day" | "days" => Some(Self::Day),
            "week" | "weeks" => Some(Self::Week),
            "month" | "months" => Some(Self::Month),
            "year" | "years" => Some(Self::Year),
            _ => None,
        }
    }

    /// `count` of this unit (months of 30.44 days, years of 365.25).
    fn times(self, count: f64) -> Duration {
        let days = match self {
            Self::Day => 1.0,
            Self::Week => 7.0,
            Self::Month => 30.44,
            Self::Year => 365.25,
        };
        Duration::seconds((count * days * 86_400.0) as i64)
    }
}

/// `count` units before `now`, widened by half a unit and a quarter of the span on each
/// side, and by a day at least.
fn ago(now: DateTime<Utc>, count: f64, unit: Unit) -> TimeWindow {
    let center = now - unit.times(count);
    let slack = (unit.times(0.5) + unit.times(count * 0.25)).max(Duration::days(1));
    TimeWindow {
        from: center - slack,
        until: center + slack,
    }
}

/// A count at `words[at]` ("3", "three", "a", "a couple of", "a few", "several"), and how
/// many words it took. Vague counts are their usual value.
fn count_at(words: &[Word], at: usize) -> Option<(f64, usize)> {
    let word = |offset: usize| words.get(at + offset).map(|word| word.lower.as_ref());
    let first = word(0)?;
    if let Ok(number) = first.parse::<u32>() {
        return (1..=1000)
            .contains(&number)
            .then_some((f64::from(number), 1));
    }
    let (count, used) = match (first, word(1), word(2)) {
        ("a" | "an", Some("couple"), Some("of")) => (2.0, 3),
        ("a", Some("couple"), _) => (2.0, 2),
        ("couple", Some("of"), _) => (2.0, 2),
        ("a", Some("few"), _) => (3.0, 2),
        ("few", ..) => (3.0, 1),
        ("several", ..) => (4.0, 1),
        ("a" | "an" | "one", ..) => (1.0, 1),
        ("two", ..) => (2.0, 1),
        ("three", ..) => (3.0, 1),
        ("four", ..) => (4.0, 1),
        ("five", ..) => (5.0, 1),
        ("six", ..) => (6.0, 1),
        ("seven", ..) => (7.0, 1),
        ("eight", ..) => (8.0, 1),
        ("nine", ..) => (9.0, 1),
        ("ten", ..) => (10.0, 1),
        ("eleven", ..) => (11.0, 1),
        ("twelve", ..) => (12.0, 1),
        _ => return None,
    };
    Some((count, used))
}

fn weekday(word: &str) -> Option<Weekday> {
    match word {
        "monday" => Some(Weekday::Mon),
        "tuesday" => Some(Weekday::Tue),
        "wednesday" => Some(Weekday::Wed),
        "thursday" => Some(Weekday::Thu),
        "friday" => Some(Weekday::Fri),
        "saturday" => Some(Weekday::Sat),
        "sunday" => Some(Weekday::Sun),
        _ => None,
    }
}

/// The month a word names (1 to 12): its full name, or its abbreviation.
fn month(word: &str) -> Option<u32> {
    month_of(word.as_bytes())
}

/// [`month`] of a word's bytes: a match, which compiles to a switch on the length, not a
/// walk over every name (it is asked of every word of the texts a recall reads).
fn month_of(word: &[u8]) -> Option<u32> {
    Some(match word {
        b"january" | b"jan" => 1,
        b"february" | b"feb" => 2,
        b"march" | b"mar" => 3,
        b"april" | b"apr" => 4,
        b"may" => 5,
        b"june" | b"jun" => 6,
        b"july" | b"jul" => 7,
        b"august" | b"aug" => 8,
        b"september" | b"sep" | b"sept" => 9,
        b"october" | b"oct" => 10,
        b"november" | b"nov" => 11,
        b"december" | b"dec" => 12,
        _ => return None,
    })
}

/// A day of the month, written `8`, `8th`, `1st`, `22nd`, `3rd`.
fn day_of_month(word: &str) -> Option<u32> {
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    let day: u32 = digits.parse().ok()?;
    (1..=31).contains(&day).then_some(day)
}

/// A year, written with four digits from 1900 to 2199.
fn year(word: &str) -> Option<i32> {
    let year: i32 = word.parse().ok()?;
    (word.len() == 4 && (1900..2200).contains(&year)).then_some(year)
}

/// A date at `words[at]` that has begun by `now` ([`date_expression_at`] with a window).
fn date_at(words: &[Word], at: usize, now: DateTime<Utc>) -> Option<(TimeWindow, usize)> {
    let (window, used) = date_expression_at(words, at, now)?;
    Some((window?, used))
}

/// A date at `words[at]`: `2023-12-08` or `2023/12/08`, `8 December [2023]`,
/// `December 8[th] [2023]`, `December 2023`, `in June`, and how many words it takes. A date
/// without a year is the last one not after `now`; one with a year that begins after `now`
/// names no time (its window `None`, its words still taken: "10 March 2023" is not read as
/// "March 2023"). The check is made on the date itself, as its window is widened around it.
fn date_expression_at(
    words: &[Word],
    at: usize,
    now: DateTime<Utc>,
) -> Option<(Option<TimeWindow>, usize)> {
    let word = |offset: usize| words.get(at + offset).map(|word| word.lower.as_ref());
    let first = word(0)?;
    let begun = |date: NaiveDate| (at_midnight(date) <= now).then_some(date);
    if let Some(date) = iso_date(first) {
        return Some((begun(date).map(|date| days(at_midnight(date), 1, 1)), 1));
    }
    // `8 December [2023]`
    if let Some(day) = day_of_month(first)
        && let Some(month) = word(1).and_then(month)
    {
        let (year, used) = match word(2).and_then(year) {
            Some(year) => (Some(year), 3),
            None => (None, 2),
        };
        let date = dated(year, month, day, now)?;
        return Some((begun(date).map(|date| days(at_midnight(date), 1, 1)), used));
    }
    // A year alone, after "in", "during" or "since".
    if let Some(year) = year(first) {
        let after = at > 0 && matches!(words[at - 1].lower.as_ref(), "in" | "during" | "since");
        let start = NaiveDate::from_ymd_opt(year, 1, 1)?;
        let end = NaiveDate::from_ymd_opt(year + 1, 1, 1)?;
        return after.then(|| {
            (
                begun(start)
                    .map(|start| widen(at_midnight(start), at_midnight(end), Duration::days(7))),
                1,
            )
        });
    }
    let month = month(first)?;
    if let Some(day) = word(1).and_then(day_of_month) {
        let (year, used) = match word(2).and_then(year) {
            Some(year) => (Some(year), 3),
            None => (None, 2),
        };
        let date = dated(year, month, day, now)?;
        return Some((begun(date).map(|date| days(at_midnight(date), 1, 1)), used));
    }
    if let Some(year) = word(1).and_then(year) {
        let start = NaiveDate::from_ymd_opt(year, month, 1)?;
        let end = start.checked_add_months(Months::new(1))?;
        return Some((
            begun(start)
                .map(|start| widen(at_midnight(start), at_midnight(end), Duration::days(1))),
            2,
        ));
    }
    // A month alone is a date after "in", "during", ..., or after "and" or "to" that follow
    // another month ("in January and March"); "may" only written "May".
    let before = |back: usize| {
        at.checked_sub(back)
            .and_then(|at| words.get(at))
            .map(|word| word.lower.as_ref())
    };
    let preceded = matches!(
        before(1),
        Some("in" | "during" | "early" | "late" | "mid" | "since" | "of")
    ) || (matches!(before(1), Some("and" | "or" | "to" | "through" | "until"))
        && before(2).and_then(crate::when::month).is_some());
    if !preceded || (first == "may" && !words[at].capital) {
        return None;
    }
    // The last such month that has begun.
    let mut year = now.year();
    if month > now.month() {
        year -= 1;
    }
    let start = NaiveDate::from_ymd_opt(year, month, 1)?;
    let end = start.checked_add_months(Months::new(1))?;
    Some((
        Some(widen(
            at_midnight(start),
            at_midnight(end),
            Duration::days(1),
        )),
        1,
    ))
}

/// `yyyy-mm-dd` or `yyyy/mm/dd`.
fn iso_date(word: &str) -> Option<NaiveDate> {
    let mut parts = word.split(['-', '/']);
    let year = year(parts.next()?)?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    NaiveDate::from_ymd_opt(year, month, day)
}

/// The date with this month and day in `year`, or, without one, the last not after `now`
/// (for 29 February, that of the last leap year: up to eight years back, past a century
/// that is not one).
fn dated(year: Option<i32>, month: u32, day: u32, now: DateTime<Utc>) -> Option<NaiveDate> {
    match year {
        Some(year) => NaiveDate::from_ymd_opt(year, month, day),
        None => {
            let today = now.date_naive();
            (0..=8)
                .filter_map(|back| NaiveDate::from_ymd_opt(now.year() - back, month, day))
                .find(|date| *date <= today)
        }
    }
}

fn at_midnight(date: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&date.and_time(chrono::NaiveTime::MIN))
}

fn day_start(now: DateTime<Utc>) -> DateTime<Utc> {
    at_midnight(now.date_naive())
}

fn week_start(day: DateTime<Utc>) -> DateTime<Utc> {
    day - Duration::days(i64::from(day.weekday().num_days_from_monday()))
}

fn month_start(day: DateTime<Utc>) -> DateTime<Utc> {
    day.with_day(1).unwrap_or(day)
}

fn year_start(day: DateTime<Utc>) -> DateTime<Utc> {
    day.with_ordinal(1).unwrap_or(day)
}

/// `length` days from `start`, widened by `slack` days on each side.
fn days(start: DateTime<Utc>, slack: i64, length: i64) -> TimeWindow {
    TimeWindow {
        from: start - Duration::days(slack),
        until: start + Duration::days(length + slack) - Duration::microseconds(1),
    }
}

fn widen(start: DateTime<Utc>, end: DateTime<Utc>, slack: Duration) -> TimeWindow {
    TimeWindow {
        from: start - slack,
        until: end + slack - Duration::microseconds(1),
    }
}

fn span(from: DateTime<Utc>, now: DateTime<Utc>) -> TimeWindow {
    TimeWindow { from, until: now }
}

#[cfg(test)]
mod tests;
