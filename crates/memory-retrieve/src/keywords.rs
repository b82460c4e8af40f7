//! The default keyword extractor, built on the shared analyzer.

use memory_core::KeywordExtractor;
use memory_core::text::{STOP_WORDS, is_cjk, surface_words};

/// Most keywords returned for one query.
pub const MAX_KEYWORDS: usize = 32;

/// Extracts the keywords every channel shares: the query's words as written, lowercased,
/// minus English stop words and one-letter words; for Chinese and Japanese runs, the run
/// itself and its character bigrams (so `状态管理原理` also yields `状态`, `管理`, ...).
/// Possessive `'s` is dropped (`caroline's` gives `caroline`).
///
/// ```
/// use memory_core::KeywordExtractor;
/// use memory_retrieve::AnalyzerKeywordExtractor;
/// let keywords = AnalyzerKeywordExtractor.extract("LangGraph 的 StateGraph 状态管理原理？");
/// assert_eq!(&keywords[..3], ["langgraph", "stategraph", "状态管理原理"]);
/// assert!(keywords.contains(&"状态".to_string()));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct AnalyzerKeywordExtractor;

impl KeywordExtractor for AnalyzerKeywordExtractor {
    fn extract(&self, query: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let push = |word: String, out: &mut Vec<String>| {
            if out.len() < MAX_KEYWORDS && !out.contains(&word) {
                out.push(word);
            }
        };
        let mut bigrams = Vec::new();
        for word in surface_words(query) {
            let mut word = word.replace('\u{2019}', "'");
            if let Some(stripped) = word.strip_suffix("'s") {
                word = stripped.to_owned();
            }
            let bare: String = word.chars().filter(|c| *c != '\'').collect();
            let chars: Vec<char> = bare.chars().collect();
            if chars.first().is_some_and(|c| is_cjk(*c)) {
                if chars.len() == 1 && "的了是在和吗呢吧啊与及".contains(chars[0]) {
                    continue;
                }
                if chars.len() > 2 {
                    bigrams.extend(chars.windows(2).map(|pair| pair.iter().collect::<String>()));
                }
                push(bare, &mut out);
                continue;
            }
            if chars.len() < 2 || STOP_WORDS.binary_search(&bare.as_str()).is_ok() {
                continue;
            }
            push(bare, &mut out);
        }
        for bigram in bigrams {
            push(bigram, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts() {
        let cases: &[(&str, &[&str])] = &[
            (
                "What did Caroline's sister say about the trip?",
                &["caroline", "sister", "say", "trip"],
            ),
            ("", &[]),
            ("the a of", &[]),
            ("Rust rust RUST", &["rust"]),
            (
                "用户喜欢编程",
                &["用户喜欢编程", "用户", "户喜", "喜欢", "欢编", "编程"],
            ),
        ];
        for (query, want) in cases {
            assert_eq!(AnalyzerKeywordExtractor.extract(query), *want, "{query}");
        }
        let long = "word ".repeat(10) + &(0..100).map(|i| format!("w{i}x ")).collect::<String>();
        assert_eq!(AnalyzerKeywordExtractor.extract(&long).len(), MAX_KEYWORDS);
    }
}
