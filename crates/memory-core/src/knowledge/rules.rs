//! The page match rules: which rules a page satisfies for a query's keywords, and the
//! text and bits a backend keeps per page to test them fast.

use serde::{Deserialize, Serialize};

use crate::Tag;
use crate::text::{is_stop_word, surface_words};

/// Which of the page match rules a page hit satisfied, kept as signals for scoring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMatchSignals {
    /// A query keyword is a prefix of the title (case-insensitive).
    pub title_prefix: bool,
    /// A query keyword equals one of the page's tags.
    pub tag_exact: bool,
    /// The summary contains a query keyword.
    pub summary_contains: bool,
}

impl PageMatchSignals {
    /// The page match rules for one page, shared by every backend: a keyword starts the
    /// title or one of its words (case-insensitive); a keyword normalised as a tag equals one of
    /// the page's tags; the summary contains a keyword. `keywords` come from
    /// [`page_rule_keywords`].
    pub fn compute(title: &str, summary: &str, tags: &[Tag], keywords: &[String]) -> Self {
        let title_lower = title.to_lowercase();
        let title_words = surface_words(title);
        let summary = summary.to_lowercase();
        let mut signals = Self::default();
        for keyword in keywords {
            if title_lower.starts_with(keyword.as_str())
                || title_words
                    .iter()
                    .any(|word| word.starts_with(keyword.as_str()))
            {
                signals.title_prefix = true;
            }
            if Tag::new(keyword).is_ok_and(|tag| tags.contains(&tag)) {
                signals.tag_exact = true;
            }
            if summary.contains(keyword.as_str()) {
                signals.summary_contains = true;
            }
        }
        signals
    }

    /// The multiplier the match rules give a page's BM25F score:
    /// `1 + 0.5 title_prefix + 0.5 tag_exact + 0.25 summary_contains`.
    pub fn boost(self) -> f32 {
        1.0 + 0.5 * f32::from(u8::from(self.title_prefix))
            + 0.5 * f32::from(u8::from(self.tag_exact))
            + 0.25 * f32::from(u8::from(self.summary_contains))
    }
}

/// A page's text as the match rules read it: its title and summary lowercased, and its
/// title's words. A backend that keeps pages in memory works it out once when the page is
/// stored instead of at every search.
#[derive(Clone, Debug, Default)]
pub struct PageRuleText {
    /// The lowercased title, then each of the title's words preceded by a NUL byte (a word
    /// holds none: it is a run of letters and digits): one buffer, so the title rule reads
    /// one allocation instead of one per word.
    title: String,
    /// Where the lowercased title ends in `title`.
    title_len: usize,
    summary_lower: String,
    /// One bit ([`pair_bit`]) for the first two bytes of the lowercased title and of each
    /// of its words: a keyword whose own bit is clear starts none of them, so most pages
    /// are turned away by one test instead of a walk over their title's words.
    starts: u64,
    /// The same for the first four bytes ([`quad_bit`]), of those at least that long: a
    /// keyword of four bytes or more starts a word only if the word's first four bytes are
    /// its own, so this turns away the pages whose words merely begin with the same two
    /// bytes (frequent: many words share a first syllable).
    starts4: u64,
    /// The [`PairSet`] of the lowercased summary: a keyword holding a pair of bytes the
    /// summary lacks is not in it, so most summaries are never searched.
    summary_pairs: PairSet,
}

/// A set of the pairs of adjacent bytes of a text, as 256 bits (a Bloom filter with one
/// hash): a text holds every pair of each of its substrings, so a word with a pair missing
/// from a text's set is not a substring of it. A summary of 100 bytes sets about a third of
/// the bits, so a word of six bytes passes for a text without it about once in 250.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PairSet([u64; 4]);

impl PairSet {
    /// The pairs of `text`.
    fn of(text: &[u8]) -> Self {
        let mut set = Self::default();
        for pair in text.windows(2) {
            let bit =
                (u32::from(pair[0]) << 8 | u32::from(pair[1])).wrapping_mul(0x9E37_79B1) >> 24;
            set.0[(bit / 64) as usize] |= 1 << (bit % 64);
        }
        set
    }

    /// Whether every pair in `self` is in `other` (always, for a text shorter than two bytes).
    fn within(&self, other: &Self) -> bool {
        self.0
            .iter()
            .zip(other.0)
            .all(|(mine, theirs)| mine & !theirs == 0)
    }
}

