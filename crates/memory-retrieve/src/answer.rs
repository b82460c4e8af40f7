//! What kind of answer a question asks for, in English, and whether a text states one: the
//! answer to "how many" holds a number ([`asks_for_quantity`], [`holds_number`]), the
//! answer to "when" names a time ([`asks_for_time`], [`names_time`]). A recall prefers, at
//! the top, the result that states what the question asks for
//! ([`RetrieverConfig::head_answer_bonus`](crate::RetrieverConfig::head_answer_bonus)).

use chrono::{DateTime, Utc};

/// What a question asks for, when it is a kind of answer a text can be seen to state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Asks {
    /// Nothing read.
    #[default]
    Nothing,
    /// A quantity: "how many", "how much" ([`asks_for_quantity`]).
    Quantity,
    /// A time: "when", "what year" ([`asks_for_time`]).
    Time,
}

impl Asks {
    /// What `query` asks for: a quantity before a time ("how many days ago ..." wants the
    /// number).
    pub(crate) fn of(query: &str) -> Self {
        if asks_for_quantity(query) {
            Self::Quantity
        } else if asks_for_time(query) {
            Self::Time
        } else {
            Self::Nothing
        }
    }

    /// Whether `text`, said at `at`, states what is asked for.
    pub(crate) fn answered_by(self, text: &str, at: DateTime<Utc>) -> bool {
        match self {
            Self::Nothing => false,
            Self::Quantity => holds_number(text),
            Self::Time => names_time(text, at),
        }
    }
}

/// The phrases that ask for a quantity, lowercase.
const ASKING_PHRASES: [&str; 5] = ["how many", "how much", "how often", "how long", "number of"];

/// Whether `word` (lowercase) states a quantity without a digit: "three years", "a couple
/// of times", "twice a week", "every other week", "daily" (a frequency answers "how
/// often").
fn is_number_word(word: &str) -> bool {
    matches!(
        word,
        "one"
            | "two"
            | "three"
            | "four"
            | "five"
            | "six"
            | "seven"
            | "eight"
            | "nine"
            | "ten"
            | "eleven"
            | "twelve"
            | "fifteen"
            | "twenty"
            | "thirty"
            | "forty"
            | "fifty"
            | "sixty"
            | "hundred"
            | "thousand"
            | "million"
            | "dozen"
            | "dozens"
            | "couple"
            | "few"
            | "several"
            | "half"
            | "once"
            | "twice"
            | "thrice"
            | "every"
            | "daily"
            | "nightly"
            | "weekly"
            | "biweekly"
            | "monthly"
            | "yearly"
            | "annually"
    )
}

/// Whether `query` asks for a quantity: "how many", "how much", "how often", "how long"
/// (not "how long ago", which asks for a time) or "number of", in any case, starting a
/// word. Its answer states a number, so a recall prefers, at the top, the result that holds
/// one
/// ([`RetrieverConfig::head_answer_bonus`](crate::RetrieverConfig::head_answer_bonus)).
///
/// ```
/// use memory_retrieve::asks_for_quantity;
/// assert!(asks_for_quantity("How many women are on Rachel's team?"));
/// assert!(asks_for_quantity("What is the total number of courses I've completed?"));
/// assert!(asks_for_quantity("How long have I been collecting cameras?"));
/// assert!(!asks_for_quantity("How long ago did I start?"));
/// assert!(!asks_for_quantity("Which courses did I complete?"));
/// assert!(!asks_for_quantity("Somehow muchness is not a quantity"));
/// ```
pub fn asks_for_quantity(query: &str) -> bool {
    let bytes = query.as_bytes();
    // One pass: only a word starting with `h` or `n` can start a phrase.
    (0..bytes.len()).any(|at| {
        matches!(bytes[at] | 0x20, b'h' | b'n')
            && (at == 0 || !bytes[at - 1].is_ascii_alphanumeric())
            && ASKING_PHRASES.iter().any(|phrase| {
                phrase_at(bytes, at, phrase)
                    && !(*phrase == "how long" && after_spaces(bytes, at + phrase.len(), "ago"))
            })
    })
}

/// Whether `bytes` hold `word` (lowercase) after the spaces from `at`, in any case, ending
/// a word.
fn after_spaces(bytes: &[u8], at: usize, word: &str) -> bool {
    let spaces = bytes
        .get(at..)
        .map_or(0, |rest| rest.iter().take_while(|b| **b == b' ').count());
    spaces > 0 && phrase_at(bytes, at + spaces, word)
}

