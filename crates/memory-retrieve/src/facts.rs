//! Facts that change, on the write path: duplicates merged, fact keys superseding, and
//! conflicts detected without an LLM.
//!
//! [`Memory::remember_with`](crate::Memory::remember_with) reconciles each new memory with
//! the memories of its namespace that resemble it most: the store's own full-text index is
//! asked for the best [`FactsConfig::candidates`] matches of the four terms of the new text
//! its namespace holds least often, among its sixteen longest (a BM25 self-match, never a
//! scan of the namespace), and those few are compared with the new one:
//!
//! 1. **Duplicates**: the same kind and a [`similarity`] of their analysed terms at least
//!    [`FactsConfig::duplicate_similarity`] (1.0 means the same terms), their contexts too
//!    when both have one. By default the new memory is merged into the stored one
//!    ([`DuplicatePolicy`]).
//! 2. **Fact keys**: a memory with the [fact key](memory_core::MemoryItem::fact_key) of a
//!    current memory supersedes it, unless its source is less credible.
//! 3. **Conflicts**: a [`ConflictDetector`] flags candidates that state something else about
//!    the same thing; [`ConflictPolicy`] decides what a flag does.
//!
//! Conversation messages ([`MemoryKind::ShortTerm`](memory_core::MemoryKind::ShortTerm)) are
//! events, not statements: they are stored as they come.

mod detector;
mod keys;

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::{MemoryError, MemoryItem, Result};
use serde::{Deserialize, Serialize};

pub(crate) use self::detector::MONTHS_AND_DAYS;
pub use self::detector::RuleConflictDetector;
pub(crate) use self::keys::{Prepared, recycle_terms};
use self::keys::{Vocabulary, jaccard};

/// What `remember` does with text its namespace already holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuplicatePolicy {
    /// Store it again as a separate memory.
    KeepBoth,
    /// Keep one memory and count the repetition as a reinforcement: access count plus one,
    /// the larger importance and credibility, the tags of both, the later time as its last
    /// update.
    #[default]
    Merge,
    /// Refuse the write with [`MemoryError::AlreadyExists`] naming the stored memory.
    Reject,
}

/// What a detected conflict does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConflictPolicy {
    /// Link both memories ([`conflicts_with`](MemoryItem::conflicts_with)) and report it;
    /// recall ranks the older below the newer.
    #[default]
    Flag,
    /// The newer memory supersedes the older, as a fact key would (a less credible source
    /// never supersedes a more credible one: that pair is flagged instead).
    SupersedeOlder,
    /// Refuse the write with [`MemoryError::Conflict`].
    Reject,
}

/// How `remember` reconciles a new memory with the stored ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FactsConfig {
    /// What a duplicate does.
    pub duplicates: DuplicatePolicy,
    /// The [`similarity`] from which two memories are duplicates, in `(0, 1]`. Default 0.9:
    /// restatements with a changed stop word or word order merge, a changed value does not
    /// (one changed word in a ten-word statement is 9/11 ≈ 0.82).
    pub duplicate_similarity: f32,
    /// What a detected conflict does.
    pub conflicts: ConflictPolicy,
    /// How many of the most similar stored memories are compared with a new one (the
    /// search's `top_k`); 0 turns duplicate and conflict detection off. Default 4: a
    /// duplicate or a rival holds the new text's rarest terms and ranks at the top; 8 found
    /// no more conflicts on the generated changing-facts set and compared twice the texts
    /// per write.
    pub candidates: usize,
}

impl Default for FactsConfig {
    fn default() -> Self {
        Self {
            duplicates: DuplicatePolicy::Merge,
            duplicate_similarity: 0.9,
            conflicts: ConflictPolicy::Flag,
            candidates: 4,
        }
    }
}

impl FactsConfig {
    /// No reconciliation: every memory is stored as given (fact keys still supersede).
    pub fn off() -> Self {
        Self {
            duplicates: DuplicatePolicy::KeepBoth,
            candidates: 0,
            ..Self::default()
        }
    }

    /// Checks the fields.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `duplicate_similarity` outside `(0, 1]` or
    /// `candidates` over 100.
    pub fn validate(&self) -> Result<()> {
        if !(self.duplicate_similarity > 0.0 && self.duplicate_similarity <= 1.0) {
            return Err(MemoryError::invalid(
                "duplicate_similarity",
                "must be in (0, 1]",
            ));
        }
        if self.candidates > 100 {
            return Err(MemoryError::invalid("candidates", "at most 100"));
        }
        Ok(())
    }
}

