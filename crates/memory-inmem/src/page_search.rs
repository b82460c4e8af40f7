//! The cut of a page search: pages are ranked by their BM25F score times the boost of the
//! match rules, and the boost (string comparisons over the title, summary and tags) is only
//! worked out for pages that can still make the cut.

use memory_core::{PageMatchSignals, Tag};

/// Matches examined per round after the first (which takes `k`), at least.
const CHUNK: usize = 64;

/// The `k` best of `scored` (`(bm25, slot)` of every match) once each is boosted by
/// `boost(slot, bm25)`, which gives the page's score or `None` for a page the query turns
/// away; as `(score, slot)`, best first, ties in the order of `tie` (by id). `max_boost`
/// bounds every boost (at least 1).
///
/// Matches are taken best BM25F first, a round at a time (a linear selection, no full sort),
/// and `boost` is called for them until `k` are held and no match left could reach the
/// `k`-th score even with `max_boost`: a boosted score is at most the BM25F score times
/// `max_boost`, and an `f32` product never shrinks when a factor grows, so the stop is
/// exact. Cost: the selection over the matches, and `boost` for about `k` of them when few
/// pages get a boost.
pub(crate) fn best_boosted(
    mut scored: Vec<(f32, u32)>,
    k: usize,
    max_boost: f32,
    mut boost: impl FnMut(u32, f32) -> Option<f32>,
    tie: impl Fn(u32, u32) -> std::cmp::Ordering,
) -> Vec<(f32, u32)> {
    let mut held: Vec<(f32, u32)> = Vec::new();
    if k == 0 {
        return held;
    }
    let by_bm25 = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let order = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then_with(|| tie(a.1, b.1));
    let mut rest: &mut [(f32, u32)] = &mut scored;
    let mut size = k;
    while !rest.is_empty() {
        if held.len() >= k {
            let next = rest
                .iter()
                .map(|(score, _)| *score)
                .max_by(f32::total_cmp)
                .unwrap_or(f32::NEG_INFINITY);
            if next * max_boost < held[k - 1].0 {
                break;
            }
        }
        let take = size.min(rest.len());
        if rest.len() > take {
            rest.select_nth_unstable_by(take - 1, by_bm25);
        }
        let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(take);
        rest = tail;
        size = (size * 2).max(CHUNK);
        held.extend(
            chunk
                .iter()
                .filter_map(|&(score, slot)| boost(slot, score).map(|boosted| (boosted, slot))),
        );
        held.sort_unstable_by(order);
        held.truncate(k);
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pruned cut equals boosting every match and sorting, for boosts that reorder the
    /// matches, ties, and matches the query turns away.
    #[test]
    fn the_cut_equals_boosting_everything() {
        let scored: Vec<(f32, u32)> = (0..500u32)
            .map(|slot| (1.0 + (slot * 7 % 97) as f32 / 10.0, slot))
            .collect();
        let boost = |slot: u32, score: f32| {
            if slot.is_multiple_of(11) {
                return None;
            }
            let factor = match slot % 13 {
                0 => 2.25,
                1 => 1.5,
                _ => 1.0,
            };
            Some(score * factor)
        };
        // Ties by a key that is not the slot order: descending slots.
        let tie = |a: u32, b: u32| b.cmp(&a);
        for k in [1, 3, 10, 64, 200, 600] {
            let mut expected: Vec<(f32, u32)> = scored
                .iter()
                .filter_map(|&(score, slot)| boost(slot, score).map(|boosted| (boosted, slot)))
                .collect();
            expected.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(tie(a.1, b.1)));
            expected.truncate(k);
            let mut calls = 0;
            let got = best_boosted(
                scored.clone(),
                k,
                2.25,
                |slot, score| {
                    calls += 1;
                    boost(slot, score)
                },
                tie,
            );
            assert_eq!(got, expected, "k = {k}");
            if k <= 10 {
                assert!(calls < scored.len() / 2, "k = {k}: {calls} boosts computed");
            }
        }
        assert!(best_boosted(scored, 0, 2.25, boost, tie).is_empty());
    }
}

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