/// Whether `bytes` hold `phrase` (lowercase) at `at`, in any case, ending a word.
fn phrase_at(bytes: &[u8], at: usize, phrase: &str) -> bool {
    let end = at + phrase.len();
    bytes
        .get(at..end)
        .is_some_and(|words| words.eq_ignore_ascii_case(phrase.as_bytes()))
        && bytes
            .get(end)
            .is_none_or(|next| !next.is_ascii_alphanumeric())
}

/// The phrases that ask for a time when a sentence opens with them, lowercase.
const TIME_PHRASES: [&str; 10] = [
    "when",
    "what year",
    "which year",
    "what month",
    "which month",
    "what date",
    "which date",
    "what day",
    "which day",
    "how long ago",
];

/// Whether `query` asks for a time: one of its sentences opens with "when", "what year",
/// "which month", "what date", "what day" (or "which" for "what") or "how long ago", in
/// any case. Its answer names a time, so a recall prefers, at the top, the result that
/// names one
/// ([`RetrieverConfig::head_answer_bonus`](crate::RetrieverConfig::head_answer_bonus)).
/// "When" inside a sentence joins a clause ("how did she feel when she won?") and asks for
/// nothing; "what time" asks for the hour, which a reading of dates does not find.
///
/// ```
/// use memory_retrieve::asks_for_time;
/// assert!(asks_for_time("When did Caroline go to the support group?"));
/// assert!(asks_for_time("Thanks. What year did John start surfing?"));
/// assert!(!asks_for_time("How did Joanna feel when someone wrote her a letter?"));
/// assert!(!asks_for_time("Whenever I ask, what do you say?"));
/// ```
pub fn asks_for_time(query: &str) -> bool {
    let bytes = query.as_bytes();
    // A sentence opens after a stop, at its first letter.
    let mut opens = true;
    for (at, &byte) in bytes.iter().enumerate() {
        if matches!(byte, b'.' | b'?' | b'!') {
            opens = true;
        } else if byte.is_ascii_alphanumeric() || !byte.is_ascii() {
            if opens
                && TIME_PHRASES
                    .iter()
                    .any(|phrase| phrase_at(bytes, at, phrase))
            {
                return true;
            }
            opens = false;
        }
    }
    false
}

/// `text` without a leading stamp in brackets (the date the dialogue API writes before a
/// turn, `[8 May 2023] Ann: ...`): the words it states itself.
fn own_words(text: &str) -> &str {
    match text.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(text, |(_, own)| own),
        None => text,
    }
}

/// Whether `text` states a number in its own words, in digits or in words ("three",
/// "a couple", "twice"): a leading stamp in brackets (the date the dialogue API writes
/// before a turn) does not count.
pub(crate) fn holds_number(text: &str) -> bool {
    let own = own_words(text);
    if own.bytes().any(|byte| byte.is_ascii_digit()) {
        return true;
    }
    // Each word of 3 to 8 ASCII letters, lowercased once on the stack.
    let mut lower = [0u8; 8];
    own.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|word| (3..=8).contains(&word.len()))
        .any(|word| {
            let lower = &mut lower[..word.len()];
            for (to, from) in lower.iter_mut().zip(word.bytes()) {
                *to = from.to_ascii_lowercase();
            }
            std::str::from_utf8(lower).is_ok_and(is_number_word)
        })
}

