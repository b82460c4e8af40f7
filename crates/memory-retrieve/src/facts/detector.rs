//! The deterministic conflict detector: two statements that say nearly the same words and
//! differ only in a value.

use std::sync::Arc;

use async_trait::async_trait;
use foldhash::HashSet;
use memory_core::{MemoryItem, Result};

use super::keys::{
    Key, Vocabulary, for_each_gap_and_word, for_each_raw_word, is_negation_key, is_word_char,
};
use super::{Conflict, ConflictDetector};

/// The deterministic conflict detector: two statements conflict when they say nearly the
/// same words and differ only in a value: a number or a date, a negation, or one named
/// value (a capitalised word that is not the first of its sentence).
///
/// Words are compared as the shared analyzer stems them, without its stop words (negations
/// are kept); a transcript line's date note and speaker label are not part of the
/// statement. A pair is considered only when both texts have from
/// [`min_words`](Self::min_words) to [`max_words`](Self::max_words) words (long passages
/// restate and hedge too much for word differences to mean a contradiction), at most [`max_changed`](Self::max_changed) words
/// differ on each side, and they share at least as many words as either side changed.
/// Then they conflict when one negates what the other states (nothing else changed but one
/// word), or when one value replaces one value (a name of two words changing is another
/// subject) with at most one other word changed, unless a value both share comes after the
/// changed one in both (then the change is whom the statement is about).
#[derive(Clone, Debug, PartialEq)]
pub struct RuleConflictDetector {
    /// Shortest text compared, in words (stop words included). Default 3: greetings and
    /// exclamations ("Bye Joanna!") state no fact.
    pub min_words: usize,
    /// Longest text compared, in words. Default 40.
    pub max_words: usize,
    /// Most differing words on each side. Default 3.
    pub max_changed: usize,
}

impl Default for RuleConflictDetector {
    fn default() -> Self {
        Self {
            min_words: 3,
            max_words: 40,
            max_changed: 3,
        }
    }
}

/// Month names in order, then day names (the enricher reads the first twelve as months).
pub(crate) const MONTHS_AND_DAYS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "yesterday",
    "today",
    "tomorrow",
];

/// One word of a statement: its comparison key (the analyzer's stem, or the negation
/// itself; `None` for a stop word), the word as written, and whether it starts a sentence
/// (what [`Word::value`] needs besides the word).
#[derive(Debug)]
struct Word<'t> {
    key: Option<Key>,
    raw: &'t str,
    sentence_start: bool,
}

impl Word<'_> {
    /// Whether the word names a value: a number, a month or day, or a capitalised word
    /// that does not start a sentence. Asked only of the few words that differ between
    /// two statements, not of every word read.
    fn value(&self) -> bool {
        let raw = self.raw;
        raw.bytes().any(|byte| byte.is_ascii_digit())
            || MONTHS_AND_DAYS
                .iter()
                .any(|name| raw.eq_ignore_ascii_case(name))
            || (raw.chars().next().is_some_and(char::is_uppercase)
                && !self.sentence_start
                && raw != "I")
    }
}

/// `text` without what introduces a transcript line rather than states something: a
/// leading bracketed or parenthesised note (`[3 May 2023]`) and a speaker label (`Ann:`,
/// `Ann Lee:`, up to three words before a colon).
fn statement(text: &str) -> &str {
    let mut rest = text.trim_start();
    for (open, close) in [('[', ']'), ('(', ')')] {
        if rest.starts_with(open)
            && let Some(end) = rest.find(close)
        {
            rest = rest[end + close.len_utf8()..].trim_start();
        }
    }
    // A label ends within 48 bytes: the colon is looked for there only.
    let head = &rest.as_bytes()[..rest.len().min(49)];
    if let Some(colon) = head.iter().position(|&byte| byte == b':')
        && rest[..colon].split_whitespace().count() <= 3
        && rest[..colon]
            .chars()
            .all(|c| is_word_char(c) || c.is_whitespace() || c == '.')
        && !rest[..colon].chars().any(|c| c.is_ascii_digit())
    {
        rest = rest[colon + 1..].trim_start();
    }
    rest
}

/// Calls `visit` with each word of `text`'s statement (see [`statement`]; runs of letters,
/// digits and apostrophes) and whether it starts a sentence, until `visit` returns `false`.
fn for_each_word<'t>(text: &'t str, mut visit: impl FnMut(&'t str, bool) -> bool) {
    let mut sentence_start = true;
    for_each_gap_and_word(statement(text), |gap, raw| {
        if gap.contains(['.', '!', '?', '\n']) {
            sentence_start = true;
        }
        let starts = sentence_start;
        sentence_start = false;
        visit(raw, starts)
    });
}

/// How many words `text`'s statement has (as [`for_each_word`] reads them), counting no
/// further than `limit + 1`: enough to know it is too long, without a key looked up.
pub(super) fn word_count(text: &str, limit: usize) -> usize {
    let mut count = 0;
    for_each_raw_word(statement(text), |_| {
        count += 1;
        count <= limit
    });
    count
}

