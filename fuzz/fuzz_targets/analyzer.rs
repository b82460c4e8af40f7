//! Fuzz the text analyzer, keyword extractor, tag and namespace parsers: never panic, and
//! keep their output invariants.
#![no_main]

use agent_memory::text::{Analyzer, MAX_TERM_BYTES, surface_words};
use agent_memory::{KeywordExtractor, Namespace, Tag};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for analyzer in [Analyzer::default(), Analyzer::plain()] {
        for term in analyzer.terms(&text) {
            assert!(!term.is_empty(), "empty term from {text:?}");
            assert!(
                term.len() <= MAX_TERM_BYTES.max(8),
                "oversized term {term:?}"
            );
            assert!(
                !term.chars().any(char::is_whitespace),
                "term with whitespace {term:?}"
            );
            // Analysing a term again is stable for the plain analyzer.
            if analyzer == Analyzer::plain() && term.chars().all(|c| c.is_ascii_alphanumeric()) {
                assert_eq!(analyzer.terms(&term), vec![term.clone()]);
            }
        }
    }
    filtered_scan_matches_full_scan(&text, data);
    let _ = surface_words(&text);
    let keywords = agent_memory::retrieve::AnalyzerKeywordExtractor.extract(&text);
    assert!(keywords.len() <= agent_memory::retrieve::MAX_KEYWORDS);
    if let Ok(tag) = Tag::new(&text) {
        assert_eq!(
            Tag::new(tag.as_str()).ok().as_ref(),
            Some(&tag),
            "tags are normalised idempotently"
        );
    }
    if let Ok(ns) = Namespace::parse(&text) {
        assert_eq!(
            Namespace::parse(ns.as_str()).ok().as_ref(),
            Some(&ns),
            "namespaces round-trip"
        );
    }
});

/// The filtered scan (`for_each_term_where`) counts every term of the full scan and finds
/// every term whose first two bytes the filter accepts at the position the full scan gives
/// it: with a filter accepting all, and with one accepting the first bytes of a few bytes
/// drawn from the input.
fn filtered_scan_matches_full_scan(text: &str, data: &[u8]) {
    let analyzer = Analyzer::default();
    let all = analyzer.terms(text);
    let mut accepted = [false; 256];
    for byte in data.iter().take(3) {
        accepted[usize::from(byte.to_ascii_lowercase())] = true;
    }
    for accept_all in [true, false] {
        let wanted = |first: u8| accept_all || accepted[usize::from(first)];
        let position = std::cell::Cell::new(0usize);
        let mut found = Vec::new();
        analyzer.for_each_term_where(
            text,
            |first, _| wanted(first),
            |term| {
                found.push((position.get(), term.to_owned()));
                position.set(position.get() + 1);
            },
            || position.set(position.get() + 1),
        );
        assert_eq!(position.get(), all.len(), "term count of {text:?}");
        let expected: Vec<(usize, String)> = all
            .iter()
            .cloned()
            .enumerate()
            .filter(|(_, term)| wanted(term.as_bytes()[0]))
            .collect();
        let found: Vec<(usize, String)> = found
            .into_iter()
            .filter(|(_, term)| wanted(term.as_bytes()[0]))
            .collect();
        assert_eq!(found, expected, "filtered scan of {text:?}");
    }
}