/// The bits of a page's [`PageRuleText`] that bound its rule boost for a query without
/// reading its text ([`PageRuleKeywords::max_boost`]): 48 bytes, which a backend can keep
/// beside its index, contiguous, so that a page that cannot make the cut is turned away
/// without a read of its stored text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageRuleBits {
    starts: u64,
    starts4: u64,
    summary_pairs: PairSet,
}

/// The bit of a text's first two bytes among 64 (0 for a text shorter than two bytes): two
/// texts that start alike set the same bit.
fn pair_bit(text: &[u8]) -> u64 {
    match text {
        [a, b, ..] => 1 << (u32::from_le_bytes([*a, *b, 0, 0]).wrapping_mul(0x9E37_79B1) >> 26),
        _ => 0,
    }
}

/// The bit of a text's first four bytes among 64 (0 for a text shorter than four bytes).
fn quad_bit(text: &[u8]) -> u64 {
    match text {
        [a, b, c, d, ..] => {
            1 << (u32::from_le_bytes([*a, *b, *c, *d]).wrapping_mul(0x9E37_79B1) >> 26)
        }
        _ => 0,
    }
}

impl PageRuleText {
    /// The rule text of a page with this title and summary.
    pub fn new(title: &str, summary: &str) -> Self {
        let mut buffer = title.to_lowercase();
        let title_len = buffer.len();
        let mut starts = pair_bit(buffer.as_bytes());
        let mut starts4 = quad_bit(buffer.as_bytes());
        for word in surface_words(title) {
            starts |= pair_bit(word.as_bytes());
            starts4 |= quad_bit(word.as_bytes());
            buffer.push('\0');
            buffer.push_str(&word);
        }
        let summary_lower = summary.to_lowercase();
        Self {
            title: buffer,
            title_len,
            summary_pairs: PairSet::of(summary_lower.as_bytes()),
            summary_lower,
            starts,
            starts4,
        }
    }

    /// The bits that bound this page's rule boost ([`PageRuleKeywords::max_boost`]).
    pub fn bits(&self) -> PageRuleBits {
        PageRuleBits {
            starts: self.starts,
            starts4: self.starts4,
            summary_pairs: self.summary_pairs,
        }
    }

    /// The lowercased title.
    fn title_lower(&self) -> &str {
        self.title.get(..self.title_len).unwrap_or_default()
    }

    /// The title's words, each preceded by a NUL byte.
    fn title_words(&self) -> &[u8] {
        self.title
            .as_bytes()
            .get(self.title_len..)
            .unwrap_or_default()
    }
}

/// A query's rule keywords, each with the tag it names (if it is a valid tag), worked out
/// once per search instead of once per page weighed.
#[derive(Debug)]
pub struct PageRuleKeywords<'k> {
    keywords: Vec<RuleKeyword<'k>>,
}

/// One keyword as the rules test it: the tag it names, and a substring searcher built once.
#[derive(Debug)]
struct RuleKeyword<'k> {
    word: &'k str,
    /// [`pair_bit`] of the word; 0 for a word shorter than two bytes, which any title
    /// may start with.
    start: u64,
    /// [`quad_bit`] of the word; 0 for a word shorter than four bytes.
    start4: u64,
    /// The word's [`PairSet`]: a summary whose set lacks one of them does not hold it.
    pairs: PairSet,
    tag: Option<Tag>,
    finder: memchr::memmem::Finder<'k>,
}

/// Whether `text` starts with `prefix`, compared byte by byte inline: keywords are short,
/// and most words they are tried against differ in the first byte.
#[inline]
fn starts_with(text: &[u8], prefix: &[u8]) -> bool {
    text.len() >= prefix.len() && text.iter().zip(prefix).all(|(a, b)| a == b)
}

impl<'k> PageRuleKeywords<'k> {
    /// The keywords of a query ([`PageQuery::rule_keywords`](crate::PageQuery::rule_keywords)).
    pub fn new(keywords: &'k [String]) -> Self {
        Self {
            keywords: keywords
                .iter()
                .map(|keyword| RuleKeyword {
                    word: keyword.as_str(),
                    start: pair_bit(keyword.as_bytes()),
                    start4: quad_bit(keyword.as_bytes()),
                    pairs: PairSet::of(keyword.as_bytes()),
                    tag: Tag::new(keyword).ok(),
                    finder: memchr::memmem::Finder::new(keyword.as_bytes()),
                })
                .collect(),
        }
    }

    /// Whether a keyword names a tag that `carried` says some page carries (else no page
    /// can match a tag exactly).
    pub fn names_a_tag(&self, carried: impl Fn(&Tag) -> bool) -> bool {
        self.keywords
            .iter()
            .any(|keyword| keyword.tag.as_ref().is_some_and(&carried))
    }