/// The words of `text`'s statement with their keys, at most `limit + 1` of them (enough to
/// know the text is too long).
fn words<'t>(text: &'t str, limit: usize, vocabulary: &mut Vocabulary) -> Vec<Word<'t>> {
    let mut out = Vec::new();
    vocabulary.with(|keys| {
        for_each_word(text, |raw, sentence_start| {
            out.push(Word {
                key: keys.key(raw),
                raw,
                sentence_start,
            });
            out.len() <= limit
        });
    });
    out
}

impl RuleConflictDetector {
    /// Why `new` contradicts `old`, if it does.
    pub fn explain(&self, new: &str, old: &str) -> Option<String> {
        let mut vocabulary = Vocabulary;
        let new_words = words(new, self.max_words, &mut vocabulary);
        if !(self.min_words..=self.max_words).contains(&new_words.len()) {
            return None;
        }
        self.explain_words(&new_words, &keys_of(&new_words), old, &mut vocabulary)
    }

    /// [`explain`](Self::explain) with the new statement's words and their keys read once.
    fn explain_words(
        &self,
        new_words: &[Word<'_>],
        a: &HashSet<Key>,
        old: &str,
        vocabulary: &mut Vocabulary,
    ) -> Option<String> {
        // Read the old statement, and stop as soon as too many words differ: most
        // candidates are not restatements.
        let mut old_words: Vec<Word> = Vec::with_capacity(16);
        let mut unmatched: Vec<Key> = Vec::with_capacity(self.max_changed + 1);
        let mut too_different = false;
        vocabulary.with(|keys| {
            for_each_word(old, |raw, sentence_start| {
                let key = keys.key(raw);
                if let Some(key) = key
                    && !a.contains(&key)
                    && !unmatched.contains(&key)
                {
                    unmatched.push(key);
                }
                old_words.push(Word {
                    key,
                    raw,
                    sentence_start,
                });
                too_different =
                    unmatched.len() > self.max_changed || old_words.len() > self.max_words;
                !too_different
            });
        });
        if too_different || old_words.len() < self.min_words {
            return None;
        }
        let b = keys_of(&old_words);
        let shared = a.intersection(&b).count();
        let only_new: Vec<Key> = a.difference(&b).copied().collect();
        let only_old: Vec<Key> = b.difference(a).copied().collect();
        let changed = only_new.len().max(only_old.len());
        if changed == 0 || changed > self.max_changed || shared < changed {
            return None;
        }
        let negation = |list: &[Key]| list.iter().any(|key| is_negation_key(*key));
        if negation(&only_new) != negation(&only_old) && only_new.len() + only_old.len() <= 2 {
            return Some("one statement negates the other".to_owned());
        }
        // The first position of a value word with this key.
        let value_at = |list: &[Word<'_>], key: Key| {
            list.iter()
                .position(|word| word.key == Some(key) && word.value())
        };
        let new_values: Vec<usize> = only_new
            .iter()
            .filter_map(|key| value_at(new_words, *key))
            .collect();
        let old_values: Vec<usize> = only_old
            .iter()
            .filter_map(|key| value_at(&old_words, *key))
            .collect();
        let plain = only_new.len() - new_values.len() + only_old.len() - old_values.len();
        // One value for another (a name of several words is several changes: another
        // subject, not another value), and at most one other word.
        let ([new_at], [old_at]) = (&new_values[..], &old_values[..]) else {
            return None;
        };
        if plain > 1 {
            return None;
        }
        // A named value both statements share after the changed one means the change is
        // whom the statement is about ("Hugo lives in Lisbon" / "Chloe lives in Lisbon").
        let about_another = a.intersection(&b).any(|key| {
            matches!(
                (value_at(new_words, *key), value_at(&old_words, *key)),
                (Some(n), Some(o)) if n > *new_at && o > *old_at
            )
        });
        if about_another {
            return None;
        }
        Some(format!(
            "the same statement with another value: {:?} became {:?}",
            old_words[*old_at].raw, new_words[*new_at].raw
        ))
    }
}

/// The distinct keys of `words`.
fn keys_of(words: &[Word<'_>]) -> HashSet<Key> {
    words.iter().filter_map(|word| word.key).collect()
}

#[async_trait]
impl ConflictDetector for RuleConflictDetector {
    async fn detect(
        &self,
        new: &MemoryItem,
        candidates: &[Arc<MemoryItem>],
    ) -> Result<Vec<Conflict>> {
        // A new statement of the right length only, counted before any word is looked up.
        if !(self.min_words..=self.max_words).contains(&word_count(&new.content, self.max_words)) {
            return Ok(Vec::new());
        }
        let mut vocabulary = Vocabulary;
        let new_words = words(&new.content, self.max_words, &mut vocabulary);
        let new_keys = keys_of(&new_words);
        // A candidate's length is checked as it is read: most stop at their first few
        // words, when too many differ.
        Ok(candidates
            .iter()
            .filter_map(|old| {
                self.explain_words(&new_words, &new_keys, &old.content, &mut vocabulary)
                    .map(|reason| Conflict {
                        id: old.id.clone(),
                        reason,
                    })
            })
            .collect())
    }
}
