//! The match rules of a page search, worked out from text prepared when the page is stored:
//! a page's score is its BM25F score times the boost of the rules (title prefix, exact tag,
//! summary), and [`Bm25Index::top_k_weighted`](crate::bm25::Bm25Index::top_k_weighted) asks
//! for the boost only of pages that can still make the cut.

use memory_core::{PageMatchSignals, Tag};

/// A page's text as the match rules read it, worked out once when the page is stored instead
/// of at every search: its title and summary lowercased, and its title's words.
#[derive(Clone, Debug, Default)]
pub(crate) struct RuleText {
    title_lower: String,
    title_words: Vec<String>,
    summary_lower: String,
}

impl RuleText {
    /// The rule text of a page with this title and summary.
    pub(crate) fn new(title: &str, summary: &str) -> Self {
        Self {
            title_lower: title.to_lowercase(),
            title_words: memory_core::text::surface_words(title),
            summary_lower: summary.to_lowercase(),
        }
    }
}

/// A query's rule keywords, each with the tag it names (if it is a valid tag), worked out
/// once per search.
#[derive(Debug)]
pub(crate) struct RuleKeywords<'k> {
    keywords: Vec<(&'k str, Option<Tag>)>,
}

impl<'k> RuleKeywords<'k> {
    /// The keywords of a query ([`PageQuery::rule_keywords`](memory_core::PageQuery::rule_keywords)).
    pub(crate) fn new(keywords: &'k [String]) -> Self {
        Self {
            keywords: keywords
                .iter()
                .map(|keyword| (keyword.as_str(), Tag::new(keyword).ok()))
                .collect(),
        }
    }

    /// Whether a keyword names a tag that `carried` says some page carries (else no page
    /// can match a tag exactly).
    pub(crate) fn names_a_tag(&self, carried: impl Fn(&Tag) -> bool) -> bool {
        self.keywords
            .iter()
            .any(|(_, tag)| tag.as_ref().is_some_and(&carried))
    }

    /// Exactly [`PageMatchSignals::compute`] for the page with rule text `text` and `tags`.
    pub(crate) fn signals(&self, text: &RuleText, tags: &[Tag]) -> PageMatchSignals {
        let mut signals = PageMatchSignals::default();
        for (keyword, tag) in &self.keywords {
            if !signals.title_prefix
                && (text.title_lower.starts_with(keyword)
                    || text
                        .title_words
                        .iter()
                        .any(|word| word.starts_with(keyword)))
            {
                signals.title_prefix = true;
            }
            if !signals.tag_exact && tag.as_ref().is_some_and(|tag| tags.contains(tag)) {
                signals.tag_exact = true;
            }
            if !signals.summary_contains && text.summary_lower.contains(keyword) {
                signals.summary_contains = true;
            }
        }
        signals
    }
}

#[cfg(test)]
mod rule_tests {
    use memory_core::backend::page_rule_keywords;

    use super::*;

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
            let tags: Vec<Tag> = tags.iter().map(|tag| Tag::new(tag).unwrap()).collect();
            let text = RuleText::new(title, summary);
            for query in queries {
                let keywords = page_rule_keywords(query);
                let expected = PageMatchSignals::compute(title, summary, &tags, &keywords);
                let got = RuleKeywords::new(&keywords).signals(&text, &tags);
                assert_eq!(got, expected, "{title:?} / {query:?}");
                // A page whose tag matched is in a shard that carries the tag.
                if expected.tag_exact {
                    assert!(RuleKeywords::new(&keywords).names_a_tag(|tag| tags.contains(tag)));
                }
            }
        }
        let keywords = page_rule_keywords("café notes");
        let notes = Tag::new("notes").unwrap();
        assert!(RuleKeywords::new(&keywords).names_a_tag(|tag| *tag == notes));
        assert!(!RuleKeywords::new(&keywords).names_a_tag(|_| false));
    }
}