/// What `remember` did with a new memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Stored as a new memory.
    Added,
    /// A duplicate of a stored memory, merged into it: nothing new was stored.
    Merged {
        /// The memory it was merged into.
        into: String,
    },
    /// Stored, and it replaced these memories (now ended, kept as history).
    Superseded {
        /// The memories it superseded.
        old: Vec<String>,
    },
    /// Stored as history: a version of the same fact that starts later was stored already,
    /// so the new one is superseded by it at once (a replay of older statements).
    Outdated {
        /// The later version that supersedes it.
        by: String,
    },
}

/// A stored memory that a new one contradicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conflict {
    /// The stored memory's id.
    pub id: String,
    /// Why the detector flagged it.
    pub reason: String,
}

/// The result of [`Memory::remember_with`](crate::Memory::remember_with).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Remembered {
    /// The id the text lives under: the new memory's, or the one it was merged into.
    pub id: String,
    /// What happened.
    pub outcome: Outcome,
    /// The stored memories found to contradict it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
}

/// Decides which stored memories a new one contradicts. The default is
/// [`RuleConflictDetector`]; an LLM judge can implement it too.
#[async_trait]
pub trait ConflictDetector: Send + Sync + Debug {
    /// The candidates (the stored memories most similar to `new`, best first, duplicates
    /// and memories of the same fact key already set apart) that `new` contradicts.
    ///
    /// # Errors
    /// Whatever the detector's backend reports; the write fails with it and stores nothing.
    async fn detect(
        &self,
        new: &MemoryItem,
        candidates: &[Arc<MemoryItem>],
    ) -> Result<Vec<Conflict>>;
}

/// The similarity of two texts: the Jaccard index of their sets of analysed terms (stems,
/// stop words dropped), in `[0, 1]`; 1 for the same terms, whatever their order. Two texts
/// without a searchable term are similar (1) only when both are empty of terms.
pub fn similarity(a: &str, b: &str) -> f32 {
    let mut vocabulary = Vocabulary;
    jaccard(&vocabulary.terms(a), &vocabulary.terms(b))
}

#[cfg(test)]
mod tests {
    use super::detector::word_count;
    use super::keys::{
        SPARE_TERM_BYTES, SPARE_TERMS, for_each_gap_and_word, for_each_raw_word, is_negation_key,
        key_hash, owned_terms,
    };
    use super::*;

    #[test]
    fn similarity_is_term_overlap() {
        assert_eq!(similarity("The user likes tea", "the user LIKES tea!"), 1.0);
        assert_eq!(similarity("likes tea", "tea, likes"), 1.0);
        assert!(similarity("the user likes green tea", "the user likes black coffee") < 0.5);
        assert_eq!(similarity("", "..."), 1.0);
        assert_eq!(similarity("tea", ""), 0.0);
    }

    #[test]
    fn recycled_term_strings_are_reused_with_their_text_replaced_and_bounded_in_number() {
        // Fresh strings while none are spare.
        let first = owned_terms(["berlin", "paris"].into_iter());
        assert_eq!(first, ["berlin", "paris"]);
        let pointers: Vec<*const u8> = first.iter().map(|term| term.as_ptr()).collect();
        recycle_terms(first);
        // The next search writes its terms into them: no stale text is left behind.
        let second = owned_terms(["rome", "lisbon", "oslo"].into_iter());
        assert_eq!(second, ["rome", "lisbon", "oslo"]);
        let reused = second
            .iter()
            .filter(|term| pointers.contains(&term.as_ptr()))
            .count();
        assert_eq!(reused, 2, "both spare strings are written into");
        // At most SPARE_TERMS are kept, none holding more than SPARE_TERM_BYTES.
        let many: Vec<String> = (0..SPARE_TERMS * 2).map(|i| format!("t{i}")).collect();
        recycle_terms(many);
        recycle_terms(vec!["x".repeat(SPARE_TERM_BYTES + 36)]);
        let words: Vec<String> = (0..SPARE_TERMS * 2).map(|i| format!("w{i}")).collect();
        let taken = owned_terms(words.iter().map(String::as_str));
        assert_eq!(taken, words);
        assert!(taken.iter().all(|term| term.capacity() <= SPARE_TERM_BYTES));
    }