    /// Exactly [`PageMatchSignals::compute`] for the page with rule text `text` and `tags`.
    #[inline]
    pub fn signals(&self, text: &PageRuleText, tags: &[Tag]) -> PageMatchSignals {
        PageMatchSignals {
            title_prefix: self.title_prefix(text),
            tag_exact: self.tag_exact(tags),
            summary_contains: self.summary_contains(text),
        }
    }

    /// The page's `score` times its boost ([`signals`](Self::signals)), or `None` when that
    /// is certainly below `needed`: the cheap rules (tags, title) are tested first, and the
    /// summary is searched only when its boost could still lift the page to `needed`. When
    /// a value is returned it is exactly `score * signals.boost()`.
    #[inline]
    pub fn weigh(&self, text: &PageRuleText, tags: &[Tag], score: f32, needed: f32) -> Option<f32> {
        let mut signals = PageMatchSignals {
            title_prefix: self.title_prefix(text),
            tag_exact: self.tag_exact(tags),
            summary_contains: true,
        };
        if score * signals.boost() < needed {
            return None;
        }
        signals.summary_contains = self.summary_contains(text);
        Some(score * signals.boost())
    }

    /// The largest boost the page with rule bits `bits` can get: a bound of
    /// [`signals`](Self::signals)`.boost()` read from the bits alone, with the tag rule
    /// counted only when `tag_may_match` (a caller that knows no keyword names one of the
    /// page's tags passes `false`).
    #[inline]
    pub fn max_boost(&self, bits: &PageRuleBits, tag_may_match: bool) -> f32 {
        PageMatchSignals {
            title_prefix: self.may_start_title(bits.starts, bits.starts4),
            tag_exact: tag_may_match,
            summary_contains: self
                .keywords
                .iter()
                .any(|keyword| keyword.pairs.within(&bits.summary_pairs)),
        }
        .boost()
    }

    /// Whether a keyword may start the title or one of its words, given the bits of their
    /// first two and first four bytes: a keyword of two bytes or more does only if its own
    /// bit of two bytes is set, and one of four bytes or more only if its bit of four bytes
    /// is set too.
    fn may_start_title(&self, starts: u64, starts4: u64) -> bool {
        self.keywords.iter().any(|keyword| {
            keyword.start == 0
                || (starts & keyword.start != 0
                    && (keyword.start4 == 0 || starts4 & keyword.start4 != 0))
        })
    }

    fn title_prefix(&self, text: &PageRuleText) -> bool {
        if !self.may_start_title(text.starts, text.starts4) {
            return false;
        }
        let title = text.title_lower().as_bytes();
        if self
            .keywords
            .iter()
            .any(|keyword| starts_with(title, keyword.word.as_bytes()))
        {
            return true;
        }
        // One pass over the words, in one buffer: each word's start against every keyword.
        let mut words = text.title_words();
        while let Some(rest) = words.get(1..) {
            if self
                .keywords
                .iter()
                .any(|keyword| starts_with(rest, keyword.word.as_bytes()))
            {
                return true;
            }
            words = match rest.iter().position(|byte| *byte == 0) {
                Some(end) => &rest[end..],
                None => &[],
            };
        }
        false
    }

    /// The same keywords, where a keyword names a tag only if `carried` says some page
    /// carries it: a search over one namespace tests the tag rule with the tags that
    /// namespace's pages carry alone.
    pub fn with_tags_carried(&self, carried: impl Fn(&Tag) -> bool) -> Self {
        Self {
            keywords: self
                .keywords
                .iter()
                .map(|keyword| RuleKeyword {
                    word: keyword.word,
                    start: keyword.start,
                    start4: keyword.start4,
                    pairs: keyword.pairs,
                    tag: keyword.tag.clone().filter(&carried),
                    finder: keyword.finder.clone(),
                })
                .collect(),
        }
    }

    fn tag_exact(&self, tags: &[Tag]) -> bool {
        !tags.is_empty()
            && self
                .keywords
                .iter()
                .any(|keyword| keyword.tag.as_ref().is_some_and(|tag| tags.contains(tag)))
    }

    fn summary_contains(&self, text: &PageRuleText) -> bool {
        self.keywords.iter().any(|keyword| {
            keyword.pairs.within(&text.summary_pairs)
                && keyword.finder.find(text.summary_lower.as_bytes()).is_some()
        })
    }
}

