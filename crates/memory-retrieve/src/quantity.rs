//! Whether a question asks for a quantity ([`asks_for_quantity`]; English), and whether a
//! text states one: the answer to "how many" holds a number.

/// The phrases that ask for a quantity, lowercase.
const ASKING_PHRASES: [&str; 4] = ["how many", "how much", "how often", "number of"];

/// Whether `query` asks for a quantity: "how many", "how much", "how often" or "number
/// of", in any case, starting a word. Its answer states a number, so a recall prefers, at
/// the top, the result that holds one
/// ([`RetrieverConfig::head_quantity_bonus`](crate::RetrieverConfig::head_quantity_bonus)).
///
/// ```
/// use memory_retrieve::asks_for_quantity;
/// assert!(asks_for_quantity("How many women are on Rachel's team?"));
/// assert!(asks_for_quantity("What is the total number of courses I've completed?"));
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
                let end = at + phrase.len();
                bytes
                    .get(at..end)
                    .is_some_and(|word| word.eq_ignore_ascii_case(phrase.as_bytes()))
                    && bytes
                        .get(end)
                        .is_none_or(|next| !next.is_ascii_alphanumeric())
            })
    })
}

/// Whether `text` states a number (an ASCII digit) in its own words: a leading stamp in
/// brackets (the date the dialogue API writes before a turn, `[8 May 2023] Ann: ...`) does
/// not count.
pub(crate) fn holds_number(text: &str) -> bool {
    let own = match text.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(text, |(_, own)| own),
        None => text,
    };
    own.bytes().any(|byte| byte.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_in_the_stamp_is_not_one_the_text_states() {
        assert!(!holds_number("[8 May 2023] Ann: half of them are women"));
        assert!(holds_number("[8 May 2023] Ann: a team of 10 people"));
        assert!(holds_number("I paid $2,500"));
        assert!(!holds_number("no numbers here"));
        assert!(
            holds_number("[unclosed 2023 stamp"),
            "no stamp: the whole text counts"
        );
        assert!(holds_number("[2023] 3 runs"));
        assert!(!holds_number(""));
    }

    #[test]
    fn quantity_phrases_are_read_at_word_starts_in_any_case() {
        for asks in [
            "HOW MANY eggs?",
            "how much did it cost",
            "How often do I play tennis?",
            "the number of books",
            "how many",
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
        ] {
            assert!(!asks_for_quantity(not), "{not}");
        }
    }
}