    #[test]
    fn ascii_and_unicode_text_split_into_the_same_words() {
        fn split(text: &str) -> Vec<(String, String)> {
            let mut out = Vec::new();
            for_each_gap_and_word(text, |gap, word| {
                out.push((gap.to_owned(), word.to_owned()));
                true
            });
            out
        }
        for text in [
            "The user lives in Berlin.",
            "  [3 May 2023] Ann: don't stop -- it's 9am!\nNext line",
            "",
            "...",
            "trailing word",
        ] {
            // A non-ASCII word at the end sends the text down the general path.
            let mut unicode = split(&format!("{text} é"));
            assert_eq!(unicode.pop().map(|(_, word)| word), Some("é".to_owned()));
            assert_eq!(split(text), unicode, "{text:?}");
        }
        let mut count = 0;
        for_each_raw_word("one two three four", |_| {
            count += 1;
            count < 2
        });
        assert_eq!(count, 2, "reading stops when the visitor says so");
        assert_eq!(word_count("Ann: one two three four five", 3), 4);
    }

    #[test]
    fn a_conflict_names_the_values_as_written() {
        let reason = RuleConflictDetector::default()
            .explain("The user lives in Berlin.", "The user lives in Paris.")
            .unwrap_or_default();
        assert!(reason.contains("\"Paris\" became \"Berlin\""), "{reason}");
    }

    #[test]
    fn keys_mark_negations_and_hash_alike_on_every_thread() {
        assert!(is_negation_key(key_hash("not")));
        assert!(is_negation_key(key_hash("don't")));
        assert!(!is_negation_key(key_hash("berlin")));
        let here = key_hash("berlin");
        let there = std::thread::spawn(|| key_hash("berlin"))
            .join()
            .unwrap_or_default();
        assert_eq!(here, there);
        let mut vocabulary = Vocabulary;
        let terms = vocabulary.terms_with_text("I do not eat meat, NOT ever.", |_, _| ());
        assert_eq!(terms.negations, 2);
        // The typographic apostrophe phones and models write is a negation too.
        let terms = vocabulary.terms_with_text("I don’t eat meat. She DOESN’T either.", |_, _| ());
        assert_eq!(terms.negations, 2);
    }

    #[test]
    fn a_negation_with_a_typographic_apostrophe_conflicts_and_is_no_duplicate() {
        let detector = RuleConflictDetector::default();
        let (old, new) = (
            "The user likes black coffee in the morning",
            "The user doesn’t like black coffee in the morning",
        );
        assert!(detector.explain(new, old).is_some(), "{new:?} vs {old:?}");
        assert!(similarity(new, old) < 1.0, "{new:?} vs {old:?}");
    }

    #[test]
    fn values_numbers_dates_and_negations_conflict() {
        let detector = RuleConflictDetector::default();
        for (new, old) in [
            ("The user lives in Berlin.", "The user lives in Paris."),
            ("My flight leaves at 9am", "My flight leaves at 7am"),
            ("The meeting is on Friday", "The meeting is on Monday"),
            ("Alice does not eat meat", "Alice eats meat"),
            ("The team has 12 engineers", "The team has 9 engineers"),
            (
                "[8 May 2023] Ann: Alice moved to Berlin",
                "[1 May 2023] Ann: Alice moved to Paris",
            ),
        ] {
            assert!(
                detector.explain(new, old).is_some(),
                "{new:?} vs {old:?} should conflict"
            );
        }
    }

    #[test]
    fn different_topics_and_restatements_do_not_conflict() {
        let detector = RuleConflictDetector::default();
        for (new, old) in [
            ("The user lives in Berlin.", "The user lives in Berlin."),
            (
                "The user lives in Berlin",
                "The user loves Berlin techno clubs",
            ),
            ("Paris is lovely in spring.", "Berlin is lovely in spring."),
            ("I went hiking with Mel", "I went swimming yesterday"),
            ("Thanks!", "Thanks, Mel!"),
            (
                "These days Hugo K. is living in Lisbon",
                "These days Chloe L. is living in Lisbon",
            ),
            (
                "These days Hugo is living in Lisbon",
                "These days Chloe is living in Lisbon",
            ),
            (
                "[3 May 2023] Ann: Can't wait too!",
                "[4 May 2023] Bob: Agreed!",
            ),
            (
                "[3 May 2023] Ann: Bye Joanna!",
                "[5 May 2023] Ann: Bye Nate!",
            ),
            ("The user likes green tea", "The user likes black tea"),
        ] {
            assert_eq!(
                detector.explain(new, old),
                None,
                "{new:?} vs {old:?} should not conflict"
            );
        }
        let long = "word ".repeat(60);
        assert_eq!(detector.explain(&long, &long.replace("word", "Word")), None);
    }
}