/// Whether `text`, said at `at`, names a time in its own words (a date, "yesterday", "last
/// Saturday", "two weeks ago", "in 2022"; read as the time a question names is,
/// [`time_window`](crate::time_window), against the time it was said): a leading stamp
/// does not count, nor does a time after `at` ("next week").
pub(crate) fn names_time(text: &str, at: DateTime<Utc>) -> bool {
    crate::when::names_a_time(own_words(text), at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_in_the_stamp_is_not_one_the_text_states() {
        assert!(!holds_number("[8 May 2023] Ann: most of them are women"));
        assert!(holds_number("[8 May 2023] Ann: half of them are women"));
        assert!(holds_number("[8 May 2023] Ann: a team of 10 people"));
        assert!(holds_number("I paid $2,500"));
        assert!(!holds_number("no numbers here"));
        assert!(
            holds_number("[unclosed 2023 stamp"),
            "no stamp: the whole text counts"
        );
        assert!(holds_number("[2023] 3 runs"));
        assert!(!holds_number(""));
        for words in [
            "for three months now",
            "[8 May 2023] Ann: a couple of times",
            "TWICE a week",
            "several of them",
            "like we do every other week",
            "I run daily",
        ] {
            assert!(holds_number(words), "{words}");
        }
        for not in [
            "[three] in the stamp only",
            "threesome, someone, everyone, often",
            "a lot of them",
        ] {
            assert!(!holds_number(not), "{not}");
        }
    }

    #[test]
    fn a_time_in_the_stamp_is_not_one_the_text_names() {
        use chrono::TimeZone;
        let at = Utc.with_ymd_and_hms(2023, 5, 8, 12, 0, 0).unwrap();
        for names in [
            "[8 May 2023] Ann: I went to the support group yesterday.",
            "[8 May 2023] Ann: We moved there in 2022",
            "We met last Saturday",
            "It was two weeks ago, on a rainy day",
            "[8 May 2023] Ann: on 1 May 2023 we left",
        ] {
            assert!(names_time(names, at), "{names}");
        }
        for not in [
            "[8 May 2023] Ann: I went to the support group.",
            "[yesterday] the stamp only",
            "We will go next week",
            "",
        ] {
            assert!(!names_time(not, at), "{not}");
        }
        assert_eq!(Asks::of("When did we meet?"), Asks::Time);
        assert_eq!(Asks::of("How many days ago did we meet?"), Asks::Quantity);
        assert_eq!(Asks::of("Where did we meet?"), Asks::Nothing);
        assert!(Asks::Time.answered_by("[8 May 2023] Ann: yesterday", at));
        assert!(!Asks::Quantity.answered_by("[8 May 2023] Ann: yesterday", at));
        assert!(Asks::Quantity.answered_by("a team of 10", at));
        assert!(!Asks::Nothing.answered_by("a team of 10, yesterday", at));
    }

    #[test]
    fn time_phrases_are_read_where_a_sentence_opens_in_any_case() {
        for asks in [
            "When did Caroline go to the support group?",
            "WHEN",
            "  when was it",
            "What year did John start surfing?",
            "which month did Tim plan the trip?",
            "What date is the wedding?",
            "What day did we meet?",
            "How long ago was Caroline's 18th birthday?",
            "I lost my notes. When did we meet?",
            "Right! when, again?",
        ] {
            assert!(asks_for_time(asks), "{asks}");
        }
        for not in [
            "",
            "Who supports Caroline when she has a negative experience?",
            "How did Joanna feel when someone wrote her a letter?",
            "Whenever it rains",
            "What yearly plan did I make?",
            "What time do I get home?",
            "How long was the trip?",
            "Somewhen, maybe",
            "\u{e9}when",
        ] {
            assert!(!asks_for_time(not), "{not}");
        }
    }

    #[test]
    fn any_text_is_read_without_a_panic() {
        use chrono::TimeZone;
        let at = Utc.with_ymd_and_hms(2023, 5, 8, 12, 0, 0).unwrap();
        // Pieces that start, end and break the phrases, in one and several bytes.
        let pieces = [
            "how",
            " ",
            "long",
            "ago",
            "many",
            "When",
            "when",
            ".",
            "?",
            "!",
            "[",
            "]",
            "8",
            "May",
            "2023",
            "yesterday",
            "last",
            "week",
            "é",
            "\u{0}",
            "\u{1F600}",
            "ö",
            "ten",
            "twice",
            "  ",
            "\n",
            "what",
            "year",
            "number",
            "of",
            "-",
            "/",
            "ÄGO",
        ];
        let mut state = 0x9e37_79b9_u32;
        for _ in 0..5000 {
            let mut text = String::new();
            for _ in 0..(state % 13) {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                text.push_str(pieces[state as usize % pieces.len()]);
            }
            state = state.wrapping_add(0x2545_f491);
            let asks = Asks::of(&text);
            assert_eq!(asks == Asks::Quantity, asks_for_quantity(&text), "{text:?}");
            let _ = asks_for_time(&text);
            let _ = holds_number(&text);
            let _ = names_time(&text, at);
            let _ = asks.answered_by(&text, at);
        }
    }

    #[test]
    fn quantity_phrases_are_read_at_word_starts_in_any_case() {
        for asks in [
            "HOW MANY eggs?",
            "how much did it cost",
            "How often do I play tennis?",
            "the number of books",
            "how many",
            "How long have I been collecting cameras?",
            "how long",
            "how long agony lasts",
        ] {
            assert!(asks_for_quantity(asks), "{asks}");
        }
        for not in [
            "",
            "how",
            "somehow many",
            "how manyfold",
            "a numbers ofx",
            "Which one?",
            "How long ago was her birthday?",
            "how long  AGO",
            "how longer",
        ] {
            assert!(!asks_for_quantity(not), "{not}");
        }
        assert_eq!(Asks::of("How long ago was her birthday?"), Asks::Time);
        assert_eq!(Asks::of("How long was the trip?"), Asks::Quantity);
    }
}