/// The lowercased query words the page match rules use: the query's words as written, without
/// English stop words and one-letter words, distinct, in order, at most
/// [`MAX_QUERY_TERMS`](crate::text::MAX_QUERY_TERMS).
pub fn page_rule_keywords(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<String> = Vec::new();
    for word in surface_words(text) {
        if out.len() == crate::text::MAX_QUERY_TERMS {
            break;
        }
        let bare: String = word.chars().filter(|c| *c != '\'').collect();
        if bare.chars().count() < 2 || is_stop_word(&bare) {
            continue;
        }
        if seen.insert(word.clone()) {
            out.push(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded xorshift generator: each call gives a number below its argument.
    fn below(mut state: u64) -> impl FnMut(usize) -> usize {
        move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        }
    }

    /// `weigh` gives exactly the score times the boost of `signals`, and leaves a page out
    /// only when that product is below what is needed.
    #[test]
    fn weighing_agrees_with_the_signals() {
        let keywords = page_rule_keywords("graph state rust");
        let rules = PageRuleKeywords::new(&keywords);
        let tags = [Tag::new("rust").unwrap()];
        let pages = [
            ("State machines", "how a graph changes", &tags[..]),
            ("Nothing here", "unrelated words", &[][..]),
            ("Other", "a summary about graphs", &[][..]),
            ("Rusty tools", "none", &tags[..]),
        ];
        for (title, summary, tags) in pages {
            let text = PageRuleText::new(title, summary);
            let boosted = 2.0 * rules.signals(&text, tags).boost();
            for needed in [
                f32::NEG_INFINITY,
                0.0,
                2.0,
                2.5,
                boosted,
                boosted + 0.01,
                10.0,
            ] {
                match rules.weigh(&text, tags, 2.0, needed) {
                    Some(weighed) => assert_eq!(weighed.to_bits(), boosted.to_bits(), "{title}"),
                    None => assert!(boosted < needed, "{title}: {boosted} left out at {needed}"),
                }
            }
            assert!(rules.weigh(&text, tags, 2.0, 0.0).is_some());
        }
    }

    #[test]
    fn match_rules() {
        let keywords = page_rule_keywords("LangGraph 的 StateGraph 状态管理原理？");
        assert_eq!(keywords, ["langgraph", "stategraph", "状态管理原理"]);
        let tags = [Tag::new("state-graph").unwrap()];
        let signals = PageMatchSignals::compute("StateGraph 状态管理", "核心", &tags, &keywords);
        assert!(signals.title_prefix && !signals.tag_exact && !signals.summary_contains);
        let signals = PageMatchSignals::compute(
            "Nodes",
            "graph theory",
            &tags,
            &page_rule_keywords("State Graph"),
        );
        assert!(!signals.title_prefix && signals.summary_contains);
        assert!(page_rule_keywords("the a of").is_empty());
        assert_eq!(PageMatchSignals::default().boost(), 1.0);
    }

    /// The title rule from the stored text (which first tests the bits of its words' first
    /// two and first four bytes) agrees with the shared rule on generated titles whose
    /// words share their beginnings often, for keywords of every length (below four bytes,
    /// four, and longer), from the query or given directly.
    #[test]
    fn title_rule_agrees_with_the_shared_rule_on_generated_titles() {
        let mut next = below(0x2545_f491_4f6c_dd1d_u64);
        let letters = ["a", "b", "c", "é", "ab", "B"];
        let word = |next: &mut dyn FnMut(usize) -> usize| -> String {
            (0..next(6)).map(|_| letters[next(letters.len())]).collect()
        };
        let (mut matched, mut missed) = (0, 0);
        for _ in 0..2_000 {
            let title: Vec<String> = (0..next(4)).map(|_| word(&mut next)).collect();
            let title = title.join(if next(2) == 0 { " " } else { "-" });
            let keywords: Vec<String> = (0..1 + next(3))
                .map(|_| word(&mut next).to_lowercase())
                .collect();
            let expected = PageMatchSignals::compute(&title, "", &[], &keywords).title_prefix;
            let got = PageRuleKeywords::new(&keywords)
                .signals(&PageRuleText::new(&title, ""), &[])
                .title_prefix;
            assert_eq!(got, expected, "{title:?} / {keywords:?}");
            if expected {
                matched += 1;
            } else {
                missed += 1;
            }
        }
        assert!(matched > 200 && missed > 200, "{matched} / {missed}");
    }

    /// The summary rule with its filter of byte pairs says what a search of the summary
    /// says, for generated summaries and keywords that are in them or not.
    #[test]
    fn summary_rule_agrees_with_the_shared_rule_on_generated_summaries() {
        let mut next = below(0x9e37_79b9_7f4a_7c15_u64);
        let letters = ["a", "b", "c", "é", "ab", "B", " ", "-"];
        let (mut matched, mut missed) = (0, 0);
        for _ in 0..2_000 {
            let summary: Vec<&str> = (0..next(40))
                .map(|_| letters[next(letters.len())])
                .collect();
            // Keywords made up, and keywords cut from the summary (at its ends too).
            let keywords: Vec<String> = (0..1 + next(3))
                .map(|_| {
                    if next(2) == 0 || summary.is_empty() {
                        (0..next(6)).map(|_| letters[next(letters.len())]).collect()
                    } else {
                        let begin = next(summary.len());
                        let end = (begin + 1 + next(6)).min(summary.len());
                        summary[begin..end].concat()
                    }
                    .to_lowercase()
                })
                .collect();
            let summary = summary.concat();
            let expected = PageMatchSignals::compute("", &summary, &[], &keywords).summary_contains;
            let got = PageRuleKeywords::new(&keywords)
                .signals(&PageRuleText::new("", &summary), &[])
                .summary_contains;
            assert_eq!(got, expected, "{summary:?} / {keywords:?}");
            if expected {
                matched += 1;
            } else {
                missed += 1;
            }
        }
        assert!(matched > 200 && missed > 200, "{matched} / {missed}");
    }

    /// No page gets a boost above its bound from the bits, and the bound is not always the
    /// largest boost (else it would turn no page away).
    #[test]
    fn the_bound_from_the_bits_holds_every_boost() {
        let mut next = below(0x5851_f42d_4c95_7f2d_u64);
        let words = [
            "alpha", "beta", "gamma", "Delta", "epsilon", "zeta", "é", "x",
        ];
        let mut text = |n: usize| -> String {
            (0..next(n))
                .map(|_| words[next(words.len())])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut below_the_largest = 0;
        for _ in 0..2_000 {
            let (title, summary, query) = (text(4), text(8), text(3));
            let tags: Vec<Tag> = text(3)
                .split(' ')
                .filter_map(|tag| Tag::new(tag).ok())
                .collect();
            let keywords = page_rule_keywords(&query);
            let rules = PageRuleKeywords::new(&keywords);
            let page = PageRuleText::new(&title, &summary);
            let boost = rules.signals(&page, &tags).boost();
            let tag_may_match = rules.signals(&page, &tags).tag_exact;
            let bound = rules.max_boost(&page.bits(), tag_may_match);
            assert!(boost <= bound, "{title:?} / {summary:?} / {keywords:?}");
            below_the_largest += usize::from(bound < 2.25);
        }
        assert!(below_the_largest > 500, "{below_the_largest}");
    }

    /// The signals from the stored rule text are the shared rules' own, for titles and
    /// summaries in several scripts and cases, tags, and keywords that match or not.
    #[test]
    fn signals_equal_the_shared_rules() {
        let pages = [
            (
                "StateGraph 状态管理",
                "How LangGraph keeps STATE",
                vec!["langgraph"],
            ),
            (
                "Ünïcödé Café notes",
                "résumé of the café",
                vec!["cafe", "notes"],
            ),
            ("The cat", "a summary about dogs", vec![]),
            ("", "", vec!["x"]),
        ];
        let queries = [
            "LangGraph 的 StateGraph 状态管理原理？",
            "café notes",
            "CAT dogs",
            "state",
            "nothing here",
            "x",
        ];
        for (title, summary, tags) in &pages {
            let tags: Vec<Tag> = tags
                .iter()
                .map(|tag| Tag::new(tag).unwrap_or_else(|e| panic!("{e}")))
                .collect();
            let text = PageRuleText::new(title, summary);
            for query in queries {
                let keywords = page_rule_keywords(query);
                let expected = PageMatchSignals::compute(title, summary, &tags, &keywords);
                let got = PageRuleKeywords::new(&keywords).signals(&text, &tags);
                assert_eq!(got, expected, "{title:?} / {query:?}");
                // A page whose tag matched is in a shard that carries the tag.
                if expected.tag_exact {
                    assert!(PageRuleKeywords::new(&keywords).names_a_tag(|tag| tags.contains(tag)));
                }
            }
        }
        let keywords = page_rule_keywords("café notes");
        let notes = Tag::new("notes").unwrap_or_else(|e| panic!("{e}"));
        assert!(PageRuleKeywords::new(&keywords).names_a_tag(|tag| *tag == notes));
        assert!(!PageRuleKeywords::new(&keywords).names_a_tag(|_| false));
    }
}
